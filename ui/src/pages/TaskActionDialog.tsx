import {useState, type FormEvent} from 'react';
import {Dialog} from '../components/Dialog';
import {ErrorAlert} from '../components/ErrorAlert';
import {TextArea} from '../components/Field';
import {useApp} from '../session';
import type {TaskRecord} from '../types';

export type TaskAction = 'cancel' | 'replay' | 'force';

const TITLES: Record<TaskAction, string> = {cancel: 'Cancel task', replay: 'Replay task', force: 'Force replay'};

/**
 * Cancel, replay or force-replay one task. A forced replay skips the idempotency check and needs a
 * reason: an empty one is refused here and nothing is sent.
 */
export function TaskActionDialog({
  action,
  task,
  onClose,
  onDone,
}: {
  action: TaskAction;
  task: TaskRecord;
  onClose: () => void;
  onDone: (text: string) => void;
}) {
  const {api} = useApp();
  const [reason, setReason] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const path = `/tasks/${encodeURIComponent(task.id)}`;

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    const why = reason.trim();
    if (action === 'force' && why === '') {
      setError('A reason is required');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      if (action === 'cancel') {
        await api.send('POST', `${path}/cancel`, {reason: why || undefined});
        onDone('Cancelled.');
      } else {
        await api.send('POST', `${path}/replay`, action === 'force' ? {reason: why, force: true} : {reason: why || undefined});
        onDone(action === 'force' ? 'Force replay submitted: the task runs again.' : 'Replayed: the task is submitted again.');
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog title={TITLES[action]} onClose={onClose}>
      <form onSubmit={(e) => void submit(e)} noValidate>
        {action === 'cancel' && (
          <p>The task will not run again{task.state === 'running' ? '; its worker is told to stop the handler' : ''}.</p>
        )}
        {action === 'replay' && <p>The dead task is submitted again with a fresh retry budget.</p>}
        {action === 'force' && (
          <div className="warning-box">
            <p>
              <strong>This skips the idempotency check:</strong> the handler runs again even though the task{' '}
              {task.state === 'succeeded' ? 'succeeded' : `is ${task.state}`}.
            </p>
            <p>
              Use it when the effect of the earlier run was lost (e.g. its downstream data was rolled back). The handler sees who forced it
              and why (ctx.replay); the reason is kept in the task&apos;s history and the audit trail.
            </p>
          </div>
        )}
        <TextArea
          label="Reason"
          value={reason}
          onChange={setReason}
          required={action === 'force'}
          hint={action === 'force' ? 'required' : 'optional, kept in the audit trail'}
          autoFocus
        />
        <ErrorAlert error={error} />
        <div className="buttons">
          <button type="submit" className={action === 'force' ? 'danger' : 'primary'} disabled={busy}>
            {action === 'cancel' ? 'Cancel task' : action === 'force' ? 'Force replay' : 'Replay'}
          </button>
          <button type="button" onClick={onClose}>
            {action === 'cancel' ? 'Keep task' : 'Cancel'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
