/**
 * A batch of 10,000 with a callback while a spawned `ax worker` is killed (SIGKILL) mid-batch: the
 * rescuer (a spawned `ax scheduler`, leases of 1 s) takes over its tasks, and the callback runs
 * exactly once, with every member counted.
 */
import {mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {eventually} from '../helpers/env.js';
import {createProcessTestEnv, type ProcessTestEnv} from '../helpers/processes.js';

describe('a batch under a worker kill', () => {
  let fx: ProcessTestEnv;
  let dir: string;
  beforeAll(async () => {
    fx = await createProcessTestEnv();
    dir = mkdtempSync(join(tmpdir(), 'ax-batch-kill-'));
  });
  afterAll(async () => {
    await fx?.dispose();
    if (dir) rmSync(dir, {recursive: true, force: true});
  });

  it('runs the callback of a 10,000 batch exactly once with the right counts', {timeout: 300_000}, async () => {
    const log = join(dir, 'runs.ndjson');
    const vars = {...fx.env.env, AX_LEASE: '1s', AX_RESCUE_EVERY: '200ms', AX_TEST_WF_LOG: log};
    const lines = (): Array<{id: string; phase: string; pid: number; payload: Record<string, unknown>}> => {
      try {
        return readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as {id: string; phase: string; pid: number; payload: Record<string, unknown>});
      } catch {
        return [];
      }
    };
    const worker = (): ReturnType<ProcessTestEnv['spawn']> =>
      fx.spawn(['worker', '--handlers', 'test/fixtures/workflow-handlers.js', '--pools', 'io'], vars);
    const victim = worker();
    worker();
    fx.spawn(['scheduler'], vars);
    const n = 10_000;
    const b = await fx.client.submitBatch(
      Array.from({length: n}, (_, i) => ({type: 'wf_step', payload: {i}})),
      {callback: {type: 'wf_callback'}},
    );
    const pid = victim.child.pid!;
    await eventually(async () => lines().filter((l) => l.pid === pid).length >= 500, 120_000, 'the victim to run 500 tasks');
    victim.child.kill('SIGKILL');
    await victim.exited;
    await eventually(
      async () => (await fx.env.sql<{state: string}>('SELECT state FROM tasks WHERE id = ?', [b.callbackId]))[0]?.state === 'succeeded',
      240_000,
      'the callback to succeed',
    );
    const calls = lines().filter((l) => l.id === b.callbackId);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.payload).toEqual({batch: {id: b.batchId, total: n, succeeded: n, dead: 0, cancelled: 0}});
    expect(await fx.client.batch(b.batchId!)).toMatchObject({total: n, succeeded: n, dead: 0, cancelled: 0, callbackState: 'succeeded'});
  });
});
