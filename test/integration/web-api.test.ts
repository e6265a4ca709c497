/**
 * The console's HTTP API (ax web) against the real MariaDB and RabbitMQ: auth (tokens, sessions,
 * failed logins limited), roles, CSRF, the Host check, security headers, size limits and bad input
 * (each a clear 4xx with nothing written), every read and action, and the audit trail naming the
 * token and the client address.
 */
import {request as httpRequest} from 'node:http';
import {Ajv} from 'ajv';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxStore} from '../../src/core/store/types.js';
import {startConsole} from '../../src/index.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {call, checkAgainstOpenApi, login, startTestConsole, type TestConsole} from '../helpers/web.js';

let env: TestEnv;
let store: AxStore;
let c: TestConsole;
let op: string;
let viewer: string;
let producer: string;
const newId = createIdGenerator(Date.now);

async function deadTask(type: string, payload: Record<string, unknown> = {}, error = 'boom'): Promise<string> {
  const t = validateTaskSpec({type, payload}, {maxRetries: 0, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
  await store.tasksInsert({tasks: [t], actor: 'it:1'});
  const [claimed] = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed;
  await store.outcomesApply({outcomes: [{kind: 'deadLetter', id: t.id, fence: claimed!.fence, error}], actor: 'w:1'});
  return t.id;
}

async function succeededTask(type: string): Promise<string> {
  const t = validateTaskSpec({type, payload: {}}, {maxRetries: 0, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
  await store.tasksInsert({tasks: [t], actor: 'it:1'});
  const [claimed] = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed;
  await store.outcomesApply({outcomes: [{kind: 'complete', id: t.id, fence: claimed!.fence}], actor: 'w:1'});
  return t.id;
}

const taskCount = async (): Promise<number> => Number((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks'))[0]?.n);
const lastAudit = async () => (await store.auditList({limit: 1}))[0];

beforeAll(async () => {
  env = await createTestEnv();
  store = await env.store();
  c = await startTestConsole(env, {users: {alice: 'operator', vic: 'viewer', svc: 'producer'}, maxLoginFailures: 3});
  op = c.tokens.alice as string;
  viewer = c.tokens.vic as string;
  producer = c.tokens.svc as string;
});
afterAll(async () => {
  await c?.close();
  await env?.dispose();
});

describe('auth', () => {
  it('refuses anonymous and unknown tokens; a login sets an HttpOnly SameSite=Strict cookie and gives the CSRF token', async () => {
    expect((await call(c, 'GET', '/api/v1/overview')).status).toBe(401);
    expect(await call(c, 'GET', '/api/v1/overview', {token: 'axt_nope'})).toMatchObject({
      status: 401,
      body: {error: {code: 'unauthorized'}},
    });
    const anon = await call(c, 'GET', '/api/v1/session');
    expect(anon.body).toMatchObject({authenticated: false, authRequired: true, role: null, csrf: null});
    const s = await login(c, op);
    expect(s.setCookie).toMatch(/ax_session=[^;]+; Max-Age=3600; Path=\/; HttpOnly; SameSite=Strict/);
    const me = await call(c, 'GET', '/api/v1/session', {cookie: s.cookie});
    expect(me.body).toMatchObject({authenticated: true, name: 'alice', role: 'operator', csrf: s.csrf});
    expect((await call(c, 'GET', '/api/v1/types', {cookie: s.cookie})).status).toBe(200);
    expect((await call(c, 'DELETE', '/api/v1/session', {cookie: s.cookie})).status).toBe(204);
    expect((await call(c, 'GET', '/api/v1/types', {cookie: s.cookie})).status).toBe(401);
  });

  it('rate-limits failed logins per address (429 with Retry-After), even with the right token, at login or as a bearer', async () => {
    const other = await startTestConsole(env, {users: {zed: 'viewer'}, maxLoginFailures: 3});
    try {
      for (let i = 0; i < 3; i++) expect((await call(other, 'POST', '/api/v1/session', {body: {token: `wrong${i}`}})).status).toBe(401);
      const limited = await call(other, 'POST', '/api/v1/session', {body: {token: other.tokens.zed}});
      expect(limited).toMatchObject({status: 429, body: {error: {code: 'rate_limited'}}});
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      // A locked-out address is refused before its bearer token is looked at: a right guess says nothing.
      expect(await call(other, 'GET', '/api/v1/types', {token: other.tokens.zed})).toMatchObject({
        status: 429,
        body: {error: {code: 'rate_limited'}},
      });
    } finally {
      await other.close();
    }
  });
});

describe('roles and CSRF', () => {
  it('a viewer reads but may not act (403, nothing changed); a producer only submits', async () => {
    expect((await call(c, 'GET', '/api/v1/types', {token: viewer})).status).toBe(200);
    const paused = await call(c, 'POST', '/api/v1/types/web_roles/pause', {token: viewer, body: {reason: 'x'}});
    expect(paused).toMatchObject({status: 403, body: {error: {code: 'forbidden'}}});
    expect(await env.sql("SELECT * FROM task_types WHERE type = 'web_roles' AND paused_at IS NOT NULL")).toEqual([]);
    expect((await call(c, 'GET', '/api/v1/overview', {token: producer})).status).toBe(403);
    const before = await taskCount();
    expect((await call(c, 'POST', '/api/v1/tasks', {token: viewer, body: {type: 'web_submit'}})).status).toBe(403);
    expect(await taskCount()).toBe(before);
  });

  it('a browser session must send its CSRF token with a change; without it nothing changes', async () => {
    await call(c, 'POST', '/api/v1/tasks', {token: producer, body: {type: 'web_csrf', delay: '1h'}});
    const s = await login(c, op);
    const refused = await call(c, 'POST', '/api/v1/types/web_csrf/pause', {cookie: s.cookie, body: {reason: 'x'}});
    expect(refused).toMatchObject({status: 403, body: {error: {code: 'csrf'}}});
    const wrong = await call(c, 'POST', '/api/v1/types/web_csrf/pause', {cookie: s.cookie, csrf: 'forged', body: {}});
    expect(wrong.status).toBe(403);
    expect(await env.sql("SELECT * FROM task_types WHERE type = 'web_csrf' AND paused_at IS NOT NULL")).toEqual([]);
    const ok = await call(c, 'POST', '/api/v1/types/web_csrf/pause', {cookie: s.cookie, csrf: s.csrf, body: {reason: 'deploy'}});
    expect(ok.status).toBe(200);
    expect(await lastAudit()).toMatchObject({operator: 'web:alice@127.0.0.1', command: 'types pause', reason: 'deploy'});
    await call(c, 'POST', '/api/v1/types/web_csrf/resume', {token: op, body: {}});
  });

  it('without tokens answers a Host that is not loopback with 403 (DNS rebinding); with tokens a proxy may name it; security headers', async () => {
    // fetch may not set Host: raw requests, as a rebinding page's browser would send them.
    const open = await startConsole({env: {...env.env, AX_WEB_PORT: '0', AX_WEB_TOKENS: ''}, cwd: '/nonexistent'});
    try {
      const r = await raw(open.url, '/api/v1/session', {host: `evil.example:${new URL(open.url).port}`});
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body)).toMatchObject({error: {code: 'forbidden'}});
    } finally {
      await open.close();
    }
    // With tokens every request is authenticated: a reverse proxy's own name is fine.
    const viaProxy = await raw(c.url, '/api/v1/types', {host: 'console.example.com', authorization: `Bearer ${viewer}`});
    expect(viaProxy.status).toBe(200);
    const ok = await call(c, 'GET', '/api/v1/session');
    expect(ok.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(ok.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(ok.headers.get('x-content-type-options')).toBe('nosniff');
    expect(ok.headers.get('cache-control')).toBe('no-store');
  });

  it('decides by the route the router matched: an encoded or absolute-form API path gets no further without a token', async () => {
    const {port} = new URL(c.url);
    const before = await taskCount();
    for (const path of ['/%61pi/v1/audit', '/api/v1/%61udit', '/api/v1/tasks%3Flimit=1', `http://127.0.0.1:${port}/api/v1/tasks`]) {
      const r = await raw(c.url, path, {});
      expect({path, status: r.status}).toEqual({path, status: path.includes('%3F') ? 404 : 401});
    }
    const submit = await raw(
      c.url,
      '/%61pi/v1/tasks',
      {'content-type': 'application/json'},
      'POST',
      JSON.stringify({type: 'web_sneak', payload: {}}),
    );
    expect(submit.status).toBe(401);
    expect(await taskCount()).toBe(before);
    // The matched route's role applies too: a producer may not read through it, a viewer may.
    expect((await raw(c.url, '/%61pi/v1/audit', {authorization: `Bearer ${producer}`})).status).toBe(403);
    expect((await raw(c.url, '/%61pi/v1/audit', {authorization: `Bearer ${viewer}`})).status).toBe(200);
  });
});

/** One request with exactly these headers and request target (fetch would normalise both). */
function raw(
  base: string,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  body?: string,
): Promise<{status: number; body: string}> {
  const {hostname, port} = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({host: hostname, port, path, method, headers}, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({status: res.statusCode ?? 0, body: text}));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('bad input: a clear 4xx, nothing written', () => {
  it('refuses unknown parameters and fields, malformed ids, bad JSON, big bodies and invalid tasks', async () => {
    const before = await taskCount();
    const cases: Array<[string, string, Record<string, unknown>, number, RegExp]> = [
      ['GET', '/api/v1/tasks?colour=red', {}, 400, /colour|additional/],
      ['GET', '/api/v1/tasks/not-a-uuid', {}, 400, /id/],
      ['GET', '/api/v1/tasks?payload=k%3D1', {}, 400, /since/],
      ['GET', '/api/v1/tasks?state=zombie', {}, 400, /state/],
      ['POST', '/api/v1/tasks', {rawBody: '{"type": '}, 400, /JSON/],
      ['POST', '/api/v1/tasks', {body: {type: 'Not A Type'}}, 400, /type/],
      ['POST', '/api/v1/tasks', {body: {type: 'web_bad', colour: 'red'}}, 400, /colour|additional/],
      ['POST', '/api/v1/tasks', {body: {tasks: [{type: 'web_ok'}, {type: 'web_ok', delay: 'soon'}]}}, 400, /delay/],
      ['POST', '/api/v1/tasks', {body: {type: 'web_big', payload: {blob: 'x'.repeat(300 * 1024)}}}, 413, /AX_WEB_BODY_LIMIT/],
      ['POST', '/api/v1/tasks', {rawBody: 'type=web_form', headers: {'content-type': 'application/x-www-form-urlencoded'}}, 415, /JSON/],
      ['POST', '/api/v1/tasks/00000000-0000-7000-8000-000000000000/replay', {body: {force: true}}, 400, /reason/],
      ['POST', '/api/v1/types/web_rate/resume', {body: {rate: -1}}, 400, /rate/],
      ['GET', '/api/v1/nothing-here', {}, 404, /no API route/],
    ];
    for (const [method, path, o, status, message] of cases) {
      const r = await call(c, method, path, {token: op, ...o});
      expect({path, status: r.status}).toEqual({path, status});
      expect(r.body.error.message).toMatch(message);
    }
    expect(await taskCount()).toBe(before);
  });
});

describe('reads', () => {
  it('searches tasks by payload field with keyset pages, shows a task and fetches a big payload on demand', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await call(c, 'POST', '/api/v1/tasks', {
        token: producer,
        body: {type: 'web_search', payload: {order: {id: i}}, delay: '1h'},
      });
      expect(r.status).toBe(201);
      ids.push(r.body.id);
    }
    const found = await call(c, 'GET', '/api/v1/tasks?type=web_search&since=1h&payload=order.id%3D3', {token: viewer});
    expect(found.body.tasks.map((t: {id: string}) => t.id)).toEqual([ids[3]]);
    const p1 = await call(c, 'GET', '/api/v1/tasks?type=web_search&limit=2', {token: viewer});
    const p2 = await call(c, 'GET', `/api/v1/tasks?type=web_search&limit=2&after=${p1.body.next}`, {token: viewer});
    const p3 = await call(c, 'GET', `/api/v1/tasks?type=web_search&limit=2&after=${p2.body.next}`, {token: viewer});
    const paged = [...p1.body.tasks, ...p2.body.tasks, ...p3.body.tasks].map((t: {id: string}) => t.id);
    expect(paged.sort()).toEqual([...ids].sort());
    expect(p3.body.next).toBeNull();

    const big = await call(c, 'POST', '/api/v1/tasks', {
      token: producer,
      body: {type: 'web_search', payload: {blob: 'y'.repeat(40_000)}, delay: '1h'},
    });
    const shown = await call(c, 'GET', `/api/v1/tasks/${big.body.id}`, {token: viewer});
    expect(shown.body).toMatchObject({archived: false, task: {id: big.body.id, payload: null, payloadTruncated: true}});
    expect(shown.body.history.length).toBeGreaterThan(0);
    const payload = await call(c, 'GET', `/api/v1/tasks/${big.body.id}/payload`, {token: viewer});
    expect(payload.body.blob).toHaveLength(40_000);
    expect((await call(c, 'GET', '/api/v1/tasks/00000000-0000-7000-8000-000000000000', {token: viewer})).status).toBe(404);
    // Its trace: submitted outside any trace, one insert so far (delayed: no doorbell yet).
    const traced = await call(c, 'GET', `/api/v1/tasks/${big.body.id}/trace`, {token: viewer});
    expect(traced.body).toMatchObject({taskId: big.body.id, trace: null, traceId: null, archived: null, events: [{stage: 'insert'}]});
    expect((await call(c, 'GET', '/api/v1/tasks/not-a-task/trace', {token: viewer})).status).toBe(400);
    expect((await call(c, 'GET', '/api/v1/tasks/00000000-0000-7000-8000-000000000000/trace', {token: viewer})).status).toBe(404);
  });

  it('answers the overview, types, dead letters, cron, workers, doctor, audit and the OpenAPI document', async () => {
    await deadTask('web_reads', {}, 'order 1 missing');
    await deadTask('web_reads', {}, 'order 2 missing');
    // The reading is shared by every page and browser for up to 1.5 s: one from before the dead
    // tasks may still be served.
    const ov = await eventually(
      async () => {
        const r = await call(c, 'GET', '/api/v1/overview', {token: viewer});
        return r.status === 200 && r.body.backlog.dead >= 2 ? r : undefined;
      },
      10_000,
      'the overview to count the dead tasks',
    );
    expect(ov.body).toMatchObject({cell: 'default', alert: {level: expect.any(String)}});
    expect(ov.body).toHaveProperty('outbox');
    // The sampler's counts and series arrive with its first sample (started by the first overview).
    const sampled = await eventually(async () => {
      const r = await call(c, 'GET', '/api/v1/overview', {token: viewer});
      return r.body.states ? r.body : undefined;
    });
    expect(sampled.states.dead).toBeGreaterThanOrEqual(2);
    expect(Array.isArray(sampled.series)).toBe(true);
    const types = await call(c, 'GET', '/api/v1/types', {token: viewer});
    expect(types.body.types.find((t: {type: string}) => t.type === 'web_reads')).toMatchObject({dead: 2});
    const dlq = await call(c, 'GET', '/api/v1/dlq?type=web_reads', {token: viewer});
    expect(dlq.body.tasks).toHaveLength(2);
    const groups = await call(c, 'GET', '/api/v1/dlq/groups?type=web_reads', {token: viewer});
    expect(groups.body.groups).toMatchObject([{type: 'web_reads', signature: 'order <n> missing', count: 2}]);
    for (const path of ['/api/v1/cron', '/api/v1/workers', '/api/v1/doctor?since=5m', '/api/v1/audit?limit=5', '/api/v1/payload-indexes']) {
      expect({path, status: (await call(c, 'GET', path, {token: viewer})).status}).toEqual({path, status: 200});
    }
    const doc = await call(c, 'GET', '/api/v1/openapi.json');
    expect(doc.body.openapi).toBe('3.0.3');
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/api/v1/tasks', '/api/v1/tasks/{id}/replay', '/api/v1/dlq/replay']),
    );
  });
});

describe('actions', () => {
  it('replays a dead task; force replay of a succeeded one needs a reason and is audited with the token and address', async () => {
    const dead = await deadTask('web_act');
    const r = await call(c, 'POST', `/api/v1/tasks/${dead}/replay`, {token: op, body: {}});
    expect(r).toMatchObject({status: 200, body: {replayed: 1}});
    expect((await store.tasksGet({id: dead}))?.state).toBe('submitted');

    const done = await succeededTask('web_act');
    const refused = await call(c, 'POST', `/api/v1/tasks/${done}/replay`, {token: op, body: {force: true}});
    expect(refused.status).toBe(400);
    expect((await store.tasksGet({id: done}))?.state).toBe('succeeded');
    const forced = await call(c, 'POST', `/api/v1/tasks/${done}/replay`, {token: op, body: {force: true, reason: 'ledger rolled back'}});
    expect(forced).toMatchObject({status: 200, body: {replayed: 1}});
    expect(await lastAudit()).toMatchObject({
      operator: 'web:alice@127.0.0.1',
      command: 'web replay --force',
      reason: 'ledger rolled back',
      taskCount: 1,
    });
  });

  it('cancels a task, and bulk-cancels everything matching a filter after a dry run that changes nothing', async () => {
    const one = await call(c, 'POST', '/api/v1/tasks', {token: op, body: {type: 'web_cancel', delay: '1h'}});
    expect((await call(c, 'POST', `/api/v1/tasks/${one.body.id}/cancel`, {token: op, body: {reason: 'wrong order'}})).status).toBe(200);
    expect((await store.tasksGet({id: one.body.id}))?.state).toBe('cancelled');

    const batch = await call(c, 'POST', '/api/v1/tasks', {
      token: op,
      body: {tasks: [1, 2, 3].map((i) => ({type: 'web_bulk', payload: {i}, delay: '1h'}))},
    });
    expect(batch.body.ids).toHaveLength(3);
    const dry = await call(c, 'POST', '/api/v1/tasks/bulk', {
      token: op,
      body: {action: 'cancel', filter: {type: 'web_bulk'}, dryRun: true},
    });
    expect(dry.body).toMatchObject({dryRun: true, matched: 3, actionable: 3});
    expect((await store.tasksGet({id: batch.body.ids[0]}))?.state).toBe('submitted');
    // A task that came since the dry run: the confirm, which names the count it was shown, is refused.
    const late = await call(c, 'POST', '/api/v1/tasks', {token: op, body: {type: 'web_bulk', payload: {i: 4}, delay: '1h'}});
    const stale = await call(c, 'POST', '/api/v1/tasks/bulk', {
      token: op,
      body: {action: 'cancel', filter: {type: 'web_bulk'}, reason: 'bulk', expect: 3},
    });
    expect(stale).toMatchObject({status: 409, body: {error: {code: 'conflict', details: {matched: 4, expected: 3}}}});
    expect((await store.tasksGet({id: late.body.id}))?.state).toBe('submitted');
    const run = await call(c, 'POST', '/api/v1/tasks/bulk', {
      token: op,
      body: {action: 'cancel', filter: {type: 'web_bulk'}, reason: 'bulk', expect: 4},
    });
    expect(run.body).toMatchObject({dryRun: false, done: 4});
    for (const id of [...batch.body.ids, late.body.id]) expect((await store.tasksGet({id}))?.state).toBe('cancelled');
  });

  it('replays dead letters as a job with progress, with a merge patch, after a dry run', async () => {
    const ids = [await deadTask('web_dlq', {n: 1}), await deadTask('web_dlq', {n: 2})];
    const dry = await call(c, 'POST', '/api/v1/dlq/replay', {token: op, body: {filter: {type: 'web_dlq'}, dryRun: true}});
    expect(dry.body).toMatchObject({dryRun: true, plan: {total: 2}});
    const started = await call(c, 'POST', '/api/v1/dlq/replay', {
      token: op,
      body: {filter: {type: 'web_dlq'}, patch: {fixed: true}, reason: 'patched'},
    });
    expect(started.status).toBe(202);
    const job = await eventually(async () => {
      const j = await call(c, 'GET', `/api/v1/jobs/${started.body.job}`, {token: viewer});
      expect(j.body.state).toBe('done');
      return j.body;
    });
    expect(job).toMatchObject({done: 2, total: 2, result: {replayed: 2}});
    for (const id of ids) expect((await store.tasksGet({id}))?.payload).toMatchObject({fixed: true});
    expect(await lastAudit()).toMatchObject({operator: 'web:alice@127.0.0.1', command: 'web dlq replay'});
  });

  it('pauses and resumes a type, resets its breaker and sets its limits', async () => {
    await call(c, 'POST', '/api/v1/tasks', {token: producer, body: {type: 'web_flow', delay: '1h'}});
    await call(c, 'POST', '/api/v1/tasks', {token: producer, body: {type: 'web_flow', delay: '1h', key: 'tenant:<b>7</b>'}});
    expect(await call(c, 'POST', '/api/v1/types/web_flow/breaker/reset', {token: op, body: {}})).toMatchObject({
      status: 409,
      body: {error: {code: 'conflict'}},
    });
    expect((await call(c, 'POST', '/api/v1/types/web_flow/pause', {token: op, body: {reason: 'incident'}})).status).toBe(200);
    const shown = await call(c, 'GET', '/api/v1/types/web_flow', {token: viewer});
    expect(shown.body.paused).toMatchObject({by: 'web:alice@127.0.0.1', reason: 'incident'});
    // Its task keys (the key as sent: the console shows it as text).
    expect(shown.body.keys).toEqual({
      withBacklog: 1,
      backlog: 1,
      withRunning: 0,
      running: 0,
      top: [{key: 'tenant:<b>7</b>', backlog: 1, running: 0}],
      dominant: null,
      indexed: true,
    });
    expect((await call(c, 'POST', '/api/v1/types/web_flow/resume', {token: op, body: {rate: 50}})).status).toBe(200);
    expect((await call(c, 'POST', '/api/v1/types/web_flow/resume', {token: op, body: {}})).status).toBe(409);
    const limits = await call(c, 'PATCH', '/api/v1/types/web_flow', {
      token: op,
      body: {maxRunning: 3, rate: '10/s', maxRunningPerKey: 2, fair: true, keyWeights: {'tenant:1': 3}},
    });
    expect(limits.status).toBe(200);
    expect((await call(c, 'GET', '/api/v1/types/web_flow', {token: viewer})).body.limits).toMatchObject({
      maxRunning: 3,
      maxRunningPerKey: 2,
      fair: true,
      keyWeights: {'tenant:1': 3},
    });
    // A bad weight: 400, nothing changed.
    expect((await call(c, 'PATCH', '/api/v1/types/web_flow', {token: op, body: {keyWeights: {'tenant:1': 0}}})).status).toBe(400);
    expect((await call(c, 'GET', '/api/v1/types/web_flow', {token: viewer})).body.limits.keyWeights).toEqual({'tenant:1': 3});
  });
});

describe('embedded from the SDK', () => {
  it('startConsole() serves the console on its configuration and refuses a non-loopback host without tokens', async () => {
    const server = await startConsole({env: {...env.env, AX_WEB_PORT: '0', AX_WEB_TOKENS: ''}, cwd: '/nonexistent'});
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await call(server, 'GET', '/api/v1/session')).body).toMatchObject({
        authenticated: true,
        authRequired: false,
        role: 'operator',
      });
      expect((await call(server, 'GET', '/api/v1/types')).status).toBe(200);
    } finally {
      await server.close();
    }
    await expect(startConsole({env: {...env.env, AX_WEB_HOST: '0.0.0.0', AX_WEB_TOKENS: ''}, cwd: '/nonexistent'})).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/AX_WEB_TOKENS/),
    });
  });
});

