/**
 * The console's read routes (viewer role): overview, types, tasks and a task, dead letters, cron,
 * workers, doctor, audit and the progress of a job; a task's trace. Each is one admin-service call; the answer is
 * its result as JSON (dates as ISO strings). Big payloads are left out of lists and task pages
 * (`payloadTruncated`) and fetched on demand from /tasks/{id}/payload.
 */
import type {FastifyInstance} from 'fastify';
import {isAxError} from '../../core/errors.js';
import type {TaskRecord} from '../../core/task/model.js';
import {WebError} from '../errors.js';
import {batchJson} from '../../core/admin/batches.js';
import {ERRORS, type Handler, reader, type RouteContext, S} from './context.js';

/** Payloads longer than this (JSON characters) are left out of lists and the task page. */
export const PAYLOAD_INLINE_CHARS = 16_384;

const SINCE = S.str(40, 'a duration back from now (15m, 2d) or an ISO time');
const TASK_FILTER = {
  state: {type: 'string', enum: ['submitted', 'running', 'succeeded', 'failed', 'dead', 'cancelled']},
  type: S.str(128, 'the task type'),
  since: SINCE,
  until: S.str(40, 'created before: a duration back from now or an ISO time'),
  error: S.str(200, 'a substring of the last error'),
  dedupKey: S.str(255, 'the dedup key'),
  key: S.str(255, 'the task key (who the task is for, e.g. tenant:42)'),
  payload: S.str(300, 'field=value (needs since): the payload field equals the value'),
};
const TASK = S.obj({id: {type: 'string'}, type: {type: 'string'}, state: {type: 'string'}, payloadTruncated: {type: 'boolean'}}, [
  'id',
  'type',
  'state',
]);

/** A task for the API: its payload left out when it is big (see PAYLOAD_INLINE_CHARS). */
export function taskJson(t: TaskRecord): Record<string, unknown> {
  const size = JSON.stringify(t.payload).length;
  if (size <= PAYLOAD_INLINE_CHARS) return {...t, payloadTruncated: false};
  return {...t, payload: null, payloadTruncated: true, payloadChars: size};
}

