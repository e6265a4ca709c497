import {ErrorAlert} from '../components/ErrorAlert';
import {Link} from '../components/Link';
import {Time} from '../components/Time';
import {num} from '../format';
import {usePoll} from '../poll';
import {useApp} from '../session';
import type {TypeDetail as Detail} from '../types';

/** A share as whole percent, 100 only when it is all (as ax types show says it). */
const share = (s: number): string => `${s >= 1 ? 100 : Math.min(99, Math.round(s * 100))} %`;

/**
 * One type: its backlog, its task keys (the keys with the most backlog and running, and a key that
 * holds most of the backlog) and its history. Keys and history come from users: text only, never
 * markup. Polls every 5 s (the keys read scans the type's keyed backlog).
 */
export function TypeDetail({type}: {type: string}) {
  const {api} = useApp();
  const {data, error} = usePoll(() => api.get<Detail>(`/types/${encodeURIComponent(type)}`), 5000, [api, type]);
  const k = data?.keys;
  const fair = data ? data.limits.fair === true || data.limits.maxRunningPerKey != null || data.limits.ratePerKey != null : false;
  return (
    <>
      <h1>
        Type <span className="mono">{type}</span>
      </h1>
      <ErrorAlert error={error} />
      {data && (
        <p>
          {num(data.due)} due · {num(data.delayed)} delayed
          {data.waiting ? ` (${num(data.waiting)} waiting for their parents or batch)` : ''} · {num(data.running)} running ·{' '}
          {num(data.dead)} dead ·{' '}
          <Link to="/tasks" params={{type}}>
            its tasks
          </Link>
        </p>
      )}
      <h2>Keys</h2>
      {k && !k.indexed && (
        <p className="muted">
          Not indexed: <code>ax migrate --task-keys</code> adds the index that per-key limits, fair dispatch and this view read.
        </p>
      )}
      {k && k.indexed && k.withBacklog === 0 && k.withRunning === 0 && <p className="muted">No task with a key waiting or running.</p>}
      {k && (k.withBacklog > 0 || k.withRunning > 0) && (
        <>
          <p>
            {num(k.withBacklog)} keys with a backlog ({num(k.backlog)} tasks), {num(k.withRunning)} running ({num(k.running)} attempts).
          </p>
          {k.dominant && (
            <div className="warning-box" role="note" aria-label="Dominant key">
              <p>
                Key <span className="mono">{k.dominant.key}</span> holds {share(k.dominant.share)} of the backlog of {num(k.dominant.of)}
                {fair ? ': fair dispatch or a per-key limit is on, it waits its turn.' : ': the other keys wait behind it.'}
              </p>
              {!fair && (
                <p>
                  Consider <code>ax types set {type} --fair</code> or <code>--max-running-per-key N</code>.
                </p>
              )}
            </div>
          )}
          <div className="table-wrap">
            <table aria-label="Top keys">
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col" className="num">
                    Backlog
                  </th>
                  <th scope="col" className="num">
                    Running
                  </th>
                </tr>
              </thead>
              <tbody>
                {k.top.map((r) => (
                  <tr key={r.key}>
                    <td className="mono">{r.key}</td>
                    <td className="num">{num(r.backlog)}</td>
                    <td className="num">{num(r.running)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <h2>History</h2>
      {data && data.history.length === 0 && <p className="muted">No history yet.</p>}
      {data && data.history.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Type history">
            <thead>
              <tr>
                <th scope="col">At</th>
                <th scope="col">Event</th>
                <th scope="col">By</th>
                <th scope="col">Detail</th>
              </tr>
            </thead>
            <tbody>
              {data.history.map((h, i) => (
                <tr key={i}>
                  <td>
                    <Time at={h.at} />
                  </td>
                  <td>{h.event}</td>
                  <td>{h.actor}</td>
                  <td className="clip-inline">{h.detail ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
