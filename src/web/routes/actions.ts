/**
 * The console's actions (operator role; a browser session also needs its CSRF token): cancel,
 * replay and force replay of a task, bulk cancel/replay with a dry run first, dead-letter replay
 * as a background job with progress, and a type's pause, resume, breaker reset and limits. Each is
 * the admin service acting as the caller (`web:<name>@<address>`), so the audit trail names them.
 * Input is checked by the route's schema and then by the admin service: a bad request is a 400
 * and changes nothing.
 */
import type {TypeSetInput} from '../../core/types/admin.js';
import type {FastifyInstance} from 'fastify';
import type {Admin} from '../../core/admin/service.js';
import type {JsonObject} from '../../core/task/model.js';
import {WebError} from '../errors.js';
import {actor, ERRORS, type Handler, type RouteContext, S} from './context.js';

const REASON = S.str(1000, 'recorded in the history and the audit trail');
const RATE = {type: 'number', exclusiveMinimum: 0, description: 'tasks per second at most'};
/** What a type's action answers: at least the type's name. */
const TYPE_RESULT = S.obj({type: {type: 'string'}}, ['type']);
const FILTER = S.body({
  state: {type: 'string'},
  type: S.str(128),
  since: S.str(40),
  until: S.str(40),
  error: S.str(200),
  dedupKey: S.str(255),
  payload: S.str(300),
});