export function registerReads(app: FastifyInstance, ctx: RouteContext): void {
  const get = (url: string, schema: Record<string, unknown>, handler: Handler): void => {
    app.get(url, {schema: {...schema, response: {...ERRORS, ...((schema.response as object) ?? {})}}}, handler as never);
  };

  get(
    '/api/v1/overview',
    {
      tags: ['overview'],
      summary: 'Counts per state, rates, backlog, alerts, workers and the last hour as series',
      querystring: S.query(),
      response: {
        200: S.obj(
          {
            cell: {type: 'string'},
            alert: S.obj({level: {type: 'string'}, reason: {type: 'string'}}, ['level', 'reason']),
            backlog: {type: 'object', nullable: true, additionalProperties: true},
            workers: {type: 'object', additionalProperties: true},
          },
          ['cell', 'alert', 'backlog', 'workers'],
        ),
      },
    },
    async (req) => ctx.overview.get(reader(ctx, req)),
  );

  get(
    '/api/v1/types',
    {
      tags: ['types'],
      summary: 'Every task type: backlog, flow control, limits, and rate, failure % and p95 from the live workers',
      querystring: S.query(),
      response: {
        200: S.obj(
          {
            at: {type: 'string'},
            types: {
              type: 'array',
              items: S.obj(
                {
                  type: {type: 'string'},
                  due: {type: 'integer'},
                  delayed: {type: 'integer'},
                  waiting: {type: 'integer', description: 'of delayed: waiting for their parents or their batch'},
                  running: {type: 'integer'},
                  dead: {type: 'integer'},
                  limits: {type: 'object'},
                  breaker: {type: 'object'},
                },
                ['type', 'due', 'delayed', 'waiting', 'running', 'dead', 'limits', 'breaker'],
              ),
            },
          },
          ['at', 'types'],
        ),
      },
    },
    async (req) => {
      const admin = reader(ctx, req);
      const [list, top] = await Promise.all([admin.types.list(), ctx.overview.top(admin)]);
      const live = new Map(top.types.map((t) => [t.type, t]));
      return {
        at: list.at,
        types: list.types.map((t) => {
          const r = live.get(t.type);
          return {...t, rate: r?.rate ?? null, failurePct: r?.failurePct ?? null, p95Ms: r?.p95Ms ?? null};
        }),
      };
    },
  );
  get(
    '/api/v1/types/:type',
    {
      tags: ['types'],
      summary: 'One type with its flow-control history and its task keys (top keys by backlog and running, a dominant key)',
      params: S.body({type: S.str(128)}, ['type']),
      querystring: S.query(),
      response: {
        200: S.obj({type: {type: 'string'}, history: {type: 'array'}, limits: {type: 'object'}, keys: {type: 'object'}}, [
          'type',
          'history',
          'limits',
          'keys',
        ]),
      },
    },
    async (req) => reader(ctx, req).types.show((req.params as {type: string}).type),
  );

  get(
    '/api/v1/tasks',
    {
      tags: ['tasks'],
      summary: 'Search tasks, newest first (keyset pages: pass `next` as `after`)',
      querystring: S.query({...TASK_FILTER, limit: S.int(1, 1000), after: S.id}),
      response: {200: S.obj({tasks: {type: 'array', items: TASK}, next: {type: 'string', nullable: true}}, ['tasks', 'next'])},
    },
    async (req) => {
      const {cell: _c, ...q} = req.query as Record<string, string | number | undefined>;
      const page = await reader(ctx, req).tasks.list(q);
      return {tasks: page.tasks.map(taskJson), next: page.next};
    },
  );
  get(
    '/api/v1/tasks/:id',
    {
      tags: ['tasks'],
      summary: 'A task and its timeline; an archived id answers from the archive (archived: true)',
      params: S.body({id: S.id}, ['id']),
      querystring: S.query(),
      response: {
        200: S.obj(
          {
            task: {type: 'object', additionalProperties: true},
            history: {type: 'array'},
            archived: {type: 'boolean'},
            links: {type: 'object', additionalProperties: true},
          },
          ['task', 'history', 'archived'],
        ),
      },
    },
    async (req) => {
      const {id} = req.params as {id: string};
      const admin = reader(ctx, req);
      try {
        const d = await admin.tasks.show(id);
        return {task: taskJson(d.task), history: d.history, archived: false, ...(d.links ? {links: d.links} : {})};
      } catch (e) {
        if (!isAxError(e, 'not_found') || !e.details?.archived) throw e;
        const found = await admin.archive.show(id);
        return {task: found.archived.task, history: found.archived.history, archived: true, part: found.part};
      }
    },
  );
  get(
    '/api/v1/tasks/:id/trace',
    {
      tags: ['tasks'],
      summary: "A task's path through ax as one timeline (outbox, insert, publish, claims, attempts, archive) with its trace id",
      params: S.body({id: S.id}, ['id']),
      querystring: S.query(),
      response: {
        200: S.obj(
          {
            taskId: {type: 'string'},
            type: {type: 'string'},
            state: {type: 'string'},
            trace: {type: 'object', nullable: true, additionalProperties: true},
            traceId: {type: 'string', nullable: true},
            archived: {type: 'string', nullable: true},
            events: {type: 'array'},
          },
          ['taskId', 'type', 'state', 'trace', 'traceId', 'archived', 'events'],
        ),
      },
    },
    async (req) => reader(ctx, req).tasks.trace((req.params as {id: string}).id),
  );
  get(
    '/api/v1/tasks/:id/payload',
    {
      tags: ['tasks'],
      summary: "A task's whole payload",
      params: S.body({id: S.id}, ['id']),
      querystring: S.query(),
      response: {200: {type: 'object', additionalProperties: true}},
    },
    async (req) => (await reader(ctx, req).tasks.show((req.params as {id: string}).id, {archive: false})).task.payload,
  );

  const BATCH = S.obj(
    {
      id: {type: 'string'},
      total: {type: 'integer'},
      done: {type: 'integer'},
      succeeded: {type: 'integer'},
      dead: {type: 'integer'},
      cancelled: {type: 'integer'},
      callbackId: {type: 'string'},
      callbackState: {type: 'string', nullable: true},
      createdAt: {type: 'string'},
      doneAt: {type: 'string', nullable: true},
    },
    ['id', 'total', 'done', 'succeeded', 'dead', 'cancelled', 'callbackId', 'callbackState', 'createdAt', 'doneAt'],
  );
  get(
    '/api/v1/batches',
    {
      tags: ['batches'],
      summary: 'Batches with a callback, newest first: done/total, counts, the callback state',
      querystring: S.query({limit: S.int(1, 1000)}),
      response: {200: S.obj({batches: {type: 'array', items: BATCH}}, ['batches'])},
    },
    async (req) => ({batches: (await reader(ctx, req).batches.list({limit: (req.query as {limit?: number}).limit ?? 50})).map(batchJson)}),
  );
  get(
    '/api/v1/batches/:id',
    {
      tags: ['batches'],
      summary: "A batch's progress",
      params: S.body({id: S.id}, ['id']),
      querystring: S.query(),
      response: {200: BATCH},
    },
    async (req) => batchJson(await reader(ctx, req).batches.show((req.params as {id: string}).id)),
  );

  const DEAD_FILTER = {type: S.str(128), since: SINCE, until: S.str(40), error: S.str(200)};
  get(
    '/api/v1/dlq',
    {
      tags: ['dead letters'],
      summary: 'Dead tasks, newest death first',
      querystring: S.query({...DEAD_FILTER, limit: S.int(1, 1000), after: S.id}),
      response: {
        200: S.obj(
          {
            tasks: {type: 'array', items: S.obj({id: {type: 'string'}, type: {type: 'string'}}, ['id', 'type'])},
            next: {type: 'string', nullable: true},
          },
          ['tasks', 'next'],
        ),
      },
    },
    async (req) => {
      const {cell: _c, limit, after, ...filter} = req.query as Record<string, string | undefined> & {limit?: number};
      return reader(ctx, req).dlq.list(filter, {limit, after});
    },
  );
  get(
    '/api/v1/dlq/groups',
    {
      tags: ['dead letters'],
      summary: 'Dead tasks per type and error signature, the largest groups first',
      querystring: S.query(DEAD_FILTER),
      response: {
        200: S.obj(
          {
            groups: {
              type: 'array',
              items: S.obj({type: {type: 'string'}, signature: {type: 'string'}, count: {type: 'integer'}}, ['type', 'signature', 'count']),
            },
          },
          ['groups'],
        ),
      },
    },
    async (req) => {
      const {cell: _c, ...filter} = req.query as Record<string, string | undefined>;
      return {groups: await reader(ctx, req).dlq.stats(filter)};
    },
  );

  get(
    '/api/v1/cron',
    {
      tags: ['cron'],
      summary: 'Cron schedules with their next and last fire',
      querystring: S.query(),
      response: {200: S.obj({schedules: {type: 'array', items: S.obj({name: {type: 'string'}}, ['name'])}}, ['schedules'])},
    },
    async (req) => ({
      schedules: await reader(ctx, req).cron.overview(),
    }),
  );
  get(
    '/api/v1/workers',
    {
      tags: ['workers'],
      summary: 'Live workers, and stale or stopped ones seen within `since`',
      querystring: S.query({since: S.str(40), all: S.bool}),
      response: {200: S.obj({workers: {type: 'array'}, counts: {type: 'object'}}, ['workers', 'counts'])},
    },
    async (req) => {
      const {since, all} = req.query as {since?: string; all?: boolean};
      return reader(ctx, req).workers.list({...(since === undefined ? {} : {since}), ...(all ? {all} : {})});
    },
  );
  get(
    '/api/v1/doctor',
    {
      tags: ['doctor'],
      summary: 'The troubleshooting checks: findings, evidence and the next step',
      querystring: S.query({since: SINCE}),
      response: {200: S.obj({since: {type: 'string'}, report: {type: 'object', additionalProperties: true}}, ['since', 'report'])},
    },
    async (req) => {
      const {since} = req.query as {since?: string};
      return reader(ctx, req).doctor.check(since === undefined ? {} : {since});
    },
  );
  get(
    '/api/v1/audit',
    {
      tags: ['audit'],
      summary: 'The audit trail, newest first',
      querystring: S.query({limit: S.int(1, 1000), after: S.int(1, Number.MAX_SAFE_INTEGER)}),
      response: {
        200: S.obj(
          {
            entries: {
              type: 'array',
              items: S.obj({id: {type: 'integer'}, operator: {type: 'string'}, command: {type: 'string'}}, ['id', 'operator', 'command']),
            },
            next: {type: 'integer', nullable: true},
          },
          ['entries', 'next'],
        ),
      },
    },
    async (req) => {
      const {limit, after} = req.query as {limit?: number; after?: number};
      return reader(ctx, req).audit.list({limit, after});
    },
  );
  get(
    '/api/v1/payload-indexes',
    {
      tags: ['tasks'],
      summary: 'The payload fields searched by index (ax payload-index): a search by one of them reads only its matches',
      querystring: S.query(),
      response: {
        200: S.obj(
          {
            fields: {
              type: 'array',
              items: S.obj({field: {type: 'string'}, state: {type: 'string', enum: ['building', 'ready']}}, ['field', 'state']),
            },
          },
          ['fields'],
        ),
      },
    },
    async (req) => ({
      fields: (await reader(ctx, req).payloadIndexes.list()).map((x) => ({
        field: x.field,
        state: x.state,
        createdAt: x.createdAt.toISOString(),
        createdBy: x.createdBy,
      })),
    }),
  );
  get(
    '/api/v1/jobs/:id',
    {
      tags: ['jobs'],
      summary: 'The progress of a long action started here (a replay)',
      params: S.body({id: S.str(64)}, ['id']),
      response: {
        200: S.obj(
          {
            id: {type: 'string'},
            state: {type: 'string', enum: ['running', 'done', 'failed']},
            done: {type: 'integer'},
            total: {type: 'integer'},
          },
          ['id', 'state', 'done', 'total'],
        ),
      },
    },
    async (req) => {
      const job = ctx.jobs.get((req.params as {id: string}).id);
      if (!job) throw new WebError('not_found', 'no such job (jobs are kept an hour after they end, and not across restarts)');
      return job;
    },
  );
}
