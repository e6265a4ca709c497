/**
 * planReplay and runReplay over an in-memory store and broker with the fake clock: selection
 * checks, pacing by --rate, deaths after the plan left alone, tasks taken by someone else skipped,
 * two transactions in flight when unpaced, and a failed publish's marks undone for the scheduler.
 */
import {describe, expect, it} from 'vitest';
import {
  CONFIRM_ABOVE,
  PATCH_CHECK_PAGE,
  PATCH_CLIPPED_MARKER,
  PATCH_RECORD_BYTES,
  patchRecord,
  planReplay,
  REPLAY_BATCH,
  type ReplayRun,
  type ReplayStore,
  runReplay,
  UNPACED_IN_FLIGHT,
} from '../../src/core/dlq/replay.js';
import {MAX_REPLAY_IDS} from '../../src/core/dlq/replay-request.js';
import {isAxError} from '../../src/core/errors.js';
import {createLogger} from '../../src/core/log.js';
import type {DeadFilter, DeadReplayParams} from '../../src/core/store/types.js';
import type {JsonObject, TaskRecord} from '../../src/core/task/model.js';
import type {TaskState} from '../../src/core/task/state.js';
import {fakeClock} from '../helpers/clock.js';

const id = (n: number): string => `01900000-0000-7000-8000-${String(n).padStart(12, '0')}`;
const AS_OF = new Date('2026-06-01T12:00:00Z');

interface Row {
  id: string;
  type: string;
  state: TaskState;
  attempt: number;
  finishedAt: Date;
  lastError: string;
  payload?: JsonObject;
}

function memory(rows: Row[]) {
  const byId = new Map(rows.map((r) => [r.id, {...r}]));
  const replays: DeadReplayParams[] = [];
  const forgotten: string[] = [];
  /** Replaces the body of deadReplay's write when set: lets a test hold a batch's transaction open. */
  let hold: ((ids: string[]) => Promise<void>) | undefined;
  const pages: Array<{afterId?: string; withPayload?: boolean; n: number}> = [];
  /** Ids per tasksGetMany call. */
  const reads: number[] = [];
  /** Called before each deadReplay: lets a test move rows as another operator would. */
  let before: (ids: string[]) => void = () => undefined;
  const matches = (r: Row, f: DeadFilter): boolean =>
    r.state === 'dead' &&
    (f.type === undefined || r.type === f.type) &&
    (f.since === undefined || r.finishedAt >= f.since) &&
    (f.until === undefined || r.finishedAt < f.until) &&
    (f.errorContains === undefined || r.lastError.includes(f.errorContains));
  const store: ReplayStore = {
    clockNow: async () => AS_OF,
    tasksGetMany: async ({ids}) => {
      reads.push(ids.length);
      return ids.flatMap((x) => {
        const r = byId.get(x);
        return r ? [{id: r.id, type: r.type, state: r.state, finishedAt: r.finishedAt, payload: r.payload ?? {}} as TaskRecord] : [];
      });
    },
    deadList: async (p) =>
      [...byId.values()]
        .filter((r) => matches(r, p))
        .sort((a, b) => b.finishedAt.getTime() - a.finishedAt.getTime() || b.id.localeCompare(a.id))
        .slice(0, p.limit)
        .map((r) => ({...r, pool: 'io' as const, maxRetries: 5, retryBase: 0, createdAt: r.finishedAt})),
    deadPage: async (p) => {
      const page = [...byId.values()]
        .filter((r) => matches(r, p) && (p.afterId === undefined || r.id > p.afterId))
        .sort((a, b) => a.id.localeCompare(b.id))
        .slice(0, p.limit)
        .map((r) => (p.withPayload ? {id: r.id, payload: r.payload ?? {}} : {id: r.id}));
      pages.push({...(p.afterId === undefined ? {} : {afterId: p.afterId}), ...(p.withPayload ? {withPayload: true} : {}), n: page.length});
      return page;
    },
    deadErrorGroups: async (f) =>
      [...byId.values()]
        .filter((r) => matches(r, f))
        .map((r) => ({type: r.type, error: r.lastError, count: 1, firstSeen: r.finishedAt, lastSeen: r.finishedAt, sampleId: r.id})),
    deadReplay: async (p) => {
      before(p.ids);
      if (hold) await hold(p.ids);
      replays.push(p);
      const replayed: Array<{id: string; type: string; pool: 'io'; priority: 'normal'; fence: number}> = [];
      const skipped: Array<{id: string; state: TaskState | null}> = [];
      const selected: Row[] = [];
      for (const x of p.ids) {
        const r = byId.get(x);
        if (r?.state === 'dead' || (p.force !== undefined && (r?.state === 'succeeded' || r?.state === 'cancelled'))) selected.push(r);
        else skipped.push({id: x, state: r?.state ?? null});
      }
      // As in the transaction: every rewrite first (a throw changes nothing), then the writes.
      const payloads = selected.map((r) => (p.rewrite ? (JSON.parse(p.rewrite(r.payload ?? {}, r.id)) as JsonObject) : r.payload));
      selected.forEach((r, i) => {
        r.state = 'submitted';
        r.payload = payloads[i];
        replayed.push({id: r.id, type: r.type, pool: 'io' as const, priority: 'normal' as const, fence: r.attempt});
      });
      return {replayed, skipped};
    },
    doorbellsForget: async ({rung}) => void forgotten.push(...rung.map((r) => r.id)),
  };
  return {
    store,
    byId,
    replays,
    forgotten,
    pages,
    reads,
    setBefore: (f: (ids: string[]) => void) => (before = f),
    setHold: (f: (ids: string[]) => Promise<void>) => (hold = f),
  };
}

