/**
 * The trace context as ax keeps it (traceContextOf: what is valid, what is ignored) and the tracing
 * functions without `@opentelemetry/api` (createTracing(null)): no-ops that return null. No tracer
 * provider is registered here, so the loaded API's spans are its own no-ops. Also: the timeline of
 * `ax trace` from an archived task, and the batched INSERT's statement with and without traced tasks.
 */
import {describe, expect, it} from 'vitest';
import {MAX_TRACESTATE, traceContextOf, traceIdOf} from '../../src/core/trace-context.js';
import {createTracing, tracing} from '../../src/core/trace.js';
import {fromArchived, traceOf} from '../../src/core/inspect/trace.js';
import type {Db} from '../../src/core/store/mysql/db.js';
import {tasksInsert} from '../../src/core/store/mysql/tasks-insert.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {TraceContext} from '../../src/core/trace-context.js';
import type {HistoryEntry, TaskRecord} from '../../src/core/task/model.js';

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('traceContextOf', () => {
  it('keeps a valid version-00 traceparent and its tracestate', () => {
    expect(traceContextOf(TP, 'congo=t61rcWkgMzE')).toEqual({traceparent: TP, tracestate: 'congo=t61rcWkgMzE'});
    expect(traceContextOf(TP)).toEqual({traceparent: TP, tracestate: null});
    expect(traceIdOf(traceContextOf(TP)!)).toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('ignores (null) anything else, never throwing; drops a tracestate it cannot keep', () => {
    for (const bad of [
      null,
      undefined,
      42,
      '',
      'garbage',
      TP.toUpperCase(),
      `${TP}-extra`,
      '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      '00-00000000000000000000000000000000-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1',
    ])
      expect(traceContextOf(bad, 'k=v')).toBeNull();
    expect(traceContextOf(TP, 'x'.repeat(MAX_TRACESTATE + 1))).toEqual({traceparent: TP, tracestate: null});
    expect(traceContextOf(TP, 'k=v\n')).toEqual({traceparent: TP, tracestate: null});
    expect(traceContextOf(TP, '')).toEqual({traceparent: TP, tracestate: null});
  });
});

describe('tracing', () => {
  it('without the API every function is a no-op returning null', () => {
    const none = createTracing(null);
    expect(none.enabled).toBe(false);
    expect(none.active()).toBeNull();
    expect(none.batchSpan('ax.submit', [traceContextOf(TP)], {})).toBeNull();
    expect(none.attemptSpan('ax.run x', traceContextOf(TP)!, {})).toBeNull();
  });

  it('a tracer SDK that throws is ignored: no context, no span, nothing thrown at the caller', () => {
    const boom = (): never => {
      throw new Error('broken tracer SDK');
    };
    const broken = createTracing({
      trace: {getSpanContext: boom, getTracer: boom, setSpanContext: boom, setSpan: boom},
      context: {active: boom},
      ROOT_CONTEXT: {},
    } as unknown as Parameters<typeof createTracing>[0]);
    expect(broken.active()).toBeNull();
    expect(broken.batchSpan('ax.submit', [traceContextOf(TP)], {})).toBeNull();
    expect(broken.attemptSpan('ax.run x', traceContextOf(TP)!, {})).toBeNull();
  });

  it('with the API loaded but nothing active: no context to keep, and a batch of untraced tasks gets no span', () => {
    expect(tracing.enabled).toBe(true);
    expect(tracing.active()).toBeNull();
    expect(tracing.batchSpan('ax.submit', [null, undefined], {})).toBeNull();
    // No provider registered: the API's own non-recording span, ended without a word.
    const span = tracing.attemptSpan('ax.run x', traceContextOf(TP)!, {});
    expect(span?.run(() => 7)).toBe(7);
    span?.end(false, 'boom');
  });
});

describe('traceOf', () => {
  it('builds the timeline of an archived task from its archived columns: relayed, claimed, failed, retried, succeeded, archived', () => {
    const at = (s: number): string => new Date(Date.UTC(2026, 11, 7, 12, 0, s)).toISOString();
    const {task, rows} = fromArchived({
      task: {
        id: '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d',
        type: 'order_notify',
        state: 'succeeded',
        attempt: 2,
        worker: 'w2',
        started_at: at(5),
        submitted_by: 'relay:app-1:7',
        published_at: at(1),
        created_at: at(0),
        traceparent: TP,
        tracestate: null,
      },
      history: [
        {from_state: 'running', to_state: 'failed', attempt: 1, worker: 'w1', at: at(3), error: 'boom', stack: null, started_at: at(2)},
        {from_state: 'running', to_state: 'succeeded', attempt: 2, worker: 'w2', at: at(6), error: null, stack: null, started_at: at(5)},
      ],
    });
    const t = traceOf(task, rows, {at: new Date(at(9)), part: '2026-12-07/p1'});
    expect(t).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      trace: {traceparent: TP, tracestate: null},
      archived: '2026-12-07/p1',
    });
    expect(t.events.map((e) => [e.stage, e.what, e.by, e.attempt, e.error])).toEqual([
      ['outbox', 'relayed from the outbox', 'relay:app-1:7', null, null],
      ['insert', 'submitted: inserted into the tasks table', 'relay:app-1:7', null, null],
      ['publish', 'doorbell published (the latest)', null, null, null],
      ['claim', 'claimed: attempt 1 started', 'w1', 1, null],
      ['attempt', 'attempt 1 ended: failed', 'w1', 1, 'boom'],
      ['claim', 'claimed: attempt 2 started', 'w2', 2, null],
      ['attempt', 'attempt 2 ended: succeeded', 'w2', 2, null],
      ['archive', 'archived (2026-12-07/p1)', null, null, null],
    ]);
  });
});