export function registerActions(app: FastifyInstance, ctx: RouteContext): void {
  const post = (url: string, schema: Record<string, unknown>, handler: Handler, method: 'POST' | 'PATCH' = 'POST'): void => {
    app.route({
      method,
      url,
      config: {access: 'operator'},
      schema: {...schema, response: {...ERRORS, ...((schema.response as object) ?? {})}},
      handler: handler as never,
    });
  };
  const idParams = S.body({id: S.id}, ['id']);
  const typeParams = S.body({type: S.str(128)}, ['type']);

  post(
    '/api/v1/tasks/:id/cancel',
    {
      tags: ['tasks'],
      summary: 'Cancel a submitted, failed or running task',
      params: idParams,
      querystring: S.query(),
      body: S.body({reason: REASON}),
      response: {200: S.obj({id: {type: 'string'}}, ['id'])},
    },
    async (req) => {
      const {reason} = (req.body ?? {}) as {reason?: string};
      return actor(ctx, req).tasks.cancel((req.params as {id: string}).id, {reason: reason ?? null});
    },
  );
  post(
    '/api/v1/tasks/:id/replay',
    {
      tags: ['tasks'],
      summary: 'Replay a dead task; with force, also a succeeded or cancelled one past the idempotency check (needs a reason)',
      params: idParams,
      querystring: S.query(),
      body: S.body({reason: REASON, force: S.bool}),
      response: {200: S.obj({replayed: {type: 'integer'}, skipped: {type: 'array'}}, ['replayed', 'skipped'])},
    },
    async (req) => {
      const {reason, force} = (req.body ?? {}) as {reason?: string; force?: boolean};
      const plan = await actor(ctx, req).dlq.plan({
        ids: [(req.params as {id: string}).id],
        force: force === true,
        reason: reason ?? null,
        command: 'web replay',
      });
      return plan.run();
    },
  );
  post(
    '/api/v1/tasks/bulk',
    {
      tags: ['tasks'],
      summary: 'Cancel or replay the selected tasks, or every task matching a filter (at most 10,000); dryRun counts first',
      querystring: S.query(),
      body: S.body(
        {
          action: {type: 'string', enum: ['cancel', 'replay']},
          ids: {type: 'array', items: S.id, maxItems: 10_000},
          filter: FILTER,
          reason: REASON,
          dryRun: S.bool,
          expect: {
            type: 'integer',
            minimum: 0,
            description: "the dry run's matched count: refused with 409 when the tasks matching now are more or fewer",
          },
        },
        ['action'],
      ),
      response: {
        200: S.obj({dryRun: {type: 'boolean'}, matched: {type: 'integer'}, actionable: {type: 'integer'}, byState: {type: 'object'}}, [
          'dryRun',
          'matched',
          'actionable',
          'byState',
        ]),
      },
    },
    async (req) => {
      const b = req.body as {
        action: 'cancel' | 'replay';
        ids?: string[];
        filter?: Record<string, string>;
        reason?: string;
        dryRun?: boolean;
        expect?: number;
      };
      const plan = await actor(ctx, req).tasks.planBulk({
        action: b.action,
        ...(b.ids === undefined ? {} : {ids: b.ids}),
        ...(b.filter === undefined ? {} : {filter: b.filter}),
        reason: b.reason ?? null,
        command: `web bulk ${b.action}`,
      });
      const counts = {matched: plan.matched, actionable: plan.actionable, byState: plan.byState};
      if (b.dryRun) return {dryRun: true, ...counts};
      // A filter matches anew at the confirm (a relative `since` moved, tasks came or went): act only
      // on what the operator was shown.
      if (b.expect !== undefined && b.expect !== plan.matched)
        throw new WebError(
          'conflict',
          `the selection now matches ${plan.matched} tasks, not the ${b.expect} of the dry run: run the dry run again`,
          {
            matched: plan.matched,
            expected: b.expect,
          },
        );
      return {dryRun: false, ...counts, ...(await plan.run())};
    },
  );

  post(
    '/api/v1/dlq/replay',
    {
      tags: ['dead letters'],
      summary: 'Replay dead tasks by id, filter or all, with an optional merge patch and rate: dryRun plans, else a job (202) to poll',
      querystring: S.query(),
      body: S.body({
        ids: {type: 'array', items: S.id, maxItems: 10_000},
        filter: S.body({type: S.str(128), since: S.str(40), until: S.str(40), error: S.str(200)}),
        all: S.bool,
        patch: {type: 'object', additionalProperties: true, description: 'a JSON Merge Patch (RFC 7396) applied to each payload'},
        rate: RATE,
        reason: REASON,
        dryRun: S.bool,
      }),
      response: {
        200: S.obj({dryRun: {type: 'boolean', enum: [true]}, plan: S.obj({total: {type: 'integer'}}, ['total'])}, ['dryRun', 'plan']),
        202: S.obj({dryRun: {type: 'boolean', enum: [false]}, plan: S.obj({total: {type: 'integer'}}, ['total']), job: {type: 'string'}}, [
          'dryRun',
          'plan',
          'job',
        ]),
      },
    },
    async (req, reply) => {
      const b = (req.body ?? {}) as {
        ids?: string[];
        filter?: Record<string, string>;
        all?: boolean;
        patch?: JsonObject;
        rate?: number;
        reason?: string;
        dryRun?: boolean;
        expect?: number;
      };
      const planned = await actor(ctx, req).dlq.plan({
        ...(b.ids === undefined ? {} : {ids: b.ids}),
        ...(b.filter === undefined ? {} : {filter: b.filter}),
        ...(b.all === undefined ? {} : {all: b.all}),
        ...(b.patch === undefined ? {} : {patch: b.patch}),
        ...(b.rate === undefined ? {} : {rate: b.rate}),
        reason: b.reason ?? null,
        command: 'web dlq replay',
      });
      if (b.dryRun) return {dryRun: true, plan: planned.plan};
      const job = ctx.jobs.start('dlq replay', planned.plan.total, (progress) => planned.run({onProgress: progress}));
      return reply.code(202).send({dryRun: false, plan: planned.plan, job: job.id});
    },
  );

  post(
    '/api/v1/types/:type/pause',
    {
      tags: ['types'],
      summary: 'Pause a type: workers stop claiming it; submits still wait',
      params: typeParams,
      querystring: S.query(),
      body: S.body({reason: REASON}),
      response: {200: TYPE_RESULT},
    },
    async (req) => actor(ctx, req).types.pause((req.params as {type: string}).type, ((req.body ?? {}) as {reason?: string}).reason ?? null),
  );
  // The two releases of parked tasks: a resume and a breaker reset, each with a reason and a rate.
  const releases: Array<{
    path: string;
    summary: string;
    run: (a: Admin, type: string, reason: string | null, rate: {rate?: number}) => Promise<unknown>;
  }> = [
    {
      path: 'resume',
      summary: 'Resume a paused type and release its parked tasks, at most `rate` per second',
      run: (a, type, reason, rate) => a.types.resume(type, {reason, ...rate}),
    },
    {
      path: 'breaker/reset',
      summary: "Close a type's breaker now and release what it parked",
      run: (a, type, reason, rate) => a.types.resetBreaker(type, reason, rate),
    },
  ];
  for (const r of releases)
    post(
      `/api/v1/types/:type/${r.path}`,
      {
        tags: ['types'],
        summary: r.summary,
        params: typeParams,
        querystring: S.query(),
        body: S.body({reason: REASON, rate: RATE}),
        response: {200: TYPE_RESULT},
      },
      async (req) => {
        const {reason, rate} = (req.body ?? {}) as {reason?: string; rate?: number};
        return r.run(actor(ctx, req), (req.params as {type: string}).type, reason ?? null, rate === undefined ? {} : {rate});
      },
    );
  post(
    '/api/v1/types/:type',
    {
      tags: ['types'],
      summary: "Set a type's cluster-wide limits (null clears one)",
      params: typeParams,
      querystring: S.query(),
      body: S.body({
        maxRunning: {type: 'integer', minimum: 1, nullable: true},
        rate: {
          anyOf: [{type: 'number', exclusiveMinimum: 0}, {type: 'string', maxLength: 40}, {type: 'null'}],
          description: 'tasks per second, or text like "100/s"; null clears it',
        },
        maxRunningPerKey: {type: 'integer', minimum: 1, nullable: true},
        ratePerKey: {
          anyOf: [{type: 'number', exclusiveMinimum: 0}, {type: 'string', maxLength: 40}, {type: 'null'}],
          description: 'tasks per second per task key, or text like "5/s"; null clears it',
        },
        fair: {type: 'boolean', description: 'claim due keyed tasks round-robin across keys'},
        keyWeights: {
          type: 'object',
          maxProperties: 1000,
          // Values checked by the admin service (a bad one is a 400 naming it), not here: with the
          // server's type coercion a schema of "1-100 or null" would turn a 0 into null (drop it).
          description: "fair-dispatch weight per key, a whole number 1-100; null drops a key's weight",
        },
      }),
      response: {200: TYPE_RESULT},
    },
    async (req) => {
      const b = (req.body ?? {}) as TypeSetInput;
      return actor(ctx, req).types.set((req.params as {type: string}).type, {
        ...(b.maxRunning === undefined ? {} : {maxRunning: b.maxRunning}),
        ...(b.rate === undefined ? {} : {rate: b.rate}),
        ...(b.maxRunningPerKey === undefined ? {} : {maxRunningPerKey: b.maxRunningPerKey}),
        ...(b.ratePerKey === undefined ? {} : {ratePerKey: b.ratePerKey}),
        ...(b.fair === undefined ? {} : {fair: b.fair}),
        ...(b.keyWeights === undefined ? {} : {keyWeights: b.keyWeights}),
      });
    },
    'PATCH',
  );
}
