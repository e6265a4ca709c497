/**
 * `ax web`: the Admin console's HTTP server — the browser UI (static files of dist-web/) and the
 * JSON API under /api/v1, a thin caller of the admin service. Auth, roles, CSRF, the Host check
 * and the security headers live here, in one place (see auth/access.ts for the rules).
 *
 * Fastify because it validates every request against a JSON schema (the same schemas make the
 * OpenAPI document, through @fastify/swagger), limits body sizes, and is small and well kept;
 * node:http would mean writing those by hand. Responses are serialized with JSON.stringify: their
 * schemas document the API and a test checks the live answers against them, but never strip a field.
 *
 * Failure modes: start() throws invalid_input for a non-loopback host without AX_WEB_TOKENS or a bad
 * token list, and the listen error (EADDRINUSE…) as it is. A request fails with the JSON error of
 * errors.ts; MySQL or RabbitMQ down is 503 for the routes that need it, the rest keep working.
 */
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import Fastify, {type FastifyInstance, type FastifyReply, type FastifyRequest} from 'fastify';
import {randomBytes} from 'node:crypto';
import type {Admin} from '../core/admin/service.js';
import {invalid} from '../core/errors.js';
import type {Logger} from '../core/log.js';
import type {Clock} from '../core/time.js';
import {NOT_BUILT, loadAssets} from './assets.js';
import {type Access, admits, csrfRefusal, identify, isLoopback, loopbackHosts, type Who} from './auth/access.js';
import {createLoginLimiter} from './auth/login-limit.js';
import {createSessions} from './auth/sessions.js';
import type {RandomBytes, TokenEntry} from './auth/tokens.js';
import {errorResponse, WebError} from './errors.js';
import {createJobs} from './jobs.js';
import type {OverviewProvider} from './overview.js';
import {registerActions} from './routes/actions.js';
import {registerReads} from './routes/reads.js';
import {registerSession} from './routes/session.js';
import {registerSubmit} from './routes/submit.js';
import {refuseIfLimited, type RouteContext} from './routes/context.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (default: viewer). */
    access?: Access;
  }
  interface FastifyRequest {
    who: Who | null;
  }
}

export const SESSION_COOKIE = 'ax_session';

/**
 * The Content-Security-Policy of every answer: the page's own scripts and styles only (no inline
 * script, no eval, nothing from another host), no framing, no plugins.
 */
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export interface WebServerOptions {
  /** The admin service of the default cell (long-lived: its connections stay open until close). */
  admin: Admin;
  /** Every configured cell (the default first). */
  cells: readonly string[];
  host: string;
  port: number;
  tokens: readonly TokenEntry[];
  sessionTtlMs: number;
  bodyLimitBytes: number;
  /** Mark the session cookie Secure (the console is served over HTTPS by a proxy). */
  secureCookies: boolean;
  /** The built UI (dist-web/); null or missing: the API only. */
  assetsDir: string | null;
  version: string;
  /** The operator named when no tokens are configured (AX_OPERATOR, else user@host). */
  localName: string;
  overview: OverviewProvider;
  clock: Clock;
  logger: Logger;
  bytes?: RandomBytes;
  /** Failed logins per address within a minute before 429 (default 5). */
  maxLoginFailures?: number;
}

export interface WebServer {
  /** http://host:port of the listening server. */
  readonly url: string;
  readonly app: FastifyInstance;
  /** Stops listening and waits for running jobs (the overview's samplers stop with the admin service). Idempotent. */
  close(): Promise<void>;
}

