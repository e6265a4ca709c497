import {describe, expect, it} from 'vitest';
import {TASK_STATES, TRANSITIONS, allowedEdges, canApply, isTerminal} from '../../src/core/task/state.js';
import {retryDelayBounds, retryDelayMs, nextAfterFailure} from '../../src/core/retry/backoff.js';
import {parseDuration, formatDuration} from '../../src/core/duration.js';
import {validateTaskSpec, validateTypeName, parsePayloadText, parseIsoTime} from '../../src/core/task/validate.js';
import {createIdGenerator, idFromDedupKey, isTaskId} from '../../src/core/task/id.js';
import {cpuPoolSize, ioPoolSize, loadConfig, redactUrl} from '../../src/core/config/config.js';
import {decodeMessage, encodeMessage, groupDoorbells, MAX_TASKS_PER_MESSAGE, splitDelivery} from '../../src/core/broker/types.js';
import {decideOutcome} from '../../src/core/worker/outcome.js';
import {expectInvalid} from '../helpers/expect.js';
import {clip, table} from '../../src/cli/render.js';

const defaults = {maxRetries: 5, payloadLimitBytes: 1024, cell: 'default'};
let n = 0;
const newId = () => `00000000-0000-7000-8000-${String(++n).padStart(12, '0')}`;
const spec = (s: Record<string, unknown>) => validateTaskSpec(s, defaults, 1_700_000_000_000, newId);
const invalid = expectInvalid;

describe('state machine', () => {
  it('has exactly the six states and the designed edges', () => {
    expect(TASK_STATES).toEqual(['submitted', 'running', 'succeeded', 'failed', 'dead', 'cancelled']);
    const edges = allowedEdges()
      .map(([f, t]) => `${f}>${t}`)
      .sort();
    expect(edges).toEqual(
      [
        'submitted>running',
        'failed>running',
        'running>succeeded',
        'running>failed',
        'running>dead',
        'submitted>cancelled',
        'failed>cancelled',
        // An operator's cancel of a running attempt (fenced: the attempt's late outcome is stale).
        'running>cancelled',
        'dead>submitted',
        'succeeded>submitted',
        'cancelled>submitted',
        // Flow control: parked (claimed or not) back to submitted, and dead for want of a handler.
        'running>submitted',
        'submitted>submitted',
        'failed>submitted',
        'submitted>dead',
        'failed>dead',
      ].sort(),
    );
  });
  it('never leaves a terminal state except by replay from dead, or a forced replay (dlq replay --force)', () => {
    for (const [name, t] of Object.entries(TRANSITIONS)) {
      for (const from of t.from) if (isTerminal(from) && name !== 'forceReplay') expect([name, from]).toEqual(['replay', 'dead']);
    }
    expect(TRANSITIONS.forceReplay).toEqual({from: ['dead', 'succeeded', 'cancelled'], to: 'submitted'});
    expect(canApply('claim', 'running')).toBe(false);
    expect(canApply('claim', 'failed')).toBe(true);
    expect(canApply('cancel', 'running')).toBe(false);
    expect(TRANSITIONS.cancelRunning).toEqual({from: ['running'], to: 'cancelled', fenced: true});
  });
});

