import {ErrorAlert} from '../components/ErrorAlert';
import {StateBadge} from '../components/StateBadge';
import {Time} from '../components/Time';
import {usePoll} from '../poll';
import {useApp} from '../session';
import type {DoctorReport, FindingStatus} from '../types';

const ORDER: Record<FindingStatus, number> = {problem: 0, warn: 1, info: 2, skipped: 3, ok: 4};

/** The doctor's findings (level, title, evidence, next step), worst first. Polls every 5 s. */
export function Doctor() {
  const {api} = useApp();
  const {data, error} = usePoll(() => api.get<{since: string; report: DoctorReport}>('/doctor', {since: '15m'}), 5000, [api]);
  const r = data?.report;
  const findings = [...(r?.findings ?? [])].sort((a, b) => ORDER[a.status] - ORDER[b.status]);
  return (
    <>
      <h1>Doctor</h1>
      <ErrorAlert error={error} />
      {r && (
        <p className={`banner level-${r.verdict}`}>
          <strong>{r.verdict}</strong>{' '}
          <span>
            {Object.entries(r.counts)
              .filter(([, n]) => n > 0)
              .map(([k, n]) => `${n} ${k}`)
              .join(', ')}
          </span>{' '}
          <span className="muted right">
            since {data && !Number.isNaN(Date.parse(data.since)) ? <Time at={data.since} /> : data?.since}
          </span>
        </p>
      )}
      <ul className="findings">
        {findings.map((f) => (
          <li key={`${f.id}-${f.title}`} className={`finding f-${f.status}`}>
            <div className="finding-head">
              <StateBadge state={f.status} /> <strong>{f.title}</strong> <span className="muted mono small">{f.id}</span>
            </div>
            {f.evidence.length > 0 && (
              <ul className="evidence" aria-label="Evidence">
                {f.evidence.map((e, i) => (
                  <li key={i}>{e}</li>
                ))}
              </ul>
            )}
            {f.next.length > 0 && (
              <div className="next">
                <span className="muted">Next step:</span>
                <ul>
                  {f.next.map((n, i) => (
                    <li key={i}>
                      <code>{n}</code>
                    </li>
                  ))}
                </ul>
              </div>
            )}
          </li>
        ))}
      </ul>
    </>
  );
}
