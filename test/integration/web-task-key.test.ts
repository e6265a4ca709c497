/**
 * Task keys through the console's HTTP API against the real servers: a task submitted with a key
 * is found by `GET /api/v1/tasks?key=`, which returns only that key's tasks; a bad key is a 400
 * (invalid_input) on the search and on the submit, which then writes nothing.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {call, startTestConsole, type TestConsole} from '../helpers/web.js';

describe('the HTTP API and task keys', () => {
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

  it('GET /api/v1/tasks?key= returns only the tasks of that key; a bad key is refused', async () => {
    const svc = c.tokens.svc!;
    const vic = c.tokens.vic!;
    const submitted = await call(c, 'POST', '/api/v1/tasks', {
      token: svc,
      body: {
        tasks: [
          {type: 'web_key', payload: {n: 1}, key: 'tenant:9'},
          {type: 'web_key', payload: {n: 2}, key: 'tenant:9'},
          {type: 'web_key', payload: {n: 3}, key: 'tenant:90'},
          {type: 'web_key', payload: {n: 4}},
        ],
      },
    });
    expect(submitted.status).toBe(201);
    const ids = submitted.body.ids as string[];

    const found = await call(c, 'GET', '/api/v1/tasks?key=tenant%3A9', {token: vic});
    expect(found.status).toBe(200);
    expect(found.body.tasks.map((t: {id: string}) => t.id).sort()).toEqual([ids[0], ids[1]].sort());
    expect(found.body.tasks.map((t: {key: string}) => t.key)).toEqual(['tenant:9', 'tenant:9']);
    expect((await call(c, 'GET', '/api/v1/tasks?key=tenant%3A9&type=web_other', {token: vic})).body.tasks).toEqual([]);

    const bad = await call(c, 'GET', '/api/v1/tasks?key=tenant%3A9%20', {token: vic});
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/key must not begin or end with whitespace/),
    });

    const [before] = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks');
    const refused = await call(c, 'POST', '/api/v1/tasks', {token: svc, body: {type: 'web_key', key: 'tenant\n9'}});
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/key must not contain control characters/);
    expect(await env.sql('SELECT COUNT(*) AS n FROM tasks')).toEqual([before]);
  });
});
