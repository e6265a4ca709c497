import {StateBadge} from '../components/StateBadge';
import {Time, TimeCell} from '../components/Time';
import {duration} from '../format';
import type {HistoryEntry, TaskState} from '../types';

interface Attempt {
  n: number;
  worker: string | null;
  start: string;
  end: string | null;
  outcome: TaskState | null;
  error: string | null;
  stack: string | null;
}

/** Attempts from the timeline: a `running` event starts one, the next event from `running` ends it. */
export function attemptsOf(entries: readonly HistoryEntry[]): Attempt[] {
  const out: Attempt[] = [];
  let open: Attempt | null = null;
  for (const e of entries) {
    if (e.to === 'running') {
      open = {n: e.attempt, worker: e.worker, start: e.at, end: null, outcome: null, error: null, stack: null};
      out.push(open);
    } else if (e.from === 'running') {
      if (open === null) {
        open = {n: e.attempt, worker: e.worker, start: e.startedAt ?? e.at, end: null, outcome: null, error: null, stack: null};
        out.push(open);
      }
      open.end = e.at;
      open.outcome = e.to;
      open.error = e.error;
      open.stack = e.stack;
      open.worker = open.worker ?? e.worker;
      open = null;
    }
  }
  return out;
}

/** The attempts (worker, start, duration, outcome, error, stack) and every event of the task. */
export function Timeline({entries}: {entries: readonly HistoryEntry[]}) {
  const attempts = attemptsOf(entries);
  return (
    <>
      {attempts.length === 0 ? (
        <p className="muted">No attempt yet.</p>
      ) : (
        <div className="table-wrap">
          <table aria-label="Attempts">
            <thead>
              <tr>
                <th scope="col" className="num">
                  #
                </th>
                <th scope="col">Worker</th>
                <th scope="col">Start</th>
                <th scope="col" className="num">
                  Duration
                </th>
                <th scope="col">Outcome</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {attempts.map((a, i) => (
                <tr key={`${a.start}-${i}`}>
                  <td className="num">{a.n}</td>
                  <td className="mono">{a.worker ?? '—'}</td>
                  <TimeCell at={a.start} />
                  <td className="num">{a.end ? duration(Date.parse(a.end) - Date.parse(a.start)) : 'running'}</td>
                  <td>{a.outcome ? <StateBadge state={a.outcome} /> : <StateBadge state="running" />}</td>
                  <td className="error-cell">
                    {a.error && <div className="pre-wrap">{a.error}</div>}
                    {a.stack && (
                      <details>
                        <summary>Stack</summary>
                        <pre className="stack">{a.stack}</pre>
                      </details>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <details className="events">
        <summary>All events ({entries.length})</summary>
        <ol className="event-list">
          {entries.map((e, i) => (
            <li key={`${e.at}-${i}`}>
              <Time at={e.at} /> <span className="mono">{e.from ?? '∅'}</span> → <StateBadge state={e.to} />{' '}
              <span className="muted">attempt {e.attempt}</span> {e.worker && <span className="mono muted">{e.worker}</span>}{' '}
              {e.error && <span className="pre-wrap">{e.error}</span>}
            </li>
          ))}
        </ol>
      </details>
    </>
  );
}
