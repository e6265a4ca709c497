/**
 * Dead letters in the admin service: list, show, stats, and replay as plan → (confirm) → run. The
 * CLI (`ax dlq`), `ax top`, the SDK (`client.dlq`) and the HTTP API call these; they differ only in
 * how they ask for a confirmation and show progress. Every call validates its input first
 * (invalid_input, nothing read or changed), and throws not_found, conflict or unavailable as the
 * functions of core/dlq say.
 */
import type {SignatureRow} from '../dlq/signature.js';
import {type DeadDetail, type DeadFilterInput, type DeadPage, deadStats, listDead, parseDeadFilter, showDead} from '../dlq/dlq.js';
import {planReplay, type ReplayPlan, type ReplayResult, runReplay} from '../dlq/replay.js';
import {parseReplayRequest, type ReplayRequestInput} from '../dlq/replay-request.js';
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
  /** Dead tasks, newest death first; `after` is the previous page's `next`. */
  list(filter?: DeadFilterInput, page?: {limit?: number; after?: string}): Promise<DeadPage>;
  /** A dead task, each attempt's error and stack, and its history; conflict when it is not dead. */
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
    list: async (filter = {}, page = {}) =>
      listDead(await s.store(), parseDeadFilter(filter, ctx.clock.now()), {limit: page.limit ?? 50, after: page.after}),
    show: async (id) => showDead(await s.store(), id),
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
