import type {ReactNode} from 'react';
import {TaskLink} from '../components/Link';
import {StateBadge} from '../components/StateBadge';
import {Time} from '../components/Time';
import {isWaiting, num} from '../format';
import type {TaskLinks, TaskRecord} from '../types';

/**
 * What a task waits for, when it is not due: its parents still to succeed, or the end of the batch
 * it is the callback of. Null for a task that waits for nothing (its run_at is its due time).
 */
export function waitingText(t: TaskRecord, links: TaskLinks | undefined): string | null {
  if (!links || !isWaiting(t)) return null;
  if (links.waitingFor > 0) return `waiting for ${num(links.waitingFor)} parent${links.waitingFor === 1 ? '' : 's'} to succeed`;
  const b = links.batch;
  if (b && b.callbackId === t.id && b.doneAt === null)
    return `waiting for its batch: ${num(b.succeeded + b.dead + b.cancelled)} of ${num(b.total)} ended`;
  return null;
}

/** Linked tasks as a table: each a link to its page, its type and state, and `extra`'s column when given. */
function LinkedTasks<T extends {id: string; type: string; state: string}>({
  label,
  caption,
  tasks,
  extra,
}: {
  label: string;
  caption: ReactNode;
  tasks: readonly T[];
  extra?: {head: string; cell: (t: T) => string};
}) {
  if (tasks.length === 0) return null;
  return (
    <div className="table-wrap">
      <table aria-label={label}>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Task</th>
            <th scope="col">Type</th>
            <th scope="col">State</th>
            {extra && <th scope="col">{extra.head}</th>}
          </tr>
        </thead>
        <tbody>
          {tasks.map((t) => (
            <tr key={t.id}>
              <td>
                <TaskLink id={t.id} />
              </td>
              <td className="mono">{t.type}</td>
              <td>
                <StateBadge state={t.state} />
              </td>
              {extra && <td>{extra.cell(t)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A task's parents, dependents and batch (docs/workflows.md): each task a link to its page. */
export function LinksPanel({links, id}: {links: TaskLinks; id: string}) {
  const b = links.batch;
  return (
    <section className="panel" aria-labelledby="links-heading">
      <h2 id="links-heading">Dependencies and batch</h2>
      <LinkedTasks
        label="Parents: the tasks it waits for"
        caption={
          <>
            Parents{' '}
            <span className="muted small">
              (when one ends dead or cancelled: {links.onParentFailure === 'run' ? 'run anyway' : 'this task is cancelled'})
            </span>
          </>
        }
        tasks={links.parents}
        extra={{head: 'For this task', cell: (p) => (p.edge === 'waiting' ? 'waited for' : p.edge)}}
      />
      <LinkedTasks label="Dependents: the tasks that wait for it" caption="Dependents" tasks={links.dependents} />
      {b && (
        <dl className="fields" aria-label="Batch">
          <dt>Batch</dt>
          <dd className="mono">{b.id}</dd>
          <dt>This task</dt>
          <dd>{b.callbackId === id ? 'its callback, released when every member has ended' : 'a member'}</dd>
          <dt>Members ended</dt>
          <dd>
            {num(b.succeeded + b.dead + b.cancelled)} of {num(b.total)}{' '}
            <span className="muted">
              ({num(b.succeeded)} succeeded, {num(b.dead)} dead, {num(b.cancelled)} cancelled)
            </span>
          </dd>
          <dt>Callback</dt>
          <dd>
            <TaskLink id={b.callbackId} /> {b.callbackState && <StateBadge state={b.callbackState} />}
          </dd>
          <dt>Created</dt>
          <dd>
            <Time at={b.createdAt} />
          </dd>
          <dt>Done</dt>
          <dd>
            <Time at={b.doneAt} />
          </dd>
        </dl>
      )}
    </section>
  );
}
