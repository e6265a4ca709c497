/**
 * Dependencies and batches through the console's HTTP API against the real servers: a submit with
 * `after` waits, `GET /api/v1/tasks/:id` shows its links, `POST /api/v1/batches` and
 * `GET /api/v1/batches[/:id]` show progress; bad input is a 400 that writes nothing.
 */
import {randomUUID} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {call, startTestConsole, type TestConsole} from '../helpers/web.js';

describe('the HTTP API, dependencies and batches', () => {
  let env: TestEnv;
  let c: TestConsole;

  beforeAll(async () => {
    env = await createTestEnv();
    c = await startTestConsole(env, {users: {vic: 'viewer', svc: 'producer'}});
  });
  afterAll(async () => {
    await c?.close();
    await env?.dispose();
  });

  it('submits dependents and batches, shows their progress, refuses bad input', async () => {
    const svc = c.tokens.svc!;
    const vic = c.tokens.vic!;
    const a = randomUUID();
    const group = await call(c, 'POST', '/api/v1/tasks', {
      token: svc,
      body: {
        tasks: [
          {id: a, type: 'web_step'},
          {type: 'web_step', after: [a]},
        ],
      },
    });
    expect(group.status).toBe(201);
    const child = (group.body.ids as string[])[1]!;
    const shown = await call(c, 'GET', `/api/v1/tasks/${child}`, {token: vic});
    expect(shown.body.links).toMatchObject({waitingFor: 1, parents: [{id: a, type: 'web_step', state: 'submitted', edge: 'waiting'}]});

    const batch = await call(c, 'POST', '/api/v1/batches', {
      token: svc,
      body: {tasks: [{type: 'web_step'}, {type: 'web_step'}], callback: {type: 'web_done'}},
    });
    expect(batch.status).toBe(201);
    const one = await call(c, 'GET', `/api/v1/batches/${batch.body.batchId as string}`, {token: vic});
    expect(one.body).toMatchObject({total: 2, done: 0, callbackId: batch.body.callbackId, callbackState: 'submitted'});
    const list = await call(c, 'GET', '/api/v1/batches', {token: vic});
    expect(list.body.batches.map((b: {id: string}) => b.id)).toEqual([batch.body.batchId]);

    const [before] = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks');
    const unknown = await call(c, 'POST', '/api/v1/tasks', {token: svc, body: {type: 'web_step', after: [randomUUID()]}});
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/no task/);
    const withAfter = await call(c, 'POST', '/api/v1/batches', {
      token: svc,
      body: {tasks: [{type: 'web_step'}], callback: {type: 'web_done', after: [a]}},
    });
    expect(withAfter.status).toBe(400);
    expect((await call(c, 'POST', '/api/v1/batches', {token: svc, body: {tasks: [], callback: {type: 'web_done'}}})).status).toBe(400);
    expect((await call(c, 'GET', `/api/v1/batches/${randomUUID()}`, {token: vic})).status).toBe(404);
    expect(await env.sql('SELECT COUNT(*) AS n FROM tasks')).toEqual([before]);
  });
});