const dead = (n: number, type = 'order_notify', at = new Date(AS_OF.getTime() - 60_000 + n)): Row => ({
  id: id(n),
  type,
  state: 'dead',
  attempt: 6,
  finishedAt: at,
  lastError: `order ${n} not found`,
});

function runner(m: ReturnType<typeof memory>, extra: Partial<ReplayRun> = {}) {
  const clock = fakeClock(1_000);
  const published: string[] = [];
  const logs: string[] = [];
  const run: ReplayRun = {
    store: m.store,
    broker: {publish: async (msgs) => void published.push(...msgs.map((x) => x.id))},
    clock,
    logger: createLogger('warn', {}, (l) => void logs.push(l)),
    actor: 'test:1',
    operator: 'alice',
    reason: 'fixed',
    command: 'dlq replay',
    ...extra,
  };
  return {run, clock, published, logs};
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return isAxError(e) ? e.code : String(e);
  }
}

describe('planReplay', () => {
  it('counts a filter per type with a sample, bounded by the time of the plan; a filter without a type needs confirmation', async () => {
    const m = memory([dead(1), dead(2), dead(3, 'user_register'), dead(4, 'order_notify', new Date(AS_OF.getTime() + 5))]);
    const plan = await planReplay(m.store, {filter: {}, all: true});
    expect(plan).toMatchObject({total: 3, byType: {order_notify: 2, user_register: 1}, needsConfirmation: true, asOf: AS_OF});
    expect(plan.sample).toEqual([id(3), id(2), id(1)]);
    expect((await planReplay(m.store, {filter: {type: 'order_notify'}})).needsConfirmation).toBe(false);
  });

  it('asks for confirmation above CONFIRM_ABOVE tasks even with a type', async () => {
    const m = memory(Array.from({length: CONFIRM_ABOVE + 1}, (_, i) => dead(i + 1)));
    expect((await planReplay(m.store, {filter: {type: 'order_notify'}})).needsConfirmation).toBe(true);
  });

  it('by ids: dead ones counted, running ones skipped with why; refuses unknown, finished, malformed and too many', async () => {
    const m = memory([dead(1), {...dead(2), state: 'running'}, {...dead(3), state: 'succeeded'}, {...dead(4), state: 'cancelled'}]);
    const plan = await planReplay(m.store, {ids: [id(1), id(2), id(1)]});
    expect(plan).toMatchObject({
      total: 1,
      byType: {order_notify: 1},
      skipped: [{id: id(2), state: 'running', why: 'is running, not dead'}],
    });
    // The named tasks are read in one batch, not one read per id.
    expect(m.reads).toEqual([2]);
    expect(await code(planReplay(m.store, {ids: [id(1), id(99)]}))).toBe('not_found');
    expect(await code(planReplay(m.store, {ids: [id(1), id(3)]}))).toBe('conflict');
    await expect(planReplay(m.store, {ids: [id(4)]})).rejects.toThrow(
      /is cancelled: only dead tasks are replayed; add --force with --reason to run a finished task again/,
    );
    expect(await code(planReplay(m.store, {ids: ['nope']}))).toBe('invalid_input');
    expect(await code(planReplay(m.store, {ids: []}))).toBe('invalid_input');
    const many = Array.from({length: MAX_REPLAY_IDS + 1}, (_, i) => id(i + 1000));
    expect(await code(planReplay(m.store, {ids: many}))).toBe('invalid_input');
  });

  it('refuses no selection, --all with a filter, and a filter that selects nothing', async () => {
    const m = memory([dead(1)]);
    expect(await code(planReplay(m.store, {filter: {}}))).toBe('invalid_input');
    expect(await code(planReplay(m.store, {filter: {type: 'order_notify'}, all: true}))).toBe('invalid_input');
    expect(await code(planReplay(m.store, {filter: {type: 'user_register'}}))).toBe('not_found');
    expect(m.replays).toEqual([]);
  });
});

