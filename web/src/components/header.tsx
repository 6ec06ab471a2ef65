import { useEffect, useState } from 'preact/hooks';
import { api, signOut, token, tokenClaims } from '../api.ts';

/** Whether the signed-in user administers the system: the admin API answers staff only. */
function useIsStaff(): boolean {
  const [staff, setStaff] = useState(false);
  useEffect(() => {
    api('/api/admin/users/?page_size=1').then(() => setStaff(true), () => setStaff(false));
  }, [token.value]);
  return staff;
}

export function Header() {
  const staff = useIsStaff();
  const username = token.value ? String(tokenClaims(token.value)?.username ?? '') : '';
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
