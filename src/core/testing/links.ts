/**
 * The dependency fields of a submit in the test client (TaskSpec.after, onParentFailure), checked
 * by the rules of the real submit: what needs no store here, whether the parents exist in the
 * client's own submit.
 */
import {invalid} from '../errors.js';
import {isTaskId} from '../task/id.js';

/** What a parent ending dead or cancelled does to its dependents: cancel them (default) or run them anyway. */
export type ParentFailurePolicy = 'cancel' | 'run';

/** The most parents a task may wait for. */
export const MAX_TEST_PARENTS = 100;

/** A spec without its dependency fields, and those fields checked (no `after`: an empty list). */
export interface SplitSpec {
  rest: unknown;
  after: string[];
  policy: ParentFailurePolicy;
}

/**
 * Takes `after` and `onParentFailure` out of a spec and checks them as the real submit does: a
 * non-empty list of at most MAX_TEST_PARENTS distinct task ids, exclusive with delay, runAt,
 * debounce and throttle; a policy only with `after`, `cancel` or `run`. Throws invalid_input.
 */
export function splitDependencies(spec: unknown): SplitSpec {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return {rest: spec, after: [], policy: 'cancel'};
  const {after, onParentFailure, ...rest} = spec as Record<string, unknown>;
  if (after === undefined) {
    if (onParentFailure !== undefined) throw invalid('onParentFailure is only for a task with after');
    return {rest, after: [], policy: 'cancel'};
  }
  if (!Array.isArray(after) || after.length === 0) throw invalid('after must be a non-empty list of task ids');
  if (after.length > MAX_TEST_PARENTS) throw invalid(`after names ${after.length} tasks: a task waits for at most ${MAX_TEST_PARENTS}`);
  for (const a of after as unknown[]) if (!isTaskId(a)) throw invalid(`after: "${String(a)}" is not a task id (a lower-case UUID)`);
  if (new Set(after).size !== after.length) throw invalid('after names a task twice');
  for (const f of ['delay', 'runAt', 'debounce', 'throttle'])
    if (rest[f] !== undefined) throw invalid(`give either after or ${f}, not both: a dependent is due when its last parent succeeded`);
  const policy = onParentFailure ?? 'cancel';
  if (policy !== 'cancel' && policy !== 'run') throw invalid('onParentFailure must be cancel or run');
  return {rest, after: [...(after as string[])], policy};
}

/**
 * Refuses (invalid_input) a task that waits for itself, a parent neither in `batch` nor known, and
 * a cycle among the tasks of `batch` (id → its parents): the tasks of one submit may name each
 * other in any order, stored tasks never wait for later ones.
 */
export function checkLinks(batch: ReadonlyMap<string, readonly string[]>, known: (id: string) => boolean): void {
  const waiting = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const [id, after] of batch) {
    let inBatch = 0;
    for (const p of after) {
      if (p === id) throw invalid(`task ${p} waits for itself`);
      if (batch.has(p)) {
        inBatch++;
        dependents.set(p, [...(dependents.get(p) ?? []), id]);
      } else if (!known(p)) throw invalid(`after: unknown task ${p}`);
    }
    waiting.set(id, inBatch);
  }
  // Kahn's order: whatever is never freed is on a cycle.
  const free = [...waiting].filter(([, n]) => n === 0).map(([id]) => id);
  let freed = 0;
  for (let id = free.pop(); id !== undefined; id = free.pop()) {
    freed++;
    for (const d of dependents.get(id) ?? []) {
      const n = (waiting.get(d) as number) - 1;
      waiting.set(d, n);
      if (n === 0) free.push(d);
    }
  }
  if (freed < batch.size)
    throw invalid(`the batch's dependencies have a cycle through task ${[...waiting].find(([, n]) => n > 0)?.[0] ?? '?'}`);
}