describe('forced replays and --patch', () => {
  it('--force without a reason is refused before anything is read or changed', async () => {
    const m = memory([{...dead(1), state: 'succeeded'}]);
    for (const reason of [undefined, null, '  '])
      await expect(planReplay(m.store, {ids: [id(1)]}, {force: true, reason})).rejects.toThrow(/--force needs --reason/);
    const sel = {ids: [id(1)]};
    const plan = await planReplay(m.store, sel, {force: true, reason: 'receipt lost'});
    const {run} = runner(m, {force: true, reason: null});
    expect(await code(runReplay(run, sel, plan))).toBe('invalid_input');
    expect(m.replays).toEqual([]);
    expect(m.byId.get(id(1))?.state).toBe('succeeded');
  });

  it('--force selects succeeded and cancelled tasks, stamps the replay with the clock, and audits it as --force', async () => {
    const m = memory([dead(1), {...dead(2), state: 'succeeded'}, {...dead(3), state: 'cancelled'}, {...dead(4), state: 'running'}]);
    const sel = {ids: [id(1), id(2), id(3), id(4)]};
    const plan = await planReplay(m.store, sel, {force: true, reason: 'receipt lost'});
    expect(plan).toMatchObject({total: 3, skipped: [{id: id(4), state: 'running', why: 'is running, not finished'}]});
    const {run, clock, published} = runner(m, {force: true, reason: 'receipt lost'});
    const r = await runReplay(run, sel, plan);
    expect(r.replayed).toBe(3);
    expect(published.sort()).toEqual([id(1), id(2), id(3)]);
    expect(m.replays[0]?.force).toEqual({at: new Date(clock.now())});
    expect(m.replays[0]?.audit).toEqual({
      operator: 'alice',
      command: 'dlq replay --force',
      filter: {ids: [id(1), id(2), id(3), id(4)], force: true},
      reason: 'receipt lost',
    });
  });

  it('a plain replay carries no force stamp', async () => {
    const m = memory([dead(1)]);
    const sel = {ids: [id(1)]};
    await runReplay(runner(m).run, sel, await planReplay(m.store, sel));
    expect(m.replays[0]?.force).toBeUndefined();
    expect(m.replays[0]?.rewrite).toBeUndefined();
  });

  it('--patch by ids merges into each payload, validated, and the replay writes the results', async () => {
    const m = memory([
      {...dead(1), payload: {to: 'a@x', opts: {retry: true, lang: 'en'}}},
      {...dead(2), payload: {to: 'b@x'}},
    ]);
    const sel = {ids: [id(1), id(2)]};
    const plan = await planReplay(m.store, sel, {patch: {to: 'ops@x', opts: {lang: null}}, payloadLimitBytes: 1000});
    expect(plan.patch).toEqual({patch: {to: 'ops@x', opts: {lang: null}}, limitBytes: 1000});
    await runReplay(runner(m).run, sel, plan);
    expect(m.byId.get(id(1))?.payload).toEqual({to: 'ops@x', opts: {retry: true}});
    expect(m.byId.get(id(2))?.payload).toEqual({to: 'ops@x', opts: {}});
  });

  it('--patch is recorded: in the audit filter and, for the history of each task, passed to the store (defect 7)', async () => {
    const m = memory([{...dead(1), payload: {to: 'a@x'}}]);
    const sel = {ids: [id(1)]};
    const patch = {to: 'ops@x', opts: {lang: null}};
    await runReplay(runner(m).run, sel, await planReplay(m.store, sel, {patch, payloadLimitBytes: 1000}));
    expect(m.replays[0]?.audit.filter).toEqual({ids: [id(1)], patch: '{"to":"ops@x","opts":{"lang":null}}'});
    expect(m.replays[0]?.patch).toBe('{"to":"ops@x","opts":{"lang":null}}');
    // A replay without a patch records none.
    const n = memory([dead(2)]);
    await runReplay(runner(n).run, {ids: [id(2)]}, await planReplay(n.store, {ids: [id(2)]}));
    expect(n.replays[0]?.audit.filter).toEqual({ids: [id(2)]});
    expect(n.replays[0]?.patch).toBeUndefined();
  });

  it('patchRecord keeps a patch whole up to PATCH_RECORD_BYTES, cuts a longer one (never inside a character) with a marker', () => {
    const fits = {s: 'x'.repeat(PATCH_RECORD_BYTES - 8)};
    expect(JSON.stringify(fits)).toHaveLength(PATCH_RECORD_BYTES);
    expect(patchRecord(fits)).toBe(JSON.stringify(fits));
    const long = {s: 'é'.repeat(PATCH_RECORD_BYTES)};
    const whole = Buffer.byteLength(JSON.stringify(long));
    const r = patchRecord(long);
    expect(r.endsWith(`${PATCH_CLIPPED_MARKER} ${whole} bytes in all`)).toBe(true);
    const head = r.slice(0, r.indexOf(PATCH_CLIPPED_MARKER));
    expect(Buffer.byteLength(head)).toBeLessThanOrEqual(PATCH_RECORD_BYTES);
    expect(Buffer.byteLength(head)).toBeGreaterThan(PATCH_RECORD_BYTES - 2);
    expect(head).not.toContain('\uFFFD');
    expect(head.startsWith('{"s":"ééé')).toBe(true);
  });

  it('--patch by filter checks every selected payload page by page, then patches each replayed task', async () => {
    const n = PATCH_CHECK_PAGE + 5;
    const m = memory([
      ...Array.from({length: n}, (_, i) => ({...dead(i + 1), payload: {order: i, smtp: {host: 'mx1', port: 25}}})),
      {...dead(90_000, 'user_register'), payload: {keep: true}},
    ]);
    const sel = {filter: {type: 'order_notify'}};
    const plan = await planReplay(m.store, sel, {patch: {smtp: {host: 'mx2'}}, payloadLimitBytes: 1000});
    expect(plan.total).toBe(n);
    // The check read every payload of the selection, in two keyset pages.
    expect(m.pages).toEqual([
      {withPayload: true, n: PATCH_CHECK_PAGE},
      {afterId: id(PATCH_CHECK_PAGE), withPayload: true, n: 5},
    ]);
    expect(m.replays).toEqual([]);
    const r = await runReplay(runner(m).run, sel, plan);
    expect(r.replayed).toBe(n);
    for (let i = 0; i < n; i++) expect(m.byId.get(id(i + 1))?.payload).toEqual({order: i, smtp: {host: 'mx2', port: 25}});
    expect(m.byId.get(id(90_000))).toMatchObject({state: 'dead', payload: {keep: true}});
  });

  it('--patch by filter: one task whose result is invalid refuses the whole replay, nothing changed', async () => {
    // The bad one is on the second page of the check: the first page alone would have passed.
    const n = PATCH_CHECK_PAGE + 3;
    const bad = PATCH_CHECK_PAGE + 2;
    const m = memory(Array.from({length: n}, (_, i) => ({...dead(i + 1), payload: i + 1 === bad ? {note: 'x'.repeat(80)} : {note: 'ok'}})));
    const sel = {filter: {type: 'order_notify'}};
    await expect(planReplay(m.store, sel, {patch: {extra: 'y'.repeat(20)}, payloadLimitBytes: 100})).rejects.toThrow(
      new RegExp(
        `--patch makes the payload of task ${id(bad)} invalid: payload is \\d+ bytes, over the limit of 100 bytes; nothing replayed`,
      ),
    );
    // Depth: a patch nesting past the payload limit of depth makes every result invalid.
    let deep: JsonObject = {x: 1};
    for (let i = 0; i < 40; i++) deep = {d: deep};
    await expect(planReplay(m.store, sel, {patch: deep})).rejects.toThrow(/--patch makes the payload of task .* invalid: .*deep/);
    expect(m.replays).toEqual([]);
    expect([...m.byId.values()].every((r) => r.state === 'dead' && r.payload?.extra === undefined)).toBe(true);
  });

  it('a payload that changed after the plan fails its batch in the transaction (rolled back), and the replay stops', async () => {
    const m = memory([
      {...dead(1), payload: {a: 1}},
      {...dead(2), payload: {a: 2}},
    ]);
    const sel = {ids: [id(1), id(2)]};
    const plan = await planReplay(m.store, sel, {patch: {b: 'y'}, payloadLimitBytes: 40});
    // Between plan and replay: task 2 got a bigger payload (replayed with another patch, died again).
    m.setBefore(() => void (m.byId.get(id(2))!.payload = {a: 'z'.repeat(40)}));
    await expect(runReplay(runner(m).run, sel, plan)).rejects.toThrow(
      new RegExp(`task ${id(2)} invalid: .*its payload changed since the plan: its batch was rolled back, 0 tasks replayed before it`),
    );
    expect(m.byId.get(id(1))).toMatchObject({state: 'dead', payload: {a: 1}});
  });

  it('an invalid patched payload of a named task refuses the whole replay, naming the task', async () => {
    const m = memory([
      {...dead(1), payload: {a: 1}},
      {...dead(2), payload: {a: 'x'.repeat(50)}},
    ]);
    const sel = {ids: [id(1), id(2)]};
    await expect(planReplay(m.store, sel, {patch: {b: 'y'.repeat(20)}, payloadLimitBytes: 60})).rejects.toThrow(
      new RegExp(`--patch makes the payload of task ${id(2)} invalid: payload is \\d+ bytes, over the limit of 60 bytes`),
    );
    const proto = JSON.parse('{"__proto__": {"x": 1}}') as Record<string, never>;
    await expect(planReplay(m.store, sel, {patch: proto})).rejects.toThrow(/forbidden key "__proto__"/);
    expect(await code(planReplay(m.store, sel, {patch: [] as never}))).toBe('invalid_input');
    expect(m.replays).toEqual([]);
  });
});

