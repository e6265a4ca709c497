/**
 * The dependency fields of a submit in the test client (TaskSpec.after, onParentFailure), checked
 * by the rules of the real submit: what needs no store here, whether the parents exist in the
 * client's own submit.
 */
import {invalid} from '../errors.js';
import type {NewTask} from '../task/model.js';

/** What a parent ending dead or cancelled does to its dependents: cancel them (default) or run them anyway. */
export type ParentFailurePolicy = 'cancel' | 'run';

/** A validated task's parents and policy (checked by validateTaskSpec, as in the real submit); none: an empty list. */
export function dependenciesOf(n: NewTask): {after: string[]; policy: ParentFailurePolicy} {
  return {after: n.after ?? [], policy: n.onParentFailure ?? 'cancel'};
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
