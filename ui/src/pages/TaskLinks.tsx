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

/** A task's parents, dependents and batch (docs/workflows.md): each task a link to its page. */
export function LinksPanel({links, id}: {links: TaskLinks; id: string}) {
  const b = links.batch;
  return (
    <section className="panel" aria-labelledby="links-heading">
      <h2 id="links-heading">Dependencies and batch</h2>
      {links.parents.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Parents: the tasks it waits for">
            <caption>
              Parents{' '}
              <span className="muted small">
                (when one ends dead or cancelled: {links.onParentFailure === 'run' ? 'run anyway' : 'this task is cancelled'})
              </span>
            </caption>
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Type</th>
                <th scope="col">State</th>
                <th scope="col">For this task</th>
              </tr>
            </thead>
            <tbody>
              {links.parents.map((p) => (
                <tr key={p.id}>
                  <td>
                    <TaskLink id={p.id} />
                  </td>
                  <td className="mono">{p.type}</td>
                  <td>
                    <StateBadge state={p.state} />
                  </td>
                  <td>{p.edge === 'waiting' ? 'waited for' : p.edge}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {links.dependents.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Dependents: the tasks that wait for it">
            <caption>Dependents</caption>
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Type</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {links.dependents.map((d) => (
                <tr key={d.id}>
                  <td>
                    <TaskLink id={d.id} />
                  </td>
                  <td className="mono">{d.type}</td>
                  <td>
                    <StateBadge state={d.state} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
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