describe('runReplay', () => {
  it('replays page after page, rings each (marked by the replay itself), audits with the filter, and leaves later deaths alone', async () => {
    const m = memory([...Array.from({length: 7}, (_, i) => dead(i + 1)), dead(50, 'order_notify', new Date(AS_OF.getTime() + 1))]);
    const sel = {filter: {type: 'order_notify'}};
    const plan = await planReplay(m.store, sel);
    const {run, published} = runner(m);
    const r = await runReplay(run, sel, plan);
    expect(r).toMatchObject({replayed: 7, skipped: [], unrung: 0});
    expect(published.sort()).toEqual(Array.from({length: 7}, (_, i) => id(i + 1)).sort());
    expect(m.forgotten).toEqual([]);
    expect(m.byId.get(id(50))?.state).toBe('dead');
    expect(m.replays[0]?.audit).toEqual({operator: 'alice', command: 'dlq replay', filter: {type: 'order_notify'}, reason: 'fixed'});
  });

  it('paces batches by --rate on the clock: rate / 10 per batch, N tasks take at least N / rate', async () => {
    const m = memory(Array.from({length: 10}, (_, i) => dead(i + 1)));
    const sel = {filter: {type: 'order_notify'}};
    const plan = await planReplay(m.store, sel);
    const progress: number[] = [];
    const {run, clock} = runner(m, {rate: 40, onProgress: (done) => progress.push(done)});
    let done = false;
    const p = runReplay(run, sel, plan).then((r) => ((done = true), r));
    await clock.advanceAsync(0);
    expect(progress).toEqual([4]);
    await clock.advanceAsync(100);
    expect(progress).toEqual([4, 8]);
    await clock.advanceAsync(100);
    expect(progress).toEqual([4, 8, 10]);
    // 10 tasks at 40/s: not done before 250 ms.
    await clock.advanceAsync(49);
    expect(done).toBe(false);
    await clock.advanceAsync(1);
    expect(await p).toMatchObject({replayed: 10, elapsedMs: 250});
    expect(m.replays.map((x) => x.ids.length)).toEqual([4, 4, 2]);
  });

  it('unpaced, runs two (UNPACED_IN_FLIGHT) batch transactions at once on disjoint ids, and awaits them all', async () => {
    const m = memory(Array.from({length: REPLAY_BATCH * 3}, (_, i) => dead(i + 1)));
    const sel = {filter: {type: 'order_notify'}};
    const plan = await planReplay(m.store, sel);
    let open = 0;
    let most = 0;
    // Each transaction stays open until the next turn of the event loop: the replay must start the
    // next batch meanwhile, and no more than the window.
    m.setHold(async () => {
      most = Math.max(most, ++open);
      await new Promise((resolve) => setImmediate(resolve));
      open--;
    });
    const r = await runReplay(runner(m).run, sel, plan);
    expect(UNPACED_IN_FLIGHT).toBe(2);
    expect(most).toBe(2);
    expect(r.replayed).toBe(REPLAY_BATCH * 3);
    const ids = m.replays.flatMap((x) => x.ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a failed batch fails the replay after the batch in flight with it has finished and been rung', async () => {
    const m = memory(Array.from({length: REPLAY_BATCH * 2}, (_, i) => dead(i + 1)));
    const sel = {filter: {type: 'order_notify'}};
    const plan = await planReplay(m.store, sel);
    let n = 0;
    m.setHold(async () => {
      if (++n === 1) {
        await new Promise((resolve) => setImmediate(resolve));
        throw new Error('deadlock retries exhausted');
      }
    });
    const {run, published} = runner(m);
    await expect(runReplay(run, sel, plan)).rejects.toThrow(/deadlock retries exhausted/);
    expect(published.length).toBe(REPLAY_BATCH);
  });

  it('a rate under 10 per second replays one task per batch', async () => {
    const m = memory([dead(1), dead(2)]);
    const sel = {filter: {type: 'order_notify'}};
    const {run, clock} = runner(m, {rate: 4});
    const p = runReplay(run, sel, await planReplay(m.store, sel));
    await clock.advanceAsync(500);
    expect((await p).replayed).toBe(2);
    expect(m.replays.map((x) => x.ids.length)).toEqual([1, 1]);
  });

  it('reports tasks another operator took first as skipped, and never replays them twice', async () => {
    const m = memory([dead(1), dead(2), dead(3)]);
    const sel = {ids: [id(1), id(2), id(3)]};
    const plan = await planReplay(m.store, sel);
    m.setBefore(() => {
      const r = m.byId.get(id(2));
      if (r) r.state = 'running';
    });
    const r = await runReplay(runner(m).run, sel, plan);
    expect(r.replayed).toBe(2);
    expect(r.skipped).toEqual([{id: id(2), state: 'running', why: 'was running when replayed (moved by someone else)'}]);
  });

  it('a publish that fails leaves the tasks replayed but unrung, their published marks undone for the scheduler', async () => {
    const m = memory([dead(1)]);
    const sel = {ids: [id(1)]};
    const plan = await planReplay(m.store, sel);
    const {run, logs} = runner(m, {
      broker: {
        publish: async () => {
          throw new Error('broker down');
        },
      },
    });
    expect(await runReplay(run, sel, plan)).toMatchObject({replayed: 1, unrung: 1});
    expect(m.byId.get(id(1))?.state).toBe('submitted');
    expect(m.forgotten).toEqual([id(1)]);
    expect(logs.join('\n')).toMatch(/replayed tasks not rung: the scheduler will ring for them/);
  });

  it('refuses a rate that is not a positive number, nothing replayed', async () => {
    const m = memory([dead(1)]);
    const sel = {ids: [id(1)]};
    const plan = await planReplay(m.store, sel);
    for (const rate of [0, -1, Number.NaN]) expect(await code(runReplay(runner(m, {rate}).run, sel, plan))).toBe('invalid_input');
    expect(m.replays).toEqual([]);
  });
});