describe('backoff', () => {
  const opts = {baseMs: 1000, maxMs: 3_600_000};
  it('doubles from 1 s with jitter in [0, 0.5]', () => {
    expect([1, 2, 3, 4, 5, 6].map((a) => retryDelayMs(a, opts, () => 0))).toEqual([1000, 2000, 4000, 8000, 16000, 32000]);
    expect([1, 2, 3, 4, 5, 6].map((a) => retryDelayMs(a, opts, () => 0.999999))).toEqual([1500, 3000, 6000, 12000, 24000, 48000]);
    expect(retryDelayMs(3, opts, () => 0.5)).toBe(5000);
  });
  it('stays within its bounds for any random value and is capped', () => {
    for (let a = 1; a <= 30; a++) {
      const [lo, hi] = retryDelayBounds(a, opts);
      for (const r of [0, 0.1, 0.5, 0.9, 0.999]) {
        const d = retryDelayMs(a, opts, () => r);
        expect(d).toBeGreaterThanOrEqual(lo);
        expect(d).toBeLessThanOrEqual(hi);
      }
    }
    expect(retryDelayBounds(30, opts)).toEqual([3_600_000, 5_400_000]);
  });
  it('dead after the last retry or when unrecoverable', () => {
    expect(nextAfterFailure(5, 5, false)).toBe('failed');
    expect(nextAfterFailure(6, 5, false)).toBe('dead');
    expect(nextAfterFailure(1, 5, true)).toBe('dead');
    expect(nextAfterFailure(1, 0, false)).toBe('dead');
  });
  it('decides outcomes: success, retry with backoff, dead, release; and how each counts for the breaker', () => {
    const held = {id: 'x', fence: 3, attempt: 2, maxRetries: 2, retryBase: 0};
    expect(decideOutcome(held, {kind: 'success'}, opts, () => 0)).toEqual({kind: 'complete', id: 'x', fence: 3, breaker: 'ok'});
    expect(decideOutcome(held, {kind: 'fail', message: 'm', unrecoverable: false, stack: 'Error: m\n    at h'}, opts, () => 0)).toEqual({
      kind: 'fail',
      id: 'x',
      fence: 3,
      error: 'm',
      stack: 'Error: m\n    at h',
      retryDelayMs: 2000,
      breaker: 'failed',
    });
    // Timeouts count as failures; unrecoverable failures (bad payloads) and aborts do not count.
    expect(decideOutcome({...held, attempt: 3}, {kind: 'timeout', message: 't'}, opts, () => 0)).toMatchObject({
      kind: 'deadLetter',
      error: expect.stringMatching(/^timeout: t .*no retries left/),
      stack: null,
      breaker: 'failed',
    });
    expect(decideOutcome(held, {kind: 'fail', message: 'm', unrecoverable: true}, opts, () => 0)).toEqual({
      kind: 'deadLetter',
      id: 'x',
      fence: 3,
      error: 'm',
      stack: null,
    });
    expect(decideOutcome(held, {kind: 'aborted', message: 'lease lost'}, opts, () => 0)).not.toHaveProperty('breaker');
    expect(decideOutcome(held, {kind: 'notStarted', message: 'queue full'}, opts, () => 0)).toEqual({
      kind: 'release',
      id: 'x',
      fence: 3,
      reason: 'released: queue full',
    });
  });
  it('counts the budget and the backoff of a replayed task from its replay (attempt − retryBase)', () => {
    // Died at attempt 3 of 3, replayed (retryBase 3): attempt 4 is the first of a fresh budget.
    const replayed = {id: 'x', fence: 5, attempt: 4, maxRetries: 2, retryBase: 3};
    expect(decideOutcome(replayed, {kind: 'fail', message: 'm', unrecoverable: false}, opts, () => 0)).toMatchObject({
      kind: 'fail',
      retryDelayMs: 1000,
    });
    expect(decideOutcome({...replayed, attempt: 6}, {kind: 'fail', message: 'm', unrecoverable: false}, opts, () => 0)).toMatchObject({
      kind: 'deadLetter',
      error: 'm (attempt 3 of 3 since its replay, no retries left)',
    });
  });
});

