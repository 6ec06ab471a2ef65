// Shares a project with users and groups. Nothing is sent until Save, which replaces the project's whole
// sharing at once (WebODM's /edit/ semantics): a removed row is a revoked grant.
import { useEffect, useState } from 'preact/hooks';
import { type Project, api, listAll } from '../api.ts';
import { type ShareLevel, SHARE_LEVELS, levelOf, permissionsOf } from '../pages/admin-logic.ts';
import { Modal } from './confirm.tsx';
// The administration pages' stylesheet holds this dialog's few rules (.share-*), so that they live in one place.
import '../pages/admin.css';

type Kind = 'user' | 'group';

interface Grant {
  kind: Kind;
  name: string;
  permissions: string[];
  owner: boolean;
}

type ApiGrant = { username: string; owner?: boolean; permissions: string[] } | { groupname: string; permissions: string[] };

const grantOf = (entry: ApiGrant): Grant =>
  'username' in entry
    ? { kind: 'user', name: entry.username, permissions: entry.permissions, owner: entry.owner === true }
    : { kind: 'group', name: entry.groupname, permissions: entry.permissions, owner: false };

const sameGrantee = (a: { kind: Kind; name: string }, b: { kind: Kind; name: string }) => a.kind === b.kind && a.name === b.name;

export function ShareDialog({ project, onClose }: { project: Project; onClose: () => void }) {
  const [grants, setGrants] = useState<Grant[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [saveError, setSaveError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  useEffect(() => {
    let current = true;
    api<ApiGrant[]>(`/api/projects/${project.id}/permissions/`).then(
      (entries) => current && setGrants(entries.map(grantOf)),
      (failure: unknown) => current && setLoadError(message(failure)),
    );
    return () => {
      current = false;
    };
  }, [project.id]);

  async function save() {
    if (!grants) return;
    setSaving(true);
    setSaveError(null);
    try {
      const permissions = grants
        .filter((grant) => !grant.owner)
        .map((grant) => (grant.kind === 'user' ? { username: grant.name, permissions: grant.permissions } : { groupname: grant.name, permissions: grant.permissions }));
      await api(`/api/projects/${project.id}/edit/`, { method: 'POST', body: { permissions } });
      onClose();
    } catch (failure) {
      setSaveError(message(failure));
      setSaving(false);
    }
  }

  // A refusal of Save is about the list as it was: once the list changes, it no longer applies.
  const edit = (next: Grant[]) => {
    setGrants(next);
    setSaveError(null);
  };
  const change = (target: Grant, permissions: string[] | null) =>
    edit((grants ?? []).flatMap((grant) => (grant === target ? (permissions ? [{ ...grant, permissions }] : []) : [grant])));

  return (
    <Modal title={`Share “${project.name}”`} onClose={onClose}>
      <div class="stack share-dialog">
        {grants ? <GrantList grants={grants} disabled={saving} onChange={change} /> : !loadError && <p class="muted">Loading who has access…</p>}
        {grants && (
          <AddGrant
            disabled={saving}
            onAdd={(grant) => {
              const existing = grants.find((other) => sameGrantee(other, grant));
              if (existing?.owner) return `${grant.name} owns this project and has every permission.`;
              if (existing) change(existing, grant.permissions);
              else edit([...grants, grant]);
              return null;
            }}
          />
        )}
        {(loadError ?? saveError) && (
          <p class="error" role="alert">
            {loadError ?? saveError}
          </p>
        )}
      </div>
      <div class="actions">
        <button type="button" onClick={onClose} disabled={saving}>
          Cancel
        </button>
        <button type="button" class="primary" onClick={save} disabled={saving || !grants}>
          {saving ? 'Saving…' : 'Save'}
        </button>
      </div>
    </Modal>
  );
}

function GrantList({ grants, disabled, onChange }: { grants: Grant[]; disabled: boolean; onChange: (grant: Grant, permissions: string[] | null) => void }) {
  return (
    <table class="share-grants" aria-label="Who has access">
      <thead>
        <tr>
          <th scope="col">Who</th>
          <th scope="col">Access</th>
          <td />
        </tr>
      </thead>
      <tbody>
        {grants.map((grant) => (
          <tr key={`${grant.kind}:${grant.name}`}>
            <th scope="row">
              {grant.name} <span class="muted">{grant.owner ? '(owner)' : grant.kind === 'group' ? '(group)' : ''}</span>
            </th>
            <td>
              {grant.owner ? (
                'Full'
              ) : (
                <LevelSelect
                  label={`Access of ${grant.kind} ${grant.name}`}
                  permissions={grant.permissions}
                  disabled={disabled}
                  onChange={(level) => onChange(grant, permissionsOf(level))}
                />
              )}
            </td>
            <td>
              {!grant.owner && (
                <button type="button" disabled={disabled} onClick={() => onChange(grant, null)} aria-label={`Remove ${grant.kind} ${grant.name}`}>
                  Remove
                </button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A set granted outside these three levels (through the API) is shown as it is until a level is picked. */
function LevelSelect(props: { label: string; permissions: string[]; disabled?: boolean; onChange: (level: ShareLevel) => void }) {
  const level = levelOf(props.permissions);
  return (
    <select aria-label={props.label} value={level ?? 'custom'} disabled={props.disabled} onChange={(e) => props.onChange(e.currentTarget.value as ShareLevel)}>
      {level === null && (
        <option value="custom" disabled>
          Custom ({props.permissions.join(', ') || 'none'})
        </option>
      )}
      {SHARE_LEVELS.map((entry) => (
        <option key={entry.level} value={entry.level}>
          {entry.label}
        </option>
      ))}
    </select>
  );
}

/** Adds a user or group by name; returns a sentence when it cannot, which is shown beside the form. */
function AddGrant({ disabled, onAdd }: { disabled: boolean; onAdd: (grant: Grant) => string | null }) {
  const [kind, setKind] = useState<Kind>('user');
  const [name, setName] = useState('');
  const [level, setLevel] = useState<ShareLevel>('view');
  const [problem, setProblem] = useState<string | null>(null);
  const suggestions = useSuggestions();
  function submit(event: Event) {
    event.preventDefault();
    const trimmed = name.trim();
    if (!trimmed) return;
    const refusal = onAdd({ kind, name: trimmed, permissions: permissionsOf(level), owner: false });
    setProblem(refusal);
    if (!refusal) setName('');
  }
  return (
    <form class="share-add" onSubmit={submit} aria-label="Add a user or group">
      <fieldset disabled={disabled}>
        <legend>Add a user or group</legend>
        <div class="row">
          <label>
            Kind
            <select aria-label="Kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
              <option value="user">User</option>
              <option value="group">Group</option>
            </select>
          </label>
          <label class="share-name">
            {kind === 'user' ? 'Username' : 'Group name'}
            <input required value={name} onInput={(e) => setName(e.currentTarget.value)} list={`share-${kind}-names`} autocomplete="off" />
          </label>
          <label>
            Access
            <select aria-label="Access" value={level} onChange={(e) => setLevel(e.currentTarget.value as ShareLevel)}>
              {SHARE_LEVELS.map((entry) => (
                <option key={entry.level} value={entry.level}>
                  {entry.label}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Add</button>
        </div>
        <p class="field-help">View: see the project. Edit: also add and change tasks. Full: also delete. Changes apply when you save.</p>
        {problem && (
          <p class="error" role="alert">
            {problem}
          </p>
        )}
      </fieldset>
      <datalist id="share-user-names">
        {suggestions.users.map((entry) => (
          <option key={entry} value={entry} />
        ))}
      </datalist>
      <datalist id="share-group-names">
        {suggestions.groups.map((entry) => (
          <option key={entry} value={entry} />
        ))}
      </datalist>
    </form>
  );
}

/** Names to suggest: only staff may list users and groups, so for anyone else this stays empty. */
function useSuggestions(): { users: string[]; groups: string[] } {
  const [names, setNames] = useState<{ users: string[]; groups: string[] }>({ users: [], groups: [] });
  useEffect(() => {
    let current = true;
    Promise.all([listAll<{ username: string }>('/api/admin/users/'), listAll<{ name: string }>('/api/admin/groups/')]).then(
      ([users, groups]) => current && setNames({ users: users.map((user) => user.username), groups: groups.map((group) => group.name) }),
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, []);
  return names;
}

function message(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}
