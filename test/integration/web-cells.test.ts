/**
 * The console's API across cells and the archive, against the real MariaDB and RabbitMQ: `?cell=`
 * reads and acts on another cell of AX_CELLS (an unknown one is a 400), a submit goes to its type's
 * cell, and an archived task's id opens from the archive.
 */
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {call, startTestConsole, type TestConsole} from '../helpers/web.js';

let env: TestEnv;
let c: TestConsole;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ax-web-archive-'));
  env = await createTestEnv({archiveDir: dir}, {cells: {big: ['bulk_*']}});
  c = await startTestConsole(env);
});
afterAll(async () => {
  await c?.close();
  await env?.dispose();
  rmSync(dir, {recursive: true, force: true});
});

describe('cells', () => {
  it('lists the cells, routes a submit to its type cell, and reads another cell with ?cell=', async () => {
    expect((await call(c, 'GET', '/api/v1/session')).body.cells).toEqual(['default', 'big']);
    const {body} = await call(c, 'POST', '/api/v1/tasks', {body: {type: 'bulk_import', payload: {n: 1}, delay: '1h'}});
    expect((await call(c, 'GET', '/api/v1/tasks?type=bulk_import&cell=big')).body.tasks.map((t: {id: string}) => t.id)).toEqual([body.id]);
    expect((await call(c, 'GET', '/api/v1/tasks?type=bulk_import')).body.tasks).toEqual([]);
    expect((await call(c, 'GET', `/api/v1/tasks/${body.id}?cell=big`)).body.task).toMatchObject({id: body.id, cell: 'big'});
    expect(await call(c, 'GET', '/api/v1/types?cell=nowhere')).toMatchObject({status: 400, body: {error: {code: 'invalid_input'}}});
    const cancelled = await call(c, 'POST', `/api/v1/tasks/${body.id}/cancel?cell=big`, {body: {reason: 'wrong cell test'}});
    expect(cancelled.status).toBe(200);
    await expect((await env.store('big')).tasksGet({id: body.id})).resolves.toMatchObject({state: 'cancelled'});
  });
});

describe('the archive', () => {
  it('opens an archived task from the archive', async () => {
    const {body} = await call(c, 'POST', '/api/v1/tasks', {body: {type: 'web_archived', payload: {k: 'v'}}});
    const r = await call(c, 'POST', `/api/v1/tasks/${body.id}/cancel`, {body: {reason: 'to archive it'}});
    expect(r.status).toBe(200);
    // Finished two hours ago: past the shortest retention (1 h).
    await env.sql(
      `UPDATE tasks SET finished_at = finished_at - INTERVAL 2 HOUR, created_at = created_at - INTERVAL 2 HOUR, run_at = run_at - INTERVAL 2 HOUR WHERE id = ?`,
      [body.id],
    );
    await env.sql(`UPDATE task_history SET at = at - INTERVAL 2 HOUR WHERE task_id = ?`, [body.id]);
    const run = await c.admin.archive.run({olderThan: '1h'});
    expect(run).toMatchObject({ran: true});
    expect(await env.sql('SELECT id FROM tasks WHERE id = ?', [body.id])).toEqual([]);
    const shown = await call(c, 'GET', `/api/v1/tasks/${body.id}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({archived: true, task: {id: body.id, state: 'cancelled'}});
    expect(shown.body.history.length).toBeGreaterThan(0);
  });
});