describe('durations', () => {
  it('parses milliseconds and unit strings', () => {
    expect(parseDuration(250)).toBe(250);
    expect(parseDuration('250')).toBe(250);
    expect(parseDuration('5s')).toBe(5000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(formatDuration(90_000)).toBe('1m30s');
  });
  it('refuses negative, NaN, malformed and huge values', () => {
    for (const bad of [-1, NaN, Infinity, 1.5, '-5s', '5 parsecs', '', 's', '5s5', '367d', {}, null])
      invalid(() => parseDuration(bad, 'delay'), /delay/);
  });
});

describe('task validation', () => {
  it('accepts domain_action type names only', () => {
    for (const ok of ['order_notify', 'user_register_credit', 'a1_b2']) expect(validateTypeName(ok)).toBe(ok);
    for (const bad of [
      'order',
      'Order_notify',
      'order-notify',
      '_order_notify',
      'order__notify',
      'order_',
      "a_b' OR 1=1 --",
      '',
      'x'.repeat(65) + '_y',
    ]) {
      invalid(() => validateTypeName(bad), /task type/);
    }
  });
  it('accepts JSON objects within the size limit and refuses the rest', () => {
    expect(spec({type: 'order_notify', payload: {a: [1, 'x', null, {b: true}]}}).payload).toBe('{"a":[1,"x",null,{"b":true}]}');
    expect(spec({type: 'order_notify'}).payload).toBe('{}');
    invalid(() => spec({type: 'order_notify', payload: [1]}), /JSON object/);
    invalid(() => spec({type: 'order_notify', payload: 'x'}), /JSON object/);
    invalid(() => spec({type: 'order_notify', payload: {big: 'x'.repeat(2000)}}), /over the limit of 1024 bytes/);
    invalid(() => spec({type: 'order_notify', payload: JSON.parse('{"__proto__": {"polluted": 1}}')}), /forbidden key "__proto__"/);
    invalid(() => spec({type: 'order_notify', payload: {n: NaN}}), /non-finite/);
    invalid(() => spec({type: 'order_notify', payload: {d: new Date()}}), /non-plain object/);
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 40; i++) deep = (deep.x = {}) as Record<string, unknown>;
    invalid(() => spec({type: 'order_notify', payload: root}), /nested deeper/);
    invalid(() => parsePayloadText('{not json', 1024), /not valid JSON/);
    invalid(() => parsePayloadText('{"__proto__": 1}', 1024), /__proto__/);
  });
  it('validates delays, run times, pools, retries, timeouts, dedup keys and ids', () => {
    const t = spec({type: 'order_notify', delay: '5s', pool: 'cpu', maxRetries: 0, timeout: '30s', dedupKey: 'k'});
    expect(t).toMatchObject({
      delayMs: 5000,
      pool: 'cpu',
      maxRetries: 0,
      timeoutMs: 30_000,
      dedupKey: 'k',
      id: idFromDedupKey('default', 'k'),
    });
    expect(spec({type: 'order_notify', runAt: '2023-11-15T08:00:00+08:00'}).runAtMs).toBe(Date.parse('2023-11-15T00:00:00Z'));
    invalid(() => spec({type: 'order_notify', delay: '5s', runAt: '2030-01-01T00:00:00Z'}), /either delay or runAt/);
    invalid(() => spec({type: 'order_notify', runAt: '2030-01-01 00:00'}), /ISO-8601/);
    invalid(() => spec({type: 'order_notify', runAt: '2023-11-14T00:00:00Z'}), /in the past/);
    invalid(() => spec({type: 'order_notify', runAt: '2099-01-01T00:00:00Z'}), /366 days/);
    invalid(() => spec({type: 'order_notify', delay: -1}), /delay/);
    invalid(() => spec({type: 'order_notify', pool: 'gpu'}), /pool/);
    invalid(() => spec({type: 'order_notify', maxRetries: -1}), /maxRetries/);
    invalid(() => spec({type: 'order_notify', maxRetries: 1.5}), /maxRetries/);
    invalid(() => spec({type: 'order_notify', timeout: 0}), /timeout/);
    invalid(() => spec({type: 'order_notify', dedupKey: ''}), /dedupKey/);
    invalid(() => spec({type: 'order_notify', dedupKey: 'order-42 '}), /dedupKey must not end with whitespace/);
  });
  it('parses ISO times without rolling impossible dates over', () => {
    expect(parseIsoTime('2028-02-29T12:00:00Z')).toBe(Date.UTC(2028, 1, 29, 12));
    expect(parseIsoTime('2026-12-01T02:00:00+08:00')).toBe(Date.UTC(2026, 10, 30, 18));
    for (const bad of [
      '2027-02-29T00:00:00Z',
      '2027-02-30T00:00:00Z',
      '2027-04-31T00:00:00Z',
      '2027-01-01T24:00:00Z',
      '2027-01-01T10:60:00Z',
      'x',
    ])
      expect(parseIsoTime(bad), bad).toBeNaN();
    invalid(() => spec({type: 'order_notify', id: 'NOT-A-UUID'}), /lower-case UUID/);
    invalid(() => spec({type: 'order_notify', dealy: '5s'}), /unknown task field "dealy"/);
  });
});

