/**
 * Conformance of FlowStore (core/store/types.ts): the type registry, pause/resume with history
 * and audit, the handler types of live workers, parking tasks unclaimed (defer) and claimed (the
 * park outcome) without using an attempt, unhandled tasks going dead only after their wait, and
 * the release of a parked backlog. Run by test/integration/flow-store.test.ts against MySQL.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {StoreHarness} from './store.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {NewTask, TaskSpec} from '../../src/core/task/model.js';

const newId = createIdGenerator(() => Date.now());
const task = (spec: TaskSpec): NewTask =>
  validateTaskSpec(spec, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
const audit = (command: string) => ({operator: 'alice', command, filter: {type: 'x'}, reason: 'r'});

export function flowStoreConformance(name: string, make: () => Promise<StoreHarness>): void {
  describe(`FlowStore conformance: ${name}`, () => {
    let h: StoreHarness;
    let s: AxStore;
    beforeAll(async () => {
      h = await make();
      s = h.store;
    });
    afterAll(async () => h?.dispose());

    it('registers handler types; the view counts only live, running workers per type', async () => {
      await s.workersUpsert({info: {id: 'h:1', host: 'h', pid: 1, pools: {io: 8}, types: ['flow_alpha', 'flow_beta']}, inFlight: 0});
      await s.workersUpsert({info: {id: 'h:2', host: 'h', pid: 2, pools: {io: 8}, types: ['flow_alpha']}, inFlight: 0});
      await s.typesRegister({types: ['flow_alpha', 'flow_beta']});
      await s.typesRegister({types: ['flow_alpha']}); // idempotent
      let v = await s.flowView({liveMs: 15_000});
      expect(v.handlers.flow_alpha?.sort()).toEqual(['h:1', 'h:2']);
      expect(v.handlers.flow_beta).toEqual(['h:1']);
      expect(v.at).toBeInstanceOf(Date);
      await s.workersStop({id: 'h:1'});
      v = await s.flowView({liveMs: 15_000});
      expect(v.handlers.flow_alpha).toEqual(['h:2']);
      expect(v.handlers.flow_beta).toBeUndefined();
      // Nothing said about these types yet: they are not in the view's types (they run freely).
      expect(v.types.map((t) => t.type)).not.toContain('flow_alpha');
      const r = await s.typesReport({liveMs: 15_000});
      expect(r.all.map((t) => t.type)).toEqual(expect.arrayContaining(['flow_alpha', 'flow_beta']));
      expect((await s.workersList()).find((w) => w.id === 'h:2')?.types).toEqual(['flow_alpha']);
    });

    it('pauses once (history + audit in its transaction), a second pause changes nothing; resume likewise', async () => {
      const before = (await s.auditList({limit: 1000})).length;
      const p = await s.typeSetPaused({
        type: 'flow_paused',
        paused: true,
        operator: 'alice',
        reason: 'downstream down',
        audit: audit('types pause'),
      });
      expect(p).toMatchObject({
        changed: true,
        existed: false,
        record: {type: 'flow_paused', paused: true, pausedBy: 'alice', pausedReason: 'downstream down'},
      });
      expect(p.record.pausedAt).toBeInstanceOf(Date);
      const again = await s.typeSetPaused({type: 'flow_paused', paused: true, operator: 'bob', reason: 'x', audit: audit('types pause')});
      expect(again).toMatchObject({changed: false, existed: true, record: {pausedBy: 'alice'}});
      expect((await s.flowView({liveMs: 15_000})).types.find((t) => t.type === 'flow_paused')?.paused).toBe(true);
      const r = await s.typeSetPaused({type: 'flow_paused', paused: false, operator: 'carol', reason: null, audit: audit('types resume')});
      expect(r).toMatchObject({changed: true, record: {paused: false, pausedBy: null}});
      expect(
        (await s.typeSetPaused({type: 'flow_paused', paused: false, operator: 'carol', reason: null, audit: audit('types resume')}))
          .changed,
      ).toBe(false);
      const trail = await s.auditList({limit: 1000});
      expect(trail.length - before).toBe(2);
      expect(trail.slice(0, 2).map((a) => a.command)).toEqual(['types resume', 'types pause']);
      const hist = await s.typeHistory({type: 'flow_paused', limit: 10});
      expect(hist.map((e) => [e.event, e.actor, e.detail])).toEqual([
        ['resumed', 'carol', null],
        ['paused', 'alice', 'downstream down'],
      ]);
    });

    it('defers unclaimed tasks: due later, unpublished, fence moved on, no attempt used, a history row; skips running and unknown', async () => {
      const a = task({type: 'flow_defer', payload: {a: 1}});
      const run = task({type: 'flow_defer', payload: {a: 2}});
      await s.tasksInsert({tasks: [a, run], actor: 'test'});
      await s.doorbellsMark({rung: [{id: a.id, fence: 0}]});
      await s.tasksClaim({ids: [run.id], worker: 'w', leaseMs: 30_000});
      await s.typeSetPaused({type: 'flow_defer', paused: true, operator: 'alice', reason: null, audit: audit('types pause')});
      const unknown = newId();
      const now = (await s.clockNow()).getTime();
      const res = await s.tasksDefer({
        tasks: [a, run, {id: unknown}].map((t) => ({id: t.id, delayMs: 60_000, parked: 'paused' as const, reason: 'parked: type paused'})),
        actor: 'w',
        unhandledDeadAfterMs: 3_600_000,
        liveMs: 15_000,
      });
      expect(res.deferred).toEqual([a.id]);
      expect(res.dead).toEqual([]);
      expect(res.skipped.sort((x, y) => x.id.localeCompare(y.id))).toEqual(
        [
          {id: run.id, state: 'running'},
          {id: unknown, state: null},
        ].sort((x, y) => x.id.localeCompare(y.id)),
      );
      const row = await s.tasksGet({id: a.id});
      expect(row).toMatchObject({state: 'submitted', attempt: 0, fence: 1, publishedAt: null});
      expect(row!.runAt.getTime()).toBeGreaterThanOrEqual(now + 59_000);
      const hist = await s.historyList({taskId: a.id});
      expect(hist.at(-1)).toMatchObject({from: 'submitted', to: 'submitted', attempt: 0, worker: 'w', error: 'parked: type paused'});
      const rep = await s.typesReport({liveMs: 15_000});
      expect(rep.parked.flow_defer).toEqual({paused: 1});
      // Resumed meanwhile (after the worker's snapshot): not parked, due at once.
      await s.typeSetPaused({type: 'flow_defer', paused: false, operator: 'alice', reason: null, audit: audit('types resume')});
      const b = task({type: 'flow_defer', payload: {b: 1}});
      await s.tasksInsert({tasks: [b], actor: 'test'});
      await s.tasksDefer({
        tasks: [{id: b.id, delayMs: 60_000, parked: 'paused', reason: 'parked'}],
        actor: 'w',
        unhandledDeadAfterMs: 3_600_000,
        liveMs: 15_000,
      });
      const rb = await s.tasksGet({id: b.id});
      expect(rb!.runAt.getTime()).toBeLessThan(now + 30_000);
      expect((await s.typesReport({liveMs: 15_000})).parked.flow_defer).toEqual({paused: 1});
    });

    it('a task parked unhandled goes dead only once it has waited unhandledDeadAfter (no attempt used)', async () => {
      const t = task({type: 'flow_nohandler', payload: {}});
      await s.tasksInsert({tasks: [t], actor: 'test'});
      const park = () =>
        s.tasksDefer({
          tasks: [{id: t.id, delayMs: 0, parked: 'unhandled', reason: 'parked: no handler'}],
          actor: 'w',
          unhandledDeadAfterMs: 50,
          liveMs: 15_000,
        });
      expect((await park()).deferred).toEqual([t.id]);
      expect((await park()).deferred).toEqual([t.id]); // not yet waited 50 ms
      await h.waitDbMs(60);
      expect((await park()).dead).toEqual([{id: t.id, type: 'flow_nohandler'}]);
      const row = await s.tasksGet({id: t.id});
      expect(row).toMatchObject({state: 'dead', attempt: 0});
      expect(row!.lastError).toMatch(/no live worker has a handler for type "flow_nohandler"/);
      expect((await s.historyList({taskId: t.id})).at(-1)).toMatchObject({from: 'submitted', to: 'dead'});
      // A live worker registered the type since the caller's snapshot: not parked, due at once.
      await s.workersUpsert({info: {id: 'h:3', host: 'h', pid: 3, pools: {io: 8}, types: ['flow_late']}, inFlight: 0});
      const late = task({type: 'flow_late', payload: {}});
      await s.tasksInsert({tasks: [late], actor: 'test'});
      await s.tasksDefer({
        tasks: [{id: late.id, delayMs: 60_000, parked: 'unhandled', reason: 'parked: no handler'}],
        actor: 'w',
        unhandledDeadAfterMs: 3_600_000,
        liveMs: 15_000,
      });
      const row2 = await s.tasksGet({id: late.id});
      expect(row2!.runAt.getTime()).toBeLessThanOrEqual((await s.clockNow()).getTime());
      expect((await s.historyList({taskId: late.id})).at(-1)?.error).toMatch(/a worker with its handler started meanwhile/);
      expect((await s.typesReport({liveMs: 15_000})).parked.flow_late).toBeUndefined();
    });

    it('parks a claimed task (the park outcome): attempt given back, due later, marked; a zombie park changes nothing; the claim clears the mark', async () => {
      const t = task({type: 'flow_park', payload: {}});
      await s.tasksInsert({tasks: [t], actor: 'test'});
      const [c] = (await s.tasksClaim({ids: [t.id], worker: 'w', leaseMs: 30_000})).claimed;
      const zombie = await s.outcomesApply({
        outcomes: [{kind: 'park', id: t.id, fence: c!.fence - 1, reason: 'x', delayMs: 0, parked: 'breaker'}],
        actor: 'w',
      });
      expect(zombie.stale).toEqual([t.id]);
      const r = await s.outcomesApply({
        outcomes: [{kind: 'park', id: t.id, fence: c!.fence, reason: 'parked: breaker open', delayMs: 0, parked: 'breaker'}],
        actor: 'w',
      });
      expect(r.applied).toEqual([t.id]);
      expect(await s.tasksGet({id: t.id})).toMatchObject({state: 'submitted', attempt: 0, lastError: null});
      expect((await s.historyList({taskId: t.id})).at(-1)).toMatchObject({
        from: 'running',
        to: 'submitted',
        attempt: 0,
        error: 'parked: breaker open',
      });
      expect((await s.typesReport({liveMs: 15_000})).parked.flow_park).toEqual({breaker: 1});
      await s.tasksClaim({ids: [t.id], worker: 'w', leaseMs: 30_000});
      expect((await s.typesReport({liveMs: 15_000})).parked.flow_park).toBeUndefined();
    });

    it('releases a parked backlog of one kind in batches: due now, unmarked, returned to ring', async () => {
      const ts = [1, 2, 3].map((i) => task({type: 'flow_release', payload: {i}}));
      const other = task({type: 'flow_release', payload: {other: 1}});
      await s.tasksInsert({tasks: [...ts, other], actor: 'test'});
      await s.typeSetPaused({type: 'flow_release', paused: true, operator: 'alice', reason: null, audit: audit('types pause')});
      await s.tasksDefer({
        tasks: ts.map((t) => ({id: t.id, delayMs: 600_000, parked: 'paused' as const, reason: 'p'})),
        actor: 'w',
        unhandledDeadAfterMs: 3_600_000,
        liveMs: 15_000,
      });
      await s.tasksDefer({
        tasks: [{id: other.id, delayMs: 600_000, parked: 'unhandled', reason: 'u'}],
        actor: 'w',
        unhandledDeadAfterMs: 3_600_000,
        liveMs: 15_000,
      });
      const first = await s.parkedRelease({type: 'flow_release', kinds: ['paused'], limit: 2});
      expect(first.map((r) => r.id)).toEqual(
        ts
          .slice(0, 2)
          .map((t) => t.id)
          .sort(),
      );
      expect(first[0]).toMatchObject({type: 'flow_release', pool: 'io', fence: 1});
      const rest = await s.parkedRelease({type: 'flow_release', kinds: ['paused'], limit: 2});
      expect(rest.map((r) => r.id)).toEqual([ts[2]!.id]);
      expect(await s.parkedRelease({type: 'flow_release', kinds: ['paused'], limit: 2})).toEqual([]);
      const now = (await s.clockNow()).getTime();
      expect((await s.tasksGet({id: ts[0]!.id}))!.runAt.getTime()).toBeLessThanOrEqual(now);
      expect((await s.typesReport({liveMs: 15_000})).parked.flow_release).toEqual({unhandled: 1});
      // Released (by a resume) tasks are claimable now at their fence.
      await s.typeSetPaused({type: 'flow_release', paused: false, operator: 'alice', reason: null, audit: audit('types resume')});
      expect((await s.tasksClaim({ids: ts.map((t) => t.id), worker: 'w', leaseMs: 30_000})).claimed).toHaveLength(3);
    });

    it('counts breaker outcomes per type and second in the outcome transaction (applied only), summed over workers', async () => {
      const ts = [1, 2, 3, 4].map((i) => task({type: 'flow_count', payload: {i}}));
      await s.tasksInsert({tasks: ts, actor: 'test'});
      const claimed = (await s.tasksClaim({ids: ts.map((t) => t.id), worker: 'w', leaseMs: 30_000})).claimed;
      const f = new Map(claimed.map((c) => [c.id, c.fence]));
      await s.outcomesApply({
        outcomes: [
          {kind: 'complete', id: ts[0]!.id, fence: f.get(ts[0]!.id)!, breaker: 'ok'},
          {kind: 'fail', id: ts[1]!.id, fence: f.get(ts[1]!.id)!, error: 'e', retryDelayMs: 0, breaker: 'failed'},
          // Not counted: no breaker field (unrecoverable), and a zombie (stale fence).
          {kind: 'deadLetter', id: ts[2]!.id, fence: f.get(ts[2]!.id)!, error: 'bad payload'},
          {kind: 'complete', id: ts[3]!.id, fence: f.get(ts[3]!.id)! - 1, breaker: 'ok'},
        ],
        actor: 'w1',
      });
      await s.outcomesApply({outcomes: [{kind: 'complete', id: ts[3]!.id, fence: f.get(ts[3]!.id)!, breaker: 'ok'}], actor: 'w2'});
      const rows = (await s.outcomeCounts({windowMs: 60_000})).filter((r) => r.type === 'flow_count');
      const sum = rows.reduce((a, r) => ({ok: a.ok + r.ok, failed: a.failed + r.failed}), {ok: 0, failed: 0});
      expect(sum).toEqual({ok: 2, failed: 1});
      expect(rows[0]!.at).toBeInstanceOf(Date);
      expect(await s.outcomesPurge({olderThanMs: 3_600_000})).toBe(0);
    });

    it('moves a breaker by compare-and-set: of two deciders on the same state one wins; a history row per move', async () => {
      const at = new Date(Math.floor(Date.now() / 1000) * 1000);
      const to = {state: 'open' as const, until: new Date(at.getTime() + 30_000), openings: 1, changedAt: at};
      const p = {
        type: 'flow_breaker',
        expect: {state: 'closed' as const, changedAt: null},
        to,
        event: 'breaker:opened',
        detail: '20 of 30 failed',
        actor: 'w1',
      };
      expect(await s.breakerTransition(p)).toBe(true);
      expect(await s.breakerTransition({...p, actor: 'w2'})).toBe(false);
      const v = (await s.flowView({liveMs: 15_000})).types.find((t) => t.type === 'flow_breaker');
      expect(v?.breaker).toEqual(to);
      expect(
        await s.breakerTransition({
          ...p,
          expect: {state: 'open', changedAt: at},
          to: {state: 'half_open', until: null, openings: 1, changedAt: new Date(at.getTime() + 30_000)},
          event: 'breaker:half-open',
        }),
      ).toBe(true);
      const hist = await s.typeHistory({type: 'flow_breaker', limit: 10});
      expect(hist.map((e) => [e.event, e.actor])).toEqual([
        ['breaker:half-open', 'w1'],
        ['breaker:opened', 'w1'],
      ]);
      const rec = await s.typeSetSettings({
        type: 'flow_breaker',
        settings: {breaker: {minVolume: 5}},
        operator: 'alice',
        audit: audit('types set'),
      });
      expect(rec.settings).toEqual({breaker: {minVolume: 5}});
      expect((await s.typeHistory({type: 'flow_breaker', limit: 1}))[0]).toMatchObject({event: 'settings', actor: 'alice'});
    });

    it('a breaker that closed stays in the flow view with when it closed (the next compare-and-set expects it)', async () => {
      const at = new Date(Math.floor(Date.now() / 1000) * 1000);
      const open = {state: 'open' as const, until: new Date(at.getTime() + 30_000), openings: 1, changedAt: at};
      const base = {type: 'flow_reopen', event: 'breaker:test', detail: 'test', actor: 'w1'};
      expect(await s.breakerTransition({...base, expect: {state: 'closed', changedAt: null}, to: open})).toBe(true);
      const closedAt = new Date(at.getTime() + 1000);
      const closed = {state: 'closed' as const, until: null, openings: 0, changedAt: closedAt};
      expect(await s.breakerTransition({...base, expect: {state: 'open', changedAt: at}, to: closed})).toBe(true);
      const v = (await s.flowView({liveMs: 15_000})).types.find((t) => t.type === 'flow_reopen');
      expect(v?.breaker).toEqual(closed);
      // The second episode: from the view's state, not from "never moved".
      expect(await s.breakerTransition({...base, expect: {state: 'closed', changedAt: null}, to: open})).toBe(false);
      expect(await s.breakerTransition({...base, expect: {state: 'closed', changedAt: closedAt}, to: {...open, openings: 1}})).toBe(true);
    });

    it('max running: concurrent claims of three handles take exactly the room, the rest deferred capped (no attempt used)', async () => {
      const type = 'flow_capped';
      const ts = Array.from({length: 60}, (_, i) => task({type, payload: {i}}));
      await s.tasksInsert({tasks: ts, actor: 'test'});
      await s.typeSetSettings({type, settings: {maxRunning: 10}, operator: 'alice', audit: audit('types set')});
      const part = (k: number) => ts.slice(k * 20, k * 20 + 20).map((t) => t.id);
      const claimers = [s, h.other, s];
      const rs = await Promise.all(
        claimers.map((c, k) => c.tasksClaim({ids: part(k), worker: `w${k}`, leaseMs: 30_000, lockTypes: [type]})),
      );
      const claimed = rs.flatMap((r) => r.claimed);
      expect(claimed).toHaveLength(10);
      const deferred = rs.flatMap((r) => r.deferred ?? []);
      expect(deferred).toHaveLength(50);
      expect(deferred.every((d) => d.parked === 'capped' && d.delayMs >= 250)).toBe(true);
      const rep = await s.typesReport({liveMs: 15_000});
      expect(rep.parked[type]).toEqual({capped: 50});
      const d0 = await s.tasksGet({id: deferred[0]!.id});
      expect(d0).toMatchObject({state: 'submitted', attempt: 0, fence: 1, publishedAt: null});
      expect((await s.historyList({taskId: deferred[0]!.id})).at(-1)).toMatchObject({
        from: 'submitted',
        to: 'submitted',
        attempt: 0,
        error: expect.stringMatching(/10 of its type running/),
      });
      // Four end: four more fit once the deferred are due again.
      await s.outcomesApply({
        outcomes: claimed.slice(0, 4).map((t) => ({kind: 'complete' as const, id: t.id, fence: t.fence})),
        actor: 'w0',
      });
      await h.waitDbMs(Math.max(...deferred.map((d) => d.delayMs)) + 20);
      const again = await Promise.all(
        [0, 1, 2].map((k) =>
          claimers[k]!.tasksClaim({
            ids: deferred.filter((_, i) => i % 3 === k).map((d) => d.id),
            worker: `w${k}`,
            leaseMs: 30_000,
            lockTypes: [type],
          }),
        ),
      );
      expect(again.flatMap((r) => r.claimed)).toHaveLength(4);
      expect((await s.typesReport({liveMs: 15_000})).parked[type]).toEqual({capped: 46});
    });

    it('rate: a full bucket lets one second through, the rest waits for reserved slots and comes back prepaid', async () => {
      const type = 'flow_rated';
      await s.typesRegister({types: [type]});
      await s.typeSetSettings({type, settings: {rate: 2}, operator: 'alice', resetBucket: true, audit: audit('types set')});
      const ts = Array.from({length: 4}, (_, i) => task({type, payload: {i}}));
      await s.tasksInsert({tasks: ts, actor: 'test'});
      const now = (await s.clockNow()).getTime();
      const r = await s.tasksClaim({ids: ts.map((t) => t.id), worker: 'w', leaseMs: 30_000, lockTypes: [type]});
      expect(r.claimed.map((t) => t.id)).toEqual([ts[0]!.id, ts[1]!.id]);
      expect(r.deferred!.map((d) => [d.id, d.parked, d.delayMs])).toEqual([
        [ts[2]!.id, 'rate', 500],
        [ts[3]!.id, 'rate', 1000],
      ]);
      const last = await s.tasksGet({id: ts[3]!.id});
      expect(last!.runAt.getTime()).toBeGreaterThanOrEqual(now + 990);
      expect(last).toMatchObject({state: 'submitted', attempt: 0});
      expect((await s.typesReport({liveMs: 15_000})).parked[type]).toEqual({rate: 2});
      // Once their slots passed they run without a token; new tasks find the bucket paid out
      // (-2 + 2/s × ~1 s ≈ 0 tokens): they wait for slots of their own.
      await h.waitDbMs(1020);
      const fresh = [1, 2, 3].map((i) => task({type, payload: {fresh: i}}));
      await s.tasksInsert({tasks: fresh, actor: 'test'});
      const r2 = await h.other.tasksClaim({
        ids: [ts[2]!.id, ts[3]!.id, ...fresh.map((t) => t.id)],
        worker: 'w2',
        leaseMs: 30_000,
        lockTypes: [type],
      });
      expect(r2.claimed.map((t) => t.id).filter((id) => id === ts[2]!.id || id === ts[3]!.id)).toHaveLength(2);
      expect(r2.deferred!.length).toBeGreaterThanOrEqual(2);
      expect(r2.deferred!.every((d) => d.parked === 'rate')).toBe(true);
      // Deferred tasks are not due before their slot, whatever the bucket holds.
      await s.typeSetSettings({type, settings: {rate: 1000}, operator: 'alice', resetBucket: true, audit: audit('types set')});
      const ids = r2.deferred!.map((d) => d.id);
      expect((await s.tasksClaim({ids, worker: 'w', leaseMs: 30_000, lockTypes: [type]})).claimed).toHaveLength(0);
      await h.waitDbMs(Math.max(...r2.deferred!.map((d) => d.delayMs)) + 20);
      expect((await s.tasksClaim({ids, worker: 'w', leaseMs: 30_000, lockTypes: [type]})).claimed).toHaveLength(ids.length);
    });

    it('the limits step only for the types the caller names, and none when the stored limits were cleared', async () => {
      const type = 'flow_limit_off';
      const ts = Array.from({length: 3}, (_, i) => task({type, payload: {i}}));
      await s.tasksInsert({tasks: ts, actor: 'test'});
      await s.typeSetSettings({type, settings: {maxRunning: 1}, operator: 'alice', audit: audit('types set')});
      // Not named: the claim is the plain one (the worker's snapshot says unlimited).
      const a = await s.tasksClaim({ids: [ts[0]!.id, ts[1]!.id], worker: 'w', leaseMs: 30_000});
      expect(a.claimed).toHaveLength(2);
      expect(a.deferred).toBeUndefined();
      // Named but cleared since (a stale snapshot): the stored settings decide.
      await s.typeSetSettings({type, settings: {}, operator: 'alice', audit: audit('types set')});
      const b = await s.tasksClaim({ids: [ts[2]!.id], worker: 'w', leaseMs: 30_000, lockTypes: [type]});
      expect(b.claimed).toHaveLength(1);
      expect(b.deferred ?? []).toEqual([]);
    });

    it('the claim decides pause and breaker from the rows it reads, whatever the caller knew', async () => {
      const type = 'flow_gated';
      const fresh = async (n: number) => {
        const ts = Array.from({length: n}, (_, i) => task({type, payload: {i}}));
        await s.tasksInsert({tasks: ts, actor: 'test'});
        return ts.map((t) => t.id);
      };
      const claim = (ids: string[], lock = false, store = s) =>
        store.tasksClaim({ids, worker: 'w', leaseMs: 30_000, ...(lock ? {lockTypes: [type]} : {})});
      // Paused: refused by a claim that was not told (a stale snapshot), parked, no attempt used.
      await s.typeSetPaused({type, paused: true, operator: 'alice', reason: 'smtp down', audit: audit('types pause')});
      const p = await claim(await fresh(4));
      expect(p.claimed).toHaveLength(0);
      expect(p.deferred).toHaveLength(4);
      expect(p.deferred!.every((d) => d.parked === 'paused' && d.delayMs === 300_000 && d.reason.includes('alice (smtp down)'))).toBe(true);
      expect(await s.tasksGet({id: p.deferred![0]!.id})).toMatchObject({state: 'submitted', attempt: 0});
      await s.typeSetPaused({type, paused: false, operator: 'alice', reason: 'back', audit: audit('types resume')});
      // Open until a later probe time: parked until then.
      const at = new Date();
      const open = {state: 'open' as const, until: new Date(at.getTime() + 60_000), openings: 1, changedAt: at};
      const move = (
        from: {state: 'closed' | 'open' | 'half_open'; changedAt: Date | null},
        to: typeof open | {state: 'half_open'; until: null; openings: number; changedAt: Date},
      ) => s.breakerTransition({type, expect: from, to, event: 'breaker:test', detail: 'test', actor: 'w1'});
      expect(await move({state: 'closed', changedAt: null}, open)).toBe(true);
      const o = await claim(await fresh(3));
      expect(o.claimed).toHaveLength(0);
      expect(o.deferred!.every((d) => d.parked === 'breaker' && d.delayMs > 50_000 && d.delayMs <= 60_000)).toBe(true);
      // Half-open: the probes (3 by default) are spent cluster-wide by claims holding the row for
      // update; a claim that did not lock it runs none.
      const half = {state: 'half_open' as const, until: null, openings: 1, changedAt: new Date()};
      expect(await move({state: 'open', changedAt: at}, half)).toBe(true);
      const ids = await fresh(10);
      const n = await claim(ids.slice(0, 2));
      expect(n.claimed).toHaveLength(0);
      expect(n.deferred!.every((d) => d.parked === 'breaker')).toBe(true);
      const [a, b] = await Promise.all([claim(ids.slice(2, 6), true), claim(ids.slice(6, 10), true, h.other)]);
      expect(a.claimed.length + b.claimed.length).toBe(3);
      expect([...(a.deferred ?? []), ...(b.deferred ?? [])].every((d) => d.parked === 'breaker' && d.delayMs === 30_000)).toBe(true);
      expect((await claim(await fresh(2), true)).claimed).toHaveLength(0);
      // The budget renews with each base cool-down since the change (probes whose outcomes never came).
      const earlier = {...half, changedAt: new Date(Date.now() - 31_000)};
      expect(await move({state: 'half_open', changedAt: half.changedAt}, earlier)).toBe(true);
      expect((await claim(await fresh(5), true)).claimed).toHaveLength(3);
    });
  });
}
