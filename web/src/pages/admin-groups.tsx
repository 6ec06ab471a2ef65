// Groups: a name and its members. Membership is stored on the users, so changing members changes users.
import { useRef, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { type Group, type User, membersOf, membershipChanges } from './admin-logic.ts';
import { AdminSection, AdminTable, EditAndDelete, StaffOnly, type UsersAndGroups, useUsersAndGroups } from './admin-shared.tsx';
import { FormModal } from '../components/form-modal.tsx';

export function GroupsSection() {
  const loaded = useUsersAndGroups();
  const [editing, setEditing] = useState<Group | 'new' | null>(null);
  if (loaded.forbidden) return <StaffOnly />;
  return (
    <AdminSection
      id="groups"
      title="Groups"
      addLabel="Add group"
      onAdd={() => setEditing('new')}
      loaded={loaded}
      loadingText="Loading groups…"
      table={(data) => <GroupsTable data={data} onEdit={setEditing} onChanged={loaded.reload} />}
    >
      {editing && loaded.data && (
        <GroupForm group={editing === 'new' ? null : editing} users={loaded.data.users} onSaved={loaded.reload} onClose={() => setEditing(null)} />
      )}
    </AdminSection>
  );
}

function GroupsTable({ data, onEdit, onChanged }: { data: UsersAndGroups; onEdit: (group: Group) => void; onChanged: () => void }) {
  return (
    <AdminTable section="groups" headers={['Name', 'Members']} emptyText={data.groups.length === 0 && 'No groups yet.'}>
      {data.groups.map((group) => {
        const members = membersOf(data.users, group.id);
        return (
          <tr key={group.id}>
            <th scope="row">{group.name}</th>
            <td>{members.map((user) => user.username).join(', ') || <span class="muted">No members</span>}</td>
            <td class="admin-actions">
              <EditAndDelete noun="group" name={group.name} path={`/api/admin/groups/${group.id}/`} onEdit={() => onEdit(group)} onDeleted={onChanged} />
            </td>
          </tr>
        );
      })}
    </AdminTable>
  );
}

/** Creates or renames a group, then moves each user whose membership was ticked or unticked. */
function GroupForm({ group, users, onSaved, onClose }: { group: Group | null; users: User[]; onSaved: () => void; onClose: () => void }) {
  const [name, setName] = useState(group?.name ?? '');
  const [members, setMembers] = useState(() => new Set(group ? membersOf(users, group.id).map((user) => user.id) : []));
  const [filter, setFilter] = useState('');
  // What the server holds so far: a save whose member changes failed has already created or renamed the
  // group, and saving again must not create a second one.
  const saved = useRef<{ id: number; name: string } | null>(group && { id: group.id, name: group.name });
  function toggle(id: number, on: boolean) {
    setMembers((old) => {
      const next = new Set(old);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });
  }
  async function save() {
    if (!saved.current) saved.current = { id: (await api<Group>('/api/admin/groups/', { method: 'POST', body: { name } })).id, name };
    else if (name !== saved.current.name) {
      await api(`/api/admin/groups/${saved.current.id}/`, { method: 'PATCH', body: { name } });
      saved.current = { ...saved.current, name };
    }
    const id = saved.current.id;
    try {
      for (const change of membershipChanges(users, id, members)) {
        await api(`/api/admin/users/${change.id}/`, { method: 'PATCH', body: { groups: change.groups } });
      }
    } finally {
      // The group exists (or was renamed) even when a member could not be moved: show it either way.
      onSaved();
    }
  }
  const needle = filter.trim().toLowerCase();
  const shown = needle ? users.filter((user) => user.username.toLowerCase().includes(needle)) : users;
  return (
    <FormModal title={group ? `Edit group ${group.name}` : 'Add group'} saveLabel={group ? 'Save' : 'Add group'} onSave={save} onClose={onClose}>
      <label>
        Name
        <input required maxLength={150} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <fieldset class="admin-checks">
        <legend>
          Members <span class="muted">({members.size})</span>
        </legend>
        {users.length > 8 && (
          <label>
            Find a user
            <input type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
          </label>
        )}
        <div class="admin-scroll">
          {shown.map((user) => (
            <label class="inline" key={user.id}>
              <input type="checkbox" checked={members.has(user.id)} onChange={(e) => toggle(user.id, e.currentTarget.checked)} />
              {user.username}
            </label>
          ))}
        </div>
      </fieldset>
    </FormModal>
  );
}
