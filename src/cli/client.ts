import {disposable} from './dispose.js';
import {openClient, type Runtime} from './runtime.js';
import type {AxClient} from '../core/client.js';
import type {TaskSpec} from '../core/task/model.js';

/**
 * A producer client for a one-shot command (`ax submit`): RabbitMQ without reconnecting, and a
 * client that gives up (AxError('unavailable'), exit 5) when MySQL stays unavailable longer than
 * AX_QUERY_TIMEOUT, so the command always ends. `await using` closes it (flushing first); errors
 * while closing are dropped, the command's own error is what matters. Throws AxError('unavailable')
 * when MySQL or RabbitMQ cannot be reached (nothing is left open then).
 */
export async function openCommandClient(rt: Runtime): Promise<AxClient & AsyncDisposable> {
  return disposable(await openClient(rt, {reconnect: false, giveUpAfterMs: rt.config.queryTimeoutMs}));
}

/** The `--json` output of `ax submit`. */
export interface SubmitResult {
  /** One id per task, in input order (with --id or --dedup-key: the id a re-submit finds again). */
  ids: string[];
  inserted: number;
  existing: number;
  /** Written but not yet rung for; the reconciler publishes them later. */
  unpublished: number;
}

/** Submits every spec in order, then flushes: the ids and what the flush wrote. */
export async function submitAll(client: AxClient, specs: TaskSpec[]): Promise<SubmitResult> {
  const ids: string[] = [];
  for (const spec of specs) ids.push(await client.submit(spec));
  const report = await client.flush();
  return {ids, inserted: report.inserted, existing: report.existing, unpublished: report.unpublished};
}
