/** Batches as `ax batches list/show` print them (--json: BatchJson). */
import type {BatchInfo} from '../core/store/types.js';

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
