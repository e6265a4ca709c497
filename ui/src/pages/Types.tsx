import {useState} from 'react';
import {ErrorAlert} from '../components/ErrorAlert';
import {Link} from '../components/Link';
import {StateBadge} from '../components/StateBadge';
import {Time} from '../components/Time';
import {duration, num, pct, rate} from '../format';
import {usePoll} from '../poll';
import {hrefOf} from '../router';
import {useApp} from '../session';
import type {TypeView} from '../types';
import {TypeActionDialog, type TypeAction} from './TypeActionDialog';

function parkedText(p: TypeView['parked']): {total: number; detail: string} {
  const entries = Object.entries(p).filter(([, n]) => (n ?? 0) > 0);
  return {total: entries.reduce((s, [, n]) => s + (n ?? 0), 0), detail: entries.map(([k, n]) => `${k} ${n}`).join(', ')};
}

/** The failure ratio: the breaker's last minute, else the live workers' last interval. */
function failureOf(t: TypeView): number | null {
  if (t.failureRate1m !== null && t.failureRate1m !== undefined) return t.failureRate1m;
  return t.failurePct === null || t.failurePct === undefined ? null : t.failurePct / 100;
}

/** Flow control per type: backlog, rate, failures, breaker, pause, limits; operator actions. Polls every 2 s. */
export function Types() {
  const {api, operator, route} = useApp();
  const {data, error, reload} = usePoll(() => api.get<{at: string; types: TypeView[]}>('/types'), 2000, [api]);
  const [open, setOpen] = useState<{action: TypeAction; type: TypeView} | null>(null);
  const [done, setDone] = useState<string>('');

  return (
    <>
      <h1>Types</h1>
      <ErrorAlert error={error} />
      <p className="status" role="status">
        {done}
      </p>
      {data && data.types.length === 0 && <p className="muted">No task types yet.</p>}
      {data && data.types.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Task types">
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Handlers</th>
                <th scope="col" className="num">
                  Due
                </th>
                <th scope="col" className="num">
                  Delayed
                </th>
                <th scope="col" className="num">
                  Parked
                </th>
                <th scope="col" className="num">
                  Running
                </th>
                <th scope="col" className="num">
                  Dead
                </th>
                <th scope="col" className="num">
                  Rate
                </th>
                <th scope="col" className="num">
                  Failure
                </th>
                <th scope="col" className="num">
                  p95
                </th>
                <th scope="col">Breaker</th>
                <th scope="col">Paused</th>
                <th scope="col">Limits</th>
                {operator && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {data.types.map((t) => {
                const parked = parkedText(t.parked);
                return (
                  <tr key={t.type}>
                    <th scope="row" className="mono">
                      <Link to="/tasks" params={{type: t.type}}>
                        {t.type}
                      </Link>{' '}
                      <a
                        className="small"
                        href={hrefOf(`/types/${encodeURIComponent(t.type)}`, {}, route)}
                        aria-label={`Keys and history of ${t.type}`}
                      >
                        keys
                      </a>
                    </th>
                    <td title={t.workers.join(', ')}>{t.noHandler ? <StateBadge state="no handler" /> : `${t.workers.length} live`}</td>
                    <td className="num" title={t.oldestDueAt ? `oldest due since ${t.oldestDueAt}` : undefined}>
                      {num(t.due)}
                    </td>
                    <td className="num">
                      {num(t.delayed)}
                      {t.waiting ? <span className="muted small"> ({num(t.waiting)} waiting)</span> : null}
                    </td>
                    <td className="num" title={parked.detail || undefined}>
                      {num(parked.total)}
                    </td>
                    <td className="num">{num(t.running)}</td>
                    <td className="num">
                      {t.dead > 0 ? (
                        <Link to="/dlq" params={{type: t.type}}>
                          {num(t.dead)}
                        </Link>
                      ) : (
                        num(t.dead)
                      )}
                    </td>
                    <td className="num">{rate(t.rate1m ?? t.rate)}</td>
                    <td className="num">{pct(failureOf(t))}</td>
                    <td className="num">{duration(t.p95Ms)}</td>
                    <td>
                      <StateBadge state={t.breaker.state} />
                      {t.breaker.until && (
                        <span className="muted small">
                          {' '}
                          until <Time at={t.breaker.until} />
                        </span>
                      )}
                    </td>
                    <td>
                      {t.paused ? (
                        <span title={[t.paused.by && `by ${t.paused.by}`, t.paused.reason].filter(Boolean).join(': ')}>
                          <StateBadge state="paused" /> <Time at={t.paused.since} />
                          {t.paused.reason && <span className="muted small clip-inline"> {t.paused.reason}</span>}
                        </span>
                      ) : (
                        <span className="muted">no</span>
                      )}
                    </td>
                    <td className="nowrap">
                      {t.limits.maxRunning === null && t.limits.rate === null
                        ? '—'
                        : [
                            t.limits.maxRunning !== null && `≤ ${t.limits.maxRunning} running`,
                            t.limits.rate !== null && rate(t.limits.rate),
                          ]
                            .filter(Boolean)
                            .join(', ')}
                    </td>
                    {operator && (
                      <td className="actions">
                        {t.paused ? (
                          <button type="button" aria-label={`Resume ${t.type}`} onClick={() => setOpen({action: 'resume', type: t})}>
                            Resume
                          </button>
                        ) : (
                          <button type="button" aria-label={`Pause ${t.type}`} onClick={() => setOpen({action: 'pause', type: t})}>
                            Pause
                          </button>
                        )}
                        <button
                          type="button"
                          aria-label={`Reset breaker ${t.type}`}
                          disabled={t.breaker.state === 'closed'}
                          title={t.breaker.state === 'closed' ? 'The breaker is closed: nothing to reset' : undefined}
                          onClick={() => setOpen({action: 'reset', type: t})}
                        >
                          Reset breaker
                        </button>
                        <button type="button" aria-label={`Limits ${t.type}`} onClick={() => setOpen({action: 'limits', type: t})}>
                          Limits
                        </button>
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {open && (
        <TypeActionDialog
          action={open.action}
          type={open.type}
          onClose={() => setOpen(null)}
          onDone={(text) => {
            setOpen(null);
            setDone(text);
            reload();
          }}
        />
      )}
    </>
  );
}
