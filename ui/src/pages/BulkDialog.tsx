import {useState} from 'react';
import {Dialog} from '../components/Dialog';
import {ErrorAlert} from '../components/ErrorAlert';
import {TextField} from '../components/Field';
import {num} from '../format';
import {useApp} from '../session';
import type {BulkPlan, BulkResult} from '../types';
import type {TaskFilter} from './TaskSearch';

export interface BulkRequest {
  action: 'cancel' | 'replay';
  ids?: string[];
  filter?: TaskFilter;
}

/** "Done: 3 cancelled, 1 skipped.", from the run's answer (counts, or lists of ids). */
function resultText(action: BulkRequest['action'], r: BulkResult): string {
  const count = (v: unknown): number | null => (typeof v === 'number' ? v : Array.isArray(v) ? v.length : null);
  const done = count(r.done) ?? count(action === 'cancel' ? r.cancelled : r.replayed);
  const skipped = count(r.skipped);
  const parts = [
    done === null ? null : `${num(done)} ${action === 'cancel' ? 'cancelled' : 'replayed'}`,
    skipped === null ? null : `${num(skipped)} skipped`,
  ];
  const text = parts.filter(Boolean).join(', ');
  return text ? `Done: ${text}.` : 'Done.';
}

/** The confirmation of a bulk cancel or replay after its dry run, then its result. */
export function BulkDialog({req, plan, onClose, onDone}: {req: BulkRequest; plan: BulkPlan; onClose: () => void; onDone: () => void}) {
  const {api} = useApp();
  const [reason, setReason] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<BulkResult | null>(null);
  const verb = req.action === 'cancel' ? 'Cancel' : 'Replay';
  const what = req.filter ? 'match this filter' : 'are selected';

  const run = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      const r = await api.send<BulkResult>('POST', '/tasks/bulk', {
        ...req,
        reason: reason.trim() || undefined,
        dryRun: false,
        expect: plan.matched,
      });
      setResult(r);
      onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog title={`${verb} tasks`} onClose={onClose}>
      {result ? (
        <>
          <p role="status">{resultText(req.action, result)}</p>
          <div className="buttons">
            <button type="button" className="primary" onClick={onClose} data-autofocus="">
              Close
            </button>
          </div>
        </>
      ) : (
        <>
          <p>
            <strong>{num(plan.matched)}</strong> tasks {what}; <strong>{num(plan.actionable)}</strong> can be{' '}
            {req.action === 'cancel' ? 'cancelled' : 'replayed'}. {plan.actionable > 0 ? 'Confirm to go ahead.' : 'There is nothing to do.'}
          </p>
          {Object.keys(plan.byState).length > 0 && (
            <ul className="inline-list" aria-label="By state">
              {Object.entries(plan.byState).map(([s, n]) => (
                <li key={s}>
                  {s}: {num(n ?? 0)}
                </li>
              ))}
            </ul>
          )}
          <TextField label="Reason" value={reason} onChange={setReason} hint="optional, kept in the audit trail" autoFocus />
          <ErrorAlert error={error} />
          <div className="buttons">
            <button type="button" className="primary" disabled={busy || plan.actionable === 0} onClick={() => void run()}>
              {verb} {num(plan.actionable)} tasks
            </button>
            <button type="button" onClick={onClose}>
              Cancel
            </button>
          </div>
        </>
      )}
    </Dialog>
  );
}
