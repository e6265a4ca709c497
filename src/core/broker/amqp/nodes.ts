/**
 * Connecting to one node of several: AX_AMQP_URL may list the nodes of one RabbitMQ cluster
 * (src/core/config/amqp-urls.ts). Every connect and reconnect tries them in turn and keeps the first
 * that works; the broker adapter (broker.ts) picks where a round starts.
 */
import {AxError, errorMessage, isAxError} from '../../errors.js';
import type {Random} from '../../time.js';

/** One URL that could not be used in a round, and why. */
export interface NodeFailure {
  url: string;
  index: number;
  error: unknown;
}

/**
 * Where the first round starts: a random node (from the injected `random`), so that processes
 * started together spread their connections over the cluster instead of all taking the first node.
 */
export function firstNode(count: number, random: Random): number {
  if (count <= 1) return 0;
  return Math.min(count - 1, Math.max(0, Math.floor(random() * count)));
}

/** Where the round after losing node `lost` starts: the next node, so the one just lost is tried last. */
export const nodeAfter = (lost: number, count: number): number => (lost + 1) % count;

/**
 * Runs `attempt` on the URLs in turn, from index `start` round the list, and returns the first
 * success with its index. Each failure is reported to `onFailure` before the next URL is tried. An
 * AxError other than 'unavailable' (RabbitMQ refused ax's topology: the same on every node of a
 * cluster) ends the round at once, thrown as is. When every URL fails, throws noLiveNode(failures).
 */
export async function connectFirstLive<T>(
  urls: readonly string[],
  start: number,
  attempt: (url: string, index: number) => Promise<T>,
  onFailure: (f: NodeFailure) => void = () => undefined,
): Promise<{value: T; index: number}> {
  if (urls.length === 0) throw new AxError('internal', 'no RabbitMQ URL to connect to');
  const failures: NodeFailure[] = [];
  for (let k = 0; k < urls.length; k++) {
    const index = (start + k) % urls.length;
    const url = urls[index]!;
    try {
      return {value: await attempt(url, index), index};
    } catch (error) {
      if (isAxError(error) && error.code !== 'unavailable') throw error;
      const f = {url, index, error};
      failures.push(f);
      onFailure(f);
    }
  }
  throw noLiveNode(failures);
}

/**
 * The error of a round in which no URL could be used. One URL: its error as is. Several: the first
 * refusal (reason access_denied or permission_denied: a wait will not fix it, and the operator must
 * see it rather than a list of unreachable nodes), else AxError('unavailable', reason `unreachable`,
 * scope `amqp`) naming each node's failure (messages whose URLs are already redacted), caused by the last one.
 */
export function noLiveNode(failures: readonly NodeFailure[]): unknown {
  if (failures.length === 1) return failures[0]!.error;
  const refused = failures.find(
    (f) =>
      isAxError(f.error, 'unavailable') && (f.error.details?.reason === 'access_denied' || f.error.details?.reason === 'permission_denied'),
  );
  if (refused) return refused.error;
  const last = failures[failures.length - 1]!.error;
  return new AxError(
    'unavailable',
    `none of the ${failures.length} RabbitMQ nodes could be used: ${failures.map((f) => errorMessage(f.error)).join('; ')}`,
    {cause: last, details: {reason: 'unreachable', scope: 'amqp'}},
  );
}
