import type {Route} from '../router';
import {Audit} from './Audit';
import {Cron} from './Cron';
import {DeadLetters} from './DeadLetters';
import {Doctor} from './Doctor';
import {Overview} from './Overview';
import {Task} from './Task';
import {Tasks} from './Tasks';
import {TypeDetail} from './TypeDetail';
import {Types} from './Types';
import {Workers} from './Workers';

/** The page of a route. */
export function Page({route}: {route: Route}) {
  const p = route.path;
  if (p === '/') return <Overview />;
  if (p === '/types') return <Types />;
  if (p.startsWith('/types/')) {
    const type = decodeURIComponent(p.slice('/types/'.length));
    return <TypeDetail key={type} type={type} />;
  }
  if (p === '/tasks') return <Tasks key="tasks" />;
  if (p.startsWith('/tasks/')) {
    const id = decodeURIComponent(p.slice('/tasks/'.length));
    return <Task key={id} id={id} />;
  }
  if (p === '/dlq') return <DeadLetters />;
  if (p === '/cron') return <Cron />;
  if (p === '/workers') return <Workers />;
  if (p === '/doctor') return <Doctor />;
  if (p === '/audit') return <Audit />;
  return (
    <>
      <h1>Not found</h1>
      <p>
        There is no page at <code>{p}</code>.
      </p>
    </>
  );
}
