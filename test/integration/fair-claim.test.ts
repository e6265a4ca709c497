/**
 * Fair dispatch in the claim (src/core/store/mysql/fair-claim.ts) on MariaDB, one claim at a time
 * through tasksClaim: a flooding key keeps its share of a batch's doorbells and lends the rest to
 * another key's due tasks (the lenders come back unrung); doorbells of a key at its per-key cap are
 * deferred and never lent; doorbells that find no task to lend to (another pool) take their own.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {TaskStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {TaskSpec} from '../../src/core/task/model.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

const newId = createIdGenerator(() => Date.now());
const defaults = {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'};

describe('fair dispatch in the claim', () => {
  let env: TestEnv;
  let store: TaskStore;
  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
  });
  afterAll(async () => env?.dispose());

  const submit = async (specs: TaskSpec[]): Promise<string[]> => {
    const tasks = specs.map((s) => validateTaskSpec(s, defaults, Date.now(), newId));
    await store.tasksInsert({tasks, actor: 'test', markPublished: tasks.map((t) => t.id)});
    return tasks.map((t) => t.id);
  };
  const fair = (type: string, settings: Record<string, unknown>) =>
    store.typeSetSettings({
      type,
      settings: {fair: true, ...settings},
      operator: 'test',
      resetBucket: false,
      audit: {operator: 'test', command: 'types set', filter: {type}, reason: null},
    });
  const claim = (type: string, ids: string[]) =>
    store.tasksClaim({ids, worker: 'test:1', leaseMs: 60_000, lockTypes: [type], fairTypes: [type]});
  const many = (n: number, type: string, key: string, pool: 'io' | 'cpu' = 'io'): TaskSpec[] =>
    Array.from({length: n}, (_, i) => ({type, key, pool, payload: {i}}));

  it('a flood keeps its share and lends the rest to another key; the lenders come back unrung', async () => {
    await fair('fair_flood', {});
    const a = await submit(many(4, 'fair_flood', 'tenant:a'));
    const b = await submit(many(3, 'fair_flood', 'tenant:b'));
    const r = await claim('fair_flood', a);
    const own = r.claimed.filter((t) => t.via === undefined).map((t) => t.id);
    const lent = r.claimed.filter((t) => t.via !== undefined);
    expect(own).toHaveLength(2);
    expect(lent.map((t) => t.id).sort()).toEqual(b.slice(0, 2).sort()); // B's oldest two
    expect(new Set(lent.map((t) => t.via))).toEqual(new Set(a.filter((id) => !own.includes(id))));
    expect(r.unrung?.map((u) => u.id).sort()).toEqual(a.filter((id) => !own.includes(id)).sort());
    const unrung = await env.sql<{n: number}>(
      `SELECT COUNT(*) AS n FROM tasks WHERE state = 'submitted' AND published_at IS NULL AND id IN (?, ?)`,
      r.unrung!.map((u) => u.id),
    );
    expect(Number(unrung[0]!.n)).toBe(2);
  });

  it('a key at its per-key cap: its doorbells are deferred and lend nothing', async () => {
    await fair('fair_capped', {maxRunningPerKey: 2});
    const running = await submit(many(2, 'fair_capped', 'tenant:a'));
    expect((await claim('fair_capped', running)).claimed).toHaveLength(2);
    const a = await submit(many(4, 'fair_capped', 'tenant:a'));
    await submit(many(3, 'fair_capped', 'tenant:b'));
    const r = await claim('fair_capped', a);
    expect(r.claimed).toEqual([]);
    expect(r.deferred?.map((d) => [d.id, d.parked]).sort()).toEqual(a.map((id) => [id, 'key-capped']).sort());
    expect(r.unrung).toBeUndefined();
  });

  it("doorbells with no other key's task to go to (another pool) take their own tasks", async () => {
    await fair('fair_pools', {});
    const a = await submit(many(4, 'fair_pools', 'tenant:a', 'io'));
    await submit(many(3, 'fair_pools', 'tenant:b', 'cpu'));
    const r = await claim('fair_pools', a);
    expect(r.claimed.map((t) => [t.id, t.via]).sort()).toEqual(a.map((id) => [id, undefined]).sort());
    expect(r.unrung).toBeUndefined();
  });

  it('a weighted key named like an object property is a key like any other', async () => {
    await fair('fair_proto', {keyWeights: {constructor: 1, 'tenant:w': 3}});
    const flood = await submit(many(4, 'fair_proto', 'tenant:w'));
    await submit(many(2, 'fair_proto', 'constructor'));
    const r = await claim('fair_proto', flood);
    // Shares of 4 at 3:1: tenant:w keeps 3, lends 1 to "constructor".
    expect(r.claimed.filter((t) => t.via === undefined)).toHaveLength(3);
    expect(r.claimed.filter((t) => t.via !== undefined)).toHaveLength(1);
  });
});