describe('batches', () => {
  // The batch endpoints' behaviour is tested in web-workflows.test.ts; here each answers once, so
  // the OpenAPI check below covers them.
  it('POST /api/v1/batches writes a batch with its callback; GET lists and shows it', async () => {
    const batch = await call(c, 'POST', '/api/v1/batches', {
      token: producer,
      body: {tasks: [{type: 'web_batch_member'}], callback: {type: 'web_batch_done'}},
    });
    expect(batch.status).toBe(201);
    const id = batch.body.batchId as string;
    expect((await call(c, 'GET', `/api/v1/batches/${id}`, {token: viewer})).body).toMatchObject({id, total: 1, done: 0});
    const list = await call(c, 'GET', '/api/v1/batches', {token: viewer});
    expect(list.body.batches.map((b: {id: string}) => b.id)).toContain(id);
  });
});

describe('the OpenAPI document', () => {
  it('describes every answer the live server gave in this file, and every operation was exercised', async () => {
    const doc = (await call(c, 'GET', '/api/v1/openapi.json')).body;
    const ajv = new Ajv({strict: false, allErrors: true});
    const validate = (schema: unknown, data: unknown): string | null => {
      const v = ajv.compile(schema as object);
      return v(data) ? null : ajv.errorsText(v.errors);
    };
    const r = checkAgainstOpenApi(doc, validate);
    expect(r.invalid).toEqual([]);
    expect(r.undocumented).toEqual([]);
    expect(r.unexercised).toEqual([]);
  });
});
