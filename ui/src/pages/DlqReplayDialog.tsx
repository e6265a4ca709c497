import {useState} from 'react';
import {messageOf} from '../api';
import {Dialog} from '../components/Dialog';
import {ErrorAlert} from '../components/ErrorAlert';
import {TextArea, TextField} from '../components/Field';
import {num} from '../format';
import {usePoll} from '../poll';
import {useApp} from '../session';
import {planOf, type Job, type ReplayAnswer, type ReplayPlan} from '../types';

export interface DlqFilter {
  type: string;
  error: string;
  since: string;
}

/**
 * The error text that selects a signature's group with a "contains" filter: its longest part
 * between placeholders (<n>, <id>, '<s>'…). It may select a little more than the group; the dry
 * run shows how many.
 */
export function errorTextOf(signature: string): string {
  if (signature === '(no error)') return '';
  const parts = signature
    .replace(/…$/, '')
    .split(/<id>|<hex>|<n>|'<s>'|"<s>"/)
    .map((s) => s.trim());
  return parts.reduce((a, b) => (b.length > a.length ? b : a), '');
}

interface Body {
  filter?: {type?: string; error?: string; since?: string};
  all?: boolean;
  patch?: Record<string, unknown>;
  rate?: number;
  reason?: string;
}

/** Builds the request from the fields; throws a message for bad input (nothing is sent then). */
function bodyOf(f: DlqFilter, patchText: string, rateText: string, reason: string): Body {
  const filter: NonNullable<Body['filter']> = {};
  if (f.type.trim()) filter.type = f.type.trim();
  if (f.error.trim()) filter.error = f.error.trim();
  if (f.since.trim()) filter.since = f.since.trim();
  const body: Body = Object.keys(filter).length > 0 ? {filter} : {all: true};
  if (patchText.trim() !== '') {
    let patch: unknown;
    try {
      patch = JSON.parse(patchText);
    } catch (e) {
      throw new Error(`Merge patch is not valid JSON: ${messageOf(e)}`);
    }
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new Error('Merge patch must be a JSON object');
    body.patch = patch as Record<string, unknown>;
  }
  if (rateText.trim() !== '') {
    const r = Number(rateText);
    if (!Number.isFinite(r) || r <= 0) throw new Error('Rate must be a positive number of tasks per second');
    body.rate = r;
  }
  if (reason.trim()) body.reason = reason.trim();
  return body;
}

/** The replayed count of a finished replay job's result, when it says one. */
function replayedOf(result: unknown): number | null {
  if (typeof result !== 'object' || result === null || !('replayed' in result)) return null;
  const r = (result as {replayed: unknown}).replayed;
  return typeof r === 'number' ? r : null;
}

function Progress({job, onEnd}: {job: string; onEnd: () => void}) {
  const {api} = useApp();
  const {data, error} = usePoll(
    async () => {
      const j = await api.get<Job>(`/jobs/${encodeURIComponent(job)}`);
      if (j.state !== 'running') onEnd();
      return j;
    },
    1000,
    [api, job],
    (j) => j.state !== 'running',
  );
  return (
    <div className="progress">
      <label>
        Replay progress{' '}
        <progress value={data?.done ?? 0} max={Math.max(1, data?.total ?? 1)}>
          {data ? `${data.done} of ${data.total}` : ''}
        </progress>
      </label>
      <p role="status">
        {data &&
          `${num(data.done)} of ${num(data.total)} — ${data.state === 'running' ? 'running' : data.state === 'done' ? 'done' : 'failed'}`}
      </p>
      {data?.state === 'done' && replayedOf(data.result) !== null && <p>{num(replayedOf(data.result) ?? 0)} tasks replayed.</p>}
      {data?.state === 'failed' && <ErrorAlert error={data.error?.message ?? 'The replay failed'} />}
      <ErrorAlert error={error} />
    </div>
  );
}

/** Bulk replay of dead tasks: filter, merge patch, rate, reason; dry run first, then the job and its progress. */
export function DlqReplayDialog({initial, onClose}: {initial: DlqFilter; onClose: () => void}) {
  const {api} = useApp();
  const [f, setF] = useState<DlqFilter>(initial);
  const [patch, setPatch] = useState('');
  const [rate, setRate] = useState('');
  const [reason, setReason] = useState('');
  const [plan, setPlan] = useState<ReplayPlan | null>(null);
  const [job, setJob] = useState<string | null>(null);
  const [ended, setEnded] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const send = async (dryRun: boolean): Promise<void> => {
    setError(null);
    let body: Body;
    try {
      body = bodyOf(f, patch, rate, reason);
    } catch (e) {
      setError(e);
      return;
    }
    setBusy(true);
    try {
      const answer = await api.send<ReplayAnswer>('POST', '/dlq/replay', {...body, dryRun});
      if (dryRun) setPlan(planOf(answer));
      else if (answer.job) setJob(answer.job);
      else throw new Error('The server started no job');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const edit = (k: keyof DlqFilter) => (v: string) => {
    setF({...f, [k]: v});
    setPlan(null);
  };
  const everything = !f.type.trim() && !f.error.trim() && !f.since.trim();

  return (
    <Dialog title="Replay dead tasks" onClose={onClose} wide>
      <form onSubmit={(e) => e.preventDefault()} noValidate>
        <fieldset disabled={job !== null}>
          <legend>Which dead tasks</legend>
          <div className="row">
            <TextField label="Type" value={f.type} onChange={edit('type')} mono autoFocus />
            <TextField label="Error text" value={f.error} onChange={edit('error')} />
            <TextField label="Since" value={f.since} onChange={edit('since')} placeholder="1h, 7d or ISO time" />
          </div>
          {everything && <p className="warning-box">No filter: every dead task of the cell is replayed.</p>}
          <TextArea
            label="Merge patch (JSON)"
            value={patch}
            onChange={(v) => {
              setPatch(v);
              setPlan(null);
            }}
            rows={4}
            mono
            hint='optional, RFC 7396, applied to each payload, e.g. {"retryToken": null}'
          />
          <div className="row">
            <TextField label="Rate (tasks/s)" value={rate} onChange={setRate} inputMode="decimal" hint="optional" />
            <TextField label="Reason" value={reason} onChange={setReason} hint="optional, kept in the audit trail" />
          </div>
        </fieldset>
        {plan && (
          <div className="plan" role="status">
            <p>
              <strong>{num(plan.total)}</strong> dead tasks match.
            </p>
            <ul className="inline-list" aria-label="By type">
              {Object.entries(plan.byType).map(([t, n]) => (
                <li key={t}>
                  <span className="mono">{t}</span>: {num(n)}
                </li>
              ))}
            </ul>
          </div>
        )}
        <ErrorAlert error={error} />
        {job && <Progress job={job} onEnd={() => setEnded(true)} />}
        <div className="buttons">
          {job === null && (
            <>
              <button type="button" disabled={busy} onClick={() => void send(true)}>
                Dry run
              </button>
              <button
                type="button"
                className="primary"
                disabled={busy || plan === null || plan.total === 0}
                onClick={() => void send(false)}
              >
                Replay
              </button>
            </>
          )}
          <button type="button" onClick={onClose}>
            {job === null ? 'Cancel' : ended ? 'Close' : 'Close (keeps running)'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
