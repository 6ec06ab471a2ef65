// The administration pages: users, groups, processing nodes and presets, one section per address
// (/admin/users/ and so on) so that a section can be linked to and survives a reload.
import { useEffect } from 'preact/hooks';
import { useStaff } from '../staff.ts';
import { GroupsSection } from './admin-groups.tsx';
import { NodesSection } from './admin-nodes.tsx';
import { PresetsSection } from './admin-presets.tsx';
import { StaffOnly } from './admin-shared.tsx';
import { UsersSection } from './admin-users.tsx';
import './admin.css';

const SECTIONS = [
  { id: 'users', label: 'Users' },
  { id: 'groups', label: 'Groups' },
  { id: 'nodes', label: 'Processing nodes' },
  { id: 'presets', label: 'Presets' },
] as const;

type SectionId = (typeof SECTIONS)[number]['id'];

export default function AdminPage({ section }: { section?: string }) {
  const active = section ?? 'users';
  const known = SECTIONS.find((entry) => entry.id === active);
  const staff = useStaff();
  useEffect(() => {
    document.title = `${known?.label ?? 'Administration'} · Aeromap`;
  }, [known]);
  return (
    <div class="page admin">
      <h1>Administration</h1>
      <SectionNav active={active} />
      {known ? <Section id={known.id} staff={staff} /> : <p>There is no section “{active}” here: pick one above.</p>}
    </div>
  );
}

function SectionNav({ active }: { active: string }) {
  return (
    <nav aria-label="Administration" class="admin-nav">
      {SECTIONS.map((entry) => (
        <a key={entry.id} href={`/admin/${entry.id}/`} aria-current={entry.id === active ? 'page' : undefined}>
          {entry.label}
        </a>
      ))}
    </nav>
  );
}

function Section({ id, staff }: { id: SectionId; staff: boolean | null }) {
  if (id === 'users' || id === 'groups') {
    if (staff === false) return <StaffOnly />;
    return id === 'users' ? <UsersSection /> : <GroupsSection />;
  }
  if (id === 'nodes') return <NodesSection staff={staff === true} />;
  return <PresetsSection />;
}
