/**
 * Signing in and out of the console. A login takes a token of AX_WEB_TOKENS and sets the session
 * cookie (HttpOnly, SameSite=Strict, Secure when configured); its CSRF token is in the answer for
 * the page. Failed logins are logged and rate-limited per client address (429 with Retry-After).
 * Without tokens configured (loopback only) GET makes a session for the local operator.
 */
import type {FastifyInstance, FastifyReply, FastifyRequest} from 'fastify';
import {findToken} from '../auth/tokens.js';
import type {Session} from '../auth/sessions.js';
import {WebError} from '../errors.js';
import {ERRORS, refuseIfLimited, type RouteContext, S} from './context.js';

const SESSION = S.obj(
  {
    authenticated: {type: 'boolean'},
    authRequired: {type: 'boolean'},
    name: {type: 'string', nullable: true},
    role: {type: 'string', nullable: true, enum: ['viewer', 'operator', 'producer', null]},
    csrf: {type: 'string', nullable: true},
    expiresAt: {type: 'string', nullable: true},
    cell: {type: 'string'},
    cells: {type: 'array', items: {type: 'string'}},
    version: {type: 'string'},
  },
  ['authenticated', 'authRequired', 'name', 'role', 'csrf', 'cell', 'cells'],
);

export function registerSession(app: FastifyInstance, ctx: RouteContext): void {
  const view = (s: Session | null, anonymousName: string | null = null): Record<string, unknown> => ({
    authenticated: s !== null,
    authRequired: ctx.authRequired,
    name: s?.name ?? anonymousName,
    role: s?.role ?? null,
    csrf: s?.csrf ?? null,
    expiresAt: s ? new Date(s.expiresAt).toISOString() : null,
    cell: ctx.admin.cell,
    cells: ctx.cells,
    version: ctx.version,
  });
  const setCookie = (reply: FastifyReply, s: Session): void => {
    void reply.setCookie(ctx.cookie.name, s.id, {
      httpOnly: true,
      sameSite: 'strict',
      secure: ctx.cookie.secure,
      path: '/',
      maxAge: ctx.cookie.maxAgeS,
    });
  };
  const tags = ['session'];

  app.get(
    '/api/v1/session',
    {
      config: {access: 'public'},
      schema: {tags, summary: 'Who is signed in (and the CSRF token for changes)', response: {...ERRORS, 200: SESSION}},
    },
    async (req: FastifyRequest, reply) => {
      const who = req.who;
      if (who?.via === 'session' && who.session) return view(who.session);
      if (who?.via === 'local') {
        // No tokens configured: the browser gets a session of the local operator, for its CSRF token.
        const s = ctx.sessions.create({name: who.name, role: who.role});
        setCookie(reply, s);
        return view(s);
      }
      if (who?.via === 'token') return {...view(null, who.name), authenticated: true, role: who.role};
      return view(null);
    },
  );

  app.post(
    '/api/v1/session',
    {
      config: {access: 'public'},
      schema: {
        tags,
        summary: 'Sign in with a token: sets the session cookie',
        body: S.body({token: S.str(200, 'a token of AX_WEB_TOKENS')}, ['token']),
        response: {...ERRORS, 200: SESSION},
      },
    },
    async (req, reply) => {
      refuseIfLimited(ctx, req.ip);
      const {token} = req.body as {token: string};
      const entry = findToken(ctx.tokens, token);
      if (!entry) {
        ctx.limiter.failed(req.ip);
        ctx.logger.warn('web: failed login', {client: req.ip});
        throw new WebError(
          'unauthorized',
          ctx.authRequired ? 'that token is not one of AX_WEB_TOKENS' : 'no tokens are configured: the console needs no login',
        );
      }
      ctx.sessions.remove(req.cookies[ctx.cookie.name]);
      const s = ctx.sessions.create({name: entry.name, role: entry.role});
      setCookie(reply, s);
      ctx.logger.info('web: signed in', {client: req.ip, name: entry.name, role: entry.role});
      return view(s);
    },
  );

  app.delete(
    '/api/v1/session',
    {
      config: {access: 'public'},
      schema: {tags, summary: 'Sign out: ends the session', response: {...ERRORS, 204: {type: 'null', description: 'signed out'}}},
    },
    async (req, reply) => {
      ctx.sessions.remove(req.cookies[ctx.cookie.name]);
      void reply.clearCookie(ctx.cookie.name, {path: '/'});
      return reply.code(204).send();
    },
  );
}
