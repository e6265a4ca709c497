/**
 * Batches in the admin service (ax batches, the SDK's batch(), GET /api/v1/batches): their progress
 * from the task_batches row — counts, done/total, the callback's state. Input is validated before
 * anything is opened (invalid_input).
 */
import {AxError, invalid} from '../errors.js';
import type {BatchInfo} from '../store/types.js';
import {isTaskId} from '../task/id.js';
import type {AdminSession} from './session.js';

/** The most batches one list returns. */
export const MAX_BATCHES_LIST = 1000;

export interface BatchesAdmin {
  /** The newest batches of the cell, at most `limit` (1 to MAX_BATCHES_LIST, default 50). */
  list(o?: {limit?: number}): Promise<BatchInfo[]>;
  /** One batch; throws invalid_input for a malformed id, not_found for an unknown one. */
  show(id: string): Promise<BatchInfo>;
}

export function createBatchesAdmin(s: AdminSession): BatchesAdmin {
  return {
    async list(o = {}) {
      const limit = o.limit ?? 50;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_BATCHES_LIST)
        throw invalid(`limit must be a whole number from 1 to ${MAX_BATCHES_LIST}`);
      return (await s.store()).batchesList({limit});
    },
    async show(id) {
      if (!isTaskId(id)) throw invalid(`batch id "${String(id)}" is not a lower-case UUID`);
      const b = await (await s.store()).batchGet(id);
      if (!b) throw new AxError('not_found', `no batch ${id} in cell ${s.ctx.config.cell}`);
      return b;
    },
  };
}

/** A batch as the CLI's --json and the HTTP API give it (dates as ISO strings, `done` = ended members). */
export interface BatchJson {
  id: string;
  total: number;
  /** Members ended so far (succeeded + dead + cancelled). */
  done: number;
  succeeded: number;
  dead: number;
  cancelled: number;
  callbackId: string;
  /** The callback's state now; null when its row is gone (archived). */
  callbackState: string | null;
  createdAt: string;
  /** When the last member ended (the callback was released then); null while members are left. */
  doneAt: string | null;
}

export function batchJson(b: BatchInfo): BatchJson {
  return {
    id: b.id,
    total: b.total,
    done: b.succeeded + b.dead + b.cancelled,
    succeeded: b.succeeded,
    dead: b.dead,
    cancelled: b.cancelled,
    callbackId: b.callbackId,
    callbackState: b.callbackState,
    createdAt: b.createdAt.toISOString(),
    doneAt: b.doneAt === null ? null : b.doneAt.toISOString(),
  };
}
