import { useState } from 'preact/hooks';
import { ApiError, type Session, api, signIn } from '../api.ts';

export function SignIn() {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    setBusy(true);
    setError(null);
    try {
      signIn(await api<Session>('/api/session/', { method: 'POST', body: new URLSearchParams(form as unknown as Record<string, string>) }));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'The server cannot be reached.');
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <form onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Aeromap</h1>
        <label>
          Username
          <input name="username" autocomplete="username" required autofocus />
        </label>
        <label>
          Password
          <input name="password" type="password" autocomplete="current-password" required />
        </label>
        {error && <p role="alert" class="error">{error}</p>}
        <button type="submit" class="primary" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>
  );
}
