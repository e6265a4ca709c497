/**
 * The task-database conformance suite: the behaviour every implementation of the seams in
 * core/store/types.ts (HotPathStore, DispatchHoldStore, RescueStore, InspectStore,
 * WorkerRegistryStore, ScheduleStore) must show; every method is exercised. Run by
 * test/integration/store.test.ts against the MySQL store.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxStore, NewSchedule} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {NewTask, TaskSpec} from '../../src/core/task/model.js';
import {allowedEdges} from '../../src/core/task/state.js';

export interface StoreHarness {
  store: AxStore;
  /** A second, independent handle on the same data (for races). */
  other: AxStore;
  /** Waits until the store's clock has passed `ms` from now. */
  waitDbMs(ms: number): Promise<void>;
  /** Every (from, to) pair in the history so far. */
  historyEdges(): Promise<Array<[string | null, string]>>;
  dispose(): Promise<void>;
}

const newId = createIdGenerator(() => Date.now());
const defaults = {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'};
const task = (spec: TaskSpec): NewTask => validateTaskSpec(spec, defaults, Date.now(), newId);

export function storeConformance(name: string, make: () => Promise<StoreHarness>): void {
  describe(`TaskStore conformance: ${name}`, () => {
    let h: StoreHarness;
    let s: AxStore;
    beforeAll(async () => {
      h = await make();
      s = h.store;
    });
    afterAll(async () => h?.dispose());

    it('inserts tasks, each row its own record of the submit (no history row), and reports idempotent re-submits', async () => {
      const a = task({type: 'order_notify', payload: {orderId: 1}});
      const b = task({type: 'order_notify', payload: {orderId: 2}});
      expect(await s.tasksInsert({tasks: [a, b], actor: 'test:1'})).toEqual({inserted: [a.id, b.id], existing: [], conflicts: []});
      const again = await s.tasksInsert({tasks: [{...a, submittedAtMs: Date.now()}], actor: 'test:1'});
      expect(again.inserted).toEqual([]);
      expect(again.existing).toEqual([{id: a.id, existingId: a.id, state: 'submitted', fence: 0}]);
      const row = await s.tasksGet({id: a.id});
      expect(row).toMatchObject({
        id: a.id,
        type: 'order_notify',
        state: 'submitted',
        attempt: 0,
        fence: 0,
        maxRetries: 5,
        payload: {orderId: 1},
      });
      // The creation is the row: who submitted it and when (created_at); no history row is written.
      expect(row).toMatchObject({submittedBy: 'test:1', startedAt: null, worker: null});
      expect(row!.createdAt).toBeInstanceOf(Date);
      expect(await s.historyList({taskId: a.id})).toEqual([]);
      // The careful path (a batch with a task that exists) records its new ones the same way.
      const c = task({type: 'order_notify', payload: {orderId: 3}});
      expect((await s.tasksInsert({tasks: [a, c], actor: 'test:2'})).inserted).toEqual([c.id]);
      expect(await s.tasksGet({id: c.id})).toMatchObject({submittedBy: 'test:2'});
      expect(await s.tasksGet({id: a.id})).toMatchObject({submittedBy: 'test:1'});
      expect(await s.historyList({taskId: c.id})).toEqual([]);
    });

    it('reads many named tasks at once: the ones that exist, each once', async () => {
      const ts = [1, 2, 3].map((i) => task({type: 'order_notify', payload: {many: i}}));
      await s.tasksInsert({tasks: ts, actor: 'test:1'});
      const got = await s.tasksGetMany({ids: [ts[2]!.id, newId(), ts[0]!.id, ts[2]!.id, ts[1]!.id]});
      expect(got.map((t) => t.id).sort()).toEqual(ts.map((t) => t.id).sort());
      expect(got.find((t) => t.id === ts[1]!.id)).toMatchObject({state: 'submitted', payload: {many: 2}});
      expect(await s.tasksGetMany({ids: []})).toEqual([]);
    });

    it('refuses the same id with different content as a conflict and writes nothing for it', async () => {
      const a = task({type: 'order_notify', payload: {orderId: 10}});
      await s.tasksInsert({tasks: [a], actor: 'test'});
      const clash = {...task({type: 'order_notify', payload: {orderId: 11}}), id: a.id};
      const fresh = task({type: 'order_notify', payload: {orderId: 12}});
      const r = await s.tasksInsert({tasks: [clash, fresh], actor: 'test'});
      expect(r.inserted).toEqual([fresh.id]);
      expect(r.conflicts).toHaveLength(1);
      expect(r.conflicts[0]).toMatchObject({id: a.id, existingId: a.id});
      expect((await s.tasksGet({id: a.id}))?.payload).toEqual({orderId: 10});
    });

    it('deduplicates by dedup key: same content → the existing task, other content → conflict', async () => {
      const a = task({type: 'user_register_credit', payload: {u: 1}, dedupKey: 'signup-1'});
      await s.tasksInsert({tasks: [a], actor: 'test'});
      const same = {...task({type: 'user_register_credit', payload: {u: 1}}), dedupKey: 'signup-1'};
      const other = {...task({type: 'user_register_credit', payload: {u: 2}}), dedupKey: 'signup-1'};
      const r = await s.tasksInsert({tasks: [same, other], actor: 'test'});
      expect(r.inserted).toEqual([]);
      expect(r.existing).toEqual([{id: same.id, existingId: a.id, state: 'submitted', fence: 0}]);
      expect(r.conflicts.map((c) => c.id)).toEqual([other.id]);
    });

    it('claims due tasks once, skipping running, unknown and not-yet-due ones', async () => {
      const due = task({type: 'order_notify', payload: {n: 1}});
      const later = task({type: 'order_notify', payload: {n: 2}, delay: '1h'});
      await s.tasksInsert({tasks: [due, later], actor: 'test'});
      const unknown = newId();
      const r = await s.tasksClaim({ids: [due.id, later.id, unknown, due.id], worker: 'w1', leaseMs: 30_000});
      expect(r.claimed).toHaveLength(1);
      expect(r.claimed[0]).toMatchObject({id: due.id, attempt: 1, fence: 1, type: 'order_notify', payload: '{"n":1}'});
      expect(r.skipped).toEqual(
        expect.arrayContaining([
          {id: later.id, state: 'submitted', notDue: true},
          {id: unknown, state: null},
        ]),
      );
      const again = await s.tasksClaim({ids: [due.id], worker: 'w2', leaseMs: 30_000});
      expect(again.claimed).toEqual([]);
      expect(again.skipped).toEqual([{id: due.id, state: 'running'}]);
      expect(await s.tasksGet({id: due.id})).toMatchObject({state: 'running', worker: 'w1', attempt: 1, fence: 1});
    });

    it('payloads of every size come back byte for byte from claim, get and list (however the store keeps big ones)', async () => {
      const sizes = [0, 1000, 4095, 4096, 4097, 20_000, 60_000];
      const ts = sizes.map((n, i) =>
        task({
          type: 'order_bulk',
          payload: {
            i,
            // About n bytes of UTF-8: 4 characters of 10 bytes per repeat.
            text: Array.from('ñ€𝄞x'.repeat(Math.ceil(n / 10) + 1))
              .slice(0, Math.floor(n / 2.5))
              .join(''),
          },
        }),
      );
      await s.tasksInsert({tasks: ts, actor: 'test'});
      const {claimed} = await s.tasksClaim({ids: ts.map((t) => t.id), worker: 'w1', leaseMs: 30_000});
      expect(new Map(claimed.map((c) => [c.id, c.payload]))).toEqual(new Map(ts.map((t) => [t.id, t.payload])));
      for (const t of ts) expect(JSON.stringify((await s.tasksGet({id: t.id}))?.payload)).toBe(t.payload);
      const listed = await s.tasksList({type: 'order_bulk', limit: 20});
      expect(new Map(listed.map((r) => [r.id, JSON.stringify(r.payload)]))).toEqual(new Map(ts.map((t) => [t.id, t.payload])));
    });

    it('a claim says how late after its run_at it took the task, on the database clock (the start delay)', async () => {
      const now = (await s.clockNow()).getTime();
      const late = {...task({type: 'order_notify', payload: {late: 1}}), runAtMs: now - 30_000};
      const onTime = task({type: 'order_notify', payload: {late: 0}});
      await s.tasksInsert({tasks: [late, onTime], actor: 'test'});
      const {claimed} = await s.tasksClaim({ids: [late.id, onTime.id], worker: 'w1', leaseMs: 30_000});
      const byId = new Map(claimed.map((c) => [c.id, c.lateMs]));
      expect(byId.get(late.id)).toBeGreaterThanOrEqual(30_000);
      expect(byId.get(late.id)).toBeLessThan(40_000);
      expect(byId.get(onTime.id)).toBeGreaterThanOrEqual(0);
      expect(byId.get(onTime.id)).toBeLessThan(10_000);
    });

    it('a value the database refuses is invalid_input for the whole batch, and nothing is written', async () => {
      const good = task({type: 'order_notify', payload: {refused: 1}});
      const bad = {...task({type: 'order_notify', payload: {refused: 2}}), runAtMs: Number.NaN}; // NULL in a NOT NULL column
      await expect(s.tasksInsert({tasks: [good, bad], actor: 'test'})).rejects.toMatchObject({code: 'invalid_input'});
      expect(await s.tasksGet({id: good.id})).toBeNull();
    });

    it('lets exactly one of two concurrent claimers win each task', async () => {
      const tasks = Array.from({length: 200}, (_, i) => task({type: 'order_notify', payload: {i}}));
      await s.tasksInsert({tasks: tasks, actor: 'test'});
      const ids = tasks.map((t) => t.id);
      const [a, b] = await Promise.all([
        s.tasksClaim({ids: ids, worker: 'wa', leaseMs: 30_000}),
        h.other.tasksClaim({ids: [...ids].reverse(), worker: 'wb', leaseMs: 30_000}),
      ]);
      const won = [...a.claimed, ...b.claimed].map((t) => t.id).sort();
      expect(won).toEqual([...ids].sort());
    });

    it('two claimers at once on the same ids, many times over: each task is claimed exactly once', async () => {
      for (let round = 0; round < 25; round++) {
        const tasks = Array.from({length: 12}, (_, i) => task({type: 'order_notify', payload: {round, i}}));
        await s.tasksInsert({tasks, actor: 'test'});
        const ids = tasks.map((t) => t.id);
        const [a, b] = await Promise.all([
          s.tasksClaim({ids, worker: 'wa', leaseMs: 30_000}),
          h.other.tasksClaim({ids: round % 2 === 0 ? ids : [...ids].reverse(), worker: 'wb', leaseMs: 30_000}),
        ]);
        const won = [...a.claimed, ...b.claimed].map((t) => t.id).sort();
        expect(won, `round ${round}`).toEqual([...ids].sort());
        for (const t of [...a.claimed, ...b.claimed]) expect(t).toMatchObject({attempt: 1, fence: 1});
        const rows = await Promise.all(ids.map((id) => s.tasksGet({id})));
        expect(rows.map((r) => r?.fence)).toEqual(ids.map(() => 1));
      }
    });

    it('a late completion racing the rescuer, many times over: exactly one applies, with one history row', async () => {
      for (let round = 0; round < 10; round++) {
        const tasks = Array.from({length: 8}, (_, i) => task({type: 'order_notify', payload: {race: round, i}}));
        await s.tasksInsert({tasks, actor: 'test'});
        const claimed = (await s.tasksClaim({ids: tasks.map((t) => t.id), worker: 'w1', leaseMs: 1})).claimed;
        expect(claimed).toHaveLength(tasks.length);
        await h.waitDbMs(5);
        const [done, rescued] = await Promise.all([
          s.outcomesApply({outcomes: claimed.map((c) => ({kind: 'complete' as const, id: c.id, fence: c.fence})), actor: 'w1'}),
          h.other.outcomesApply({
            outcomes: [...claimed]
              .reverse()
              .map((c) => ({kind: 'rescue' as const, id: c.id, fence: c.fence, retryDelayMs: 0, error: 'lease expired'})),
            actor: 'rescuer',
          }),
        ]);
        const applied = [...done.applied, ...rescued.applied].sort();
        expect(applied, `round ${round}`).toEqual(claimed.map((c) => c.id).sort());
        for (const c of claimed) {
          const fromRunning = (await s.historyList({taskId: c.id})).filter((e) => e.from === 'running');
          expect(fromRunning, c.id).toHaveLength(1);
          // Whichever won, the attempt's row says where it ran (w1) and since when.
          expect(fromRunning[0], c.id).toMatchObject({worker: 'w1', startedAt: (await s.tasksGet({id: c.id}))!.startedAt});
        }
      }
    });

    it('writes the rows named in markPublished already published; existing rows are untouched; doorbellsForget undoes the mark', async () => {
      const old = task({type: 'order_notify', payload: {pre: 1}});
      await s.tasksInsert({tasks: [old], actor: 'test'});
      const [a, b] = [task({type: 'order_notify', payload: {pre: 2}}), task({type: 'order_notify', payload: {pre: 3}})];
      const r = await s.tasksInsert({tasks: [old, a, b], actor: 'test', markPublished: [old.id, a.id]});
      expect(r.inserted).toEqual([a.id, b.id]);
      expect((await s.tasksGet({id: a.id}))?.publishedAt).toBeInstanceOf(Date);
      expect((await s.tasksGet({id: b.id}))?.publishedAt).toBeNull();
      expect((await s.tasksGet({id: old.id}))?.publishedAt).toBeNull();
      // Marked: not the scheduler's to hold, nor (while the mark is fresh) the reconciler's.
      const held = await s.holdsTake({owner: 'sched-mark', horizonMs: 60_000, holdMs: 30_000, limit: 10_000});
      expect(held.map((x) => x.id)).not.toContain(a.id);
      await s.holdsRelease({owner: 'sched-mark'});
      expect((await s.tasksFindUndispatched({limit: 10_000, republishAfterMs: 60_000})).map((x) => x.id)).not.toContain(a.id);
      await s.doorbellsForget({rung: [{id: a.id, fence: 0}]});
      expect(await s.tasksGet({id: a.id})).toMatchObject({state: 'submitted', publishedAt: null, fence: 1});
      // Forgotten: the scheduler takes it at once, without the grace a brand-new row gets.
      const again = await s.holdsTake({owner: 'sched-mark', horizonMs: 60_000, holdMs: 30_000, limit: 10_000});
      expect(again.map((x) => x.id)).toContain(a.id);
      await s.holdsRelease({owner: 'sched-mark'});
    });

    it("a claim that finds a task not yet due forgets the ring, and the early ring's late mark does not land", async () => {
      const t = task({type: 'order_notify', payload: {early: 1}, delay: 3000});
      await s.tasksInsert({tasks: [t], actor: 'test'});
      // A doorbell rang early for fence 0; a worker claims before the ring's mark lands.
      const r = await s.tasksClaim({ids: [t.id], worker: 'w1', leaseMs: 30_000});
      expect(r.skipped).toEqual([{id: t.id, state: 'submitted', notDue: true}]);
      await s.doorbellsMark({rung: [{id: t.id, fence: 0}]});
      expect(await s.tasksGet({id: t.id})).toMatchObject({state: 'submitted', publishedAt: null});
      // The scheduler still holds it, so it is rung when due instead of waiting for the reconciler.
      const held = await s.holdsTake({owner: 'sched-early', horizonMs: 60_000, holdMs: 30_000, limit: 10_000});
      const mine = held.find((x) => x.id === t.id);
      expect(mine).toMatchObject({id: t.id, attempt: 0});
      // Its ring for the current fence marks it.
      await s.doorbellsMark({rung: [{id: t.id, fence: mine!.fence}]});
      expect((await s.tasksGet({id: t.id}))?.publishedAt).toBeInstanceOf(Date);
      await s.holdsRelease({owner: 'sched-early'});
    });

    it('applies outcomes only with the current fence (a zombie completion changes nothing)', async () => {
      const t = task({type: 'order_notify', payload: {z: 1}});
      await s.tasksInsert({tasks: [t], actor: 'test'});
      const [c] = (await s.tasksClaim({ids: [t.id], worker: 'w1', leaseMs: 30_000})).claimed;
      const stale = await s.outcomesApply({outcomes: [{id: t.id, fence: (c?.fence ?? 0) - 1, kind: 'complete'}], actor: 'w0'});
      expect(stale).toEqual({applied: [], stale: [t.id]});
      const ok = await s.outcomesApply({outcomes: [{id: t.id, fence: c?.fence ?? 0, kind: 'complete'}], actor: 'w1'});
      expect(ok).toEqual({applied: [t.id], stale: []});
      const twice = await s.outcomesApply({outcomes: [{id: t.id, fence: c?.fence ?? 0, kind: 'complete'}], actor: 'w1'});
      expect(twice.stale).toEqual([t.id]);
      const row = await s.tasksGet({id: t.id});
      expect(row).toMatchObject({state: 'succeeded', leaseUntil: null});
      expect(row?.finishedAt).toBeInstanceOf(Date);
      expect((await s.historyList({taskId: t.id})).map((e) => e.to)).toEqual(['succeeded']);
    });

    it('an attempt is one history row, written with its outcome: its start and worker from the claim, its end; a rescue row names the dead worker', async () => {
      const [ok, crashed] = [1, 2].map((i) => task({type: 'order_notify', payload: {attempt: i}}));
      await s.tasksInsert({tasks: [ok!, crashed!], actor: 'test'});
      const before = await s.clockNow();
      const claimed = (await s.tasksClaim({ids: [ok!.id, crashed!.id], worker: 'w1', leaseMs: 1})).claimed;
      const after = await s.clockNow();
      // The claim writes no history: the attempt's start is on the row.
      for (const id of [ok!.id, crashed!.id]) expect(await s.historyList({taskId: id})).toEqual([]);
      const row = await s.tasksGet({id: ok!.id});
      expect(row).toMatchObject({state: 'running', worker: 'w1'});
      expect(row!.startedAt!.getTime()).toBeGreaterThanOrEqual(before.getTime());
      expect(row!.startedAt!.getTime()).toBeLessThanOrEqual(after.getTime());
      await h.waitDbMs(5);
      const fence = (id: string) => claimed.find((c) => c.id === id)!.fence;
      await s.outcomesApply({outcomes: [{kind: 'complete', id: ok!.id, fence: fence(ok!.id)}], actor: 'w1'});
      const rescue = {kind: 'rescue' as const, id: crashed!.id, fence: fence(crashed!.id), retryDelayMs: 0, error: 'lease expired'};
      expect((await s.outcomesApply({outcomes: [rescue], actor: 'rescuer'})).applied).toEqual([crashed!.id]);
      const [done, ...more] = await s.historyList({taskId: ok!.id});
      expect(more).toEqual([]);
      expect(done).toMatchObject({from: 'running', to: 'succeeded', attempt: 1, worker: 'w1', startedAt: row!.startedAt});
      expect(done!.at.getTime()).toBeGreaterThan(row!.startedAt!.getTime());
      const started = (await s.tasksGet({id: crashed!.id}))!.startedAt;
      expect((await s.historyList({taskId: crashed!.id})).at(-1)).toMatchObject({
        from: 'running',
        to: 'failed',
        attempt: 1,
        worker: 'w1',
        error: 'lease expired',
        startedAt: started,
      });
      // The next attempt's start replaces the row's; the first attempt keeps its own on its row.
      await h.waitDbMs(5);
      const [again] = (await s.tasksClaim({ids: [crashed!.id], worker: 'w2', leaseMs: 30_000})).claimed;
      const second = await s.tasksGet({id: crashed!.id});
      expect(second).toMatchObject({worker: 'w2', attempt: 2});
      expect(second!.startedAt!.getTime()).toBeGreaterThan(started!.getTime());
      await s.outcomesApply({outcomes: [{kind: 'complete', id: crashed!.id, fence: again!.fence}], actor: 'w2'});
      expect((await s.historyList({taskId: crashed!.id})).map((e) => [e.to, e.attempt, e.worker, e.startedAt])).toEqual([
        ['failed', 1, 'w1', started],
        ['succeeded', 2, 'w2', second!.startedAt],
      ]);
    });

    it('a batch of successes with one zombie among them: the others apply, the zombie changes nothing', async () => {
      const ts = [1, 2, 3].map((i) => task({type: 'order_notify', payload: {plain: i}}));
      await s.tasksInsert({tasks: ts, actor: 'test'});
      const claimed = (await s.tasksClaim({ids: ts.map((t) => t.id), worker: 'w1', leaseMs: 30_000})).claimed;
      const success = (id: string, fenceDelta = 0) => {
        const c = claimed.find((x) => x.id === id)!;
        return {id, fence: c.fence + fenceDelta, kind: 'complete' as const};
      };
      const [a, b, c] = ts.map((t) => t.id) as [string, string, string];
      // b's fence is a zombie's: a and c succeed, b stays running, and only a and c get a history row.
      const res = await s.outcomesApply({outcomes: [success(a), success(b, -1), success(c)], actor: 'w1'});
      expect(res.applied.sort()).toEqual([a, c].sort());
      expect(res.stale).toEqual([b]);
      expect(await s.tasksGet({id: b})).toMatchObject({state: 'running', fence: 1});
      for (const id of [a, c]) {
        expect(await s.tasksGet({id: id})).toMatchObject({state: 'succeeded', leaseUntil: null});
        expect((await s.historyList({taskId: id})).map((e) => [e.to, e.attempt, e.worker])).toEqual([['succeeded', 1, 'w1']]);
      }
      expect(await s.historyList({taskId: b})).toEqual([]);
      // The current worker's own outcome for b still applies.
      expect(await s.outcomesApply({outcomes: [success(b)], actor: 'w1'})).toEqual({applied: [b], stale: []});
      expect((await s.historyList({taskId: b})).map((e) => [e.to, e.attempt])).toEqual([['succeeded', 1]]);
    });

    it('fails with a retry time from the database clock, releases without using an attempt, and dead-letters', async () => {
      const [f, r, d] = [1, 2, 3].map((i) => task({type: 'order_notify', payload: {f: i}}));
      await s.tasksInsert({tasks: [f!, r!, d!], actor: 'test'});
      await s.doorbellsMark({rung: [f!, r!, d!].map((x) => ({id: x.id, fence: 0}))});
      const claimed = (await s.tasksClaim({ids: [f!.id, r!.id, d!.id], worker: 'w1', leaseMs: 30_000})).claimed;
      const fence = (id: string) => claimed.find((c) => c.id === id)?.fence ?? -1;
      const before = await s.clockNow();
      const res = await s.outcomesApply({
        outcomes: [
          {
            kind: 'fail',
            id: f!.id,
            fence: fence(f!.id),
            retryDelayMs: 5000,
            error: 'boom',
            stack: 'Error: boom\n    at handler (h.js:1:1)',
          },
          {kind: 'release', id: r!.id, fence: fence(r!.id), reason: 'released: shutdown'},
          {kind: 'deadLetter', id: d!.id, fence: fence(d!.id), error: 'fatal'},
        ],
        actor: 'w1',
      });
      expect(res.applied.sort()).toEqual([f!.id, r!.id, d!.id].sort());
      const ff = await s.tasksGet({id: f!.id});
      expect(ff).toMatchObject({state: 'failed', attempt: 1, lastError: 'boom', publishedAt: null, leaseUntil: null});
      const delay = (ff?.runAt.getTime() ?? 0) - before.getTime();
      expect(delay).toBeGreaterThanOrEqual(4900);
      expect(delay).toBeLessThan(7000);
      expect(await s.tasksGet({id: r!.id})).toMatchObject({state: 'failed', attempt: 0, lastError: null});
      expect(await s.tasksGet({id: d!.id})).toMatchObject({state: 'dead', lastError: 'fatal'});
      // The stack goes to the failed attempt's history row only; a release records its reason there.
      expect((await s.historyList({taskId: f!.id})).map((e) => [e.to, e.error, e.stack])).toEqual([
        ['failed', 'boom', 'Error: boom\n    at handler (h.js:1:1)'],
      ]);
      expect((await s.historyList({taskId: r!.id})).at(-1)).toMatchObject({
        to: 'failed',
        attempt: 0,
        error: 'released: shutdown',
        stack: null,
      });
      expect((await s.historyList({taskId: d!.id})).at(-1)).toMatchObject({to: 'dead', error: 'fatal', stack: null});
      // a failed task can be claimed again once due (the released one is due at once)
      const again = await s.tasksClaim({ids: [r!.id, f!.id], worker: 'w2', leaseMs: 30_000});
      expect(again.claimed.map((c) => c.id)).toEqual([r!.id]);
      expect(again.claimed[0]).toMatchObject({attempt: 1, fence: 2});
    });

    it('renews leases only for the current fence', async () => {
      const t = task({type: 'order_notify', payload: {renew: 1}});
      await s.tasksInsert({tasks: [t], actor: 'test'});
      const [c] = (await s.tasksClaim({ids: [t.id], worker: 'w1', leaseMs: 1000})).claimed;
      expect(await s.leasesRenew({held: [{id: t.id, fence: c!.fence}], leaseMs: 60_000})).toEqual([t.id]);
      const row = await s.tasksGet({id: t.id});
      expect((row?.leaseUntil?.getTime() ?? 0) - (await s.clockNow()).getTime()).toBeGreaterThan(50_000);
      expect(await s.leasesRenew({held: [{id: t.id, fence: c!.fence + 1}], leaseMs: 60_000})).toEqual([]);
    });

    it('finds expired leases, and the rescue applies only while the lease is still expired', async () => {
      const [x, y] = [1, 2].map((i) => task({type: 'order_notify', payload: {lease: i}}));
      await s.tasksInsert({tasks: [x!, y!], actor: 'test'});
      const claimed = (await s.tasksClaim({ids: [x!.id, y!.id], worker: 'w-dead', leaseMs: 200})).claimed;
      await h.waitDbMs(300);
      const expired = await s.leasesFindExpired({limit: 100});
      expect(expired.map((e) => e.id)).toEqual(expect.arrayContaining([x!.id, y!.id]));
      // y's worker comes back and renews before the rescuer writes
      const cy = claimed.find((c) => c.id === y!.id)!;
      await s.leasesRenew({held: [{id: y!.id, fence: cy.fence}], leaseMs: 60_000});
      const cx = claimed.find((c) => c.id === x!.id)!;
      const res = await s.outcomesApply({
        outcomes: [
          {kind: 'rescue', id: x!.id, fence: cx.fence, retryDelayMs: 0, error: 'lease expired'},
          {kind: 'rescue', id: y!.id, fence: cy.fence, retryDelayMs: 0, error: 'lease expired'},
        ],
        actor: 'rescuer',
      });
      expect(res).toEqual({applied: [x!.id], stale: [y!.id]});
      expect(await s.tasksGet({id: x!.id})).toMatchObject({state: 'failed', lastError: 'lease expired'});
      // A dead-lettering rescue is guarded the same way.
      const dead = await s.outcomesApply({
        outcomes: [{kind: 'rescueDeadLetter', id: y!.id, fence: cy.fence, error: 'x'}],
        actor: 'rescuer',
      });
      expect(dead).toEqual({applied: [], stale: [y!.id]});
      expect(await s.tasksGet({id: y!.id})).toMatchObject({state: 'running'});
    });

    it('lists due tasks never rung, and rings again only after republishAfter', async () => {
      const t = task({type: 'order_notify', payload: {ring: 1}});
      const future = task({type: 'order_notify', payload: {ring: 2}, delay: '1h'});
      await s.tasksInsert({tasks: [t, future], actor: 'test'});
      const ids = async (after: number) => (await s.tasksFindUndispatched({limit: 10_000, republishAfterMs: after})).map((d) => d.id);
      expect(await ids(60_000)).toContain(t.id);
      expect(await ids(60_000)).not.toContain(future.id);
      await s.doorbellsMark({rung: [{id: t.id, fence: 0}]});
      expect(await ids(60_000)).not.toContain(t.id);
      await h.waitDbMs(50);
      expect(await ids(1)).toContain(t.id);
    });

    it('forgets a mark made in advance only while still claimable at that fence: rung again by the scheduler at once', async () => {
      const t = task({type: 'order_notify', payload: {forget: 1}});
      const taken = task({type: 'order_notify', payload: {forget: 2}});
      await s.tasksInsert({tasks: [t, taken], actor: 'test'});
      await s.doorbellsMark({rung: [t, taken].map((x) => ({id: x.id, fence: 0}))});
      const undispatched = async () => (await s.tasksFindUndispatched({limit: 10_000, republishAfterMs: 600_000})).map((d) => d.id);
      expect(await undispatched()).not.toContain(t.id);
      await s.tasksClaim({ids: [taken.id], worker: 'w1', leaseMs: 30_000});
      await s.doorbellsForget({rung: [t, taken].map((x) => ({id: x.id, fence: 0}))});
      expect(await undispatched()).toContain(t.id);
      expect(await s.tasksGet({id: t.id})).toMatchObject({state: 'submitted', publishedAt: null});
      expect(await s.tasksGet({id: taken.id})).toMatchObject({state: 'running', attempt: 1});
      // The fence moved on: a late mark for the forgotten ring does not hide the task again.
      await s.doorbellsMark({rung: [{id: t.id, fence: 0}]});
      expect(await undispatched()).toContain(t.id);
    });

    it('marks a doorbell only at the fence it rang for: a late mark does not land on the retry', async () => {
      const [a, b, c] = [1, 2, 3].map((i) => task({type: 'order_notify', payload: {mark: i}}));
      await s.tasksInsert({tasks: [a!, b!, c!], actor: 'test'});
      // a and b are rung (fence 0); before their mark lands a worker claims and fails a.
      const [ca] = (await s.tasksClaim({ids: [a!.id], worker: 'w1', leaseMs: 30_000})).claimed;
      await s.outcomesApply({outcomes: [{id: a!.id, fence: ca!.fence, kind: 'fail', retryDelayMs: 0, error: 'boom'}], actor: 'w1'});
      await s.doorbellsMark({
        rung: [
          {id: a!.id, fence: 0},
          {id: b!.id, fence: 0},
        ],
      });
      expect(await s.tasksGet({id: a!.id})).toMatchObject({state: 'failed', fence: 1, publishedAt: null});
      expect((await s.tasksGet({id: b!.id}))?.publishedAt).toBeInstanceOf(Date);
      const due = (await s.tasksFindUndispatched({limit: 10_000, republishAfterMs: 60_000})).find((d) => d.id === a!.id);
      expect(due).toMatchObject({id: a!.id, attempt: 1, fence: 1});
      // Marks for several fences in one call: each lands only at its own.
      await s.doorbellsMark({
        rung: [
          {id: a!.id, fence: 1},
          {id: c!.id, fence: 7},
        ],
      });
      expect((await s.tasksGet({id: a!.id}))?.publishedAt).toBeInstanceOf(Date);
      expect((await s.tasksGet({id: c!.id}))?.publishedAt).toBeNull();
    });

    it('cancels submitted and failed tasks only; a cancelled task cannot be claimed', async () => {
      const t = task({type: 'order_notify', payload: {cancel: 1}});
      const run = task({type: 'order_notify', payload: {cancel: 2}});
      await s.tasksInsert({tasks: [t, run], actor: 'test'});
      await s.tasksClaim({ids: [run.id], worker: 'w1', leaseMs: 30_000});
      expect(await s.tasksCancel({id: t.id, actor: 'admin', reason: 'not needed'})).toEqual({from: 'submitted', cancelled: true});
      expect(await s.tasksCancel({id: run.id, actor: 'admin', reason: null})).toEqual({from: 'running', cancelled: false});
      expect(await s.tasksCancel({id: newId(), actor: 'admin', reason: null})).toEqual({from: null, cancelled: false});
      expect((await s.tasksClaim({ids: [t.id], worker: 'w1', leaseMs: 30_000})).claimed).toEqual([]);
      expect((await s.tasksGet({id: t.id}))?.state).toBe('cancelled');
    });

    it('audits a cancel in its transaction, only when it cancelled; lists the trail newest first with a cursor', async () => {
      const before = await s.auditList({limit: 1000});
      const t = task({type: 'order_notify', payload: {audit: 1}});
      const u = task({type: 'order_notify', payload: {audit: 2}});
      const run = task({type: 'order_notify', payload: {audit: 3}});
      await s.tasksInsert({tasks: [t, u, run], actor: 'test'});
      await s.tasksClaim({ids: [run.id], worker: 'w1', leaseMs: 30_000});
      const audit = (reason: string | null) => ({operator: 'alice', command: 'tasks cancel', filter: {ids: ['x'], quote: "'; --"}, reason});
      await s.tasksCancel({id: t.id, actor: 'admin', reason: 'refunded', audit: audit('refunded')});
      // Refused (running) and unknown: nothing changed, so nothing is audited.
      expect(await s.tasksCancel({id: run.id, actor: 'admin', reason: null, audit: audit(null)})).toEqual({
        from: 'running',
        cancelled: false,
      });
      expect(await s.tasksCancel({id: newId(), actor: 'admin', reason: null, audit: audit(null)})).toEqual({from: null, cancelled: false});
      // Without an audit context (the cron admin's cancel of its own occurrence) no row is written.
      await s.tasksCancel({id: u.id, actor: 'admin', reason: null});
      await h.waitDbMs(2);
      await s.tasksCancel({id: u.id, actor: 'admin', reason: null, audit: audit('again')});
      const trail = await s.auditList({limit: 1000});
      expect(trail.length - before.length).toBe(1);
      const [row] = trail;
      expect(row).toMatchObject({
        operator: 'alice',
        command: 'tasks cancel',
        filter: {ids: ['x'], quote: "'; --"},
        reason: 'refunded',
        taskCount: 1,
        taskIds: [t.id],
      });
      expect(row?.at).toBeInstanceOf(Date);
      const t2 = task({type: 'order_notify', payload: {audit: 4}});
      await s.tasksInsert({tasks: [t2], actor: 'test'});
      await s.tasksCancel({id: t2.id, actor: 'admin', reason: null, audit: audit(null)});
      const [newest, older] = await s.auditList({limit: 2});
      expect(newest?.taskIds).toEqual([t2.id]);
      expect(newest?.reason).toBeNull();
      expect(older?.id).toBe(row?.id);
      expect(newest!.id).toBeGreaterThan(row!.id);
      const page = await s.auditList({limit: 10, after: newest!.id});
      expect(page[0]?.id).toBe(row?.id);
      expect(await s.auditList({limit: 10, after: (await s.auditList({limit: 1000})).at(-1)!.id})).toEqual([]);
    });

    describe('DeadLetterStore', () => {
      /** Inserts tasks of `type` and dead-letters each with its error, one after the other (distinct finish times). */
      async function dead(type: string, errors: Array<string>): Promise<string[]> {
        const ids: string[] = [];
        for (const error of errors) {
          const t = task({type, payload: {n: ids.length, error}});
          await s.tasksInsert({tasks: [t], actor: 'test'});
          const [c] = (await s.tasksClaim({ids: [t.id], worker: 'w1', leaseMs: 30_000})).claimed;
          await s.outcomesApply({outcomes: [{kind: 'deadLetter', id: t.id, fence: c!.fence, error}], actor: 'w1'});
          await h.waitDbMs(2);
          ids.push(t.id);
        }
        return ids;
      }
      let alpha: string[];
      let beta: string[];
      let t0: Date;
      beforeAll(async () => {
        t0 = await s.clockNow();
        alpha = await dead('dlq_alpha', ['order 1 not found', 'order 2 not found', 'smtp 100% down_now', 'order 3 not found']);
        beta = await dead('dlq_beta', ['order 4 not found']);
        // Not dead: never listed.
        await s.tasksInsert({tasks: [task({type: 'dlq_alpha', payload: {alive: true}})], actor: 'test'});
      });

      it('lists dead tasks newest death first, filtered, with a keyset cursor', async () => {
        const all = await s.deadList({type: 'dlq_alpha', limit: 100});
        expect(all.map((t) => t.id)).toEqual([...alpha].reverse());
        expect(all[0]).toMatchObject({type: 'dlq_alpha', pool: 'io', attempt: 1, maxRetries: 5, lastError: 'order 3 not found'});
        expect(all[0]?.finishedAt).toBeInstanceOf(Date);
        const page1 = await s.deadList({type: 'dlq_alpha', limit: 2});
        const page2 = await s.deadList({type: 'dlq_alpha', limit: 2, after: page1.at(-1)!.id});
        expect([...page1, ...page2].map((t) => t.id)).toEqual(all.map((t) => t.id));
        expect(await s.deadList({type: 'dlq_alpha', limit: 2, after: newId()})).toEqual([]);
        const both = (await s.deadList({since: t0, limit: 100})).map((t) => t.id);
        expect(both.sort()).toEqual([...alpha, ...beta].sort());
        const cut = all[1]!.finishedAt;
        expect((await s.deadList({type: 'dlq_alpha', until: cut, limit: 100})).map((t) => t.id)).toEqual(all.slice(2).map((t) => t.id));
        expect((await s.deadList({type: 'dlq_alpha', since: cut, limit: 100})).map((t) => t.id)).toEqual(all.slice(0, 2).map((t) => t.id));
      });

      it('matches the error as a literal substring: LIKE wildcards and quotes in it match themselves', async () => {
        const ids = async (errorContains: string) => (await s.deadList({since: t0, errorContains, limit: 100})).map((t) => t.id).sort();
        expect(await ids('not found')).toEqual([alpha[0], alpha[1], alpha[3], beta[0]].sort());
        expect(await ids('100% down_')).toEqual([alpha[2]]);
        expect(await ids('%')).toEqual([alpha[2]]);
        expect(await ids('_')).toEqual([alpha[2]]);
        expect(await ids("' OR '1'='1")).toEqual([]);
        expect(await ids('\\')).toEqual([]);
      });

      it('replays dead tasks once: submitted, due, a fresh budget (retry_base), history and audit in one transaction', async () => {
        const [d] = await dead('dlq_replay', ['boom 1']);
        const alive = task({type: 'dlq_replay', payload: {alive: 1}});
        await s.tasksInsert({tasks: [alive], actor: 'test'});
        const auditBefore = (await s.auditList({limit: 1000})).length;
        const audit = {operator: 'alice', command: 'dlq replay', filter: {ids: [d]}, reason: 'downstream fixed'};
        const r = await s.deadReplay({ids: [d!, alive.id, newId()], actor: 'admin:1', audit});
        expect(r.replayed).toEqual([{id: d, type: 'dlq_replay', pool: 'io', priority: 'normal', fence: 1}]);
        expect(r.skipped.map((k) => k.state).sort()).toEqual([null, 'submitted'].sort());
        // Marked published in advance (the replay rings it next), so no scheduler rings it meanwhile.
        const replayedRow = await s.tasksGet({id: d!});
        expect(replayedRow).toMatchObject({state: 'submitted', attempt: 1, finishedAt: null});
        expect(replayedRow?.publishedAt).toBeInstanceOf(Date);
        expect((await s.historyList({taskId: d!})).at(-1)).toMatchObject({
          from: 'dead',
          to: 'submitted',
          attempt: 1,
          worker: 'admin:1',
          error: 'replayed by alice: downstream fixed',
        });
        const trail = await s.auditList({limit: 1000});
        expect(trail.length - auditBefore).toBe(1);
        expect(trail[0]).toMatchObject({operator: 'alice', command: 'dlq replay', reason: 'downstream fixed', taskCount: 1, taskIds: [d]});
        // Claimable at once; attempts keep counting, the budget counts from the replay.
        const [c] = (await s.tasksClaim({ids: [d!], worker: 'w1', leaseMs: 30_000})).claimed;
        expect(c).toMatchObject({attempt: 2, retryBase: 1, maxRetries: 5});
        // Not dead any more: a second replay skips it and audits nothing.
        const again = await s.deadReplay({ids: [d!], actor: 'admin:1', audit});
        expect(again).toEqual({replayed: [], skipped: [{id: d, state: 'running'}]});
        expect((await s.auditList({limit: 1000})).length - auditBefore).toBe(1);
      });

      it('pages dead tasks in id order with a keyset, payloads only when asked', async () => {
        const page = async (p: {afterId?: string; limit: number; withPayload?: boolean}) => s.deadPage({type: 'dlq_alpha', ...p});
        const sorted = [...alpha].sort();
        const first = await page({limit: 3});
        expect(first).toEqual(sorted.slice(0, 3).map((id) => ({id})));
        expect(await page({limit: 3, afterId: first.at(-1)!.id})).toEqual(sorted.slice(3).map((id) => ({id})));
        expect(await page({limit: 3, afterId: sorted.at(-1)!})).toEqual([]);
        const withPayload = await page({limit: 100, withPayload: true});
        expect(withPayload.map((r) => r.payload?.error).sort()).toEqual(
          ['order 1 not found', 'order 2 not found', 'smtp 100% down_now', 'order 3 not found'].sort(),
        );
        // The filter applies as in deadList: the error substring, and without a type across types.
        expect((await s.deadPage({since: t0, errorContains: 'order 4', limit: 10})).map((r) => r.id)).toEqual(beta);
        const mine = new Set([...alpha, ...beta]);
        const across = (await s.deadPage({since: t0, limit: 100})).map((r) => r.id).filter((id) => mine.has(id));
        expect(across).toEqual([...mine].sort());
      });

      it('rewrites the payloads it replays from the locked rows; a rewrite that throws rolls the whole call back', async () => {
        const ids = await dead('dlq_rewrite', ['r 1', 'r 2']);
        const audit = {operator: 'op', command: 'dlq replay', filter: {type: 'dlq_rewrite'}, reason: null};
        const auditBefore = (await s.auditList({limit: 1000})).length;
        const boom = (payload: Record<string, unknown>, id: string) => {
          if (id === ids[1]) throw new Error(`bad ${id}`);
          return JSON.stringify({...payload, patched: true});
        };
        await expect(s.deadReplay({ids, actor: 'a:1', audit, rewrite: boom})).rejects.toThrow(`bad ${ids[1]}`);
        for (const id of ids) expect(await s.tasksGet({id})).toMatchObject({state: 'dead', payload: {error: expect.any(String)}});
        expect((await s.tasksGet({id: ids[0]!}))?.payload).not.toHaveProperty('patched');
        expect((await s.auditList({limit: 1000})).length).toBe(auditBefore);
        const seen: string[] = [];
        const r = await s.deadReplay({
          ids,
          actor: 'a:1',
          audit,
          rewrite: (payload, id) => (seen.push(id), JSON.stringify({...payload, patched: id})),
        });
        expect(r.replayed.map((t) => t.id).sort()).toEqual([...ids].sort());
        expect(seen.sort()).toEqual([...ids].sort());
        for (const [i, id] of ids.entries()) expect((await s.tasksGet({id}))?.payload).toEqual({n: i, error: `r ${i + 1}`, patched: id});
      });

      it('two concurrent replays of the same tasks replay each exactly once', async () => {
        const ids = await dead(
          'dlq_race',
          Array.from({length: 20}, (_, i) => `race ${i}`),
        );
        const audit = {operator: 'op', command: 'dlq replay', filter: {type: 'dlq_race'}, reason: null};
        const [a, b] = await Promise.all([
          s.deadReplay({ids, actor: 'a:1', audit}),
          h.other.deadReplay({ids: [...ids].reverse(), actor: 'b:1', audit}),
        ]);
        const won = [...a.replayed, ...b.replayed].map((t) => t.id).sort();
        expect(won).toEqual([...ids].sort());
        expect(a.skipped.length + b.skipped.length).toBe(ids.length);
        for (const id of ids) {
          const replays = (await s.historyList({taskId: id})).filter((e) => e.from === 'dead' && e.to === 'submitted');
          expect(replays, id).toHaveLength(1);
        }
      });

      it('counts dead tasks per type and exact error, with first/last death and a sample', async () => {
        const groups = await s.deadErrorGroups({since: t0});
        const mine = groups
          .filter((g) => g.type === 'dlq_alpha' || g.type === 'dlq_beta')
          .sort((a, b) => (a.error ?? '').localeCompare(b.error ?? ''));
        expect(mine.map((g) => [g.type, g.error, g.count, g.sampleId])).toEqual([
          ['dlq_alpha', 'order 1 not found', 1, alpha[0]],
          ['dlq_alpha', 'order 2 not found', 1, alpha[1]],
          ['dlq_alpha', 'order 3 not found', 1, alpha[3]],
          ['dlq_beta', 'order 4 not found', 1, beta[0]],
          ['dlq_alpha', 'smtp 100% down_now', 1, alpha[2]],
        ]);
        expect(mine[0]!.firstSeen.getTime()).toBeLessThanOrEqual(mine[0]!.lastSeen.getTime());
        expect((await s.deadErrorGroups({type: 'dlq_beta'})).map((g) => g.count)).toEqual([1]);
        expect(await s.deadErrorGroups({type: 'dlq_beta', errorContains: 'smtp'})).toEqual([]);
      });
    });

    it('keeps the dead-letter scan watermark per cell, moved only by a compare-and-set', async () => {
      expect(await s.dlqScanGet()).toBeNull();
      const t1 = new Date('2026-06-01T12:00:00.123Z');
      const t2 = new Date('2026-06-01T12:05:00.456Z');
      const [a, b] = await Promise.all([s.dlqScanAdvance({from: null, to: t1}), h.other.dlqScanAdvance({from: null, to: t2})]);
      expect([a, b].filter(Boolean)).toHaveLength(1);
      const first = await s.dlqScanGet();
      expect([t1.getTime(), t2.getTime()]).toContain(first?.getTime());
      expect(await s.dlqScanAdvance({from: null, to: t2})).toBe(false);
      const next = new Date(first!.getTime() + 60_000);
      // Two passes from the same watermark: one moves it, the other finds it moved.
      const [x, y] = await Promise.all([s.dlqScanAdvance({from: first, to: next}), h.other.dlqScanAdvance({from: first, to: next})]);
      expect([x, y].filter(Boolean)).toHaveLength(1);
      expect(await s.dlqScanGet()).toEqual(next);
      expect(await h.other.dlqScanGet()).toEqual(next);
      expect(await s.dlqScanAdvance({from: first, to: new Date(next.getTime() + 1)})).toBe(false);
      expect(await s.dlqScanGet()).toEqual(next);
    });

    it('counts failed attempts of every task in a window per type and exact error (failureGroups)', async () => {
      const t0 = await s.clockNow();
      await h.waitDbMs(2);
      // err_alpha: fails twice with one message, then dies with another; err_beta fails once.
      const a = task({type: 'err_alpha', payload: {n: 1}});
      const b = task({type: 'err_beta', payload: {n: 2}});
      const ok = task({type: 'err_alpha', payload: {n: 3}});
      const cancelled = task({type: 'err_alpha', payload: {n: 4}});
      await s.tasksInsert({tasks: [a, b, ok, cancelled], actor: 'test'});
      const run = async (id: string, outcome: 'fail' | 'deadLetter' | 'complete', error: string) => {
        const [c] = (await s.tasksClaim({ids: [id], worker: 'w1', leaseMs: 30_000})).claimed;
        const o =
          outcome === 'fail'
            ? {kind: outcome, id, fence: c!.fence, retryDelayMs: 0, error}
            : outcome === 'deadLetter'
              ? {kind: outcome, id, fence: c!.fence, error}
              : {kind: outcome, id, fence: c!.fence};
        expect((await s.outcomesApply({outcomes: [o], actor: 'w1'})).applied).toEqual([id]);
      };
      await run(a.id, 'fail', 'order 7 not found');
      await h.waitDbMs(2);
      const mid = await s.clockNow();
      await h.waitDbMs(2);
      await run(a.id, 'fail', 'order 7 not found');
      await run(a.id, 'deadLetter', 'smtp down');
      await run(b.id, 'fail', 'order 7 not found');
      await run(ok.id, 'complete', '');
      // A cancel records its reason in history: not a failed attempt.
      await s.tasksCancel({id: cancelled.id, actor: 'test', reason: 'not needed'});
      const mine = (g: Awaited<ReturnType<typeof s.failureGroups>>) =>
        g
          .filter((x) => x.type.startsWith('err_'))
          .map((x) => [x.type, x.error, x.count, x.sampleId])
          .sort((p, q) => String(p).localeCompare(String(q)));
      const all = await s.failureGroups({since: t0});
      expect(mine(all)).toEqual([
        ['err_alpha', 'order 7 not found', 2, a.id],
        ['err_alpha', 'smtp down', 1, a.id],
        ['err_beta', 'order 7 not found', 1, b.id],
      ]);
      const g = all.find((x) => x.type === 'err_alpha' && x.error === 'order 7 not found')!;
      expect(g.firstSeen.getTime()).toBeLessThan(mid.getTime());
      expect(g.lastSeen.getTime()).toBeGreaterThan(mid.getTime());
      expect(mine(await s.failureGroups({since: t0, until: mid}))).toEqual([['err_alpha', 'order 7 not found', 1, a.id]]);
      expect(mine(await s.failureGroups({since: mid, type: 'err_beta'}))).toEqual([['err_beta', 'order 7 not found', 1, b.id]]);
      expect(await s.failureGroups({since: new Date((await s.clockNow()).getTime() + 60_000)})).toEqual([]);
    });

    it('cancels the tasks of a type in the given states in guarded batches, each with history and an audit row', async () => {
      const mk = (type: string, n: number) => task({type, payload: {n}});
      const sub = [mk('bulk_x', 1), mk('bulk_x', 2), mk('bulk_x', 3)];
      const failed = mk('bulk_x', 4);
      const running = mk('bulk_x', 5);
      const other = mk('bulk_y', 6);
      await s.tasksInsert({tasks: [...sub, failed, running, other], actor: 'test'});
      const [cf] = (await s.tasksClaim({ids: [failed.id], worker: 'w1', leaseMs: 30_000})).claimed;
      await s.outcomesApply({outcomes: [{kind: 'fail', id: failed.id, fence: cf!.fence, retryDelayMs: 60_000, error: 'e'}], actor: 'w1'});
      await s.tasksClaim({ids: [running.id], worker: 'w1', leaseMs: 30_000});
      const auditBefore = (await s.auditList({limit: 1000})).length;
      const audit = {operator: 'op', command: 'tasks cancel --type', filter: {type: 'bulk_x'}, reason: 'retired'};
      const p = {
        type: 'bulk_x',
        states: ['submitted', 'failed'] as Array<'submitted' | 'failed'>,
        actor: 'admin:1',
        reason: 'retired',
        audit,
      };
      const first = await s.tasksCancelMany({...p, limit: 3});
      expect(first).toHaveLength(3);
      const rest = await s.tasksCancelMany({...p, limit: 3});
      expect(rest).toHaveLength(1);
      expect(await s.tasksCancelMany({...p, limit: 3})).toEqual([]);
      const all = [...first, ...rest];
      expect(all.map((c) => c.id).sort()).toEqual([...sub, failed].map((t) => t.id).sort());
      expect(all.find((c) => c.id === failed.id)?.from).toBe('failed');
      for (const t of [...sub, failed]) expect((await s.tasksGet({id: t.id}))?.state).toBe('cancelled');
      expect((await s.tasksGet({id: running.id}))?.state).toBe('running');
      expect((await s.tasksGet({id: other.id}))?.state).toBe('submitted');
      expect((await s.historyList({taskId: failed.id})).at(-1)).toMatchObject({
        from: 'failed',
        to: 'cancelled',
        worker: 'admin:1',
        error: 'retired',
      });
      const trail = await s.auditList({limit: 1000});
      expect(trail.length - auditBefore).toBe(2);
      expect(
        trail
          .slice(0, 2)
          .map((t) => t.taskCount)
          .sort(),
      ).toEqual([1, 3]);
      expect(await s.tasksCancelMany({...p, states: ['submitted'], type: 'bulk_none', limit: 3})).toEqual([]);
      expect((await s.auditList({limit: 1000})).length - auditBefore).toBe(2);
    });

    it('cancels named tasks in one transaction: the waiting and running ones, others and unknown ids left alone, one audit row', async () => {
      const [sub, failed, running, done] = [1, 2, 3, 4].map((n) => task({type: 'bulk_ids', payload: {n}}));
      await s.tasksInsert({tasks: [sub!, failed!, running!, done!], actor: 'test'});
      const [cf] = (await s.tasksClaim({ids: [failed!.id], worker: 'w1', leaseMs: 30_000})).claimed;
      await s.outcomesApply({outcomes: [{kind: 'fail', id: failed!.id, fence: cf!.fence, retryDelayMs: 60_000, error: 'e'}], actor: 'w1'});
      const [cr] = (await s.tasksClaim({ids: [running!.id], worker: 'w2', leaseMs: 30_000})).claimed;
      const [cd] = (await s.tasksClaim({ids: [done!.id], worker: 'w1', leaseMs: 30_000})).claimed;
      await s.outcomesApply({outcomes: [{kind: 'complete', id: done!.id, fence: cd!.fence}], actor: 'w1'});
      const auditBefore = (await s.auditList({limit: 1000})).length;
      const audit = {operator: 'web:alice@127.0.0.1', command: 'web tasks bulk cancel', filter: {ids: ['…']}, reason: 'retired'};
      const ids = [sub!.id, failed!.id, running!.id, done!.id, newId()];
      const got = await s.tasksCancelIds({ids, actor: 'admin:1', reason: 'retired', audit});
      expect(got.map((c) => [c.id, c.from]).sort()).toEqual(
        [
          [sub!.id, 'submitted'],
          [failed!.id, 'failed'],
          [running!.id, 'running'],
        ].sort(),
      );
      expect(got.find((c) => c.id === running!.id)?.stopped).toEqual({id: running!.id, fence: cr!.fence, attempt: 1, worker: 'w2'});
      for (const t of [sub!, failed!, running!]) expect((await s.tasksGet({id: t.id}))?.state).toBe('cancelled');
      expect((await s.tasksGet({id: done!.id}))?.state).toBe('succeeded');
      const trail = await s.auditList({limit: 1000});
      expect(trail.length - auditBefore).toBe(1);
      expect(trail[0]).toMatchObject({operator: 'web:alice@127.0.0.1', command: 'web tasks bulk cancel', taskCount: 3, reason: 'retired'});
      expect([...trail[0]!.taskIds!].sort()).toEqual([sub!.id, failed!.id, running!.id].sort());
      // Nothing left to cancel: no change, no audit row.
      expect(await s.tasksCancelIds({ids, actor: 'admin:1', reason: null, audit})).toEqual([]);
      expect(await s.tasksCancelIds({ids: [], actor: 'admin:1', reason: null, audit})).toEqual([]);
      expect((await s.auditList({limit: 1000})).length - auditBefore).toBe(1);
    });

    it('searches tasks by last error (literally), dedup key and a payload field', async () => {
      const since = await s.clockNow();
      const a = task({type: 'search_x', payload: {orderId: 42, customer: {id: 'c7'}}, dedupKey: 'search-order-42'});
      const b = task({type: 'search_x', payload: {orderId: '42'}});
      const c = task({type: 'search_x', payload: {orderId: 420, note: "it's 100%"}});
      await s.tasksInsert({tasks: [a, b, c], actor: 'test'});
      const [cc] = (await s.tasksClaim({ids: [c.id], worker: 'w1', leaseMs: 30_000})).claimed;
      await s.outcomesApply({
        outcomes: [{kind: 'fail', id: c.id, fence: cc!.fence, retryDelayMs: 60_000, error: 'smtp 100% down_now'}],
        actor: 'w1',
      });
      const ids = async (f: Omit<Parameters<typeof s.tasksList>[0], 'limit'>) =>
        (await s.tasksList({...f, since, limit: 100})).map((t) => t.id).sort();
      expect(await ids({payload: {path: '$.orderId', value: '42'}})).toEqual([a.id, b.id].sort());
      expect(await ids({payload: {path: '$.customer.id', value: 'c7'}})).toEqual([a.id]);
      expect(await ids({payload: {path: '$.orderId', value: "42' OR '1'='1"}})).toEqual([]);
      expect(await ids({payload: {path: '$.missing', value: '42'}})).toEqual([]);
      expect(await ids({dedupKey: 'search-order-42'})).toEqual([a.id]);
      expect(await ids({dedupKey: 'search-order-4%'})).toEqual([]);
      expect(await ids({errorContains: '100% down_'})).toEqual([c.id]);
      expect(await ids({errorContains: '%'})).toEqual([c.id]);
      expect(await ids({errorContains: 'smtp', type: 'search_x', state: 'failed'})).toEqual([c.id]);
      expect(await ids({errorContains: 'smtp', state: 'submitted'})).toEqual([]);
    });

    it('lists newest first with filters and counts per type and state', async () => {
      const a = task({type: 'report_daily', payload: {k: 1}});
      const b = task({type: 'report_daily', payload: {k: 2}});
      await s.tasksInsert({tasks: [a], actor: 'test'});
      await h.waitDbMs(5);
      await s.tasksInsert({tasks: [b], actor: 'test'});
      const list = await s.tasksList({type: 'report_daily', limit: 10});
      expect(list.map((t) => t.id)).toEqual([b.id, a.id]);
      expect(await s.tasksList({type: 'report_daily', state: 'running', limit: 10})).toEqual([]);
      expect((await s.tasksList({type: 'report_daily', limit: 1})).length).toBe(1);
      const stats = await s.tasksStats();
      expect(stats.find((r) => r.type === 'report_daily' && r.state === 'submitted')?.count).toBe(2);
    });

    it('pages the list by keyset on (created_at, id): no overlap, no gap, equal creation times included; until bounds it', async () => {
      const type = 'page_probe';
      // Each batch is one INSERT: its tasks share one created_at (NOW(3) of the statement).
      const batches: NewTask[][] = [];
      for (let b = 0; b < 3; b++) {
        const ts = [0, 1, 2, 3, 4].map((i) => task({type, payload: {b, i}}));
        await s.tasksInsert({tasks: ts, actor: 'test'});
        batches.push(ts);
        await h.waitDbMs(5);
      }
      const rows = await s.tasksGetMany({ids: batches.flat().map((t) => t.id)});
      const created = new Map(rows.map((r) => [r.id, r.createdAt.getTime()]));
      expect(new Set(batches[0]!.map((t) => created.get(t.id))).size).toBe(1);
      const expected = [...rows].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1)).map((r) => r.id);
      const seen: string[] = [];
      let after: {createdAt: Date; id: string} | undefined;
      for (let page = 0; page < 10; page++) {
        const got = await s.tasksList({type, limit: 4, ...(after ? {after} : {})});
        seen.push(...got.map((t) => t.id));
        if (got.length < 4) break;
        after = {createdAt: got.at(-1)!.createdAt, id: got.at(-1)!.id};
      }
      expect(seen).toEqual(expected);
      // The same selection and order, three columns of it (bulk actions).
      const refs = await s.tasksListRefs({type, limit: 100});
      expect(refs.map((r) => r.id)).toEqual(expected);
      expect(refs[0]).toEqual({id: expected[0], state: 'submitted', createdAt: new Date(created.get(expected[0]!)!)});
      // until: created before the second batch's time (the first batch only); with since, a window.
      const second = new Date(created.get(batches[1]![0]!.id)!);
      const third = new Date(created.get(batches[2]![0]!.id)!);
      expect((await s.tasksList({type, until: second, limit: 100})).map((t) => t.id).sort()).toEqual(batches[0]!.map((t) => t.id).sort());
      expect((await s.tasksList({type, since: second, until: third, limit: 100})).map((t) => t.id).sort()).toEqual(
        batches[1]!.map((t) => t.id).sort(),
      );
      // A cursor past the oldest task: an empty page.
      const oldest = expected.at(-1)!;
      expect(await s.tasksList({type, limit: 4, after: {createdAt: new Date(created.get(oldest)!), id: oldest}})).toEqual([]);
    });

    it('counts per bucket the tasks created and the transitions into succeeded, failed, dead and cancelled; the backlog per state', async () => {
      const type = 'bucket_probe';
      const since = await s.clockNow();
      const [ok, retry, dead, cancel, waiting] = [1, 2, 3, 4, 5].map((n) => task({type, payload: {n}}));
      await s.tasksInsert({tasks: [ok!, retry!, dead!, cancel!, waiting!], actor: 'test'});
      const claimed = (await s.tasksClaim({ids: [ok!.id, retry!.id, dead!.id], worker: 'w1', leaseMs: 30_000})).claimed;
      const fence = (id: string) => claimed.find((c) => c.id === id)!.fence;
      await s.outcomesApply({
        outcomes: [
          {kind: 'complete', id: ok!.id, fence: fence(ok!.id)},
          {kind: 'fail', id: retry!.id, fence: fence(retry!.id), retryDelayMs: 600_000, error: 'e'},
          {kind: 'deadLetter', id: dead!.id, fence: fence(dead!.id), error: 'e'},
        ],
        actor: 'w1',
      });
      await s.tasksCancel({id: cancel!.id, actor: 'admin:1', reason: null});
      await h.waitDbMs(2);
      const until = await s.clockNow();
      const one = {since, until, bucketMs: until.getTime() - since.getTime()};
      expect(await s.tasksCreatedBuckets(one)).toEqual([{at: since, count: 5}]);
      const byState = Object.fromEntries((await s.transitionBuckets(one)).map((r) => [r.state, [r.at.getTime(), r.count]]));
      expect(byState).toEqual({
        succeeded: [since.getTime(), 1],
        failed: [since.getTime(), 1],
        dead: [since.getTime(), 1],
        cancelled: [since.getTime(), 1],
      });
      // Buckets are cut from `since`, 30 s each.
      const wide = {since: new Date(since.getTime() - 60_000), until, bucketMs: 30_000};
      const buckets = await s.tasksCreatedBuckets(wide);
      // (Other tests' tasks may be in the wider window: the buckets hold what the plain count does.)
      expect(buckets.reduce((n, b) => n + b.count, 0)).toBe(await s.tasksCreatedCount({since: wide.since, until}));
      expect(buckets.every((b) => b.at >= wide.since && b.at < until && (b.at.getTime() - wide.since.getTime()) % 30_000 === 0)).toBe(true);
      expect(await s.transitionBuckets({since: until, until: new Date(until.getTime() + 60_000), bucketMs: 1000})).toEqual([]);
      // The backlog per state (every type): this test's waiting, retrying and dead tasks among them.
      const report = await s.backlogByState();
      const row = report.rows.find((r) => r.type === type)!;
      expect(row).toMatchObject({due: 1, delayed: 1, running: 0, dead: 1});
      expect(report.states.submitted).toBeGreaterThanOrEqual(1);
      const sum = (k: 'submitted' | 'failed' | 'running' | 'dead') => report.states[k];
      expect(sum('submitted') + sum('failed')).toBe(report.rows.reduce((n, r) => n + r.due + r.delayed, 0));
      expect(sum('running')).toBe(report.rows.reduce((n, r) => n + r.running, 0));
      expect(sum('dead')).toBe(report.rows.reduce((n, r) => n + r.dead, 0));
    });

    it('reports the backlog per type: due, delayed (of them waiting for a parent), running, dead and the oldest due run_at', async () => {
      const type = 'backlog_probe';
      const past = Date.now() - 4000;
      const [old, due, run, dead] = [past, past + 2000, past, past].map((at) => task({type, payload: {}, runAt: new Date(at)}));
      const later = task({type, payload: {}, delay: '1h'});
      await s.tasksInsert({tasks: [old!, due!, run!, dead!, later], actor: 'test'});
      // Waits for `later`: not due until it succeeds, counted among the delayed and as waiting.
      await s.tasksInsertLinked({tasks: [task({type, payload: {}, after: [later.id]})], actor: 'test'});
      await s.tasksClaim({ids: [run!.id], worker: 'w1', leaseMs: 30_000});
      const [c] = (await s.tasksClaim({ids: [dead!.id], worker: 'w1', leaseMs: 30_000})).claimed;
      await s.outcomesApply({outcomes: [{kind: 'deadLetter', id: dead!.id, fence: c!.fence, error: 'x'}], actor: 'w1'});
      const report = await s.backlog();
      expect(report.at).toBeInstanceOf(Date);
      const row = report.rows.find((r) => r.type === type);
      expect(row).toMatchObject({due: 2, delayed: 2, waiting: 1, running: 1, dead: 1});
      expect(Math.abs(row!.oldestDueAt!.getTime() - past)).toBeLessThan(1000);
      expect(report.rows.map((r) => r.type)).toEqual([...report.rows.map((r) => r.type)].sort((a, b) => a.localeCompare(b)));
    });

    it('counts terminal transitions per type × state since a time, and none before it', async () => {
      const type = 'terminal_probe';
      const before = await s.clockNow();
      const [ok, dead, gone, live] = [0, 1, 2, 3].map((i) => task({type, payload: {i}}));
      await s.tasksInsert({tasks: [ok!, dead!, gone!, live!], actor: 'test'});
      const claimed = (await s.tasksClaim({ids: [ok!.id, dead!.id], worker: 'w1', leaseMs: 30_000})).claimed;
      const fence = (id: string) => claimed.find((c) => c.id === id)!.fence;
      await s.outcomesApply({
        outcomes: [
          {kind: 'complete', id: ok!.id, fence: fence(ok!.id)},
          {kind: 'deadLetter', id: dead!.id, fence: fence(dead!.id), error: 'x'},
        ],
        actor: 'w1',
      });
      await s.tasksCancel({id: gone!.id, actor: 'admin', reason: null});
      const since = new Date(before.getTime() - 1000);
      const counts = (await s.terminalCounts({since})).filter((r) => r.type === type);
      expect(counts.sort((a, b) => a.state.localeCompare(b.state))).toEqual([
        {type, state: 'cancelled', count: 1},
        {type, state: 'dead', count: 1},
        {type, state: 'succeeded', count: 1},
      ]);
      const later = new Date((await s.clockNow()).getTime() + 60_000);
      expect((await s.terminalCounts({since: later})).filter((r) => r.type === type)).toEqual([]);
    });

    it('registers workers and their heartbeats', async () => {
      await s.workersUpsert({info: {id: 'host:1', host: 'host', pid: 1, pools: {io: 8}}, inFlight: 3});
      let w = (await s.workersList()).find((x) => x.id === 'host:1');
      expect(w).toMatchObject({inFlight: 3, pools: {io: 8}, stoppedAt: null});
      await s.workersStop({id: 'host:1'});
      w = (await s.workersList()).find((x) => x.id === 'host:1');
      expect(w?.stoppedAt).toBeInstanceOf(Date);
    });

    it('keeps the previous heartbeat and its counters beside the latest, for a rate from one read', async () => {
      const info = {id: 'host:2', host: 'host', pid: 2, pools: {io: 4}};
      const stats = (n: number) => ({heartbeatMs: 1000, types: {order_notify: {succeeded: n, failed: 0, dead: 0, released: 0, hist: [n]}}});
      await s.workersUpsert({info, inFlight: 0, stats: stats(1)});
      let w = (await s.workersList()).find((x) => x.id === 'host:2')!;
      expect(w).toMatchObject({stats: stats(1), prev: null, stoppedAt: null});
      expect(w.heartbeatAgeMs).toBeGreaterThanOrEqual(0);
      expect(w.heartbeatAgeMs).toBeLessThan(5000);
      const first = w.heartbeatAt;
      await h.waitDbMs(5);
      await s.workersUpsert({info, inFlight: 3, stats: stats(40)});
      w = (await s.workersList()).find((x) => x.id === 'host:2')!;
      expect(w).toMatchObject({inFlight: 3, stats: stats(40), prev: {at: first, stats: stats(1)}});
      expect(w.heartbeatAt.getTime()).toBeGreaterThan(first.getTime());
      // A worker that reports no counters (an older ax) reads as null, not as an error.
      await s.workersUpsert({info: {...info, id: 'host:3'}, inFlight: 0});
      expect((await s.workersList()).find((x) => x.id === 'host:3')).toMatchObject({stats: null, prev: null});
      // seenWithinMs leaves out rows whose heartbeat is older.
      await h.waitDbMs(300);
      await s.workersUpsert({info, inFlight: 0, stats: stats(41)});
      const recent = (await s.workersList({seenWithinMs: 200})).map((x) => x.id);
      expect(recent).toContain('host:2');
      expect(recent).not.toContain('host:3');
    });

    it('counts the tasks created in a time window (the submit rate)', async () => {
      const before = await s.clockNow();
      await h.waitDbMs(5);
      await s.tasksInsert({tasks: [1, 2, 3].map((n) => task({type: 'created_probe', payload: {n}})), actor: 'test'});
      await h.waitDbMs(5);
      const after = await s.clockNow();
      expect(await s.tasksCreatedCount({since: before, until: after})).toBe(3);
      expect(await s.tasksCreatedCount({since: after, until: new Date(after.getTime() + 60_000)})).toBe(0);
    });

    it('an outcome whose transition does not start from the row state changes nothing (guard in the UPDATE)', async () => {
      const t = task({type: 'order_notify', payload: {wrong: 1}});
      await s.tasksInsert({tasks: [t], actor: 'test'});
      const [c] = (await s.tasksClaim({ids: [t.id], worker: 'w1', leaseMs: 30_000})).claimed;
      await s.outcomesApply({outcomes: [{kind: 'fail', id: t.id, fence: c!.fence, retryDelayMs: 60_000, error: 'first'}], actor: 'w1'});
      const before = await s.tasksGet({id: t.id});
      // Same fence, but the row is `failed`, not `running`: no outcome transition starts there.
      for (const o of [
        {kind: 'complete' as const, id: t.id, fence: c!.fence},
        {kind: 'fail' as const, id: t.id, fence: c!.fence, retryDelayMs: 0, error: 'again'},
        {kind: 'deadLetter' as const, id: t.id, fence: c!.fence, error: 'dead'},
        {kind: 'release' as const, id: t.id, fence: c!.fence, reason: 'released'},
        {kind: 'rescue' as const, id: t.id, fence: c!.fence, retryDelayMs: 0, error: 'rescued'},
      ]) {
        expect(await s.outcomesApply({outcomes: [o], actor: 'zombie'}), o.kind).toEqual({applied: [], stale: [t.id]});
      }
      expect(await s.tasksGet({id: t.id})).toEqual(before);
      expect((await s.historyList({taskId: t.id})).map((e) => e.to)).toEqual(['failed']);
      // An unknown id is stale too.
      expect(await s.outcomesApply({outcomes: [{kind: 'complete', id: newId(), fence: 1}], actor: 'w1'})).toMatchObject({applied: []});
    });

    it('holds delayed tasks for one scheduler at a time, renews its own, and lets go on release or mark', async () => {
      const soon = task({type: 'order_notify', payload: {hold: 1}, delay: 2000});
      const far = task({type: 'order_notify', payload: {hold: 2}, delay: '1h'});
      await s.tasksInsert({tasks: [soon, far], actor: 'test'});
      const take = (owner: string) => s.holdsTake({owner, horizonMs: 60_000, holdMs: 30_000, limit: 10_000});
      const mine = (await take('sched-a')).filter((x) => x.id === soon.id || x.id === far.id);
      expect(mine).toEqual([expect.objectContaining({id: soon.id, type: 'order_notify', pool: 'io', attempt: 0, fence: 0})]);
      expect((await take('sched-b')).map((x) => x.id)).not.toContain(soon.id);
      expect((await take('sched-a')).map((x) => x.id)).toContain(soon.id);
      expect(await s.holdsRelease({owner: 'sched-a'})).toBeGreaterThanOrEqual(1);
      expect((await take('sched-b')).map((x) => x.id)).toContain(soon.id);
      // A confirmed doorbell drops the hold: the task is no longer held by anyone.
      await s.doorbellsMark({rung: [{id: soon.id, fence: 0}]});
      expect((await take('sched-b')).map((x) => x.id)).not.toContain(soon.id);
      expect(await s.holdsRelease({owner: 'nobody'})).toBe(0);
    });

    it('the database clock moves', async () => {
      const a = await s.clockNow();
      await h.waitDbMs(5);
      expect((await s.clockNow()).getTime()).toBeGreaterThan(a.getTime());
    });

    it('records only transitions the state machine allows', async () => {
      const allowed = new Set(allowedEdges().map(([f, t]) => `${f}>${t}`));
      for (const [from, to] of await h.historyEdges()) {
        if (from === null) expect(to).toBe('submitted');
        else expect(allowed.has(`${from}>${to}`), `${from} → ${to}`).toBe(true);
      }
    });

    // Schedules live in the same database, on the same handle.
    describe('ScheduleStore', () => {
      const schedule = (name: string, nextFireAt: Date | null = null): NewSchedule => ({
        name,
        cron: '*/5 * * * *',
        tz: 'UTC',
        type: 'report_daily',
        payload: '{}',
        pool: 'io',
        priority: 'normal',
        maxRetries: null,
        timeoutMs: null,
        key: null,
        overlap: 'allow',
        misfire: 'fire-once',
        nextFireAt,
      });

      it('adds, refuses a duplicate name, gets and lists', async () => {
        await s.schedulesAdd({schedule: schedule('conf-a')});
        await expect(s.schedulesAdd({schedule: schedule('conf-a')})).rejects.toMatchObject({code: 'conflict'});
        expect(await s.schedulesGet({name: 'conf-a'})).toMatchObject({name: 'conf-a', paused: false, nextFireAt: null, lastTaskId: null});
        expect(await s.schedulesGet({name: 'conf-none'})).toBeNull();
        expect((await s.schedulesList()).map((x) => x.name)).toContain('conf-a');
      });

      it('pauses and resumes (optionally moving the next fire time); due only when unpaused and within the horizon', async () => {
        const now = await s.clockNow();
        await s.schedulesAdd({schedule: schedule('conf-p', new Date(now.getTime() + 10_000))});
        const due = async (horizonMs: number) => (await s.schedulesDue({horizonMs})).map((x) => x.name);
        expect(await due(60_000)).toContain('conf-p');
        expect(await due(1_000)).not.toContain('conf-p');
        expect(await s.schedulesSetPaused({name: 'conf-p', paused: true})).toBe(true);
        expect(await due(60_000)).not.toContain('conf-p');
        const next = new Date(now.getTime() + 500);
        expect(await s.schedulesSetPaused({name: 'conf-p', paused: false, nextFireAt: next})).toBe(true);
        expect((await s.schedulesGet({name: 'conf-p'}))?.nextFireAt?.getTime()).toBe(next.getTime());
        expect(await due(1_000)).toContain('conf-p');
        expect(await s.schedulesSetPaused({name: 'conf-none', paused: true})).toBe(false);
      });

      it('advances only from the expected next fire time (compare-and-set), and removes', async () => {
        const t0 = new Date(Date.UTC(2030, 0, 1, 0, 0));
        const t1 = new Date(Date.UTC(2030, 0, 1, 0, 5));
        await s.schedulesAdd({schedule: schedule('conf-adv', t0)});
        const last = {fireAt: t0, taskId: newId()};
        expect(await s.schedulesAdvance({name: 'conf-adv', expectedNext: t0, next: t1, last})).toBe(true);
        expect(await s.schedulesAdvance({name: 'conf-adv', expectedNext: t0, next: t1, last: null})).toBe(false);
        expect(await s.schedulesGet({name: 'conf-adv'})).toMatchObject({nextFireAt: t1, lastFireAt: t0, lastTaskId: last.taskId});
        expect(await s.schedulesRemove({name: 'conf-adv'})).toBe(true);
        expect(await s.schedulesRemove({name: 'conf-adv'})).toBe(false);
        expect(await s.schedulesGet({name: 'conf-adv'})).toBeNull();
      });

      it('finds the previous occurrence of a schedule by its dedup key, excluding one id', async () => {
        const key = (iso: string) => `cron:conf-occ@${iso}`;
        const a = {...task({type: 'report_daily', payload: {o: 1}}), dedupKey: key('2030-01-01T00:00:00.000Z'), scheduleName: 'conf-occ'};
        const b = {...task({type: 'report_daily', payload: {o: 2}}), dedupKey: key('2030-01-01T00:05:00.000Z'), scheduleName: 'conf-occ'};
        await s.tasksInsert({tasks: [a, b], actor: 'test'});
        const before = new Date(Date.UTC(2030, 0, 1, 0, 10));
        expect(await s.occurrencesPrevious({name: 'conf-occ', before})).toEqual({id: b.id, state: 'submitted'});
        expect(await s.occurrencesPrevious({name: 'conf-occ', before, excludeId: b.id})).toEqual({id: a.id, state: 'submitted'});
        expect(await s.occurrencesPrevious({name: 'conf-occ', before: new Date(Date.UTC(2030, 0, 1, 0, 1)), excludeId: a.id})).toBeNull();
        expect(await s.occurrencesPrevious({name: 'conf-other', before})).toBeNull();
      });
    });
  });
}
