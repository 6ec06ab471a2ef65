// A modal dialog built on <dialog>, which gives focus trapping, Escape and the backdrop for free.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const unmounting = useRef(false);
  useEffect(() => {
    const dialog = ref.current!;
    dialog.showModal();
    return () => {
      // Closing it here fires its close event: that is not the user closing it.
      unmounting.current = true;
      dialog.close();
    };
  }, []);
  return (
    <dialog ref={ref} aria-label={title} onClose={() => unmounting.current || onClose()}>
      <h2>{title}</h2>
      {children}
    </dialog>
  );
}

/** Asks before an action that cannot be undone. */
export function Confirm(props: { title: string; message: string; action: string; onConfirm: () => void; onCancel: () => void }) {
  return (
    <Modal title={props.title} onClose={props.onCancel}>
      <p>{props.message}</p>
      <div class="actions">
        <button type="button" onClick={props.onCancel}>Cancel</button>
        <button type="button" class="danger" onClick={props.onConfirm}>{props.action}</button>
      </div>
    </Modal>
  );
}