describe('the batched INSERT of tasks', () => {
  /** tasksInsert on a pool that records its statements (a lone small task: one autocommit INSERT). */
  const statementOf = async (trace: TraceContext | undefined): Promise<{sql: string; params: unknown[]}> => {
    const seen: Array<{sql: string; params: unknown[]}> = [];
    const pool = {query: async (q: {sql: string}, params: unknown[]) => (seen.push({sql: q.sql, params}), [{affectedRows: 1}])};
    const db = {pool, database: 'x', queryTimeoutMs: 1000, url: 'mysql://x'} as unknown as Db;
    const task = validateTaskSpec({type: 'order_notify'}, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, 0, () => ID);
    if (trace) task.trace = trace;
    await tasksInsert(db, 'default', {tasks: [task], actor: 'a'}, 0, 65_536);
    expect(seen).toHaveLength(1);
    return seen[0]!;
  };
  const ID = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d';

  it('names the trace columns only when a task of the statement has a trace: an untraced batch sends what it did before', async () => {
    const plain = await statementOf(undefined);
    expect(plain.sql).not.toMatch(/trace/);
    const traced = await statementOf({traceparent: TP, tracestate: 'k=v'});
    expect(traced.sql).toMatch(/task_key, traceparent, tracestate\) VALUES/);
    expect(traced.params).toEqual([...plain.params, TP, 'k=v']);
  });
});

describe('traceOf with links', () => {
  it("shows a task's links: the parents it waited for at its insert, the dependents and the batch its end settled", () => {
    const at = (s: number): Date => new Date(Date.UTC(2026, 11, 7, 12, 0, s));
    const id = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d';
    const [p, d] = ['0190f1c2-0000-7a41-9b2c-000000000001', '0190f1c2-0000-7a41-9b2c-000000000002'];
    const task = {
      id,
      type: 'order_step',
      state: 'succeeded',
      attempt: 1,
      worker: 'w1',
      startedAt: at(2),
      submittedBy: 'app:1',
      publishedAt: null,
      createdAt: at(0),
      finishedAt: at(3),
    } as unknown as TaskRecord;
    const rows: HistoryEntry[] = [
      {taskId: id, from: 'running', to: 'succeeded', attempt: 1, worker: 'w1', at: at(3), error: null, stack: null, startedAt: at(2)},
    ];
    const batch = {
      id: 'b1',
      callbackId: 'cb1',
      callbackState: 'submitted' as const,
      total: 1,
      succeeded: 1,
      dead: 0,
      cancelled: 0,
      createdAt: at(0),
      doneAt: at(3),
    };
    const t = traceOf(task, rows, undefined, {
      parents: [{id: p, type: 'order_fetch', state: 'succeeded', edge: 'succeeded'}],
      dependents: [{id: d, type: 'order_send', state: 'submitted'}],
      waitingFor: 0,
      batch,
      onParentFailure: 'cancel',
    });
    expect(t.events.filter((e) => e.stage === 'dependents').map((e) => [e.at.toISOString(), e.what])).toEqual([
      [at(0).toISOString(), `waits for 1 parent(s): ${p} (order_fetch, succeeded)`],
      [at(3).toISOString(), `dependent ${d} (order_send) settled by this end: now submitted`],
      [at(3).toISOString(), 'batch b1 complete with this end: callback cb1 released'],
    ]);
    // Not ended yet: nothing settled by it.
    const waiting = traceOf({...task, state: 'running', finishedAt: null} as TaskRecord, [], undefined, {
      parents: [],
      dependents: [{id: d, type: 'order_send', state: 'submitted'}],
      waitingFor: 0,
      batch: null,
      onParentFailure: null,
    });
    expect(waiting.events.filter((e) => e.stage === 'dependents')).toEqual([]);
  });
});
