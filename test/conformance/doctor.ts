/**
 * Conformance of DoctorStore (core/store/types.ts): due tasks per pool, repeated successes and
 * attempt durations, as `ax doctor` reads them. Run by test/integration/doctor-store.test.ts.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {NewTask, TaskSpec} from '../../src/core/task/model.js';

export interface DoctorStoreHarness {
  store: AxStore;
  /** Waits until the store's clock has passed `ms` from now. */
  waitDbMs(ms: number): Promise<void>;
  dispose(): Promise<void>;
}

const newId = createIdGenerator(() => Date.now());
const task = (spec: TaskSpec): NewTask =>
  validateTaskSpec(spec, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
const audit = {operator: 'test', command: 'dlq replay', filter: {}, reason: 'again'};

export function doctorStoreConformance(name: string, make: () => Promise<DoctorStoreHarness>): void {
  describe(`DoctorStore conformance: ${name}`, () => {
    let h: DoctorStoreHarness;
    let s: AxStore;
    beforeAll(async () => {
      h = await make();
      s = h.store;
    });
    afterAll(async () => h?.dispose());

    /** Inserts one task and claims it (after `waitBeforeClaimMs`: it starts that late); returns the claim. */
    async function claimed(spec: TaskSpec, waitBeforeClaimMs = 0) {
      const t = task(spec);
      await s.tasksInsert({tasks: [t], actor: 'test'});
      if (waitBeforeClaimMs > 0) await h.waitDbMs(waitBeforeClaimMs);
      const [c] = (await s.tasksClaim({ids: [t.id], worker: 'w1', leaseMs: 30_000})).claimed;
      return c!;
    }

    it('counts due tasks per type and pool with the oldest due time; delayed, running and finished ones are not due', async () => {
      const before = await s.clockNow();
      const io = [task({type: 'pool_probe', payload: {n: 1}}), task({type: 'pool_probe', payload: {n: 2}})];
      const cpu = task({type: 'pool_probe', payload: {n: 3}, pool: 'cpu'});
      const later = task({type: 'pool_probe', payload: {n: 4}, delay: '1h'});
      await s.tasksInsert({tasks: [...io, cpu, later], actor: 'test'});
      const run = await claimed({type: 'pool_probe', payload: {n: 5}});
      const rows = (await s.duePerPool()).filter((r) => r.type === 'pool_probe');
      expect(rows.map((r) => [r.pool, r.due])).toEqual([
        ['io', 2],
        ['cpu', 1],
      ]);
      for (const r of rows) expect(r.oldestDueAt.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1000);
      expect(run.type).toBe('pool_probe');
    });

    it('finds tasks that succeeded twice in the window and tells a forced replay from an unexplained one', async () => {
      const since = await s.clockNow();
      const once = await claimed({type: 'repeat_probe', payload: {n: 1}});
      await s.outcomesApply({outcomes: [{kind: 'complete', id: once.id, fence: once.fence}], actor: 'w1'});
      const twice = await claimed({type: 'repeat_probe', payload: {n: 2}});
      await s.outcomesApply({outcomes: [{kind: 'complete', id: twice.id, fence: twice.fence}], actor: 'w1'});
      await s.deadReplay({ids: [twice.id], actor: 'test', audit, force: {at: new Date()}});
      const [again] = (await s.tasksClaim({ids: [twice.id], worker: 'w2', leaseMs: 30_000})).claimed;
      await s.outcomesApply({outcomes: [{kind: 'complete', id: twice.id, fence: again!.fence}], actor: 'w2'});
      expect(await s.successRepeats({since, sample: 100, limit: 10})).toEqual([
        {taskId: twice.id, type: 'repeat_probe', successes: 2, forced: true},
      ]);
      // Only the latest success in the sample: no repeat visible.
      expect(await s.successRepeats({since, sample: 1, limit: 10})).toEqual([]);
      await h.waitDbMs(2);
      expect(await s.successRepeats({since: await s.clockNow(), sample: 100, limit: 10})).toEqual([]);
    });

    it('times the attempts that ended in the window per type: failures, timeouts, average and longest; hand-backs left out', async () => {
      const since = await s.clockNow();
      const ok = await claimed({type: 'timing_probe', payload: {n: 1}}, 80);
      await h.waitDbMs(30);
      await s.outcomesApply({outcomes: [{kind: 'complete', id: ok.id, fence: ok.fence}], actor: 'w1'});
      const slow = await claimed({type: 'timing_probe', payload: {n: 2}});
      await s.outcomesApply({
        outcomes: [{kind: 'fail', id: slow.id, fence: slow.fence, error: 'timeout: no result after 10ms', retryDelayMs: 60_000}],
        actor: 'w1',
      });
      const handedBack = await claimed({type: 'timing_probe', payload: {n: 3}});
      await h.waitDbMs(200);
      await s.outcomesApply({
        outcomes: [{kind: 'release', id: handedBack.id, fence: handedBack.fence, reason: 'released: io pool queue full'}],
        actor: 'w1',
      });
      const [row] = (await s.attemptTimes({since, sample: 100})).filter((r) => r.type === 'timing_probe');
      expect(row).toMatchObject({type: 'timing_probe', attempts: 2, failed: 1, timeouts: 1});
      expect(row!.maxMs).toBeGreaterThanOrEqual(30);
      expect(row!.maxMs).toBeLessThan(200);
      expect(row!.avgMs).toBeLessThanOrEqual(row!.maxMs);
      // The succeeded task started 80 ms after it was due; the failed one's run_at is now its
      // retry's, so its start's lateness is not known and not counted.
      expect(row!.startLateMaxMs!).toBeGreaterThanOrEqual(80);
      expect(row!.startLateMaxMs!).toBeLessThan(200);
      expect(row!.startLateAvgMs).toBe(row!.startLateMaxMs);
      expect(await s.attemptTimes({since: new Date(Date.now() + 3_600_000), sample: 100})).toEqual([]);
      // The sample is the window's latest ends: the hand-back (left out) and the failed attempt.
      const [latest] = (await s.attemptTimes({since, sample: 2})).filter((r) => r.type === 'timing_probe');
      expect(latest).toMatchObject({attempts: 1, failed: 1, timeouts: 1});
    });
  });
}
