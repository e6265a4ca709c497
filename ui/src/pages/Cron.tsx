import {ErrorAlert} from '../components/ErrorAlert';
import {TaskLink} from '../components/Link';
import {StateBadge} from '../components/StateBadge';
import {Time, TimeCell} from '../components/Time';
import {usePoll} from '../poll';
import {useApp} from '../session';
import type {Schedule} from '../types';

/**
 * Cron schedules: next fire, last occurrence, paused. Read-only: the API has no cron actions yet
 * (their pause, resume and trigger are not audited), so operators use `ax cron`. Polls every 5 s.
 */
export function Cron() {
  const {api, operator} = useApp();
  const {data, error} = usePoll(() => api.get<{schedules: Schedule[]}>('/cron'), 5000, [api]);
  const schedules = data?.schedules ?? [];
  return (
    <>
      <h1>Cron</h1>
      <ErrorAlert error={error} />
      {operator && (
        <p className="muted">
          Pause, resume and trigger a schedule with <code>ax cron pause|resume|trigger &lt;name&gt;</code>.
        </p>
      )}
      {data && schedules.length === 0 && <p className="muted">No schedules.</p>}
      {schedules.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Cron schedules">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Schedule</th>
                <th scope="col">Type</th>
                <th scope="col">Next fire</th>
                <th scope="col">Last fired</th>
                <th scope="col">Paused</th>
              </tr>
            </thead>
            <tbody>
              {schedules.map((s) => (
                <tr key={s.name}>
                  <th scope="row" className="mono">
                    {s.name}
                  </th>
                  <td>
                    <code>{s.cron}</code> <span className="muted small">{s.tz}</span>
                  </td>
                  <td className="mono">{s.type}</td>
                  <TimeCell at={s.nextOccurrence} />
                  <td>
                    {s.lastOccurrence ? (
                      <>
                        <Time at={s.lastOccurrence.fireAt} /> <StateBadge state={s.lastOccurrence.state} />{' '}
                        <TaskLink id={s.lastOccurrence.taskId} />
                      </>
                    ) : (
                      <span className="muted">never</span>
                    )}
                  </td>
                  <td>{s.paused ? <StateBadge state="paused" /> : <span className="muted">no</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
