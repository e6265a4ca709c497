import type {ReactNode} from 'react';
import {hrefOf, type Params} from '../router';
import {useApp} from '../session';

/** A link to a route of the console, keeping the chosen cell. */
export function Link({to, params, children, className}: {to: string; params?: Params; children: ReactNode; className?: string}) {
  const {route} = useApp();
  return (
    <a href={hrefOf(to, params, route)} className={className}>
      {children}
    </a>
  );
}

/** A task id as a link to its page: the full id, monospace. */
export function TaskLink({id}: {id: string}) {
  return (
    <Link to={`/tasks/${encodeURIComponent(id)}`} className="id">
      {id}
    </Link>
  );
}
