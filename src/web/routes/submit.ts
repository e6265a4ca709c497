/**
 * Submitting over HTTP (producer or operator role), for services without the Node SDK or the
 * outbox: one task, or up to MAX_HTTP_BATCH in one request, validated as the SDK validates them
 * (type, payload size, delay or runAt, dedup key…) — one bad task refuses the whole request and
 * nothing is written. Answers 201 once every task is durable in MySQL (ids in input order; a
 * dedup key or id given again answers the existing task's id, a throttled task the kept task's,
 * listed in `throttled`).
 */
import type {FastifyInstance} from 'fastify';
import type {TaskSpec} from '../../core/task/model.js';
import {WebError} from '../errors.js';
import {ERRORS, reader, type RouteContext, S} from './context.js';

export const MAX_HTTP_BATCH = 500;

/** A debounce or throttle: {key, window}; the rules (key, window ≤ 24 h, exclusions) are validateTaskSpec's. */
const GATE = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'window'],
  properties: {
    key: S.str(255),
    window: {
      anyOf: [
        {type: 'integer', minimum: 0},
        {type: 'string', maxLength: 40},
      ],
      description: 'ms or a duration like 5s, at most 24h',
    },
  },
};

const SPEC = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: S.str(128, 'domain_action'),
    payload: {type: 'object', additionalProperties: true},
    delay: {
      anyOf: [
        {type: 'integer', minimum: 0},
        {type: 'string', maxLength: 40},
      ],
      description: 'ms or a duration like 5s',
    },
    runAt: {type: 'string', maxLength: 40, description: 'ISO-8601 time with an offset'},
    pool: {type: 'string', enum: ['io', 'cpu']},
    priority: {type: 'string', enum: ['high', 'normal', 'low']},
    maxRetries: {type: 'integer', minimum: 0},
    timeout: {
      anyOf: [
        {type: 'integer', minimum: 1},
        {type: 'string', maxLength: 40},
      ],
    },
    dedupKey: S.str(255),
    key: S.str(255),
    debounce: GATE,
    throttle: GATE,
    id: S.id,
    after: {type: 'array', items: S.id, maxItems: 100, description: 'ids of tasks (this cell) to wait for'},
    onParentFailure: {type: 'string', enum: ['cancel', 'run']},
  },
};

export function registerSubmit(app: FastifyInstance, ctx: RouteContext): void {
  app.post(
    '/api/v1/tasks',
    {
      config: {access: 'producer'},
      schema: {
        tags: ['submit'],
        summary: `Submit one task, or {"tasks": [...]} (at most ${MAX_HTTP_BATCH}); 201 when durable`,
        querystring: S.query(),
        body: {
          type: 'object',
          properties: {...SPEC.properties, tasks: {type: 'array', items: SPEC, minItems: 1}},
          additionalProperties: false,
        },
        response: {
          ...ERRORS,
          201: S.obj({
            id: {type: 'string'},
            ids: {type: 'array', items: {type: 'string'}},
            inserted: {type: 'integer'},
            existing: {type: 'integer'},
            throttled: {
              type: 'array',
              description: 'tasks not written because their throttle window was open, with the kept task (its id is in ids)',
              items: S.obj({id: {type: 'string'}, keptId: {type: 'string'}, key: {type: 'string'}}),
            },
          }),
        },
      },
    },
    async (req, reply) => {
      const body = req.body as TaskSpec & {tasks?: TaskSpec[]};
      const batch = body.tasks !== undefined;
      if (batch && Object.keys(body).length > 1) throw new WebError('invalid_input', 'give one task, or {"tasks": [...]} alone');
      if (!batch && body.type === undefined) throw new WebError('invalid_input', 'a task needs a type (or send {"tasks": [...]})');
      const specs = batch ? (body.tasks as TaskSpec[]) : [body];
      if (specs.length > MAX_HTTP_BATCH)
        throw new WebError('invalid_input', `at most ${MAX_HTTP_BATCH} tasks per request (got ${specs.length})`);
      const r = await reader(ctx, req).producer.submit(specs, {pinned: (req.query as {cell?: string}).cell !== undefined});
      const counts = {inserted: r.inserted, existing: r.existing, ...(r.throttled ? {throttled: r.throttled} : {})};
      return reply.code(201).send(batch ? {ids: r.ids, ...counts} : {id: r.ids[0], ...counts});
    },
  );
  app.post(
    '/api/v1/batches',
    {
      config: {access: 'producer'},
      schema: {
        tags: ['batches'],
        summary: `Submit {"tasks": [...], "callback": {...}} (at most ${MAX_HTTP_BATCH} tasks) as one batch; 201 when durable`,
        querystring: S.query(),
        body: {
          type: 'object',
          required: ['tasks', 'callback'],
          properties: {tasks: {type: 'array', items: SPEC, minItems: 1}, callback: SPEC},
          additionalProperties: false,
        },
        response: {
          ...ERRORS,
          201: S.obj({batchId: {type: 'string'}, callbackId: {type: 'string'}, ids: {type: 'array', items: {type: 'string'}}}),
        },
      },
    },
    async (req, reply) => {
      const body = req.body as {tasks: TaskSpec[]; callback: TaskSpec};
      if (body.tasks.length > MAX_HTTP_BATCH)
        throw new WebError('invalid_input', `at most ${MAX_HTTP_BATCH} tasks per request (got ${body.tasks.length})`);
      const r = await reader(ctx, req).producer.submitBatch(body.tasks, {
        callback: body.callback,
        pinned: (req.query as {cell?: string}).cell !== undefined,
      });
      if (r.conflicts.length > 0) throw new WebError('conflict', r.conflicts.map((c) => c.reason).join('; '));
      return reply.code(201).send({batchId: r.batchId, callbackId: r.callbackId, ids: r.ids});
    },
  );
}
