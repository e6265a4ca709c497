/**
 * Submitting in the admin service: a one-shot producer (`ax submit`, later the HTTP API). Each task
 * goes to the cell of its type (AX_CELLS), whatever cell the service is on, unless `pinned`: the
 * caller named this cell, and a task of another cell's type is refused instead of routed.
 */
import {requireCellOfTypes} from '../cells/cells.js';
import type {TaskSpec} from '../task/model.js';
import {validateTaskSpec} from '../task/validate.js';
import type {AdminSession} from './session.js';
import type {SubmitBatchOptions, SubmitBatchResult} from '../producer/linked.js';
import {AxError, invalid} from '../errors.js';

/** What a submit wrote. */
export interface SubmitReport {
  /**
   * One id per task, in input order (with an id or dedup key: the id a re-submit finds again; a
   * throttled task: the id of the task its key's window kept).
   */
  ids: string[];
  inserted: number;
  existing: number;
  /** Written but not yet rung for; the reconciler publishes them later. */
  unpublished: number;
  /** Tasks not written because their throttle's window was open (see FlushReport); absent when none. */
  throttled?: Array<{id: string; keptId: string; key: string}>;
}

export interface ProducerAdmin {
  /**
   * Validates every spec as the producer will, then (`pinned`) that every type belongs to this
   * cell — invalid_input and nothing opened or written when one fails — then submits them in
   * order and flushes. Throws conflict for an id or dedup key reused with other content, and
   * unavailable when MySQL or RabbitMQ cannot be reached or MySQL stays unavailable longer than
   * AX_QUERY_TIMEOUT (the tasks flushed before are written).
   */
  submit(specs: TaskSpec[], o?: {pinned?: boolean}): Promise<SubmitReport>;
  /**
   * Tasks that may depend on each other, and with `callback` one batch (see AxClient.submitBatch):
   * one transaction, refused as a whole (invalid_input, nothing written) on bad input. `submit`
   * takes this path too when a task has `after`.
   */
  submitBatch(specs: TaskSpec[], o?: SubmitBatchOptions & {pinned?: boolean}): Promise<SubmitBatchResult>;
}

export function createProducerAdmin(s: AdminSession): ProducerAdmin {
  const {ctx} = s;
  return {
    async submit(specs, o = {}) {
      const c = ctx.config;
      const defaults = {maxRetries: c.maxRetries, payloadLimitBytes: c.payloadLimitBytes, cell: c.cell};
      const nowMs = ctx.clock.now();
      for (const spec of specs) validateTaskSpec(spec, defaults, nowMs, () => '00000000-0000-7000-8000-000000000000');
      if (o.pinned) requireCellOfTypes(ctx.cells, c.cell, new Set(specs.map((x) => x.type)));
      if (specs.some((x) => x.after !== undefined)) {
        const r = await (await s.producer()).submitBatch(specs);
        if (r.conflicts.length > 0) throw new AxError('conflict', r.conflicts.map((x) => x.reason).join('; '));
        return {ids: r.ids, inserted: r.inserted, existing: r.existing, unpublished: 0};
      }
      const client = await s.producer();
      const ids: string[] = [];
      for (const spec of specs) ids.push(await client.submit(spec));
      const report = await client.flush();
      const out: SubmitReport = {ids, inserted: report.inserted, existing: report.existing, unpublished: report.unpublished};
      if (report.throttled && report.throttled.length > 0) {
        const kept = new Map(report.throttled.map((x) => [x.id, x.keptId]));
        out.ids = ids.map((id) => kept.get(id) ?? id);
        out.throttled = report.throttled;
      }
      return out;
    },
    async submitBatch(specs, o = {}) {
      const {pinned, ...opts} = o;
      if (!Array.isArray(specs) || specs.length === 0) throw invalid('a batch needs at least one task');
      const types = new Set([...specs, ...(opts.callback ? [opts.callback] : [])].map((x) => x?.type));
      if (pinned) requireCellOfTypes(ctx.cells, ctx.config.cell, types as Set<string>);
      return (await s.producer()).submitBatch(specs, opts);
    },
  };
}
