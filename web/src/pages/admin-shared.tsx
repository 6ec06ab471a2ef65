// Pieces every administration section uses: loading a list, the section's frame and table, and deleting with a
// question first.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, api, listAll } from '../api.ts';
import { Confirm } from '../components/confirm.tsx';
import { ErrorLine, errorText } from '../components/form-modal.tsx';
import type { Group, User } from './admin-logic.ts';

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  /** The API answered 403: the signed-in user may not see this at all. */
  forbidden: boolean;
  reload: () => void;
}

/** Loads once and again on reload(); a reply that arrives after a newer request started is dropped. */
export function useLoad<T>(load: () => Promise<T>): Loaded<T> {
  const [generation, setGeneration] = useState(0);
  const [state, setState] = useState<{ data: T | null; error: string | null; forbidden: boolean }>({
    data: null,
    error: null,
    forbidden: false,
  });
  useEffect(() => {
    let current = true;
    load().then(
      (data) => current && setState({ data, error: null, forbidden: false }),
      (error: unknown) =>
        current &&
        setState((old) => ({
          data: old.data,
          error: errorText(error),
          forbidden: error instanceof ApiError && error.status === 403,
        })),
    );
    return () => {
      current = false;
    };
  }, [generation]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { ...state, reload };
}

export interface UsersAndGroups {
  users: User[];
  groups: Group[];
}

/** Both lists at once: the users section names each user's groups, and the groups section lists each group's members. */
export function useUsersAndGroups(): Loaded<UsersAndGroups> {
  return useLoad(async () => {
    const [users, groups] = await Promise.all([listAll<User>('/api/admin/users/'), listAll<Group>('/api/admin/groups/')]);
    return { users, groups };
  });
}

export function StaffOnly() {
  return <p class="panel">Only staff can administer users and groups.</p>;
}

/**
 * A section of the administration page: its heading (which names the section for assistive technology),
 * an Add button, the load's error, and the table once there is something to show.
 */
export function AdminSection<T>(props: {
  id: string;
  title: string;
  addLabel: string;
  onAdd: () => void;
  /** False hides the Add button, for users who may look but not change. */
  canAdd?: boolean;
  /** Whether the Add form needs the loaded lists (say, the groups a new user may join), so must wait for them. */
  addNeedsData?: boolean;
  /** Buttons shown before the Add button. */
  tools?: ComponentChildren;
  loaded: Loaded<T>;
  loadingText: string;
  table: (data: T) => ComponentChildren;
  children?: ComponentChildren;
}) {
  const { id, loaded, canAdd = true, addNeedsData = true } = props;
  return (
    <section aria-labelledby={`admin-${id}-heading`}>
      <div class="toolbar">
        <h2 id={`admin-${id}-heading`} class="grow">
          {props.title}
        </h2>
        {props.tools}
        {canAdd && (
          <button type="button" class="primary" onClick={props.onAdd} disabled={addNeedsData && !loaded.data}>
            {props.addLabel}
          </button>
        )}
      </div>
      <ErrorLine error={loaded.error} />
      {loaded.data ? props.table(loaded.data) : !loaded.error && <p class="muted">{props.loadingText}</p>}
      {props.children}
    </section>
  );
}

/**
 * A section's table. The last column holds each row's buttons; its heading is hidden but still names the column
 * for screen readers. The caller passes `emptyText` when it has no rows, to be shown in their place.
 */
export function AdminTable(props: { section: string; headers: string[]; emptyText?: string | false; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table data-testid={`admin-${props.section}-table`}>
        <thead>
          <tr>
            {props.headers.map((header) => (
              <th scope="col" key={header}>
                {header}
              </th>
            ))}
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.emptyText && (
            <tr>
              <td colSpan={props.headers.length + 1} class="muted">
                {props.emptyText}
              </td>
            </tr>
          )}
          {props.children}
        </tbody>
      </table>
    </div>
  );
}

/** A Delete button that asks first, then shows the API's refusal in words if there is one. */
export function DeleteButton(props: { noun: string; name: string; path: string; onDeleted: () => void }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function remove() {
    setAsking(false);
    setBusy(true);
    setError(null);
    try {
      await api(props.path, { method: 'DELETE' });
      props.onDeleted();
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setBusy(false);
    }
  }
  return (
    <>
      <button type="button" class="danger" disabled={busy} onClick={() => setAsking(true)} aria-label={`Delete ${props.noun} ${props.name}`}>
        {busy ? 'Deleting…' : 'Delete'}
      </button>
      {asking && (
        <Confirm
          title={`Delete ${props.noun}`}
          message={`Delete ${props.noun} “${props.name}”? This cannot be undone.`}
          action="Delete"
          onConfirm={remove}
          onCancel={() => setAsking(false)}
        />
      )}
      <ErrorLine error={error} />
    </>
  );
}

/** A row's Edit and Delete buttons, named after the row so that each is told apart by screen readers. */
export function EditAndDelete(props: { noun: string; editNoun?: string; name: string; path: string; onEdit: () => void; onDeleted: () => void }) {
  return (
    <>
      <button type="button" onClick={props.onEdit} aria-label={`Edit ${props.editNoun ?? props.noun} ${props.name}`}>
        Edit
      </button>
      <DeleteButton noun={props.noun} name={props.name} path={props.path} onDeleted={props.onDeleted} />
    </>
  );
}

export function YesNo({ value }: { value: boolean }) {
  return <span class={value ? 'badge completed' : 'badge'}>{value ? 'Yes' : 'No'}</span>;
}

export function formatTime(value: string | null): string {
  if (!value) return 'Never';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toLocaleString();
}
