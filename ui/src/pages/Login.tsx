import {useState, type FormEvent} from 'react';
import {makeApi} from '../api';
import {ErrorAlert} from '../components/ErrorAlert';
import {TextField} from '../components/Field';
import type {Session} from '../types';

/** Sign-in with an access token; the server sets the session cookie. */
export function Login({onSignedIn}: {onSignedIn: (s: Session) => void}) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    if (token.trim() === '') {
      setError('Enter your access token');
      return;
    }
    setBusy(true);
    try {
      const s = await makeApi({csrf: null}).send<Session>('POST', '/session', {token: token.trim()});
      setError(null);
      onSignedIn(s);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="login">
      <form onSubmit={(e) => void submit(e)} className="card">
        <h1>Sign in to ax</h1>
        <TextField label="Token" type="password" value={token} onChange={setToken} autoFocus />
        <ErrorAlert error={error} />
        <button type="submit" className="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
