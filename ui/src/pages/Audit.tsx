import {ErrorAlert} from '../components/ErrorAlert';
import {EmptyRow, TimeCell} from '../components/Time';
import {num} from '../format';
import {usePoll} from '../poll';
import {hrefOf, navigate} from '../router';
import {useApp} from '../session';
import type {AuditRecord} from '../types';

function selection(f: Record<string, unknown>): string {
  const parts = Object.entries(f).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return parts.join(' ');
}

/** The audit trail, newest first, older pages by cursor. Polls every 5 s. */
export function Audit() {
  const {api, route} = useApp();
  const after = route.params.get('after') ?? '';
  const {data, error} = usePoll(() => api.get<{entries: AuditRecord[]; next: number | null}>('/audit', {limit: 50, after}), 5000, [
    api,
    after,
  ]);
  return (
    <>
      <h1>Audit</h1>
      <ErrorAlert error={error} />
      {data && (
        <div className="table-wrap">
          <table aria-label="Audit trail, newest first">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Command</th>
                <th scope="col">Selection</th>
                <th scope="col">Reason</th>
                <th scope="col" className="num">
                  Tasks
                </th>
              </tr>
            </thead>
            <tbody>
              {data.entries.map((e) => (
                <tr key={e.id}>
                  <TimeCell at={e.at} />
                  <td className="mono">{e.operator}</td>
                  <td className="mono nowrap">{e.command}</td>
                  <td className="mono clip" title={selection(e.filter)}>
                    {selection(e.filter)}
                  </td>
                  <td className="pre-wrap">{e.reason ?? ''}</td>
                  <td className="num" title={e.taskIds?.join('\n') ?? undefined}>
                    {num(e.taskCount)}
                  </td>
                </tr>
              ))}
              {data.entries.length === 0 && <EmptyRow colSpan={6}>Nothing audited yet.</EmptyRow>}
            </tbody>
          </table>
        </div>
      )}
      <div className="pager">
        {after && (
          <button type="button" onClick={() => navigate(hrefOf('/audit', {}, route))}>
            Newest
          </button>
        )}
        {data?.next !== null && data?.next !== undefined && (
          <button type="button" onClick={() => navigate(hrefOf('/audit', {after: data.next}, route))}>
            Older
          </button>
        )}
      </div>
    </>
  );
}
