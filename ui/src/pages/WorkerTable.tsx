import {StateBadge} from '../components/StateBadge';
import {bytes, duration, num, rate} from '../format';

export interface WorkerRow {
  id: string;
  status: string;
  pools: Record<string, number>;
  inFlight: number;
  rate: number | null;
  rssBytes: number | null;
  heartbeatAgeMs: number;
  types: string[];
}

/** Workers as the overview and the workers page list them. */
export function WorkerTable({workers, label}: {workers: WorkerRow[]; label: string}) {
  if (workers.length === 0) return <p className="muted">No workers.</p>;
  return (
    <div className="table-wrap">
      <table aria-label={label}>
        <thead>
          <tr>
            <th scope="col">Worker</th>
            <th scope="col">Status</th>
            <th scope="col">Pools</th>
            <th scope="col" className="num">
              In flight
            </th>
            <th scope="col" className="num">
              Rate
            </th>
            <th scope="col" className="num">
              RSS
            </th>
            <th scope="col" className="num">
              Heartbeat
            </th>
            <th scope="col">Types</th>
          </tr>
        </thead>
        <tbody>
          {workers.map((w) => (
            <tr key={w.id}>
              <td className="mono">{w.id}</td>
              <td>
                <StateBadge state={w.status} />
              </td>
              <td>
                {Object.entries(w.pools)
                  .map(([p, n]) => `${p} ${n}`)
                  .join(', ')}
              </td>
              <td className="num">{num(w.inFlight)}</td>
              <td className="num">{rate(w.rate)}</td>
              <td className="num">{bytes(w.rssBytes)}</td>
              <td className="num">{duration(w.heartbeatAgeMs)} ago</td>
              <td className="clip" title={w.types.join(', ')}>
                {w.types.join(', ') || '—'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
