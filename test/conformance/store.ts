/**
 * The TaskStore conformance suite: the behaviour every TaskStore implementation must show. Run by
 * test/integration/store.test.ts against the MySQL store.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {TaskStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {NewTask, TaskSpec} from '../../src/core/task/model.js';
import {allowedEdges} from '../../src/core/task/state.js';

export interface StoreHarness {
  store: TaskStore;
  /** A second, independent handle on the same data (for races). */
  other: TaskStore;
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
    let s: TaskStore;
    beforeAll(async () => {
      h = await make();
      s = h.store;
    });
    afterAll(async () => h?.dispose());

    it('inserts tasks with a submitted history row and reports idempotent re-submits', async () => {
      const a = task({type: 'order_notify', payload: {orderId: 1}});
      const b = task({type: 'order_notify', payload: {orderId: 2}});
      expect(await s.insertTasks([a, b], 'test:1')).toEqual({inserted: [a.id, b.id], existing: [], conflicts: []});
      const again = await s.insertTasks([{...a, submittedAtMs: Date.now()}], 'test:1');
      expect(again.inserted).toEqual([]);
      expect(again.existing).toEqual([{id: a.id, existingId: a.id, state: 'submitted', fence: 0}]);
      const row = await s.getTask(a.id);
      expect(row).toMatchObject({
        id: a.id,
        type: 'order_notify',
        state: 'submitted',
        attempt: 0,
        fence: 0,
        maxRetries: 5,
        payload: {orderId: 1},
      });
      const hist = await s.history(a.id);
      expect(hist).toHaveLength(1);
      expect(hist[0]).toMatchObject({from: null, to: 'submitted', attempt: 0, worker: 'test:1'});
    });

    it('refuses the same id with different content as a conflict and writes nothing for it', async () => {
      const a = task({type: 'order_notify', payload: {orderId: 10}});
      await s.insertTasks([a], 'test');
      const clash = {...task({type: 'order_notify', payload: {orderId: 11}}), id: a.id};
      const fresh = task({type: 'order_notify', payload: {orderId: 12}});
      const r = await s.insertTasks([clash, fresh], 'test');
      expect(r.inserted).toEqual([fresh.id]);
      expect(r.conflicts).toHaveLength(1);
      expect(r.conflicts[0]).toMatchObject({id: a.id, existingId: a.id});
      expect((await s.getTask(a.id))?.payload).toEqual({orderId: 10});
    });

    it('deduplicates by dedup key: same content → the existing task, other content → conflict', async () => {
      const a = task({type: 'user_register_credit', payload: {u: 1}, dedupKey: 'signup-1'});
      await s.insertTasks([a], 'test');
      const same = {...task({type: 'user_register_credit', payload: {u: 1}}), dedupKey: 'signup-1'};
      const other = {...task({type: 'user_register_credit', payload: {u: 2}}), dedupKey: 'signup-1'};
      const r = await s.insertTasks([same, other], 'test');
      expect(r.inserted).toEqual([]);
      expect(r.existing).toEqual([{id: same.id, existingId: a.id, state: 'submitted', fence: 0}]);
      expect(r.conflicts.map((c) => c.id)).toEqual([other.id]);
    });

    it('claims due tasks once, skipping running, unknown and not-yet-due ones', async () => {
      const due = task({type: 'order_notify', payload: {n: 1}});
      const later = task({type: 'order_notify', payload: {n: 2}, delay: '1h'});
      await s.insertTasks([due, later], 'test');
      const unknown = newId();
      const r = await s.claim([due.id, later.id, unknown, due.id], 'w1', 30_000);
      expect(r.claimed).toHaveLength(1);
      expect(r.claimed[0]).toMatchObject({id: due.id, attempt: 1, fence: 1, type: 'order_notify', payload: '{"n":1}'});
      expect(r.skipped).toEqual(
        expect.arrayContaining([
          {id: later.id, state: 'submitted', notDue: true},
          {id: unknown, state: null},
        ]),
      );
      const again = await s.claim([due.id], 'w2', 30_000);
      expect(again.claimed).toEqual([]);
      expect(again.skipped).toEqual([{id: due.id, state: 'running'}]);
      expect(await s.getTask(due.id)).toMatchObject({state: 'running', worker: 'w1', attempt: 1, fence: 1});
    });

    it('a value the database refuses is invalid_input for the whole batch, and nothing is written', async () => {
      const good = task({type: 'order_notify', payload: {refused: 1}});
      const bad = {...task({type: 'order_notify', payload: {refused: 2}}), runAtMs: Number.NaN}; // NULL in a NOT NULL column
      await expect(s.insertTasks([good, bad], 'test')).rejects.toMatchObject({code: 'invalid_input'});
      expect(await s.getTask(good.id)).toBeNull();
    });

    it('lets exactly one of two concurrent claimers win each task', async () => {
      const tasks = Array.from({length: 200}, (_, i) => task({type: 'order_notify', payload: {i}}));
      await s.insertTasks(tasks, 'test');
      const ids = tasks.map((t) => t.id);
      const [a, b] = await Promise.all([s.claim(ids, 'wa', 30_000), h.other.claim([...ids].reverse(), 'wb', 30_000)]);
      const won = [...a.claimed, ...b.claimed].map((t) => t.id).sort();
      expect(won).toEqual([...ids].sort());
    });

    it('applies outcomes only with the current fence (a zombie completion changes nothing)', async () => {
      const t = task({type: 'order_notify', payload: {z: 1}});
      await s.insertTasks([t], 'test');
      const [c] = (await s.claim([t.id], 'w1', 30_000)).claimed;
      const stale = await s.applyOutcomes([{id: t.id, fence: (c?.fence ?? 0) - 1, to: 'succeeded'}], 'w0');
      expect(stale).toEqual({applied: [], stale: [t.id]});
      const ok = await s.applyOutcomes([{id: t.id, fence: c?.fence ?? 0, to: 'succeeded'}], 'w1');
      expect(ok).toEqual({applied: [t.id], stale: []});
      const twice = await s.applyOutcomes([{id: t.id, fence: c?.fence ?? 0, to: 'succeeded'}], 'w1');
      expect(twice.stale).toEqual([t.id]);
      const row = await s.getTask(t.id);
      expect(row).toMatchObject({state: 'succeeded', leaseUntil: null});
      expect(row?.finishedAt).toBeInstanceOf(Date);
      expect((await s.history(t.id)).map((e) => e.to)).toEqual(['submitted', 'running', 'succeeded']);
    });

    it('a batch of successes with one zombie among them: the others apply, the zombie changes nothing', async () => {
      const ts = [1, 2, 3].map((i) => task({type: 'order_notify', payload: {plain: i}}));
      await s.insertTasks(ts, 'test');
      const claimed = (
        await s.claim(
          ts.map((t) => t.id),
          'w1',
          30_000,
        )
      ).claimed;
      const success = (id: string, fenceDelta = 0) => {
        const c = claimed.find((x) => x.id === id)!;
        return {id, fence: c.fence + fenceDelta, to: 'succeeded' as const};
      };
      const [a, b, c] = ts.map((t) => t.id) as [string, string, string];
      // b's fence is a zombie's: a and c succeed, b stays running, and only a and c get a history row.
      const res = await s.applyOutcomes([success(a), success(b, -1), success(c)], 'w1');
      expect(res.applied.sort()).toEqual([a, c].sort());
      expect(res.stale).toEqual([b]);
      expect(await s.getTask(b)).toMatchObject({state: 'running', fence: 1});
      for (const id of [a, c]) {
        expect(await s.getTask(id)).toMatchObject({state: 'succeeded', leaseUntil: null});
        expect((await s.history(id)).map((e) => [e.to, e.attempt, e.worker])).toEqual([
          ['submitted', 0, 'test'],
          ['running', 1, 'w1'],
          ['succeeded', 1, 'w1'],
        ]);
      }
      expect((await s.history(b)).map((e) => e.to)).toEqual(['submitted', 'running']);
      // The current worker's own outcome for b still applies.
      expect(await s.applyOutcomes([success(b)], 'w1')).toEqual({applied: [b], stale: []});
      expect((await s.history(b)).map((e) => [e.to, e.attempt])).toEqual([
        ['submitted', 0],
        ['running', 1],
        ['succeeded', 1],
      ]);
    });

    it('fails with a retry time from the database clock, releases without using an attempt, and dead-letters', async () => {
      const [f, r, d] = [1, 2, 3].map((i) => task({type: 'order_notify', payload: {f: i}}));
      await s.insertTasks([f!, r!, d!], 'test');
      await s.markPublished([f!, r!, d!].map((x) => ({id: x.id, fence: 0})));
      const claimed = (await s.claim([f!.id, r!.id, d!.id], 'w1', 30_000)).claimed;
      const fence = (id: string) => claimed.find((c) => c.id === id)?.fence ?? -1;
      const before = await s.now();
      const res = await s.applyOutcomes(
        [
          {id: f!.id, fence: fence(f!.id), to: 'failed', retryDelayMs: 5000, error: 'boom'},
          {id: r!.id, fence: fence(r!.id), to: 'failed', release: true, retryDelayMs: 0, error: 'released: shutdown'},
          {id: d!.id, fence: fence(d!.id), to: 'dead', error: 'fatal'},
        ],
        'w1',
      );
      expect(res.applied.sort()).toEqual([f!.id, r!.id, d!.id].sort());
      const ff = await s.getTask(f!.id);
      expect(ff).toMatchObject({state: 'failed', attempt: 1, lastError: 'boom', publishedAt: null, leaseUntil: null});
      const delay = (ff?.runAt.getTime() ?? 0) - before.getTime();
      expect(delay).toBeGreaterThanOrEqual(4900);
      expect(delay).toBeLessThan(7000);
      expect(await s.getTask(r!.id)).toMatchObject({state: 'failed', attempt: 0, lastError: null});
      expect(await s.getTask(d!.id)).toMatchObject({state: 'dead', lastError: 'fatal'});
      // a failed task can be claimed again once due (the released one is due at once)
      const again = await s.claim([r!.id, f!.id], 'w2', 30_000);
      expect(again.claimed.map((c) => c.id)).toEqual([r!.id]);
      expect(again.claimed[0]).toMatchObject({attempt: 1, fence: 2});
    });

    it('renews leases only for the current fence', async () => {
      const t = task({type: 'order_notify', payload: {renew: 1}});
      await s.insertTasks([t], 'test');
      const [c] = (await s.claim([t.id], 'w1', 1000)).claimed;
      expect(await s.renewLeases([{id: t.id, fence: c!.fence}], 60_000)).toEqual([t.id]);
      const row = await s.getTask(t.id);
      expect((row?.leaseUntil?.getTime() ?? 0) - (await s.now()).getTime()).toBeGreaterThan(50_000);
      expect(await s.renewLeases([{id: t.id, fence: c!.fence + 1}], 60_000)).toEqual([]);
    });

    it('finds expired leases, and the rescue applies only while the lease is still expired', async () => {
      const [x, y] = [1, 2].map((i) => task({type: 'order_notify', payload: {lease: i}}));
      await s.insertTasks([x!, y!], 'test');
      const claimed = (await s.claim([x!.id, y!.id], 'w-dead', 200)).claimed;
      await h.waitDbMs(300);
      const expired = await s.findExpiredLeases(100);
      expect(expired.map((e) => e.id)).toEqual(expect.arrayContaining([x!.id, y!.id]));
      // y's worker comes back and renews before the rescuer writes
      const cy = claimed.find((c) => c.id === y!.id)!;
      await s.renewLeases([{id: y!.id, fence: cy.fence}], 60_000);
      const cx = claimed.find((c) => c.id === x!.id)!;
      const res = await s.applyOutcomes(
        [
          {id: x!.id, fence: cx.fence, to: 'failed', retryDelayMs: 0, error: 'lease expired', onlyIfLeaseExpired: true},
          {id: y!.id, fence: cy.fence, to: 'failed', retryDelayMs: 0, error: 'lease expired', onlyIfLeaseExpired: true},
        ],
        'rescuer',
      );
      expect(res).toEqual({applied: [x!.id], stale: [y!.id]});
    });

    it('lists due tasks never rung, and rings again only after republishAfter', async () => {
      const t = task({type: 'order_notify', payload: {ring: 1}});
      const future = task({type: 'order_notify', payload: {ring: 2}, delay: '1h'});
      await s.insertTasks([t, future], 'test');
      const ids = async (after: number) => (await s.findUndispatched(10_000, after)).map((d) => d.id);
      expect(await ids(60_000)).toContain(t.id);
      expect(await ids(60_000)).not.toContain(future.id);
      await s.markPublished([{id: t.id, fence: 0}]);
      expect(await ids(60_000)).not.toContain(t.id);
      await h.waitDbMs(50);
      expect(await ids(1)).toContain(t.id);
    });

    it('marks a doorbell only at the fence it rang for: a late mark does not land on the retry', async () => {
      const [a, b, c] = [1, 2, 3].map((i) => task({type: 'order_notify', payload: {mark: i}}));
      await s.insertTasks([a!, b!, c!], 'test');
      // a and b are rung (fence 0); before their mark lands a worker claims and fails a.
      const [ca] = (await s.claim([a!.id], 'w1', 30_000)).claimed;
      await s.applyOutcomes([{id: a!.id, fence: ca!.fence, to: 'failed', retryDelayMs: 0, error: 'boom'}], 'w1');
      await s.markPublished([
        {id: a!.id, fence: 0},
        {id: b!.id, fence: 0},
      ]);
      expect(await s.getTask(a!.id)).toMatchObject({state: 'failed', fence: 1, publishedAt: null});
      expect((await s.getTask(b!.id))?.publishedAt).toBeInstanceOf(Date);
      const due = (await s.findUndispatched(10_000, 60_000)).find((d) => d.id === a!.id);
      expect(due).toMatchObject({id: a!.id, attempt: 1, fence: 1});
      // Marks for several fences in one call: each lands only at its own.
      await s.markPublished([
        {id: a!.id, fence: 1},
        {id: c!.id, fence: 7},
      ]);
      expect((await s.getTask(a!.id))?.publishedAt).toBeInstanceOf(Date);
      expect((await s.getTask(c!.id))?.publishedAt).toBeNull();
    });

    it('cancels submitted and failed tasks only; a cancelled task cannot be claimed', async () => {
      const t = task({type: 'order_notify', payload: {cancel: 1}});
      const run = task({type: 'order_notify', payload: {cancel: 2}});
      await s.insertTasks([t, run], 'test');
      await s.claim([run.id], 'w1', 30_000);
      expect(await s.cancel(t.id, 'admin', 'not needed')).toEqual({from: 'submitted', cancelled: true});
      expect(await s.cancel(run.id, 'admin', null)).toEqual({from: 'running', cancelled: false});
      expect(await s.cancel(newId(), 'admin', null)).toEqual({from: null, cancelled: false});
      expect((await s.claim([t.id], 'w1', 30_000)).claimed).toEqual([]);
      expect((await s.getTask(t.id))?.state).toBe('cancelled');
    });

    it('lists newest first with filters and counts per type and state', async () => {
      const a = task({type: 'report_daily', payload: {k: 1}});
      const b = task({type: 'report_daily', payload: {k: 2}});
      await s.insertTasks([a], 'test');
      await h.waitDbMs(5);
      await s.insertTasks([b], 'test');
      const list = await s.listTasks({type: 'report_daily', limit: 10});
      expect(list.map((t) => t.id)).toEqual([b.id, a.id]);
      expect(await s.listTasks({type: 'report_daily', state: 'running', limit: 10})).toEqual([]);
      expect((await s.listTasks({type: 'report_daily', limit: 1})).length).toBe(1);
      const stats = await s.stats();
      expect(stats.find((r) => r.type === 'report_daily' && r.state === 'submitted')?.count).toBe(2);
    });

    it('registers workers and their heartbeats', async () => {
      await s.upsertWorker({id: 'host:1', host: 'host', pid: 1, pools: {io: 8}}, 3);
      let w = (await s.listWorkers()).find((x) => x.id === 'host:1');
      expect(w).toMatchObject({inFlight: 3, pools: {io: 8}, stoppedAt: null});
      await s.stopWorker('host:1');
      w = (await s.listWorkers()).find((x) => x.id === 'host:1');
      expect(w?.stoppedAt).toBeInstanceOf(Date);
    });

    it('records only transitions the state machine allows', async () => {
      const allowed = new Set(allowedEdges().map(([f, t]) => `${f}>${t}`));
      for (const [from, to] of await h.historyEdges()) {
        if (from === null) expect(to).toBe('submitted');
        else expect(allowed.has(`${from}>${to}`), `${from} → ${to}`).toBe(true);
      }
    });
  });
}
