import {useState, type FormEvent} from 'react';
import {SelectField, TextField} from '../components/Field';
import {usePoll} from '../poll';
import {useApp} from '../session';
import {TASK_STATES} from '../types';

/** The filter of GET /tasks (and of a bulk action on "all matching"), as the route's query holds it. */
export interface TaskFilter {
  state?: string;
  type?: string;
  since?: string;
  until?: string;
  payload?: string;
  error?: string;
  dedupKey?: string;
}

export const FILTER_KEYS = ['state', 'type', 'since', 'until', 'payload', 'error', 'dedupKey'] as const;

export function filterOf(params: URLSearchParams): TaskFilter {
  const f: TaskFilter = {};
  for (const k of FILTER_KEYS) {
    const v = params.get(k);
    if (v) f[k] = v;
  }
  return f;
}

const STATE_OPTIONS = [{value: '', label: 'Any'}, ...TASK_STATES.map((s) => ({value: s, label: s}))];

/**
 * The search form. A task id opens that task; otherwise the filter is searched. A payload search
 * needs a time range: Since defaults to 1h then.
 */
export function TaskSearch({
  initial,
  onSearch,
  onOpen,
}: {
  initial: TaskFilter;
  onSearch: (f: TaskFilter) => void;
  onOpen: (id: string) => void;
}) {
  const [id, setId] = useState('');
  const [f, setF] = useState<TaskFilter>(initial);
  const set = (k: keyof TaskFilter) => (v: string) => setF((x) => ({...x, [k]: v}));
  const {api} = useApp();
  // Which fields a payload search finds through an index (ax payload-index): rarely changes.
  const indexes = usePoll(() => api.get<{fields: Array<{field: string; state: string}>}>('/payload-indexes'), 60_000, []);
  // Nothing said until the list has loaded (nor when it cannot be read): a guess would mislead.
  const indexed = indexes.data?.fields.filter((x) => x.state === 'ready').map((x) => x.field);
  const payloadHint =
    indexed === undefined
      ? undefined
      : indexed.length > 0
        ? `Indexed: ${indexed.join(', ')}. Other fields read every task since Since.`
        : 'Reads every task since Since (no field is indexed).';

  const submit = (e: FormEvent): void => {
    e.preventDefault();
    if (id.trim() !== '') {
      onOpen(id.trim());
      return;
    }
    const out: TaskFilter = {};
    for (const k of FILTER_KEYS) {
      const v = f[k]?.trim();
      if (v) out[k] = v;
    }
    if (out.payload && !out.since) out.since = '1h';
    setF(out);
    onSearch(out);
  };

  return (
    <form className="search" onSubmit={submit} role="search" aria-label="Search tasks">
      <TextField label="Task id" value={id} onChange={setId} mono placeholder="open a task by its id" />
      <TextField label="Type" value={f.type ?? ''} onChange={set('type')} mono />
      <SelectField label="State" value={f.state ?? ''} onChange={set('state')} options={STATE_OPTIONS} />
      <TextField label="Since" value={f.since ?? ''} onChange={set('since')} placeholder="15m, 2d or ISO time" />
      <TextField label="Until" value={f.until ?? ''} onChange={set('until')} placeholder="15m, 2d or ISO time" />
      <TextField
        label="Payload field=value"
        value={f.payload ?? ''}
        onChange={set('payload')}
        mono
        placeholder="orderId=42"
        hint={payloadHint}
      />
      <TextField label="Error text" value={f.error ?? ''} onChange={set('error')} />
      <TextField label="Dedup key" value={f.dedupKey ?? ''} onChange={set('dedupKey')} mono />
      <div className="field submit">
        <button type="submit" className="primary">
          Search
        </button>
      </div>
    </form>
  );
}
