import {useState} from 'react';
import {ApiError} from '../api';
import {ErrorAlert} from '../components/ErrorAlert';
import {StateBadge} from '../components/StateBadge';
import {Time} from '../components/Time';
import {duration, num, pretty} from '../format';
import {usePoll} from '../poll';
import {useApp} from '../session';
import type {TaskDetail, TaskState} from '../types';
import {Timeline} from './Timeline';
import {TaskActionDialog, type TaskAction} from './TaskActionDialog';
import {LinksPanel, waitingText} from './TaskLinks';

const CANCELLABLE: readonly TaskState[] = ['submitted', 'failed', 'running'];
const FORCEABLE: readonly TaskState[] = ['succeeded', 'cancelled', 'dead'];

/** One task: its fields, payload, timeline; operators cancel, replay or force a replay. Polls every 5 s. */
export function Task({id}: {id: string}) {
  const {api, operator} = useApp();
  const path = `/tasks/${encodeURIComponent(id)}`;
  const {data, error, reload} = usePoll(() => api.get<TaskDetail>(path), 5000, [api, path]);
  const [full, setFull] = useState<{payload: unknown} | null>(null);
  const [payloadError, setPayloadError] = useState<unknown>(null);
  const [open, setOpen] = useState<TaskAction | null>(null);
  const [status, setStatus] = useState('');

  const loadPayload = async (): Promise<void> => {
    setPayloadError(null);
    try {
      setFull({payload: await api.get<unknown>(`${path}/payload`)});
    } catch (e) {
      setPayloadError(e);
    }
  };

  const t = data?.task;
  const archived = data?.archived === true;
  const history = data?.timeline ?? data?.history ?? [];
  const notFound = error instanceof ApiError && error.code === 'not_found';
  const waiting = t ? waitingText(t, data?.links) : null;

  return (
    <>
      <h1 className="task-title">
        Task <span className="id">{id}</span>
        {archived && <span className="badge archived">Archived</span>}
      </h1>
      <ErrorAlert error={error} />
      <p className="status" role="status">
        {status}
      </p>
      {notFound && !t && <p className="muted">No task has this id in this cell.</p>}
      {t && (
        <>
          {operator && (
            <div className="toolbar" role="group" aria-label="Task actions">
              <button type="button" disabled={archived || !CANCELLABLE.includes(t.state)} onClick={() => setOpen('cancel')}>
                Cancel
              </button>
              <button type="button" disabled={archived || t.state !== 'dead'} onClick={() => setOpen('replay')}>
                Replay
              </button>
              <button type="button" className="danger" disabled={archived || !FORCEABLE.includes(t.state)} onClick={() => setOpen('force')}>
                Force replay
              </button>
            </div>
          )}
          <section className="panel">
            <h2>Fields</h2>
            <dl className="fields">
              <dt>Type</dt>
              <dd className="mono">{t.type}</dd>
              <dt>State</dt>
              <dd>
                <StateBadge state={t.state} />
                {waiting && <span className="muted"> ({waiting})</span>}
              </dd>
              <dt>Attempt</dt>
              <dd>
                {t.attempt}/{t.maxRetries + 1}
                {t.retryBase > 0 && <span className="muted"> ({t.attempt - t.retryBase} since the latest replay)</span>}
              </dd>
              <dt>Run at</dt>
              <dd>{waiting ? <span className="muted">not due until it stops waiting</span> : <Time at={t.runAt} />}</dd>
              <dt>Worker</dt>
              <dd className="mono">{t.worker ?? '—'}</dd>
              <dt>Dedup key</dt>
              <dd className="mono">{t.dedupKey ?? '—'}</dd>
              <dt>Pool / priority</dt>
              <dd>
                {t.pool} / {t.priority}
              </dd>
              <dt>Timeout</dt>
              <dd>{t.timeoutMs === null ? 'default' : duration(t.timeoutMs)}</dd>
              <dt>Created</dt>
              <dd>
                <Time at={t.createdAt} /> {t.submittedBy && <span className="muted mono">by {t.submittedBy}</span>}
              </dd>
              <dt>Started</dt>
              <dd>
                <Time at={t.startedAt} />
              </dd>
              <dt>Finished</dt>
              <dd>
                <Time at={t.finishedAt} />
              </dd>
              <dt>Last error</dt>
              <dd className="pre-wrap">{t.lastError ?? '—'}</dd>
              <dt>Progress</dt>
              <dd>
                {t.progress === null || t.progress === undefined ? (
                  '—'
                ) : (
                  <>
                    <progress max={100} value={t.progress} aria-label="Progress" /> {t.progress}%
                    {t.progressNote && <span className="pre-wrap"> · {t.progressNote}</span>}{' '}
                    <span className="muted">
                      (<Time at={t.progressAt} />)
                    </span>
                  </>
                )}
              </dd>
            </dl>
          </section>
          {t.result !== undefined && t.result !== null && (
            <section className="panel">
              <h2>Result</h2>
              <pre className="payload" tabIndex={0} aria-label="Result">
                {pretty(t.result)}
              </pre>
            </section>
          )}
          <section className="panel">
            <h2>Payload</h2>
            {(full || !t.payloadTruncated || t.payload !== null) && (
              <pre className="payload" tabIndex={0} aria-label="Payload">
                {pretty(full ? full.payload : t.payload)}
              </pre>
            )}
            {t.payloadTruncated && !full && (
              <p>
                <span className="muted">
                  The payload is large{t.payloadChars ? ` (${num(t.payloadChars)} characters)` : ''}: it is not shown until you load
                  it.{' '}
                </span>
                <button type="button" onClick={() => void loadPayload()}>
                  Load full payload
                </button>
              </p>
            )}
            <ErrorAlert error={payloadError} />
          </section>
          {data?.links && <LinksPanel links={data.links} id={t.id} />}
          <section className="panel">
            <h2>Timeline</h2>
            <Timeline entries={history} />
          </section>
        </>
      )}
      {open && t && (
        <TaskActionDialog
          action={open}
          task={t}
          onClose={() => setOpen(null)}
          onDone={(text) => {
            setOpen(null);
            setStatus(text);
            reload();
          }}
        />
      )}
    </>
  );
}
