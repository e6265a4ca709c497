import {useState, type FormEvent} from 'react';
import {Dialog} from '../components/Dialog';
import {ErrorAlert} from '../components/ErrorAlert';
import {TextField} from '../components/Field';
import {useApp} from '../session';
import type {TypeView} from '../types';

export type TypeAction = 'pause' | 'resume' | 'reset' | 'limits';

const TITLES: Record<TypeAction, string> = {pause: 'Pause', resume: 'Resume', reset: 'Reset breaker', limits: 'Limits'};

/** A positive number, or undefined for blank; throws a message otherwise. */
function positive(text: string, what: string): number | undefined {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${what} must be a positive number`);
  return n;
}

/** The dialog of one type action: its fields, a confirm button and Cancel. */
export function TypeActionDialog({
  action,
  type,
  onClose,
  onDone,
}: {
  action: TypeAction;
  type: TypeView;
  onClose: () => void;
  onDone: (text: string) => void;
}) {
  const {api} = useApp();
  const [reason, setReason] = useState('');
  const [rateText, setRateText] = useState(action === 'limits' && type.limits.rate !== null ? String(type.limits.rate) : '');
  const [maxText, setMaxText] = useState(type.limits.maxRunning !== null ? String(type.limits.maxRunning) : '');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const t = encodeURIComponent(type.type);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setError(null);
    let call: () => Promise<unknown>;
    let text: string;
    try {
      const why = reason.trim() === '' ? undefined : reason.trim();
      if (action === 'pause') {
        call = () => api.send('POST', `/types/${t}/pause`, {reason: why});
        text = `${type.type} paused`;
      } else if (action === 'resume') {
        const r = positive(rateText, 'Release rate');
        call = () => api.send('POST', `/types/${t}/resume`, {rate: r, reason: why});
        text = `${type.type} resumed${r ? ` (releasing ${r}/s)` : ''}`;
      } else if (action === 'reset') {
        call = () => api.send('POST', `/types/${t}/breaker/reset`, {reason: why});
        text = `${type.type}: breaker reset`;
      } else {
        let maxRunning: number | null = null;
        if (maxText.trim() !== '') {
          maxRunning = Number(maxText);
          if (!Number.isInteger(maxRunning) || maxRunning < 1)
            throw new Error('Max running must be a whole number of at least 1 (blank: no limit)');
        }
        const raw = rateText.trim();
        const limitRate: number | string | null = raw === '' ? null : Number.isFinite(Number(raw)) ? Number(raw) : raw;
        call = () => api.send('PATCH', `/types/${t}`, {maxRunning, rate: limitRate});
        text = `${type.type}: limits saved`;
      }
    } catch (err) {
      setError(err);
      return;
    }
    setBusy(true);
    try {
      await call();
      onDone(text);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const title = `${TITLES[action]} ${type.type}`;
  return (
    <Dialog title={title} onClose={onClose}>
      <form onSubmit={(e) => void submit(e)}>
        {action === 'pause' && <p>Workers stop claiming {type.type} tasks; submits are still accepted and wait.</p>}
        {action === 'resume' && <p>The parked backlog is released, at most at the release rate when one is given.</p>}
        {action === 'reset' && <p>Closes the breaker now and releases the tasks it parked.</p>}
        {action === 'limits' && <p>Cluster-wide limits; leave a field blank for no limit.</p>}
        {action === 'resume' && (
          <TextField label="Release rate" value={rateText} onChange={setRateText} inputMode="decimal" hint="tasks/s, optional" autoFocus />
        )}
        {action === 'limits' && (
          <>
            <TextField
              label="Max running"
              value={maxText}
              onChange={setMaxText}
              inputMode="numeric"
              hint="tasks at once, blank: no limit"
              autoFocus
            />
            <TextField label="Rate" value={rateText} onChange={setRateText} hint="tasks/s (e.g. 50 or 100/s), blank: no limit" />
          </>
        )}
        {action !== 'limits' && (
          <TextField
            label="Reason"
            value={reason}
            onChange={setReason}
            autoFocus={action !== 'resume'}
            hint="optional, kept in the audit trail"
          />
        )}
        <ErrorAlert error={error} />
        <div className="buttons">
          <button type="submit" className="primary" disabled={busy}>
            {action === 'limits' ? 'Save limits' : TITLES[action]}
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
