/**
 * Debounce and throttle on submit (TaskSpec.debounce, .throttle; src/core/store/mysql/task-gates.ts)
 * on the real MariaDB: concurrent producer processes of one key, windows on the database clock,
 * and bad input refused with nothing written.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {Producer} from '../../src/core/producer/producer.js';
import {isAxError} from '../../src/core/errors.js';
import type {Broker} from '../../src/core/broker/types.js';
import type {TaskSpec} from '../../src/core/task/model.js';
import type {TaskStore} from '../../src/core/store/types.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {testProducer} from '../helpers/producer.js';
import {spawnNode, type Spawned} from '../helpers/spawn.js';

describe('debounce and throttle', () => {
  let env: TestEnv;
  let store: TaskStore;
  let broker: Broker;
  const producers: Producer[] = [];
  const children: Spawned[] = [];

  const producer = (): Producer => {
    const p = testProducer(env, store, broker);
    producers.push(p);
    return p;
  };
  const count = async (where: string, params: unknown[] = []) =>
    Number((await env.sql<{n: number}>(`SELECT COUNT(*) AS n FROM tasks WHERE ${where}`, params))[0]!.n);
  /** Claims whichever of `ids` may run now, as a worker would. */
  const claim = async (ids: string[]) => (await store.tasksClaim({ids, worker: 'test:w', leaseMs: 30_000})).claimed.map((c) => c.id);

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    broker = await env.broker();
  });
  afterAll(async () => {
    for (const c of children) c.child.kill('SIGKILL');
    for (const p of producers) await p.close().catch(() => undefined);
    await env?.dispose();
  });

  it('1,000 debounced submits for one key from 3 producer processes: only the last runs, the other 999 are replaced', async () => {
    const type = 'debounce_burst';
    const counts = [334, 333, 333];
    const procs = counts.map((n) =>
      spawnNode(
        ['--import', 'tsx', 'test/fixtures/gate-producer.ts'],
        {...env.env, GATE_COUNT: String(n), GATE_TYPE: type, GATE_KEY: 'user:7', GATE_WINDOW: '4s'},
        null,
      ),
    );
    children.push(...procs);
    // All three connected before any submits: the bursts overlap.
    await eventually(async () => procs.every((p) => p.stdout().startsWith('ready\n')), 30_000, 'the producers to connect');
    for (const p of procs) p.child.stdin!.write('go\n');
    const exits = await Promise.all(procs.map((p) => p.exited));
    expect(
      exits.map((e) => e.code),
      procs.map((p) => p.stderr()).join('\n'),
    ).toEqual([0, 0, 0]);
    const perProcess = procs.map((p) => JSON.parse(p.stdout().split('\n')[1]!) as string[]);
    const ids = perProcess.flat();
    expect(ids).toHaveLength(1000);
    expect(new Set(ids).size).toBe(1000);
    // "Last" is by submit order (UUIDv7 ids): the greatest id, which is one process's last submit.
    const last = [...ids].sort().at(-1)!;
    expect(perProcess.map((p) => p.at(-1))).toContain(last);

    // Every submit was written; one is waiting, the others are cancelled as replaced.
    expect(await count('type = ?', [type])).toBe(1000);
    const waiting = await env.sql<{id: string; attempt: number}>(`SELECT id, attempt FROM tasks WHERE type = ? AND state = 'submitted'`, [
      type,
    ]);
    expect(waiting).toEqual([{id: last, attempt: 0}]);
    expect(await count(`type = ? AND state = 'cancelled' AND attempt = 0 AND finished_at IS NOT NULL`, [type])).toBe(999);
    // Each replaced task's history names its replacement; following them always ends at the last.
    const notes = await env.sql<{task_id: string; error: string}>(
      `SELECT h.task_id, h.error FROM task_history h JOIN tasks t ON t.id = h.task_id WHERE t.type = ? AND h.to_state = 'cancelled'`,
      [type],
    );
    expect(notes).toHaveLength(999);
    const by = new Map<string, string>();
    for (const n of notes) {
      const m = /^replaced by ([0-9a-f-]{36}) \(debounce user:7\)$/.exec(n.error);
      expect(m, n.error).not.toBeNull();
      by.set(n.task_id, m![1]!);
    }
    for (const id of ids) {
      let at = id;
      for (let hops = 0; at !== last && hops < 1000; hops++) at = by.get(at)!;
      expect(at).toBe(last);
    }
    const [gate] = await env.sql<{task_id: string}>(
      `SELECT task_id FROM task_gates WHERE type = ? AND gate_key = 'user:7' AND kind = 'debounce'`,
      [type],
    );
    expect(gate?.task_id).toBe(last);

    // Nothing may run before the window has passed since the last submit; then the last one only.
    expect(await claim(ids)).toEqual([]);
    const ran = await eventually(async () => {
      const c = await claim(ids);
      return c.length > 0 ? c : undefined;
    }, 30_000);
    expect(ran).toEqual([last]);
    expect(await claim(ids)).toEqual([]);
    expect(await count(`type = ? AND state = 'running'`, [type])).toBe(1);
  });

  it('a debounced task that already started is left alone: the next submit starts a new round', async () => {
    const p = producer();
    const type = 'debounce_started';
    const first = await p.submit({type, debounce: {key: 'k', window: 1}});
    await p.flush();
    expect(await eventually(async () => ((await claim([first])).length === 1 ? true : undefined))).toBe(true);
    const second = await p.submit({type, debounce: {key: 'k', window: '10s'}});
    const third = await p.submit({type, debounce: {key: 'k', window: '10s'}});
    await p.flush();
    const states = await env.sql<{id: string; state: string}>('SELECT id, state FROM tasks WHERE type = ? ORDER BY id', [type]);
    expect(states).toEqual([
      {id: first, state: 'running'},
      {id: second, state: 'cancelled'},
      {id: third, state: 'submitted'},
    ]);
    // Due its window after its submit (database clock), not at once.
    expect(await count('id = ? AND run_at > NOW(3) + INTERVAL 8 SECOND', [third])).toBe(1);
    // The task details show the replacement.
    const history = await store.historyList({taskId: second});
    expect(history.at(-1)).toMatchObject({from: 'submitted', to: 'cancelled', error: `replaced by ${third} (debounce k)`});
  });

  it('throttle: of many submits in a window one task is written and the others name it; after the window a new one is', async () => {
    const type = 'throttle_burst';
    const a = producer();
    const b = producer();
    const spec: TaskSpec = {type, payload: {}, throttle: {key: 'tenant:1', window: '2s'}};
    const submitted = await Promise.all([
      ...Array.from({length: 200}, () => a.submit(spec)),
      ...Array.from({length: 200}, () => b.submit(spec)),
    ]);
    const [ra, rb] = await Promise.all([a.flush(), b.flush()]);
    expect(ra.inserted + rb.inserted).toBe(1);
    const throttled = [...(ra.throttled ?? []), ...(rb.throttled ?? [])];
    expect(throttled).toHaveLength(399);
    const rows = await env.sql<{id: string}>('SELECT id FROM tasks WHERE type = ?', [type]);
    expect(rows).toHaveLength(1);
    const kept = rows[0]!.id;
    expect(submitted).toContain(kept);
    expect(new Set(throttled.map((t) => t.keptId))).toEqual(new Set([kept]));
    expect(new Set(throttled.map((t) => t.id))).toEqual(new Set(submitted.filter((id) => id !== kept)));

    // Still open: throttled again.
    await a.submit(spec);
    expect((await a.flush()).throttled).toEqual([expect.objectContaining({keptId: kept, key: 'tenant:1'})]);
    // Once the window is over on the database clock, the next submit is written.
    await eventually(
      async () =>
        (await env.sql<{n: number}>(`SELECT COUNT(*) AS n FROM task_gates WHERE type = ? AND until <= NOW(3)`, [type]))[0]!.n === 1,
      10_000,
      'the throttle window to end',
    );
    const next = await a.submit(spec);
    const report = await a.flush();
    expect(report.inserted).toBe(1);
    expect(report.throttled).toBeUndefined();
    expect(await count('type = ?', [type])).toBe(2);
    expect(await count('id = ?', [next])).toBe(1);
  });

  it('keys, kinds and types are separate gates', async () => {
    const p = producer();
    await p.submit({type: 'gate_sep', throttle: {key: 'a', window: '1h'}});
    await p.submit({type: 'gate_sep', throttle: {key: 'b', window: '1h'}});
    await p.submit({type: 'gate_other', throttle: {key: 'a', window: '1h'}});
    await p.submit({type: 'gate_sep', debounce: {key: 'a', window: '1h'}});
    await p.submit({type: 'gate_sep', throttle: {key: 'a', window: '1h'}});
    const r = await p.flush();
    expect(r.inserted).toBe(4);
    expect(r.throttled).toHaveLength(1);
    expect(await count(`type IN ('gate_sep', 'gate_other') AND state = 'submitted'`)).toBe(4);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['a window of 0', {debounce: {key: 'k', window: 0}}, /debounce window must be at least 1ms/],
    ['a debounce window over a day', {debounce: {key: 'k', window: '25h'}}, /debounce window 25h is over a day/],
    ['a throttle window over a day', {throttle: {key: 'k', window: 86_400_001}}, /throttle window .* is over a day/],
    ['debounce and dedupKey', {debounce: {key: 'k', window: '5s'}, dedupKey: 'd1'}, /either dedupKey or debounce/],
    ['throttle and dedupKey', {throttle: {key: 'k', window: '5s'}, dedupKey: 'd1'}, /either dedupKey or throttle/],
    ['debounce and throttle', {debounce: {key: 'k', window: '5s'}, throttle: {key: 'k', window: '5s'}}, /either debounce or throttle/],
    ['debounce and delay', {debounce: {key: 'k', window: '5s'}, delay: '1s'}, /no delay or runAt/],
    ['a bad key', {debounce: {key: ' k', window: '5s'}}, /debounce key must not begin or end with whitespace/],
    ['no key', {throttle: {window: '5s'}}, /throttle key must be a string/],
  ])('refuses %s with invalid_input and writes nothing', async (_what, extra, message) => {
    const p = producer();
    const type = 'gate_bad';
    const err = await p.submit({type, ...extra} as TaskSpec).catch((e: unknown) => e);
    expect(isAxError(err, 'invalid_input'), String(err)).toBe(true);
    expect((err as Error).message).toMatch(message);
    expect(p.pending).toBe(0);
    await p.flush();
    expect(await count('type = ?', [type])).toBe(0);
    expect(Number((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_gates WHERE type = ?', [type]))[0]!.n)).toBe(0);
  });
});
