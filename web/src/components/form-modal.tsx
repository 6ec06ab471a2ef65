// A form in a modal dialog, with the API's refusal shown in words and the buttons held while it is sent.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Modal } from './confirm.tsx';

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function ErrorLine({ error }: { error: string | null }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

/**
 * A form in a modal: Save runs `save`, which throws to keep the form open with the API's words shown.
 * The buttons stay disabled while it runs so that a second click cannot send the form twice.
 */
export function FormModal(props: {
  title: string;
  saveLabel?: string;
  onSave: () => Promise<void>;
  onClose: () => void;
  children: ComponentChildren;
}) {
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function submit(event: Event) {
    event.preventDefault();
    setSaving(true);
    setError(null);
    try {
      await props.onSave();
      props.onClose();
    } catch (failure) {
      setError(errorText(failure));
      setSaving(false);
    }
  }
  return (
    <Modal title={props.title} onClose={props.onClose}>
      <form class="stack form-modal" onSubmit={submit}>
        <fieldset class="stack" disabled={saving}>
          {props.children}
        </fieldset>
        <ErrorLine error={error} />
        <div class="actions">
          <button type="button" onClick={props.onClose} disabled={saving}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={saving}>
            {saving ? 'Saving…' : (props.saveLabel ?? 'Save')}
          </button>
        </div>
      </form>
    </Modal>
  );
}
