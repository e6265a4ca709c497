/**
 * Results and progress (issue 26) without services: the checks of a handler's result and of
 * ctx.progress, runHandler's normalisation, and the worker's progress writer on a fake clock (at
 * most one write per second, every task's latest report in one write, nothing scheduled without
 * reports).
 */
import {describe, expect, it} from 'vitest';
import {silentLogger} from '../../src/core/log.js';
import {outcomeUpdateSql} from '../../src/core/store/mysql/outcomes.js';
import type {ProgressRow} from '../../src/core/store/types.js';
import {runHandler, TaskResult, type TaskContext} from '../../src/core/worker/handlers.js';
import {ProgressWriter} from '../../src/core/worker/progress.js';
import {checkProgress, encodeResult, RESULT_LIMIT_BYTES} from '../../src/core/worker/results.js';
import {fakeClock} from '../helpers/clock.js';

const ctx = {taskId: 't', type: 'x', attempt: 1, payload: {}, progress: () => undefined} as unknown as TaskContext;

describe('results', () => {
  it('stores JSON as its text; null and undefined are no result', () => {
    expect(encodeResult({a: [1, 'b', null, true], n: 1.5})).toEqual({ok: true, json: '{"a":[1,"b",null,true],"n":1.5}'});
    expect(encodeResult('text')).toEqual({ok: true, json: '"text"'});
    expect(encodeResult(null)).toEqual({ok: true, json: undefined});
    expect(encodeResult(undefined)).toEqual({ok: true, json: undefined});
    // As JSON.stringify: toJSON is used, undefined properties are left out.
    expect(encodeResult({at: new Date(0), gone: undefined})).toEqual({ok: true, json: '{"at":"1970-01-01T00:00:00.000Z"}'});
    expect(encodeResult(Object.assign(Object.create(null) as object, {a: 1}))).toEqual({ok: true, json: '{"a":1}'});
  });

  it('refuses what is not JSON, saying what and where', () => {
    const bad: Array<[unknown, RegExp]> = [
      [{f: () => 1}, /result key "f" is a function/],
      [{n: NaN}, /result key "n" is NaN/],
      [[Infinity], /is Infinity/],
      [{b: 10n}, /result key "b" is a bigint/],
      [{m: new Map()}, /result key "m" is a Map, not a plain object/],
      [[undefined], /is undefined/],
      [Symbol('s'), /the result is a symbol/],
    ];
    for (const [v, msg] of bad) {
      const r = encodeResult(v);
      expect(r.ok).toBe(false);
      expect(!r.ok && r.message).toMatch(/^result is not JSON/);
      expect(!r.ok && r.message).toMatch(msg);
    }
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(encodeResult(cycle)).toMatchObject({ok: false, message: expect.stringMatching(/^result is not JSON: .*circular/i)});
  });

  it('takes 64 KiB and refuses more, with the size in the message', () => {
    const at = 'x'.repeat(RESULT_LIMIT_BYTES - 2); // with its quotes: exactly the limit
    expect(encodeResult(at)).toMatchObject({ok: true});
    expect(encodeResult(`${at}x`)).toEqual({
      ok: false,
      message: 'result is 65 KiB, over the 64 KiB limit (store big data elsewhere and return a reference)',
    });
    // UTF-8 bytes count, not characters.
    expect(encodeResult('é'.repeat(40 * 1024))).toMatchObject({ok: false, message: expect.stringMatching(/^result is 81 KiB, over/)});
  });

  it('runHandler: a returned result is serialized; over the limit or not JSON fails the attempt unrecoverably', async () => {
    const run = (r: unknown) => runHandler({execute: () => r as never}, ctx);
    expect(await run(TaskResult.success({n: 1}))).toEqual({ok: true, resultJson: '{"n":1}'});
    expect(await run({ok: true, result: [1, 2]})).toEqual({ok: true, resultJson: '[1,2]'});
    expect(await run(TaskResult.success())).toEqual({ok: true});
    expect(await run(TaskResult.success(null))).toEqual({ok: true});
    expect(await run(undefined)).toEqual({ok: true});
    expect(await run({ok: true, result: {blob: 'x'.repeat(80 * 1024)}})).toEqual({
      ok: false,
      unrecoverable: true,
      message: expect.stringMatching(/^result is 81 KiB, over the 64 KiB limit/),
    });
    expect(await run({ok: true, result: new Set([1])})).toMatchObject({ok: false, unrecoverable: true, message: /Set, not a plain object/});
  });
});