/** Builds the app without listening (tests use app.inject). Throws invalid_input for a non-loopback host without tokens. */
export async function buildWebApp(o: WebServerOptions): Promise<{app: FastifyInstance; ctx: RouteContext}> {
  if (!isLoopback(o.host) && o.tokens.length === 0)
    throw invalid(
      `AX_WEB_HOST ${o.host} is not a loopback address: the console needs AX_WEB_TOKENS there (make one with: ax web token --name <you> --role operator)`,
    );
  const bytes = o.bytes ?? ((n: number) => randomBytes(n));
  const sessions = createSessions({clock: o.clock, bytes, ttlMs: o.sessionTtlMs});
  const limiter = createLoginLimiter({clock: o.clock, ...(o.maxLoginFailures === undefined ? {} : {maxFailures: o.maxLoginFailures})});
  const log = o.logger.child({component: 'web'});
  const ctx: RouteContext = {
    admin: o.admin,
    cells: o.cells,
    sessions,
    limiter,
    tokens: o.tokens,
    jobs: createJobs({clock: o.clock, logger: log}),
    overview: o.overview,
    logger: log,
    version: o.version,
    authRequired: o.tokens.length > 0,
    cookie: {name: SESSION_COOKIE, secure: o.secureCookies, maxAgeS: Math.floor(o.sessionTtlMs / 1000)},
  };

  const app = Fastify({
    logger: false,
    bodyLimit: o.bodyLimitBytes,
    trustProxy: false,
    ajv: {customOptions: {removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false}},
  });
  app.decorateRequest('who', null);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await app.register(cookie);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {title: 'ax HTTP API', version: o.version, description: 'The Admin console API of ax (docs/operating/console.md).'},
      components: {
        securitySchemes: {
          bearer: {type: 'http', scheme: 'bearer', description: 'a token of AX_WEB_TOKENS (ax web token)'},
          session: {type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'POST /api/v1/session; changes need X-CSRF-Token'},
        },
      },
      security: [{bearer: []}, {session: []}],
    },
  });

  // DNS rebinding: a page of another name resolving to 127.0.0.1 must not reach a loopback console
  // without tokens, so there the Host must name loopback (or the address bound) and the port
  // listened on (known once listening). With tokens every request is authenticated instead, and a
  // reverse proxy on the same host may send its own name.
  let allowedHosts: Set<string> | null = null;
  app.addHook('onRequest', async (req, reply) => {
    const route = routeOf(req);
    setSecurityHeaders(reply, (route ?? req.url).startsWith('/api/'));
    if (isLoopback(o.host) && o.tokens.length === 0) {
      const addr = app.server.address();
      if (allowedHosts === null && typeof addr === 'object' && addr) allowedHosts = loopbackHosts(addr.port, o.host);
      if (allowedHosts && !allowedHosts.has(req.headers.host ?? ''))
        throw new WebError('forbidden', `Host "${req.headers.host ?? ''}" is not this console's address (use http://127.0.0.1:<port>)`);
    }
    // Who is asking, for every route of the API (the matched route, never the raw URL) and any other
    // route that is not public; static assets and unknown paths need no one.
    if (route === undefined || !(route.startsWith('/api/') || accessOf(req) !== 'public')) return;
    // A locked-out address is refused before its token is looked at: guessing gets no answers.
    if (req.headers.authorization !== undefined) refuseIfLimited(ctx, req.ip);
    const who = identify(
      {authorization: req.headers.authorization, sessionId: req.cookies[SESSION_COOKIE]},
      {tokens: o.tokens, sessions, localName: o.localName},
    );
    if (who === 'bad_token') {
      limiter.failed(req.ip);
      log.warn('web: refused an unknown API token', {client: req.ip, url: req.url});
      throw new WebError('unauthorized', 'the bearer token is not one of AX_WEB_TOKENS');
    }
    req.who = who;
  });
  // A change with no body at all (curl -X POST …/pause) is an empty object, as the schemas expect.
  app.addHook('preValidation', async (req) => {
    if (req.body === undefined && req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'DELETE') req.body = {};
  });
  // Before the body is read or validated: an anonymous or forbidden caller learns nothing of it.
  app.addHook('onRequest', async (req) => {
    // By the route the router matched: it decodes and normalises the URL (`/%61pi/…`, an absolute
    // `http://host/api/…` target), so a test of the raw URL could be passed around. No route: 404.
    if (routeOf(req) === undefined) return;
    const access = accessOf(req);
    if (access === 'public') return;
    const who = req.who;
    if (!who) throw new WebError('unauthorized', 'sign in first (POST /api/v1/session with a token, or Authorization: Bearer <token>)');
    if (!admits(access, who.role)) throw new WebError('forbidden', `the ${who.role} role may not do this (it needs ${access})`);
    const refusal = csrfRefusal(
      who,
      {
        method: req.method,
        csrfHeader: header(req, 'x-csrf-token'),
        origin: header(req, 'origin'),
        secFetchSite: header(req, 'sec-fetch-site'),
        host: req.headers.host,
      },
      sessions,
    );
    if (refusal) {
      log.warn('web: refused a request without CSRF proof', {client: req.ip, url: req.url, who: who.name});
      throw new WebError('csrf', refusal);
    }
  });
  app.setErrorHandler((e, req, reply) => {
    const r = errorResponse(e);
    if (r.internal) log.error('web: request failed', {url: req.url, method: req.method, error: e instanceof Error ? e.stack : String(e)});
    if (r.body.error.code === 'rate_limited' && typeof r.body.error.details?.retryAfterS === 'number')
      void reply.header('retry-after', String(r.body.error.details.retryAfterS));
    void reply.code(r.status).type('application/json; charset=utf-8').send(JSON.stringify(r.body));
  });
  app.setNotFoundHandler((req, reply) => {
    if (req.url.startsWith('/api/'))
      return reply.code(404).send({error: {code: 'not_found', message: `no API route ${req.method} ${req.url.split('?')[0]}`}});
    return reply.code(404).type('text/plain; charset=utf-8').send('Not found\n');
  });

  registerSession(app, ctx);
  registerReads(app, ctx);
  registerActions(app, ctx);
  registerSubmit(app, ctx);
  app.get('/api/v1/openapi.json', {config: {access: 'public'}, schema: {hide: true}}, async () => app.swagger());
  registerAssets(app, o.assetsDir);
  await app.ready();
  return {app, ctx};
}

