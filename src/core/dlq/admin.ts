/**
 * The SDK's dead-letter API (client.dlq): the same operations as `ax dlq`, with the same
 * validation and errors (invalid_input, not_found, conflict, unavailable).
 */
import type {Broker} from '../broker/types.js';
import type {Logger} from '../log.js';
import type {TaskStore} from '../store/types.js';
import type {Clock} from '../time.js';
import type {JsonObject} from '../task/model.js';
import type {SignatureRow} from './signature.js';
import {type DeadDetail, type DeadFilterInput, type DeadPage, deadStats, listDead, parseDeadFilter, showDead} from './dlq.js';
import {planReplay, type ReplayPlan, type ReplayResult, runReplay} from './replay.js';
import {parseReplayRequest} from './replay-request.js';

/** What to replay: ids, or a filter (`all: true` for every dead task). */
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

export interface DlqAdmin {
  /** Dead tasks, newest death first; `after` is the previous page's `next`. */
  list(filter?: DeadFilterInput, page?: {limit?: number; after?: string}): Promise<DeadPage>;
  /** A dead task, each attempt's error and stack, and its history; conflict when it is not dead. */
  show(id: string): Promise<DeadDetail>;
  /** Dead tasks per type × error signature, the largest groups first. */
  stats(filter?: DeadFilterInput): Promise<SignatureRow[]>;
  /** Replays dead tasks (see runReplay); with `dryRun`, the plan only. No confirmation is asked. */
  replay(what: ReplayInput, opts?: ReplayOptions): Promise<ReplayPlan | ReplayResult>;
}

export interface DlqAdminParts {
  store: TaskStore;
  broker: Pick<Broker, 'publish'>;
  clock: Clock;
  logger: Logger;
  actor: string;
  /** Throws invalid_input when AX_OPERATOR is bad. */
  operator: () => string;
  /** The largest payload a --patch may produce (config payloadLimitBytes). */
  payloadLimitBytes: number;
}

export function createDlqAdmin(p: DlqAdminParts): DlqAdmin {
  return {
    list: (filter = {}, page = {}) =>
      listDead(p.store, parseDeadFilter(filter, p.clock.now()), {limit: page.limit ?? 50, after: page.after}),
    show: (id) => showDead(p.store, id),
    stats: (filter = {}) => deadStats(p.store, parseDeadFilter(filter, p.clock.now())),
    async replay(what, o = {}) {
      const {ids, all, ...filter} = {ids: undefined, all: undefined, ...what};
      const {sel, opts, rate} = parseReplayRequest(
        {
          ...(ids === undefined ? {filter, ...(all === undefined ? {} : {all})} : {ids}),
          force: o.force === true,
          reason: o.reason ?? null,
          ...(o.patch === undefined ? {} : {patch: o.patch}),
          ...(o.rate === undefined ? {} : {rate: o.rate}),
          payloadLimitBytes: p.payloadLimitBytes,
        },
        p.clock.now(),
      );
      const operator = p.operator();
      const plan = await planReplay(p.store, sel, opts);
      if (o.dryRun) return plan;
      return runReplay(
        {
          ...p,
          operator,
          reason: opts.reason ?? null,
          command: 'sdk dlq.replay',
          force: opts.force === true,
          ...(rate === undefined ? {} : {rate}),
        },
        sel,
        plan,
      );
    },
  };
}
