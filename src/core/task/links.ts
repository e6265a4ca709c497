/**
 * Dependencies and batches as the core sees them (docs/workflows.md): the flags a task row carries
 * (tasks.links), what a handler sees of its parents (ctx.parents), and the checks of a linked
 * submit that need no database (cycles and parents within the batch).
 */
import {invalid} from '../errors.js';
import type {JsonValue, NewTask} from './model.js';

/** tasks.links bits. */
export const LINK_DEPENDENTS = 1;
export const LINK_PARENTS = 2;
export const LINK_MEMBER = 4;
export const LINK_CALLBACK = 8;

/** A parent as the handler of its dependent sees it (TaskContext.parents). */
export interface ParentInfo {
  type: string;
  state: 'succeeded' | 'dead' | 'cancelled';
  /** What the parent's succeeded attempt returned (TaskResult.success(result)); null: none, or it did not succeed. */
  result: JsonValue | null;
}

/** A parent row as read for ctx.parents (HotPathStore.parentsOf). */
export interface ParentRow {
  child: string;
  parent: string;
  type: string;
  state: string;
  /** The parent's stored result (tasks.result_json, parsed), null when none. */
  result: JsonValue | null;
}

/**
 * The ctx.parents of each child from the rows read for them (ended parents only: a dependent runs
 * once all ended), with their results.
 */
export function parentsOf(rows: readonly ParentRow[]): Map<string, Record<string, ParentInfo>> {
  const out = new Map<string, Record<string, ParentInfo>>();
  for (const r of rows) {
    if (r.state !== 'succeeded' && r.state !== 'dead' && r.state !== 'cancelled') continue;
    const m = out.get(r.child) ?? {};
    m[r.parent] = {type: r.type, state: r.state, result: r.result};
    out.set(r.child, m);
  }
  return out;
}

/**
 * Refuses (invalid_input) a cycle among `tasks` (only possible within one submit: a stored task
 * never waits for a later one) and a task that waits for itself.
 */
export function assertAcyclic(tasks: readonly NewTask[]): void {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const state = new Map<string, 1 | 2>(); // 1: on the path, 2: done
  for (const start of tasks) {
    if (state.has(start.id)) continue;
    // Iterative depth-first search: a chain of thousands must not overflow the stack.
    const stack: Array<{id: string; next: number}> = [{id: start.id, next: 0}];
    state.set(start.id, 1);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const after = byId.get(top.id)?.after ?? [];
      if (top.next >= after.length) {
        state.set(top.id, 2);
        stack.pop();
        continue;
      }
      const p = after[top.next++]!;
      if (p === top.id) throw invalid(`task ${p} waits for itself`);
      if (!byId.has(p)) continue;
      const s = state.get(p);
      if (s === 1) throw invalid(`the batch's dependencies have a cycle through task ${p}`);
      if (s === undefined) {
        state.set(p, 1);
        stack.push({id: p, next: 0});
      }
    }
  }
}
