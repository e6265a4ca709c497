/**
 * Dead letters in the admin service: list, show, stats, and replay as plan → (confirm) → run. The
 * CLI (`ax dlq`), `ax top`, the SDK (`client.dlq`) and the HTTP API call these; they differ only in
 * how they ask for a confirmation and show progress. Every call validates its input first
 * (invalid_input, nothing read or changed), and throws not_found, conflict or unavailable as the
 * functions of core/dlq say.
 */
import {archivedAt} from '../archive/admin.js';
import type {SignatureRow} from '../dlq/signature.js';
import {
  type DeadDetail,
  type DeadFilterInput,
  type DeadPage,
  deadStats,
  listDead,
  MAX_DLQ_LIMIT,
  parseDeadFilter,
  showDead,
} from '../dlq/dlq.js';
import {planReplay, type ReplayPlan, type ReplayResult, runReplay} from '../dlq/replay.js';
import {parseReplayRequest, type ReplayRequestInput} from '../dlq/replay-request.js';
import {invalid} from '../errors.js';
import {isTaskId} from '../task/id.js';
import type {JsonObject} from '../task/model.js';
import type {AdminSession} from './session.js';

/** What to replay, as the SDK names it: ids, or a filter (`all: true` for every dead task). */
export type ReplayInput = {ids: string[]} | (DeadFilterInput & {all?: boolean});

export interface ReplayOptions {
  /** Recorded in history and the audit trail. */
  reason?: string;
  /** Tasks per second at most. */
  rate?: number;
  /** Only count what would be replayed. */
  dryRun?: boolean;
  /** Also succeeded/cancelled tasks named by id; needs `reason`; the handler sees ctx.replay (see ReplayOptions in replay.ts). */
  force?: boolean;
  /** A JSON Merge Patch (RFC 7396) for each selected payload (ids or filter); one invalid result refuses the whole replay. */
  patch?: JsonObject;
}

/** A replay request as a command line or form gives it (see parseReplayRequest), and who asks. */
export type ReplayRequest = Omit<ReplayRequestInput, 'payloadLimitBytes'> & {
  /** The audit row's command: `dlq replay`, `top replay`, `sdk dlq.replay`, … */
  command: string;
};

/** A checked and counted replay: nothing has changed yet. */
export interface PlannedReplay {
  readonly plan: ReplayPlan;
  /** Replays what the plan selected (see runReplay); `onProgress` after each batch. */
  run(o?: {onProgress?: (done: number, total: number) => void}): Promise<ReplayResult>;
}

export interface DlqAdmin {
  /**
   * Dead tasks, newest death first (`limit` 1 to MAX_DLQ_LIMIT, default 50); `after` is the previous
   * page's `next`. Throws invalid_input for a bad filter, limit or malformed `after` (nothing
   * opened), not_found when `after` is no task.
   */
  list(filter?: DeadFilterInput, page?: {limit?: number | undefined; after?: string | undefined}): Promise<DeadPage>;
  /**
   * A dead task, each attempt's error and stack, and its history. Throws invalid_input for a
   * malformed id (nothing opened), not_found for an unknown one — naming `ax archive show` when the
   * archive holds it (as tasks.show; no archive configured: not looked at), conflict when it is not dead.
   */
  show(id: string): Promise<DeadDetail>;
  /** Dead tasks per type × error signature, the largest groups first. */
  stats(filter?: DeadFilterInput): Promise<SignatureRow[]>;
  /**
   * Checks the request (parseReplayRequest), the operator (AX_OPERATOR), then counts what it
   * selects (planReplay). RabbitMQ is opened only when the plan runs.
   */
  plan(req: ReplayRequest): Promise<PlannedReplay>;
  /** Plans and runs a replay at once (no confirmation); with `dryRun`, the plan only. */
  replay(what: ReplayInput, opts?: ReplayOptions): Promise<ReplayPlan | ReplayResult>;
}

export function createDlqAdmin(s: AdminSession): DlqAdmin {
  const {ctx} = s;
  const plan = async (req: ReplayRequest): Promise<PlannedReplay> => {
    const {command, ...input} = req;
    const {sel, opts, rate} = parseReplayRequest({...input, payloadLimitBytes: ctx.config.payloadLimitBytes}, ctx.clock.now());
    const operator = ctx.operator();
    const store = await s.store();
    const planned = await planReplay(store, sel, opts);
    return {
      plan: planned,
      run: async (o = {}) =>
        runReplay(
          {
            store,
            broker: await s.broker(),
            clock: ctx.clock,
            logger: ctx.logger,
            actor: ctx.actor,
            operator,
            reason: opts.reason ?? null,
            command,
            force: opts.force === true,
            ...(rate === undefined ? {} : {rate}),
            ...(o.onProgress === undefined ? {} : {onProgress: o.onProgress}),
          },
          sel,
          planned,
        ),
    };
  };
  return {
    async list(filter = {}, page = {}) {
      const f = parseDeadFilter(filter, ctx.clock.now());
      const limit = page.limit ?? 50;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DLQ_LIMIT)
        throw invalid(`limit must be a whole number from 1 to ${MAX_DLQ_LIMIT}`);
      if (page.after !== undefined && !isTaskId(page.after)) throw invalid(`--after "${page.after}" is not a task id (a lower-case UUID)`);
      return listDead(await s.store(), f, {limit, after: page.after});
    },
    async show(id) {
      if (!isTaskId(id)) throw invalid(`"${id}" is not a task id (a lower-case UUID)`);
      const store = await s.store();
      // archivedAt never throws; a session without an archive (the SDK's) throws opening it: not looked at.
      const pointer = async (i: string): Promise<string | null> => archivedAt(s.archiveTarget(), ctx.config.cell, i);
      return showDead(store, id, {archivedAt: (i) => pointer(i).catch(() => null)});
    },
    stats: async (filter = {}) => {
      const f = parseDeadFilter(filter, ctx.clock.now());
      return deadStats(await s.store(), f);
    },
    plan,
    async replay(what, o = {}) {
      const {ids, all, ...filter} = {ids: undefined, all: undefined, ...what};
      const p = await plan({
        ...(ids === undefined ? {filter, ...(all === undefined ? {} : {all})} : {ids}),
        force: o.force === true,
        reason: o.reason ?? null,
        ...(o.patch === undefined ? {} : {patch: o.patch}),
        ...(o.rate === undefined ? {} : {rate: o.rate}),
        command: 'sdk dlq.replay',
      });
      return o.dryRun ? p.plan : p.run();
    },
  };
}
