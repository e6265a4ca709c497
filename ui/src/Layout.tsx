import {useEffect, useRef, useState, type ReactNode} from 'react';
import {ErrorAlert} from './components/ErrorAlert';
import {hrefOf, navigate} from './router';
import {useApp} from './session';

export const NAV: ReadonlyArray<{path: string; label: string}> = [
  {path: '/', label: 'Overview'},
  {path: '/types', label: 'Types'},
  {path: '/tasks', label: 'Tasks'},
  {path: '/dlq', label: 'Dead letters'},
  {path: '/cron', label: 'Cron'},
  {path: '/workers', label: 'Workers'},
  {path: '/doctor', label: 'Doctor'},
  {path: '/audit', label: 'Audit'},
];

function current(path: string, item: string): boolean {
  if (item === '/') return path === '/';
  return path === item || path.startsWith(`${item}/`);
}

/** The frame of every page: the main navigation, the cell, who is signed in. */
export function Layout({children, onSignedOut}: {children: ReactNode; onSignedOut: () => void}) {
  const {session, route, cell, api} = useApp();
  const [error, setError] = useState<unknown>(null);
  const shownPath = useRef(route.path);

  // Another page (not another query of the same page): start at its top, with the focus on its
  // content, so keyboard and screen-reader users land on the new page and not in the old one's place.
  useEffect(() => {
    if (shownPath.current === route.path) return;
    shownPath.current = route.path;
    window.scrollTo(0, 0);
    document.getElementById('main')?.focus();
  }, [route.path]);

  const signOut = async (): Promise<void> => {
    try {
      await api.send('DELETE', '/session');
      onSignedOut();
    } catch (e) {
      setError(e);
    }
  };

  return (
    <div className="shell">
      <a
        className="skip"
        href={window.location.hash || '#/'}
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header className="top">
        <a className="brand" href={hrefOf('/', {}, route)}>
          ax <span className="muted">console</span>
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.path}>
                <a href={hrefOf(n.path, {}, route)} aria-current={current(route.path, n.path) ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          {session.cells.length > 1 && (
            <label className="cell">
              Cell{' '}
              <select
                value={cell}
                onChange={(e) =>
                  navigate(
                    hrefOf(route.path, {
                      ...Object.fromEntries(route.params),
                      cell: e.target.value === session.cell ? null : e.target.value,
                    }),
                  )
                }
              >
                {session.cells.map((c) => (
                  <option key={c} value={c}>
                    {c}
                  </option>
                ))}
              </select>
            </label>
          )}
          <span className="user">
            <span className="name">{session.name ?? 'anonymous'}</span> <span className="role">{session.role ?? 'no role'}</span>
          </span>
          {session.authRequired && (
            <button type="button" onClick={() => void signOut()}>
              Sign out
            </button>
          )}
        </div>
      </header>
      <ErrorAlert error={error} />
      <main className="content" id="main" tabIndex={-1}>
        {children}
      </main>
      <footer className="foot muted">
        ax {session.version} · cell {cell}
      </footer>
    </div>
  );
}
