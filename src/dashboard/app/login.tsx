// Logging in with the admin's credentials, and changing the generated password when the service
// asks for it (403 PASSWORD_CHANGE_REQUIRED: on a public bind, until it is changed, a token can do
// nothing else).
import { useState } from 'preact/hooks';
import { ApiError, changePassword, login, roleOf, session } from './api.js';

function explain(err: unknown): string {
  if (!(err instanceof ApiError)) return String(err);
  if (err.code === 'INVALID_CREDENTIALS') return 'Wrong user name or password.';
  if (err.status === 429) return `Too many failed attempts from this address: try again in ${err.retryAfter ?? 'a few'} s.`;
  if (err.status === 0) return 'The service cannot be reached.';
  return err.detail;
}

export function Login(props: { notice: string | null; onDone: (user: string, token: string) => void }) {
  const [user, setUser] = useState(session.user ?? 'admin');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const answer = await login(user, password);
      const role = roleOf(answer.accessToken);
      if (role !== 'admin') {
        setError(`${user} is ${role === 'app' ? 'an app user (stream lookups only)' : `not an admin (${role})`}: the dashboard needs the admin's credentials.`);
        setBusy(false);
        return;
      }
      props.onDone(user, answer.accessToken);
    } catch (err) {
      setError(explain(err));
      setBusy(false);
    }
  };
  return (
    <main class="login" id="main">
      <form class="card login-card" onSubmit={(e) => void submit(e)} aria-describedby={props.notice ? 'login-notice' : undefined}>
        <h1>
          <span class="brand-mark" aria-hidden="true" /> Switchyard
        </h1>
        <p class="muted">Log in with the admin's credentials.</p>
        {props.notice && (
          <p id="login-notice" class="notice" role="status">
            {props.notice}
          </p>
        )}
        <label for="login-user">User name</label>
        <input id="login-user" name="username" autocomplete="username" value={user} onInput={(e) => setUser((e.target as HTMLInputElement).value)} required />
        <label for="login-password">Password</label>
        <input
          id="login-password"
          name="password"
          type="password"
          autocomplete="current-password"
          value={password}
          onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
          required
          autofocus
        />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
        <p class="muted small">
          The token is kept in this tab only (sessionStorage) and ends with it. <a href="/as/v1/docs">API reference</a>
        </p>
      </form>
    </main>
  );
}

export function ChangePassword(props: { user: string; onDone: (token: string) => void; onCancel: () => void }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (next !== again) return setError('The new passwords differ.');
    setBusy(true);
    setError(null);
    try {
      await changePassword(current, next);
      // Every earlier token of the admin stops working: log in with the new password.
      props.onDone((await login(props.user, next)).accessToken);
    } catch (err) {
      setError(err instanceof ApiError && err.errors.length > 0 ? err.errors.map((x) => `${x.path.replace(/^body\./, '')} ${x.message}`).join('; ') : explain(err));
      setBusy(false);
    }
  };
  return (
    <main class="login" id="main">
      <form class="card login-card" onSubmit={(e) => void submit(e)}>
        <h1>Change the admin password</h1>
        <p class="notice" role="status">
          The service still has its generated password and listens beyond loopback: change it before anything else (docs/security.md).
        </p>
        <label for="pw-current">Current password</label>
        <input id="pw-current" type="password" autocomplete="current-password" value={current} onInput={(e) => setCurrent((e.target as HTMLInputElement).value)} required autofocus />
        <label for="pw-new">New password (at least 12 characters)</label>
        <input id="pw-new" type="password" autocomplete="new-password" minLength={12} value={next} onInput={(e) => setNext((e.target as HTMLInputElement).value)} required />
        <label for="pw-again">New password again</label>
        <input id="pw-again" type="password" autocomplete="new-password" minLength={12} value={again} onInput={(e) => setAgain((e.target as HTMLInputElement).value)} required />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Changing…' : 'Change password'}
        </button>
        <button type="button" class="link" onClick={props.onCancel}>
          Log out
        </button>
      </form>
    </main>
  );
}