/** Builds the app and listens on host:port. */
export async function startWebServer(o: WebServerOptions): Promise<WebServer> {
  const {app, ctx} = await buildWebApp(o);
  await app.listen({host: o.host, port: o.port});
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : o.port;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    app,
    close: () =>
      (closing ??= (async () => {
        await app.close();
        await ctx.jobs.drain();
      })()),
  };
}

/** The pattern of the route the router matched (`/api/v1/tasks/:id`); undefined when none did (404). */
const routeOf = (req: FastifyRequest): string | undefined => req.routeOptions.url;

/** Who may call the matched route: its `config.access`, `viewer` when it says nothing. */
const accessOf = (req: FastifyRequest): Access => req.routeOptions.config?.access ?? 'viewer';

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function setSecurityHeaders(reply: FastifyReply, api: boolean): void {
  void reply.headers({
    'content-security-policy': CSP,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    ...(api ? {'cache-control': 'no-store'} : {}),
  });
}

function registerAssets(app: FastifyInstance, dir: string | null): void {
  const assets = dir ? loadAssets(dir) : new Map();
  const send = (reply: FastifyReply, path: string): FastifyReply => {
    const a = assets.get(path);
    if (!a) {
      if (path === '/index.html') return reply.code(503).type('text/plain; charset=utf-8').send(NOT_BUILT);
      return reply.code(404).type('text/plain; charset=utf-8').send('Not found\n');
    }
    return reply
      .type(a.type)
      .header('cache-control', a.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .send(a.body);
  };
  const opts = {config: {access: 'public' as const}, schema: {hide: true}};
  app.get('/', opts, async (_req, reply) => send(reply, '/index.html'));
  app.get('/*', opts, async (req, reply) => {
    const path = req.url.split('?')[0] as string;
    if (path.startsWith('/api/')) return reply.code(404).send({error: {code: 'not_found', message: `no API route GET ${path}`}});
    return send(reply, path);
  });
}
