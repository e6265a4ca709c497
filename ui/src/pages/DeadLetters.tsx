import {useState, type FormEvent} from 'react';
import {ErrorAlert} from '../components/ErrorAlert';
import {TextField} from '../components/Field';
import {TaskLink} from '../components/Link';
import {EmptyRow, TimeCell} from '../components/Time';
import {num} from '../format';
import {usePoll} from '../poll';
import {hrefOf, navigate} from '../router';
import {useApp} from '../session';
import type {DeadPage, SignatureRow} from '../types';
import {DlqReplayDialog, errorTextOf, type DlqFilter} from './DlqReplayDialog';

/** Dead tasks grouped by type × error signature, their list, and bulk replay. Polls every 5 s. */
export function DeadLetters() {
  const {api, route, operator} = useApp();
  const filter: DlqFilter = {
    type: route.params.get('type') ?? '',
    error: route.params.get('error') ?? '',
    since: route.params.get('since') ?? '',
  };
  const after = route.params.get('after') ?? '';
  const key = JSON.stringify([filter, after]);
  const groups = usePoll(() => api.get<{groups: SignatureRow[]}>('/dlq/groups', {...filter}), 5000, [
    api,
    filter.type,
    filter.error,
    filter.since,
  ]);
  const page = usePoll(() => api.get<DeadPage>('/dlq', {...filter, limit: 50, after}), 5000, [api, key]);
  const [form, setForm] = useState<DlqFilter>(filter);
  const [replay, setReplay] = useState<DlqFilter | null>(null);

  const go = (f: DlqFilter, nextAfter?: string): void => navigate(hrefOf('/dlq', {...f, after: nextAfter}, route));
  const submit = (e: FormEvent): void => {
    e.preventDefault();
    go({type: form.type.trim(), error: form.error.trim(), since: form.since.trim()});
  };
  const shown = groups.data?.groups ?? [];

  return (
    <>
      <h1>Dead letters</h1>
      <form className="search" onSubmit={submit} role="search" aria-label="Filter dead tasks">
        <TextField label="Type" value={form.type} onChange={(v) => setForm({...form, type: v})} mono />
        <TextField label="Error text" value={form.error} onChange={(v) => setForm({...form, error: v})} />
        <TextField label="Since" value={form.since} onChange={(v) => setForm({...form, since: v})} placeholder="1h, 7d or ISO time" />
        <div className="field submit">
          <button type="submit" className="primary">
            Filter
          </button>
        </div>
        {operator && (
          <div className="field submit">
            <button type="button" onClick={() => setReplay(filter)}>
              Replay…
            </button>
          </div>
        )}
      </form>
      <ErrorAlert error={groups.error ?? page.error} />
      <section className="panel">
        <h2>By error signature</h2>
        {groups.data && shown.length === 0 && <p className="muted">No dead tasks.</p>}
        {shown.length > 0 && (
          <div className="table-wrap">
            <table aria-label="Dead tasks by type and error signature">
              <thead>
                <tr>
                  <th scope="col">Type</th>
                  <th scope="col" className="num">
                    Count
                  </th>
                  <th scope="col" className="err-col">
                    Signature / sample error
                  </th>
                  <th scope="col">First seen</th>
                  <th scope="col">Last seen</th>
                  {operator && <th scope="col">Actions</th>}
                </tr>
              </thead>
              <tbody>
                {shown.map((g) => (
                  <tr key={`${g.type}\u0000${g.signature}`}>
                    <td className="mono">{g.type}</td>
                    <td className="num">{num(g.count)}</td>
                    <td className="err-col">
                      <div className="mono clip" title={g.signature}>
                        {g.signature}
                      </div>
                      <div className="muted clip small" title={g.sampleError ?? undefined}>
                        {g.sampleError ?? '(no error)'}
                      </div>
                    </td>
                    <TimeCell at={g.firstSeen} />
                    <TimeCell at={g.lastSeen} />
                    {operator && (
                      <td className="actions">
                        <button
                          type="button"
                          aria-label={`Replay group ${g.type} ${g.signature}`}
                          onClick={() => setReplay({type: g.type, error: errorTextOf(g.signature), since: filter.since})}
                        >
                          Replay group
                        </button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section className="panel">
        <h2>Dead tasks</h2>
        {page.data && (
          <div className="table-wrap">
            <table aria-label="Dead tasks, latest death first">
              <thead>
                <tr>
                  <th scope="col">Id</th>
                  <th scope="col">Type</th>
                  <th scope="col" className="num">
                    Attempts
                  </th>
                  <th scope="col">Died</th>
                  <th scope="col" className="err-col">
                    Last error
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.data.tasks.map((t) => (
                  <tr key={t.id}>
                    <td className="nowrap">
                      <TaskLink id={t.id} />
                    </td>
                    <td className="mono">{t.type}</td>
                    <td className="num">{t.attempt}</td>
                    <TimeCell at={t.finishedAt} />
                    <td className="clip err-col" title={t.lastError ?? undefined}>
                      {t.lastError ?? ''}
                    </td>
                  </tr>
                ))}
                {page.data.tasks.length === 0 && <EmptyRow colSpan={5}>No dead tasks match.</EmptyRow>}
              </tbody>
            </table>
          </div>
        )}
        <div className="pager">
          {after && (
            <button type="button" onClick={() => go(filter)}>
              First page
            </button>
          )}
          {page.data?.next && (
            <button type="button" onClick={() => go(filter, page.data?.next ?? undefined)}>
              Next page
            </button>
          )}
        </div>
      </section>
      {replay && (
        <DlqReplayDialog
          initial={replay}
          onClose={() => {
            setReplay(null);
            groups.reload();
            page.reload();
          }}
        />
      )}
    </>
  );
}
