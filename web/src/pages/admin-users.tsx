// Users: who may sign in, whether they are staff, and the groups they belong to.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import type { Group, User } from './admin-logic.ts';
import { AdminSection, AdminTable, EditAndDelete, StaffOnly, type UsersAndGroups, YesNo, useUsersAndGroups } from './admin-shared.tsx';
import { FormModal } from '../components/form-modal.tsx';

export function UsersSection() {
  const loaded = useUsersAndGroups();
  const [editing, setEditing] = useState<User | 'new' | null>(null);
  if (loaded.forbidden) return <StaffOnly />;
  const groups = loaded.data?.groups ?? [];
  return (
    <AdminSection
      id="users"
      title="Users"
      addLabel="Add user"
      onAdd={() => setEditing('new')}
      loaded={loaded}
      loadingText="Loading users…"
      table={(data) => <UsersTable data={data} onEdit={setEditing} onChanged={loaded.reload} />}
    >
      {editing && <UserForm user={editing === 'new' ? null : editing} groups={groups} onSaved={loaded.reload} onClose={() => setEditing(null)} />}
    </AdminSection>
  );
}

function UsersTable({ data, onEdit, onChanged }: { data: UsersAndGroups; onEdit: (user: User) => void; onChanged: () => void }) {
  const groupName = new Map(data.groups.map((group) => [group.id, group.name]));
  return (
    <AdminTable section="users" headers={['Username', 'Email', 'Staff', 'Superuser', 'Active', 'Groups']}>
      {data.users.map((user) => (
        <tr key={user.id}>
          <th scope="row">{user.username}</th>
          <td>{user.email || <span class="muted">—</span>}</td>
          <td>
            <YesNo value={user.is_staff} />
          </td>
          <td>
            <YesNo value={user.is_superuser} />
          </td>
          <td>
            <YesNo value={user.is_active} />
          </td>
          <td>{user.groups.map((id) => groupName.get(id) ?? `#${id}`).join(', ') || <span class="muted">None</span>}</td>
          <td class="admin-actions">
            <EditAndDelete noun="user" name={user.username} path={`/api/admin/users/${user.id}/`} onEdit={() => onEdit(user)} onDeleted={onChanged} />
          </td>
        </tr>
      ))}
    </AdminTable>
  );
}

/** Creates a user, or changes one; the password is sent only when typed, so that editing keeps it otherwise. */
function UserForm({ user, groups, onSaved, onClose }: { user: User | null; groups: Group[]; onSaved: () => void; onClose: () => void }) {
  const [fields, setFields] = useState({
    username: user?.username ?? '',
    email: user?.email ?? '',
    first_name: user?.first_name ?? '',
    last_name: user?.last_name ?? '',
    password: '',
    is_staff: user?.is_staff ?? false,
    is_superuser: user?.is_superuser ?? false,
    // The API makes a user inactive unless told otherwise; a new account is meant to sign in.
    is_active: user?.is_active ?? true,
    groups: user?.groups ?? [],
  });
  const set = <K extends keyof typeof fields>(key: K, value: (typeof fields)[K]) => setFields((old) => ({ ...old, [key]: value }));
  async function save() {
    const { password, ...rest } = fields;
    const body = password ? { ...rest, password } : rest;
    if (user) await api(`/api/admin/users/${user.id}/`, { method: 'PATCH', body });
    else await api('/api/admin/users/', { method: 'POST', body: { ...rest, password } });
    onSaved();
  }
  return (
    <FormModal title={user ? `Edit user ${user.username}` : 'Add user'} saveLabel={user ? 'Save' : 'Add user'} onSave={save} onClose={onClose}>
      <label>
        Username
        <input required value={fields.username} onInput={(e) => set('username', e.currentTarget.value)} autocomplete="off" pattern="[\w.@+\-]+" />
        <span class="field-help">Letters, digits and @ . + - _</span>
      </label>
      <label>
        {user ? 'New password' : 'Password'}
        <input type="password" required={!user} value={fields.password} onInput={(e) => set('password', e.currentTarget.value)} autocomplete="new-password" />
        {user && <span class="field-help">Leave empty to keep the current password.</span>}
      </label>
      <label>
        Email
        <input type="email" value={fields.email} onInput={(e) => set('email', e.currentTarget.value)} />
      </label>
      <div class="grid2">
        <label>
          First name
          <input value={fields.first_name} onInput={(e) => set('first_name', e.currentTarget.value)} />
        </label>
        <label>
          Last name
          <input value={fields.last_name} onInput={(e) => set('last_name', e.currentTarget.value)} />
        </label>
      </div>
      <fieldset class="admin-checks">
        <legend>Rights</legend>
        <label class="inline">
          <input type="checkbox" checked={fields.is_active} onChange={(e) => set('is_active', e.currentTarget.checked)} />
          Active (may sign in)
        </label>
        <label class="inline">
          <input type="checkbox" checked={fields.is_staff} onChange={(e) => set('is_staff', e.currentTarget.checked)} />
          Staff (may administer)
        </label>
        <label class="inline">
          <input type="checkbox" checked={fields.is_superuser} onChange={(e) => set('is_superuser', e.currentTarget.checked)} />
          Superuser (every permission)
        </label>
      </fieldset>
      <GroupChoices groups={groups} chosen={fields.groups} onChange={(ids) => set('groups', ids)} />
    </FormModal>
  );
}

function GroupChoices({ groups, chosen, onChange }: { groups: Group[]; chosen: number[]; onChange: (ids: number[]) => void }) {
  if (!groups.length) return <p class="muted">There are no groups yet.</p>;
  return (
    <fieldset class="admin-checks admin-scroll">
      <legend>Groups</legend>
      {groups.map((group) => (
        <label class="inline" key={group.id}>
          <input
            type="checkbox"
            checked={chosen.includes(group.id)}
            onChange={(e) => onChange(e.currentTarget.checked ? [...chosen, group.id] : chosen.filter((id) => id !== group.id))}
          />
          {group.name}
        </label>
      ))}
    </fieldset>
  );
}