describe('ctx.progress input', () => {
  it('takes 0..100 (rounded) and a note of up to 200 characters', () => {
    expect(checkProgress(0, undefined)).toEqual({percent: 0, note: null});
    expect(checkProgress(42.6, 'rows 426/1000')).toEqual({percent: 43, note: 'rows 426/1000'});
    expect(checkProgress(100, 'n'.repeat(200))).toEqual({percent: 100, note: 'n'.repeat(200)});
  });

  it('refuses anything else with a clear invalid_input error', () => {
    const cases: Array<[unknown, unknown, RegExp]> = [
      ['50', undefined, /percent must be a number from 0 to 100, got "50"/],
      [NaN, undefined, /got NaN/],
      [-1, undefined, /percent must be from 0 to 100, got -1/],
      [100.5, undefined, /got 100.5/],
      [50, 7, /note must be a string, got 7/],
      [50, 'n'.repeat(201), /note must be at most 200 characters, got 201/],
    ];
    for (const [p, n, msg] of cases) {
      let err: unknown;
      try {
        checkProgress(p, n);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({code: 'invalid_input', message: expect.stringMatching(msg)});
    }
  });
});

describe('the progress writer', () => {
  const setup = () => {
    const clock = fakeClock(1_000_000);
    const writes: Array<{at: number; rows: ProgressRow[]}> = [];
    const w = new ProgressWriter({
      clock,
      logger: silentLogger,
      write: async (rows) => void writes.push({at: clock.monotonic(), rows}),
    });
    return {clock, writes, w};
  };
  const row = (id: string, percent: number, note: string | null = null): ProgressRow => ({id, fence: 1, percent, note});

  it('schedules nothing until a report comes', () => {
    const {clock} = setup();
    expect(clock.pending()).toBe(0);
  });

  it('writes at most once a second, the latest report of every task in one write', async () => {
    const {clock, writes, w} = setup();
    w.report(row('a', 1));
    w.report(row('b', 5, 'b'));
    await clock.advanceAsync(0); // the first report of a quiet writer goes out at once…
    expect(writes).toEqual([{at: 1_000_000, rows: [row('a', 1), row('b', 5, 'b')]}]);
    for (let i = 2; i <= 50; i++) w.report(row('a', i)); // …the rest wait for the second to pass
    w.report(row('c', 7));
    await clock.advanceAsync(999);
    expect(writes).toHaveLength(1);
    await clock.advanceAsync(1);
    expect(writes[1]).toEqual({at: 1_001_000, rows: [row('a', 50), row('c', 7)]});
    // A steady stream of reports: one write per second, never more.
    for (let ms = 0; ms < 5000; ms += 10) {
      w.report(row('a', ms % 100));
      await clock.advanceAsync(10);
    }
    const gaps = writes.slice(1).map((x, i) => x.at - writes[i]!.at);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000);
    expect(writes.length).toBeGreaterThanOrEqual(6);
    await clock.advanceAsync(5000);
    expect(clock.pending()).toBe(0); // nothing left to write: no timer
  });

  it('hands the report of an attempt that ended to its outcome, and drops everything on stop', async () => {
    const {clock, writes, w} = setup();
    w.report(row('a', 10));
    expect(w.take('a')).toEqual(row('a', 10));
    expect(w.take('a')).toBeUndefined();
    await clock.advanceAsync(2000);
    expect(writes).toEqual([]);
    w.report(row('b', 10));
    await w.stop();
    w.report(row('c', 10));
    await clock.advanceAsync(2000);
    expect(writes).toEqual([]);
  });
});

describe('the outcome UPDATE', () => {
  const id = '01a2510b-aaf6-76b8-812e-7cb63013556b';
  it('a plain complete is the statement it always was: no result, no progress column', () => {
    const q = outcomeUpdateSql('complete', [{kind: 'complete', id, fence: 3}]);
    expect(q.sql).not.toMatch(/result_json|progress/);
    expect(q.sql).toMatch(
      /^UPDATE tasks SET state = 'succeeded', lease_until = NULL, finished_at = NOW\(3\), updated_at = NOW\(3\), last_error = NULL WHERE /,
    );
  });

  it('a result and an unwritten progress report ride in the same statement', () => {
    const q = outcomeUpdateSql('complete', [
      {kind: 'complete', id, fence: 3, result: '{"a":1}', progress: {percent: 90, note: 'n'}},
      {kind: 'complete', id: `${id.slice(0, -1)}c`, fence: 3},
    ]);
    expect(q.sql.match(/UPDATE/g)).toHaveLength(1);
    expect(q.sql).toContain('result_json = CASE id WHEN ? THEN ? ELSE result_json END');
    expect(q.sql).toContain('progress = CASE id WHEN ? THEN ? ELSE progress END');
    expect(q.params).toContain('{"a":1}');
  });
});
