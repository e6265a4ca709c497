import {Chart} from '../components/Chart';
import {ErrorAlert} from '../components/ErrorAlert';
import {Link} from '../components/Link';
import {StateBadge} from '../components/StateBadge';
import {Time} from '../components/Time';
import {absolute, clock, duration, num, rate} from '../format';
import {usePoll} from '../poll';
import {useApp} from '../session';
import {TASK_STATES, type Overview as OverviewData} from '../types';
import {WorkerTable} from './WorkerTable';

/** The states the server counts over its window (finishedSince) rather than over the whole table. */
const WINDOWED = new Set(['succeeded', 'cancelled']);

function Stat({label, value, testId, title}: {label: string; value: string; testId?: string; title?: string}) {
  return (
    <div className="stat" title={title}>
      <div className="stat-label">{label}</div>
      <div className="stat-value" data-testid={testId}>
        {value}
      </div>
    </div>
  );
}

/** Counts per state, backlog, alert, rates over the last hour, live workers. Polls every 2 s. */
export function Overview() {
  const {api} = useApp();
  const {data, error} = usePoll(() => api.get<OverviewData>('/overview'), 2000, [api]);
  const series = data?.series ?? [];
  const times = series.map((p) => p.at);
  const b = data?.backlog ?? null;
  const trend = b?.trendPerMin;

  return (
    <>
      <h1>Overview</h1>
      <ErrorAlert error={error} />
      {data && (
        <>
          <div className={`banner level-${data.alert.level}`}>
            <strong>{data.alert.level === 'ok' ? 'OK' : data.alert.level}</strong> <span>{data.alert.reason}</span>
            {data.at && (
              <span className="muted right">
                read <Time at={data.at} />
              </span>
            )}
          </div>
          {(data.failures ?? []).length > 0 && (
            <ul className="warnings" aria-label="Could not read">
              {(data.failures ?? []).map((f) => (
                <li key={f}>{f}</li>
              ))}
            </ul>
          )}
          <section aria-label="Tasks per state" className="stats states">
            {TASK_STATES.map((s) => (
              <Link key={s} to="/tasks" params={{state: s}} className={`state-card s-${s}`}>
                <span className="stat-label">
                  <StateBadge state={s} />
                </span>
                <span className="stat-value" data-testid={`stat-${s}`}>
                  {num(data.states?.[s])}
                </span>
                {data.finishedSince && WINDOWED.has(s) && (
                  <span className="stat-note" title={`finished since ${absolute(data.finishedSince)}`}>
                    since {clock(data.finishedSince)}
                  </span>
                )}
              </Link>
            ))}
          </section>
          <section aria-label="Backlog" className="stats">
            <Stat label="Backlog" value={num(b?.total)} testId="stat-backlog" />
            <Stat label="Due" value={num(b?.due)} testId="stat-due" />
            <Stat label="Delayed" value={num(b?.delayed)} testId="stat-delayed" />
            <Stat
              label="Trend"
              value={trend === null || trend === undefined ? '—' : `${trend > 0 ? '+' : ''}${trend.toFixed(0)}/min`}
              testId="stat-trend"
            />
            <Stat label="Oldest due" value={duration(data.oldestDueAgeMs)} testId="stat-oldest-due" />
            <Stat label="Submitted" value={rate(data.submitRate)} testId="stat-submit-rate" />
            <Stat label="Finished" value={rate(data.consumeRate)} testId="stat-consume-rate" />
            <Stat
              label="Outbox lag"
              value={data.outbox ? duration(data.outbox.oldestAgeMs ?? 0) : '—'}
              testId="stat-outbox-lag"
              title={data.outbox ? `${num(data.outbox.pending)} pending, ${num(data.outbox.failed)} failed` : 'no outbox read'}
            />
            <Stat label="Outbox pending" value={num(data.outbox?.pending)} testId="stat-outbox-pending" />
            <Stat
              label="Live workers"
              value={num(data.workers.live)}
              testId="stat-workers-live"
              title={`${data.workers.stale} stale, ${data.workers.stopped} stopped`}
            />
          </section>
          <section className="charts" aria-label="Last hour">
            <div className="panel">
              <h2>Throughput (per second)</h2>
              <Chart
                label="Tasks submitted, succeeded and failed per second over the last hour"
                times={times}
                unit="/s"
                lines={[
                  {name: 'submitted', cls: 'c-submitted', values: series.map((p) => p.submitted)},
                  {name: 'succeeded', cls: 'c-succeeded', values: series.map((p) => p.succeeded)},
                  {name: 'failed', cls: 'c-failed', values: series.map((p) => p.failed)},
                ]}
              />
            </div>
            <div className="panel">
              <h2>Backlog</h2>
              <Chart
                label="Backlog (tasks waiting or running) over the last hour"
                times={times}
                unit=""
                lines={[{name: 'backlog', cls: 'c-backlog', values: series.map((p) => p.backlog)}]}
              />
            </div>
          </section>
          <section className="panel">
            <h2>Workers</h2>
            <WorkerTable workers={data.workerList ?? []} label="Workers seen recently" />
          </section>
        </>
      )}
      {!data && !error && <p className="muted">Loading…</p>}
    </>
  );
}
