/**
 * The console: reads the session, shows the sign-in page while it is not authenticated, else the
 * layout and the page of the route. The API client is bound to the chosen cell and the session's
 * CSRF token; a 401 from any call reads the session again (an expired session shows sign-in).
 */
import {useCallback, useEffect, useMemo, useState} from 'react';
import {makeApi} from './api';
import {ErrorAlert} from './components/ErrorAlert';
import {ErrorBoundary} from './components/ErrorBoundary';
import {Layout} from './Layout';
import {Login} from './pages/Login';
import {Page} from './pages';
import {useRoute} from './router';
import {AppCtx, type AppContext} from './session';
import type {Session} from './types';

export function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [epoch, setEpoch] = useState(0);
  const refreshSession = useCallback(() => setEpoch((n) => n + 1), []);

  useEffect(() => {
    let alive = true;
    makeApi({csrf: null})
      .get<Session>('/session')
      .then(
        (s) => {
          if (!alive) return;
          setSession(s);
          setError(null);
        },
        (e: unknown) => alive && setError(e),
      );
    return () => {
      alive = false;
    };
  }, [epoch]);

  const wanted = route.params.get('cell');
  const cell = wanted && session?.cells.includes(wanted) ? wanted : (session?.cell ?? '');
  const addressed = session && cell !== session.cell ? cell : undefined;
  const api = useMemo(
    () => makeApi({cell: addressed, csrf: session?.csrf ?? null, onUnauthorized: refreshSession}),
    [addressed, session?.csrf, refreshSession],
  );

  if (session === null)
    return (
      <main className="center">
        {error ? (
          <>
            <ErrorAlert error={error} />
            <button type="button" onClick={refreshSession}>
              Retry
            </button>
          </>
        ) : (
          <p className="muted">Loading…</p>
        )}
      </main>
    );
  if (!session.authenticated) return <Login onSignedIn={setSession} />;

  const ctx: AppContext = {session, api, route, cell, operator: session.role === 'operator', refreshSession};
  return (
    <AppCtx.Provider value={ctx}>
      <Layout onSignedOut={() => setSession({...session, authenticated: false, csrf: null})}>
        <ErrorBoundary key={route.path}>
          <Page route={route} />
        </ErrorBoundary>
      </Layout>
    </AppCtx.Provider>
  );
}
