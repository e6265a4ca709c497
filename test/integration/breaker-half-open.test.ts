/**
 * A half-open breaker whose closing takes several probe episodes (probes < closeAfter) closes once
 * enough probes succeeded, however far apart the episodes are (found by the model-based test,
 * flow-model.test.ts): the gates read only the last minute of outcomes, so successes older than that
 * were lost and such a breaker stayed half-open for good. The database clock is pinned to the
 * fake clock (test/helpers/pinned-db-clock.ts), so no step sleeps.
 */
import {afterAll, expect, it} from 'vitest';
import {openStore} from '../../src/compose.js';
import {FlowGate} from '../../src/core/flow/gate.js';
import {createLogger} from '../../src/core/log.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTypesAdmin} from '../../src/core/types/admin.js';
import type {AxStore} from '../../src/core/store/types.js';
import {fakeClock} from '../helpers/clock.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {pinDbClock} from '../helpers/pinned-db-clock.js';

let env: TestEnv | undefined;
let store: AxStore | undefined;
afterAll(async () => {
  await store?.close();
  await env?.dispose();
});

it('closes after 3 successful probes at 1 probe per 40 s episode (80 s apart)', {timeout: 60_000}, async () => {
  env = await createTestEnv();
  const clock = fakeClock(Math.floor(Date.now() / 1000) * 1000 + 100);
  const s = (store = await openStore({...env.rt, clock}));
  pinDbClock([s], clock);
  const logger = createLogger('error');
  const gate = new FlowGate({store: s, clock, logger, refreshMs: 1e9});
  const admin = createTypesAdmin({store: s, clock, logger, operator: () => 'op', flowRefreshMs: 0});
  const newId = createIdGenerator(() => clock.now());
  const type = 'slow_probe';
  await admin.set(type, {breaker: {probes: 1, closeAfter: 3, cooldown: '40s', maxCooldown: '80s', minVolume: 2}});
  /** Claims `n` new tasks through the gate and the claim's admission, and writes their outcomes. */
  const run = async (n: number, ok: boolean): Promise<number> => {
    const tasks = Array.from({length: n}, (_, i) =>
      validateTaskSpec({type, payload: {i}}, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, clock.now(), newId),
    );
    await s.tasksInsert({tasks, actor: 't'});
    await gate.refresh();
    const lockTypes = gate.locked(tasks);
    const c = await s.tasksClaim({
      ids: tasks.map((t) => t.id),
      worker: 'w',
      leaseMs: 60_000,
      admission: gate.admission,
      ...(lockTypes ? {lockTypes} : {}),
    });
    await s.outcomesApply({
      outcomes: c.claimed.map((t) =>
        ok
          ? {kind: 'complete' as const, id: t.id, fence: t.fence, type, breaker: 'ok' as const}
          : {kind: 'fail' as const, id: t.id, fence: t.fence, type, error: 'x', retryDelayMs: 0, breaker: 'failed' as const},
      ),
      actor: 'w',
    });
    await gate.refresh();
    return c.claimed.length;
  };
  const state = async () => (await s.typesReport({liveMs: 15_000})).all.find((t) => t.type === type)!.breaker.state;
  await run(4, false);
  expect(await state()).toBe('open');
  clock.advance(40_000);
  await gate.refresh();
  expect(await state()).toBe('half_open');
  let probes = 0;
  const seen: string[] = [];
  for (let episode = 0; episode < 5 && (await state()) !== 'closed'; episode++) {
    probes += await run(1, true);
    seen.push(`${probes}:${await state()}`);
    clock.advance(40_000);
  }
  expect(seen).toEqual(['1:half_open', '2:half_open', '3:closed']);
});
