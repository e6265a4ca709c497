/**
 * `ax trace` through the built CLI (`node bin/run.js …`; run `npm run build` first) against the real
 * MariaDB: a task submitted with a trace context shows its trace id and its timeline (human and
 * --json), and `ax tasks show` names it; a malformed id exits 2, an unknown one 3.
 */
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {runCli, type CliRun} from '../helpers/spawn.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const TRACEPARENT = `00-${TRACE_ID}-b7ad6b7169203331-01`;

describe('ax trace', () => {
  let env: TestEnv;
  let cwd: string;
  let id: string;
  const ax = (args: string[]): Promise<CliRun> => runCli(args, {cwd, env: env.env});

  beforeAll(async () => {
    env = await createTestEnv();
    cwd = mkdtempSync(join(tmpdir(), 'ax-trace-'));
    const task = validateTaskSpec(
      {type: 'order_notify', payload: {}},
      {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
      Date.now(),
      createIdGenerator(() => Date.now()),
    );
    task.trace = {traceparent: TRACEPARENT, tracestate: 'vendor=1'};
    await (await env.store()).tasksInsert({tasks: [task], actor: 'test:trace'});
    id = task.id;
  });
  afterAll(async () => {
    await env?.dispose();
    if (cwd) rmSync(cwd, {recursive: true, force: true});
  });

  it('shows the trace id and the timeline; exit 2 for a malformed id, 3 for an unknown one', async () => {
    const json = await ax(['trace', id, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(json.json).toMatchObject({
      taskId: id,
      traceId: TRACE_ID,
      trace: {traceparent: TRACEPARENT, tracestate: 'vendor=1'},
      archived: null,
    });
    expect(json.json.events).toMatchObject([{stage: 'insert', by: 'test:trace', at: expect.stringMatching(/Z$/)}]);
    const human = await ax(['trace', id]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(`trace id  ${TRACE_ID}`);
    expect(human.stdout).toMatch(/insert\s+submitted: inserted into the tasks table\s+test:trace/);
    // `ax tasks show` names the trace and the command that shows it.
    const shown = await ax(['tasks', 'show', id]);
    expect(shown.stdout).toContain(`trace     ${TRACEPARENT} (\`ax trace ${id}\`)`);
    expect((await ax(['trace', 'nope', '--json'])).code).toBe(2);
    const unknown = await ax(['trace', '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d', '--json']);
    expect(unknown.code).toBe(3);
    expect(unknown.json?.error?.message).toMatch(/neither live nor archived/);
  });
});
