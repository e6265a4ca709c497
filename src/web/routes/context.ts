/**
 * What every route of the console gets: the admin service, the auth state, the jobs, and the
 * helpers that pick the request's cell and act as its caller. Schemas shared by the routes too.
 */
import type {FastifyReply, FastifyRequest} from 'fastify';
import type {Admin} from '../../core/admin/service.js';
import type {Logger} from '../../core/log.js';
import type {LoginLimiter} from '../auth/login-limit.js';
import type {Sessions} from '../auth/sessions.js';
import type {TokenEntry} from '../auth/tokens.js';
import {WebError} from '../errors.js';
import type {Jobs} from '../jobs.js';
import type {OverviewProvider} from '../overview.js';

export interface RouteContext {
  admin: Admin;
  cells: readonly string[];
  sessions: Sessions;
  limiter: LoginLimiter;
  tokens: readonly TokenEntry[];
  jobs: Jobs;
  overview: OverviewProvider;
  logger: Logger;
  version: string;
  authRequired: boolean;
  cookie: {name: string; secure: boolean; maxAgeS: number};
}

/** A route's handler: its result is the JSON answer (or it sends through `reply`). */
export type Handler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The `?cell=` of a request, default the configured cell. */
export function cellOf(ctx: RouteContext, req: FastifyRequest): string {
  const cell = (req.query as {cell?: string} | undefined)?.cell;
  return cell === undefined || cell === '' ? ctx.admin.cell : cell;
}

/**
 * The admin service of the request's cell, for reads. Throws unauthorized when no caller was
 * identified (the server's hooks do that for every API route; this is the backstop), invalid_input
 * for an unknown cell.
 */
export function reader(ctx: RouteContext, req: FastifyRequest): Admin {
  if (!req.who) throw new WebError('unauthorized', 'sign in first');
  const cell = cellOf(ctx, req);
  return cell === ctx.admin.cell ? ctx.admin : ctx.admin.forCell(cell);
}

/** The audit trail's name of the caller: `web:<token or local name>@<client address>`. */
export function operatorOf(req: FastifyRequest): string {
  if (!req.who) throw new WebError('unauthorized', 'sign in first');
  return `web:${req.who.name}@${req.ip}`;
}

/** The admin service of the request's cell acting as its caller (every change audited with that name). */
export function actor(ctx: RouteContext, req: FastifyRequest): Admin {
  return reader(ctx, req).as(operatorOf(req));
}

/** 429 with the wait when `address` failed too many logins lately. */
export function refuseIfLimited(ctx: Pick<RouteContext, 'limiter'>, address: string): void {
  const wait = ctx.limiter.retryAfterMs(address);
  if (wait > 0) {
    const retryAfterS = Math.ceil(wait / 1000);
    throw new WebError('rate_limited', `too many failed logins from ${address}: try again in ${retryAfterS} s`, {retryAfterS});
  }
}

/** JSON schema pieces. */
export const S = {
  str: (maxLength = 1000, description?: string) => ({type: 'string', maxLength, ...(description ? {description} : {})}),
  id: {
    type: 'string',
    pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
    description: 'a task id (lower-case UUID)',
  },
  int: (minimum: number, maximum: number, description?: string) => ({
    type: 'integer',
    minimum,
    maximum,
    ...(description ? {description} : {}),
  }),
  bool: {type: 'boolean'},
  /** A querystring with `cell` and `props`; unknown parameters are refused. */
  query: (props: Record<string, unknown> = {}) => ({
    type: 'object',
    additionalProperties: false,
    properties: {cell: {type: 'string', maxLength: 64, description: 'the cell (default: AX_CELL)'}, ...props},
  }),
  body: (props: Record<string, unknown>, required: string[] = []) => ({
    type: 'object',
    additionalProperties: false,
    properties: props,
    required,
  }),
  /** A response documented loosely: an object with these fields (more may come). */
  obj: (props: Record<string, unknown> = {}, required: string[] = []) => ({
    type: 'object',
    properties: props,
    required,
    additionalProperties: true,
  }),
  error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {code: {type: 'string'}, message: {type: 'string'}, details: {type: 'object', additionalProperties: true}},
      },
    },
  },
};

/** Responses every route may give besides its success. */
export const ERRORS = {
  400: S.error,
  401: S.error,
  403: S.error,
  404: S.error,
  409: S.error,
  413: S.error,
  415: S.error,
  429: S.error,
  503: S.error,
};
