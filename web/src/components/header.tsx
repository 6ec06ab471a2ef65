import { session, signOut } from '../api.ts';
import { useStaff } from '../staff.ts';

export function Header() {
  const staff = useStaff() === true;
  const username = session.value?.username ?? '';
  return (
    <header class="app-header">
      <a class="brand" href="/dashboard/">Aeromap</a>
      <nav aria-label="Main">
        <a href="/dashboard/">Projects</a>
        {staff && <a href="/admin/users/">Administration</a>}
        <span class="user" title="Signed in as">{username}</span>
        <button type="button" onClick={signOut}>Sign out</button>
      </nav>
    </header>
  );
}