describe('ids', () => {
  it('makes time-ordered, unique UUIDv7 ids', () => {
    let t = 1_700_000_000_000;
    const gen = createIdGenerator(() => t);
    const a = gen();
    t += 1;
    const b = gen();
    expect(isTaskId(a) && isTaskId(b)).toBe(true);
    expect(a[14]).toBe('7');
    expect(a < b).toBe(true);
    expect(new Set(Array.from({length: 10_000}, gen)).size).toBe(10_000);
    expect(idFromDedupKey('default', 'k')).toBe(idFromDedupKey('default', 'k'));
    expect(idFromDedupKey('default', 'k')).not.toBe(idFromDedupKey('other', 'k'));
  });
});

describe('configuration', () => {
  it('has the design defaults', () => {
    const c = loadConfig({env: {}, cwd: '/nonexistent'});
    expect(c).toMatchObject({
      maxRetries: 5,
      retryBaseMs: 1000,
      submitBatchSize: 500,
      submitFlushMs: 1000,
      taskTimeoutMs: 600_000,
      poolQueueCapacity: 2000,
      payloadLimitBytes: 65_536,
      cell: 'default',
      doorbellBatch: 50,
    });
    expect(c.mysqlUrl).toBe('mysql://root@127.0.0.1:3306/ax');
  });
  it('takes env over defaults and overrides over env, and names bad values', () => {
    const c = loadConfig({
      env: {AX_MAX_RETRIES: '3', AX_RETRY_BASE: '250ms', AX_PAYLOAD_LIMIT: '128KiB'},
      overrides: {maxRetries: 7},
      cwd: '/nonexistent',
    });
    expect(c).toMatchObject({maxRetries: 7, retryBaseMs: 250, payloadLimitBytes: 131_072});
    invalid(() => loadConfig({env: {AX_MAX_RETRIES: 'many'}, cwd: '/nonexistent'}), /maxRetries \(env AX_MAX_RETRIES\)/);
    invalid(() => loadConfig({env: {AX_MYSQL_URL: 'postgres://x/y'}, cwd: '/nonexistent'}), /mysql:\/\//);
    invalid(
      () => loadConfig({env: {AX_RELAY_HEALTH_PORT: '70000'}, cwd: '/nonexistent'}),
      /AX_RELAY_HEALTH_PORT\) must be a whole number from 0 to 65535/,
    );
    for (const bad of ['0', '1001', '2.5'])
      invalid(
        () => loadConfig({env: {AX_DOORBELL_BATCH: bad}, cwd: '/nonexistent'}),
        /AX_DOORBELL_BATCH\) must be a whole number from 1 to 1000/,
      );
    invalid(() => loadConfig({env: {AX_CONFIG: '/nonexistent/ax.json'}}), /does not exist/);
  });
  it('reads AX_PAYLOAD_INLINE as a size (default 4 KiB, 0 allowed) and names a bad one', () => {
    expect(loadConfig({env: {}, cwd: '/nonexistent'}).payloadInlineBytes).toBe(4096);
    expect(loadConfig({env: {AX_PAYLOAD_INLINE: '16KiB'}, cwd: '/nonexistent'}).payloadInlineBytes).toBe(16_384);
    expect(loadConfig({env: {AX_PAYLOAD_INLINE: '0'}, cwd: '/nonexistent'}).payloadInlineBytes).toBe(0);
    for (const bad of ['lots', '-1', '1.5KiB'])
      invalid(() => loadConfig({env: {AX_PAYLOAD_INLINE: bad}, cwd: '/nonexistent'}), /payloadInlineBytes \(env AX_PAYLOAD_INLINE\)/);
  });
  it('sizes the pools from the design formulas', () => {
    expect(ioPoolSize({ioConcurrency: 0, ioWaitRatio: 15}, 8)).toBe(256);
    expect(ioPoolSize({ioConcurrency: 40, ioWaitRatio: 15}, 8)).toBe(40);
    expect(cpuPoolSize({cpuThreads: 0}, 8)).toBe(9);
    expect(cpuPoolSize({cpuThreads: 2}, 8)).toBe(2);
  });
  it('redacts passwords in URLs', () => {
    expect(redactUrl('amqp://user:secret@host:5672')).toBe('amqp://user:***@host:5672');
  });
});

