/**
 * Traces against the real servers, with a real OpenTelemetry tracer provider (in-memory exporter)
 * and context manager registered in this process: the trace context of a submit is kept on the task
 * row and continued by an in-process worker (the attempt's span is a child of the submitting
 * request's span, and the handler's own spans nest under it); the outbox carries it; a task
 * submitted outside a trace has none and gets no span; a malformed traceparent on an outbox row is
 * ignored (the task is relayed and runs, untraced).
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {context, trace, type SpanContext} from '@opentelemetry/api';
import {AsyncLocalStorageContextManager} from '@opentelemetry/context-async-hooks';
import {BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan} from '@opentelemetry/sdk-trace-base';
import {openAdmin} from '../../src/compose.js';
import type {Admin} from '../../src/core/admin/service.js';
import {enqueueInTransaction} from '../../src/core/outbox/enqueue.js';
import {createRelayService} from '../../src/core/outbox/service.js';
import type {Producer} from '../../src/core/producer/producer.js';
import {createWorkerService} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {type BusinessDb, createBusinessDb} from '../helpers/outbox.js';
import {testProducer} from '../helpers/producer.js';

const HANDLERS = new URL('../fixtures/trace-handlers.js', import.meta.url).href;
const seen = (): Map<string, SpanContext | null> =>
  ((globalThis as {__axTraceSeen?: Map<string, SpanContext | null>}).__axTraceSeen ??= new Map());

describe('traces', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({spanProcessors: [new SimpleSpanProcessor(exporter)]});
  const contextManager = new AsyncLocalStorageContextManager();
  const tracer = trace.getTracer('trace-test');
  let env: TestEnv;
  let biz: BusinessDb;
  let producer: Producer;
  let worker: Worker;
  let admin: Admin;

  /** Runs `f` inside a new active span `name`, ended after it; returns what f returned and the span's context. */
  const inSpan = async <T>(name: string, f: () => Promise<T>): Promise<{value: T; span: SpanContext}> =>
    tracer.startActiveSpan(name, async (span) => {
      try {
        return {value: await f(), span: span.spanContext()};
      } finally {
        span.end();
      }
    });
  const row = async (id: string) =>
    (
      await env.sql<{state: string; traceparent: string | null; tracestate: string | null}>(
        'SELECT state, traceparent, tracestate FROM tasks WHERE id = ?',
        [id],
      )
    )[0]!;
  const succeeded = (id: string) => eventually(async () => (await row(id)).state === 'succeeded', 20_000, `task ${id} succeeded`);
  const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
  const attemptOf = (id: string): ReadableSpan | undefined =>
    spans().find((s) => s.name === 'ax.run trace_probe' && s.attributes['ax.task.id'] === id);
  const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;

  beforeAll(async () => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(contextManager.enable());
    biz = await createBusinessDb({migrate: true});
    env = await createTestEnv({outboxMysqlUrl: biz.url});
    producer = testProducer(env, await env.store(), await env.broker());
    worker = await createWorkerService({
      ...env.rt,
      config: env.config,
      store: await env.store(),
      broker: await env.broker({reconnect: true}),
      handlersModule: HANDLERS,
      pools: ['io'],
    });
    await worker.start();
    admin = openAdmin(env.rt);
  });
  afterAll(async () => {
    await admin?.close();
    await worker?.stop({graceMs: 1000});
    await producer?.close();
    await env?.dispose();
    await biz?.dispose();
    trace.disable();
    context.disable();
  });

  it("a submit's trace context is on its row; the attempt's span is its child, and the handler's spans nest in the attempt's", async () => {
    const {value: id, span: request} = await inSpan('request', async () => {
      const id = await producer.submit({type: 'trace_probe', payload: {}});
      await producer.flush();
      return id;
    });
    expect(await row(id)).toMatchObject({traceparent: `00-${request.traceId}-${request.spanId}-01`, tracestate: null});
    await succeeded(id);
    const attempt = await eventually(async () => attemptOf(id), 5000, 'the attempt span');
    expect(attempt.spanContext().traceId).toBe(request.traceId);
    expect(parentOf(attempt)).toBe(request.spanId);
    expect(attempt.attributes).toMatchObject({'ax.task.type': 'trace_probe', 'ax.task.attempt': 1});
    // The handler ran with the attempt's span active, and its own span is that span's child.
    expect(seen().get(id)?.spanId).toBe(attempt.spanContext().spanId);
    const work = spans().find((s) => s.name === 'handler work' && s.spanContext().traceId === request.traceId);
    expect(work && parentOf(work)).toBe(attempt.spanContext().spanId);
    // The submit batch and the claim: spans of the same trace (one trace in the batch: children of the request).
    for (const name of ['ax.submit', 'ax.claim']) {
      const s = spans().find((x) => x.name === name && x.spanContext().traceId === request.traceId);
      expect(s && parentOf(s), name).toBe(request.spanId);
    }
    // `ax trace`'s timeline (through the admin service): the trace id, then insert → publish → claim → attempt.
    const t = await admin.tasks.trace(id);
    expect(t).toMatchObject({taskId: id, type: 'trace_probe', state: 'succeeded', traceId: request.traceId, archived: null});
    expect(t.trace?.traceparent).toBe(`00-${request.traceId}-${request.spanId}-01`);
    expect(t.events.map((e) => e.stage)).toEqual(['insert', 'publish', 'claim', 'attempt']);
    expect(t.events.at(-1)).toMatchObject({what: 'attempt 1 ended: succeeded', attempt: 1, by: worker.id});
    expect(t.events[0]!.by).toBe('test:producer');
  });

  it('ax trace: a malformed id is invalid_input, an unknown one not_found; a relayed task starts at the outbox', async () => {
    await expect(admin.tasks.trace('not-a-task')).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.tasks.trace('0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d')).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/neither live nor archived/),
    });
  });

  it('a task submitted outside any trace has no trace context and gets no span; its handler sees no span', async () => {
    const before = spans().length;
    const id = await producer.submit({type: 'trace_probe', payload: {}});
    await producer.flush();
    await succeeded(id);
    expect(await row(id)).toMatchObject({traceparent: null, tracestate: null});
    expect(seen().get(id)).toBeNull();
    // Nothing of ax's: the batch, its claim and its attempt made no span.
    expect(
      spans()
        .slice(before)
        .filter((s) => s.name.startsWith('ax.')),
    ).toEqual([]);
  });

  it('the outbox carries the trace context of the enqueuing request to the task; a malformed one is ignored', async () => {
    const conn = await biz.pool.getConnection();
    let request!: SpanContext;
    try {
      await conn.beginTransaction();
      ({span: request} = await inSpan('order request', () => enqueueInTransaction(conn, {type: 'trace_probe', payload: {k: 'traced'}})));
      await conn.commit();
    } finally {
      conn.release();
    }
    const expected = `00-${request.traceId}-${request.spanId}-01`;
    expect(await biz.sql('SELECT traceparent FROM task_outbox')).toEqual([{traceparent: expected}]);
    // A producer in another language writing a traceparent that is not one, and a stray tracestate.
    await biz.sql('INSERT INTO task_outbox (type, payload, traceparent, tracestate) VALUES (?, ?, ?, ?)', [
      'trace_probe',
      JSON.stringify({k: 'bad'}),
      '00-not-a-trace-context',
      'k=v',
    ]);
    const relay = createRelayService({
      ...env.rt,
      config: env.config,
      outbox: await biz.outbox(),
      store: await env.store(),
      broker: await env.broker(),
      id: 'relay-trace',
    });
    try {
      expect(await relay.once()).toBe(2);
    } finally {
      await relay.stop();
    }
    const tasks = await env.sql<{id: string; k: string; traceparent: string | null}>(
      "SELECT id, JSON_VALUE(payload, '$.k') AS k, traceparent FROM tasks WHERE JSON_VALUE(payload, '$.k') IS NOT NULL ORDER BY k",
    );
    expect(tasks.map(({k, traceparent}) => ({k, traceparent}))).toEqual([
      {k: 'bad', traceparent: null},
      {k: 'traced', traceparent: expected},
    ]);
    for (const t of tasks) await succeeded(t.id);
    const [bad, traced] = tasks as [(typeof tasks)[0], (typeof tasks)[0]];
    expect(parentOf(await eventually(async () => attemptOf(traced.id), 5000, 'the attempt span'))).toBe(request.spanId);
    expect(attemptOf(bad.id)).toBeUndefined();
    expect(seen().get(bad.id)).toBeNull();
    const t = await admin.tasks.trace(traced.id);
    expect(t.traceId).toBe(request.traceId);
    expect(t.events.slice(0, 2)).toMatchObject([
      {stage: 'outbox', by: 'relay-trace'},
      {stage: 'insert', by: 'relay-trace'},
    ]);
    expect((await admin.tasks.trace(bad.id)).trace).toBeNull();
  });

  it('a task_outbox from before the trace columns takes the tasks of a traced request without their trace, in the same transaction', async () => {
    await biz.sql('ALTER TABLE task_outbox DROP COLUMN traceparent, DROP COLUMN tracestate');
    try {
      const conn = await biz.pool.getConnection();
      try {
        await conn.beginTransaction();
        await conn.query('INSERT INTO task_outbox (type, payload) VALUES (\'trace_probe\', \'{"k": "before"}\')');
        await inSpan('old table request', () => enqueueInTransaction(conn, {type: 'trace_probe', payload: {k: 'old'}}));
        await conn.commit();
      } finally {
        conn.release();
      }
      // Both rows of the transaction are there: the refused statement undid nothing else.
      expect(await biz.sql("SELECT JSON_VALUE(payload, '$.k') AS k FROM task_outbox WHERE sent_at IS NULL ORDER BY id")).toEqual([
        {k: 'before'},
        {k: 'old'},
      ]);
    } finally {
      await (await biz.outbox()).outboxCreateTable();
    }
    const cols = await biz.sql(
      "SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox' AND COLUMN_NAME LIKE 'trace%' ORDER BY c",
    );
    expect(cols).toEqual([{c: 'traceparent'}, {c: 'tracestate'}]);
  });
});
