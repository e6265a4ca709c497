/**
 * The linked submit (docs/workflows.md): tasks with dependencies, or a batch with a callback,
 * validated as a whole and written in one transaction (HotPathStore.tasksInsertLinked), not
 * buffered: it resolves once they are durable, and bad input is refused before anything is written.
 */
import {invalid, errorMessage} from '../errors.js';
import type {Broker} from '../broker/types.js';
import type {Logger} from '../log.js';
import type {DueTask, HotPathStore, InsertResult} from '../store/types.js';
import {assertAcyclic} from '../task/links.js';
import type {NewTask, TaskSpec} from '../task/model.js';
import {type TaskDefaults, validateTaskSpec} from '../task/validate.js';

/** The most tasks one linked submit writes (one transaction). */
export const MAX_LINKED_TASKS = 100_000;

export interface SubmitBatchOptions {
  /**
   * Makes the tasks one batch: this task runs once, when every one of them ended (succeeded, dead
   * or cancelled), with `payload.batch` = {id, total, succeeded, dead, cancelled} added to its own
   * payload. No `after`, debounce or throttle, and its payload has no `batch` key of its own.
   */
  callback?: TaskSpec;
}

export interface SubmitBatchResult {
  /** The tasks' ids, in the order given (an id already stored with the same content is returned as well). */
  ids: string[];
  /** With a callback: the batch's id and the callback's. */
  batchId?: string;
  callbackId?: string;
  /** Tasks refused because their id or dedup key exists with other content (nothing written for them). */
  conflicts: InsertResult['conflicts'];
  /** Tasks written now, and found already stored with the same content. */
  inserted: number;
  existing: number;
}

export interface LinkedSubmitDeps {
  store: Pick<HotPathStore, 'tasksInsertLinked' | 'doorbellsMark'>;
  broker: Pick<Broker, 'publish'>;
  logger: Logger;
  defaults: TaskDefaults;
  actor: string;
  now: () => number;
  newId: () => string;
}

/**
 * Validates `specs` (and the callback) and writes them in one transaction, then rings the tasks due
 * at once. Throws invalid_input, nothing written, for: no tasks, more than MAX_LINKED_TASKS, a bad
 * task (named by its index), an id given twice, a cycle, a debounce or throttle (a gate could drop
 * or replace a task the others count on), a callback with `after` or a `batch` key, and (from the
 * store) a parent neither in the batch nor stored in this cell, or a batch task already stored.
 */
export async function submitLinked(
  d: LinkedSubmitDeps,
  specs: readonly TaskSpec[],
  opts: SubmitBatchOptions = {},
): Promise<SubmitBatchResult> {
  if (!Array.isArray(specs) || specs.length === 0) throw invalid('submitBatch needs at least one task');
  if (specs.length > MAX_LINKED_TASKS) throw invalid(`submitBatch takes at most ${MAX_LINKED_TASKS} tasks, got ${specs.length}`);
  const now = d.now();
  const tasks = specs.map((s, i) => validated(d, s, now, `task ${i}`));
  const ids = new Set<string>();
  for (const t of tasks) {
    if (ids.has(t.id)) throw invalid(`task ${t.id} is given twice in the batch`);
    ids.add(t.id);
  }
  assertAcyclic(tasks);
  let batch: {id: string; callback: NewTask} | undefined;
  if (opts.callback !== undefined) {
    const callback = validated(d, opts.callback, now, 'callback');
    if (callback.after) throw invalid('callback: a batch callback waits for its batch; give it no after');
    if (callback.runAtMs !== null || callback.delayMs !== 0)
      throw invalid('callback: a batch callback is due when its batch ended; give it no delay or runAt');
    if ('batch' in (JSON.parse(callback.payload) as object))
      throw invalid('callback: its payload gets a "batch" key when it runs; give it none');
    if (ids.has(callback.id)) throw invalid(`callback: task ${callback.id} is also in the batch`);
    batch = {id: d.newId(), callback};
  }
  const res = await d.store.tasksInsertLinked({tasks, actor: d.actor, ...(batch ? {batch} : {})});
  if (res.due.length > 0) await ring(d, res.due);
  const existing = new Map(res.existing.map((e) => [e.id, e.existingId]));
  return {
    ids: tasks.map((t) => existing.get(t.id) ?? t.id),
    ...(batch ? {batchId: batch.id, callbackId: batch.callback.id} : {}),
    conflicts: res.conflicts,
    inserted: res.inserted.length - (batch ? 1 : 0),
    existing: res.existing.length,
  };
}

function validated(d: LinkedSubmitDeps, spec: TaskSpec, now: number, what: string): NewTask {
  let t: NewTask;
  try {
    t = validateTaskSpec(spec, d.defaults, now, d.newId);
  } catch (e) {
    throw invalid(`${what}: ${errorMessage(e)}`);
  }
  if (t.debounce || t.throttle)
    throw invalid(`${what}: debounce and throttle are not for submitBatch (a gate could drop a task the others count on)`);
  return t;
}

/** Rings the due tasks and marks them; on failure the scheduler rings them (their rows are unrung). */
async function ring(d: LinkedSubmitDeps, due: DueTask[]): Promise<void> {
  try {
    await d.broker.publish(due.map((t) => ({id: t.id, type: t.type, pool: t.pool, priority: t.priority})));
    await d.store.doorbellsMark({rung: due.map((t) => ({id: t.id, fence: t.fence}))});
  } catch (e) {
    d.logger.warn('could not ring the tasks of a linked submit; the scheduler will', {tasks: due.length, error: errorMessage(e)});
  }
}
