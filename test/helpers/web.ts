/* eslint-disable @typescript-eslint/no-explicit-any -- the API's JSON answers are read loosely by the tests that assert on them */
/**
 * The console on a test environment: a real web server (port 0) over a long-lived admin service of
 * the env's MariaDB and RabbitMQ, with tokens for the roles a test names, and small request helpers.
 */
import {randomBytes} from 'node:crypto';
import {openAdmin} from '../../src/compose.js';
import type {Admin} from '../../src/core/admin/service.js';
import {newToken, parseTokens, type Role} from '../../src/web/auth/tokens.js';
import {ASSETS_DIR, consoleOptions} from '../../src/web/console.js';
import {startWebServer, type WebServer} from '../../src/web/server.js';
import type {TestEnv} from './env.js';

export interface TestConsole {
  url: string;
  server: WebServer;
  admin: Admin;
  /** The token of each name given. */
  tokens: Record<string, string>;
  close(): Promise<void>;
}

export async function startTestConsole(
  env: TestEnv,
  o: {users?: Record<string, Role>; assets?: boolean; maxLoginFailures?: number} = {},
): Promise<TestConsole> {
  const made = Object.entries(o.users ?? {}).map(([name, role]) => ({name, ...newToken(name, role, (n) => randomBytes(n))}));
  const admin = openAdmin(env.rt, {}, {longLived: true});
  // The console as `ax web` configures it, but on any free port, with these tokens, a small body
  // limit (the 413 test) and an hour's sessions (the cookie test).
  const server = await startWebServer({
    ...consoleOptions(env.rt, admin, {host: '127.0.0.1', port: 0, assetsDir: o.assets ? ASSETS_DIR : null, version: 'test'}),
    tokens: parseTokens(made.map((m) => m.entry).join(',')),
    sessionTtlMs: 3_600_000,
    bodyLimitBytes: 256 * 1024,
    ...(o.maxLoginFailures === undefined ? {} : {maxLoginFailures: o.maxLoginFailures}),
  });
  return {
    url: server.url,
    server,
    admin,
    tokens: Object.fromEntries(made.map((m) => [m.name, m.token])),
    close: async () => {
      await server.close();
      await admin.close();
    },
  };
}

/** Every answer `call` got in this process (method, path, status, body): the OpenAPI check reads them. */
export const answered: Array<{method: string; path: string; status: number; body: unknown}> = [];

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** One request to the console: JSON in and out; `token` as a bearer, `cookie`/`csrf` as a browser sends them. */
export async function call<T = any>(
  c: Pick<TestConsole, 'url'>,
  method: string,
  path: string,
  o: {token?: string; cookie?: string; csrf?: string; body?: unknown; rawBody?: string; headers?: Record<string, string>} = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = {...o.headers};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.cookie) headers.cookie = o.cookie;
  if (o.csrf) headers['x-csrf-token'] = o.csrf;
  const body = o.rawBody ?? (o.body === undefined ? undefined : JSON.stringify(o.body));
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(c.url + path, {method, headers, ...(body === undefined ? {} : {body})});
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    // not JSON: the text itself
  }
  answered.push({method, path: path.split('?')[0] as string, status: res.status, body: parsed});
  return {status: res.status, body: parsed as T, headers: res.headers};
}

/**
 * Checks every answer recorded so far against the OpenAPI document `doc`: each is valid against the
 * schema documented for its route, method and status (answers of routes not in the document, and
 * statuses it does not describe, are returned as `undocumented`). Also returns the documented
 * operations no answer exercised.
 */
export function checkAgainstOpenApi(
  doc: any,
  validate: (schema: unknown, data: unknown) => string | null,
): {
  invalid: string[];
  undocumented: string[];
  unexercised: string[];
} {
  const ops: Array<{method: string; template: string; re: RegExp; responses: Record<string, any>}> = [];
  for (const [template, item] of Object.entries<any>(doc.paths))
    for (const [method, op] of Object.entries<any>(item))
      ops.push({
        method: method.toUpperCase(),
        template,
        re: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
        responses: op.responses ?? {},
      });
  const invalid: string[] = [];
  const undocumented: string[] = [];
  const seen = new Set<string>();
  for (const a of answered) {
    // The literal route wins over a template (/tasks/bulk before /tasks/{id}).
    const matches = ops.filter((o) => o.method === a.method && o.re.test(a.path));
    const op = matches.find((o) => !o.template.includes('{')) ?? matches[0];
    if (!op) continue;
    seen.add(`${op.method} ${op.template}`);
    const schema = op.responses[String(a.status)]?.content?.['application/json']?.schema;
    if (!schema) {
      if (a.status !== 204) undocumented.push(`${a.method} ${a.path} ${a.status}`);
      continue;
    }
    const error = validate(schema, a.body);
    if (error) invalid.push(`${a.method} ${a.path} ${a.status}: ${error}`);
  }
  const unexercised = ops.map((o) => `${o.method} ${o.template}`).filter((k) => !seen.has(k));
  return {invalid, undocumented, unexercised};
}

/** Signs in with `token`: the session cookie and CSRF token a browser would hold. */
export async function login(c: Pick<TestConsole, 'url'>, token: string): Promise<{cookie: string; csrf: string; setCookie: string}> {
  const r = await call(c, 'POST', '/api/v1/session', {body: {token}});
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.body)}`);
  const setCookie = r.headers.get('set-cookie') ?? '';
  return {cookie: setCookie.split(';')[0] as string, csrf: r.body.csrf as string, setCookie};
}
