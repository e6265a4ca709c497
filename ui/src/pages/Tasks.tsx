import {useEffect, useState} from 'react';
import {messageOf} from '../api';
import {ErrorAlert} from '../components/ErrorAlert';
import {TaskLink} from '../components/Link';
import {StateBadge} from '../components/StateBadge';
import {EmptyRow, TimeCell} from '../components/Time';
import {isWaiting} from '../format';
import {hrefOf, navigate} from '../router';
import {usePoll} from '../poll';
import {useApp} from '../session';
import type {BulkPlan, TaskPage} from '../types';
import {BulkDialog, type BulkRequest} from './BulkDialog';
import {FILTER_KEYS, filterOf, TaskSearch, type TaskFilter} from './TaskSearch';

/** Task search with keyset pages; operators select tasks (or all matching) to cancel or replay. Polls every 5 s. */
export function Tasks() {
  const {api, route, operator} = useApp();
  const filter = filterOf(route.params);
  const after = route.params.get('after') ?? '';
  const key = JSON.stringify([filter, after]);
  const {data, error, reload} = usePoll(() => api.get<TaskPage>('/tasks', {...filter, limit: 50, after}), 5000, [api, key]);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const [bulk, setBulk] = useState<{req: BulkRequest; plan: BulkPlan} | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    setSelected(new Set());
    setAllMatching(false);
  }, [key]);

  const go = (f: TaskFilter, nextAfter?: string): void => {
    const params: Record<string, string> = {};
    for (const k of FILTER_KEYS) if (f[k]) params[k] = f[k] ?? '';
    if (nextAfter) params.after = nextAfter;
    navigate(hrefOf('/tasks', params, route));
  };

  const tasks = data?.tasks ?? [];
  const toggle = (id: string): void =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });

  const start = async (action: 'cancel' | 'replay'): Promise<void> => {
    const req: BulkRequest = allMatching ? {action, filter} : {action, ids: [...selected]};
    setBusy(true);
    setActionError(null);
    try {
      const plan = await api.send<BulkPlan>('POST', '/tasks/bulk', {...req, dryRun: true});
      setBulk({req, plan});
    } catch (e) {
      setActionError(`Dry run failed: ${messageOf(e)}`);
    } finally {
      setBusy(false);
    }
  };

  const pageSelected = tasks.length > 0 && tasks.every((t) => selected.has(t.id));

  return (
    <>
      <h1>Tasks</h1>
      <TaskSearch
        initial={filter}
        onSearch={(f) => go(f)}
        onOpen={(id) => navigate(hrefOf(`/tasks/${encodeURIComponent(id)}`, {}, route))}
      />
      <ErrorAlert error={error ?? actionError} />
      {operator && (
        <div className="toolbar" aria-label="Bulk actions" role="group">
          <label className="check">
            <input type="checkbox" checked={allMatching} onChange={(e) => setAllMatching(e.target.checked)} />
            Select all matching this filter
          </label>
          <span className="muted">{allMatching ? 'every task matching the filter (up to 10,000)' : `${selected.size} selected`}</span>
          <button type="button" disabled={busy || (!allMatching && selected.size === 0)} onClick={() => void start('cancel')}>
            Cancel selected
          </button>
          <button type="button" disabled={busy || (!allMatching && selected.size === 0)} onClick={() => void start('replay')}>
            Replay selected
          </button>
        </div>
      )}
      {data && (
        <div className="table-wrap">
          <table className="tasks">
            <caption className="sr-only">Tasks matching the search, newest first</caption>
            <thead>
              <tr>
                {operator && (
                  <th scope="col" className="sel">
                    <input
                      type="checkbox"
                      aria-label="Select this page"
                      checked={pageSelected}
                      disabled={allMatching || tasks.length === 0}
                      onChange={() => setSelected(pageSelected ? new Set() : new Set(tasks.map((t) => t.id)))}
                    />
                  </th>
                )}
                <th scope="col">Id</th>
                <th scope="col">Type</th>
                <th scope="col">State</th>
                <th scope="col" className="num">
                  Attempt
                </th>
                <th scope="col">Created</th>
                <th scope="col">Run at</th>
                <th scope="col" className="err-col">
                  Last error
                </th>
              </tr>
            </thead>
            <tbody>
              {tasks.map((t) => (
                <tr key={t.id} className={selected.has(t.id) ? 'selected' : undefined}>
                  {operator && (
                    <td className="sel">
                      <input
                        type="checkbox"
                        aria-label={`Select ${t.id}`}
                        checked={allMatching || selected.has(t.id)}
                        disabled={allMatching}
                        onChange={() => toggle(t.id)}
                      />
                    </td>
                  )}
                  <td className="nowrap">
                    <TaskLink id={t.id} />
                  </td>
                  <td className="mono">{t.type}</td>
                  <td>
                    <StateBadge state={t.state} />
                  </td>
                  <td className="num">
                    {t.attempt}/{t.maxRetries + 1}
                  </td>
                  <TimeCell at={t.createdAt} />
                  {isWaiting(t) ? (
                    <td className="muted" title="Due when its parents succeed, or its batch ends">
                      waiting
                    </td>
                  ) : (
                    <TimeCell at={t.runAt} />
                  )}
                  <td className="clip err-col" title={t.lastError ?? undefined}>
                    {t.lastError ?? ''}
                  </td>
                </tr>
              ))}
              {tasks.length === 0 && <EmptyRow colSpan={operator ? 8 : 7}>No tasks match.</EmptyRow>}
            </tbody>
          </table>
        </div>
      )}
      {!data && !error && <p className="muted">Loading…</p>}
      <div className="pager">
        {after && (
          <button type="button" onClick={() => go(filter)}>
            First page
          </button>
        )}
        {data?.next && (
          <button type="button" onClick={() => go(filter, data.next ?? undefined)}>
            Next page
          </button>
        )}
      </div>
      {bulk && (
        <BulkDialog
          req={bulk.req}
          plan={bulk.plan}
          onClose={() => {
            setBulk(null);
            reload();
          }}
          onDone={() => {
            setSelected(new Set());
            setAllMatching(false);
            reload();
          }}
        />
      )}
    </>
  );
}