describe('doorbell messages', () => {
  it('round-trips one task and many, and refuses malformed bodies', () => {
    const one = encodeMessage([{id: 'a', type: 'order_notify'}]);
    expect(JSON.parse(one.toString())).toEqual({v: 1, id: 'a', type: 'order_notify'});
    expect(decodeMessage(one)).toEqual([{id: 'a', type: 'order_notify'}]);
    const refs = [
      {id: 'a', type: 'order_notify'},
      {id: 'b', type: 'user_credit'},
    ];
    expect(decodeMessage(encodeMessage(refs))).toEqual(refs);
    const tooMany = JSON.stringify({v: 2, tasks: Array.from({length: MAX_TASKS_PER_MESSAGE + 1}, (_, i) => [`t${i}`, 'a_b'])});
    for (const bad of [
      '',
      'x',
      '[]',
      'null',
      '{"id":1,"type":"t"}',
      '{"id":"a"}',
      '{"v":2,"tasks":[]}',
      '{"v":2,"tasks":[["a"]]}',
      '{"v":2,"tasks":[["a","t"],["b",2]]}',
      '{"v":2,"tasks":"a"}',
      tooMany,
      'x'.repeat(300_000),
    ])
      expect(decodeMessage(Buffer.from(bad)), bad.slice(0, 40)).toBeNull();
  });

  it('splits a doorbell for several tasks into parts; the message is acked once, when every part is', () => {
    let acks = 0;
    const d = {body: Buffer.alloc(0), redelivered: true, ack: () => void acks++};
    const parts = splitDelivery(d, [
      {id: 'a', type: 'order_notify'},
      {id: 'b', type: 'user_credit'},
    ]);
    expect(decodeMessage(parts[1]!.body)).toEqual([{id: 'b', type: 'user_credit'}]);
    expect(parts[0]!.redelivered).toBe(true);
    parts[0]!.ack();
    parts[0]!.ack();
    expect(acks).toBe(0);
    parts[1]!.ack();
    expect(acks).toBe(1);
  });

  it('groups tasks per pool, in order, at most N per message', () => {
    const t = (id: string, pool: 'io' | 'cpu') => ({id, type: 'order_notify', pool});
    const msgs = [t('1', 'io'), t('2', 'cpu'), t('3', 'io'), t('4', 'io'), t('5', 'io'), t('6', 'cpu')];
    expect(groupDoorbells(msgs, 3).map((g) => g.map((m) => m.id))).toEqual([['1', '3', '4'], ['5'], ['2', '6']]);
    expect(groupDoorbells(msgs, 1)).toHaveLength(6);
    expect(groupDoorbells([], 50)).toEqual([]);
  });
});

describe('terminal output', () => {
  it('never passes control characters from row contents to the terminal', () => {
    const evil = 'ab\u001b[31mRED\r\nx\u0007';
    const lines = table(['type', 'n'], [[evil, '1']]);
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(lines[1]).toContain('ab\uFFFD[31mRED');
    expect(clip(evil, 100)).toBe('ab\uFFFD[31mRED x\uFFFD');
    // Bidirectional overrides would reorder the line; ordinary non-ASCII text stays as it is.
    expect(clip('invoice \u202Efdp.exe', 100)).toBe('invoice \uFFFDfdp.exe');
    expect(clip('Zürich 北京 ✓', 100)).toBe('Zürich 北京 ✓');
  });
});
