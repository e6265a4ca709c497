/**
 * `ax trace <id>`: one task's path through ax as one timeline, from what ax stores — the task row
 * (its creation: by a producer or relayed from the outbox by a relay; its latest doorbell), its
 * history (claims, attempts, every other transition: timeline.ts), and the archive when the task
 * has been moved there, and its links (the parents it waited for, the dependents and batch its end
 * settled: docs/workflows.md) — with the W3C trace context its submit carried (traceparent, trace id),
 * which names the trace an OpenTelemetry backend holds for it.
 *
 * What ax does not store is not shown: an outbox row's own times (the business database's rows
 * are purged once sent), each doorbell but the latest, a claim that was refused (it leaves a
 * deferral in the history, shown as a transition).
 */
import {AxError, invalid} from '../errors.js';
import type {ArchivedTask, ArchivedValue, TaskLinks} from '../store/types.js';
import {isTaskId} from '../task/id.js';
import type {HistoryEntry, TaskRecord} from '../task/model.js';
import type {TaskState} from '../task/state.js';
import {type TraceContext, traceContextOf, traceIdOf} from '../trace-context.js';
import {timeline} from './timeline.js';

/** Where an event of the trace comes from in ax's path. */
export type TraceStage = 'outbox' | 'insert' | 'publish' | 'claim' | 'attempt' | 'transition' | 'dependents' | 'archive';

export interface TraceEvent {
  at: Date;
  stage: TraceStage;
  /** What happened, in words (`attempt 1 succeeded`, `relayed from the outbox`, …). */
  what: string;
  /** The process (host:pid, a relay's or worker's id) that did it, when known. */
  by: string | null;
  /** The attempt it belongs to (claims and attempts), else null. */
  attempt: number | null;
  /** The error or reason recorded with it, else null. */
  error: string | null;
}

export interface TaskTrace {
  taskId: string;
  type: string;
  state: TaskState;
  /** The trace context of its submit (null: submitted outside any trace). */
  trace: TraceContext | null;
  /** The trace id of `trace` (32 hex digits), else null. */
  traceId: string | null;
  /** `day/part` of the archive part holding it, when it is no longer in the live tables; else null. */
  archived: string | null;
  /** Oldest first. */
  events: TraceEvent[];
}

/** A relay's own actor (core/outbox/relay.ts: `relay:<host>:<pid>` unless given an id). */
const isRelay = (by: string | null): boolean => by !== null && by.startsWith('relay');

/**
 * The trace of a task from its row and stored history rows (see the module comment); `archived`
 * says where the archive holds it (its `day/part` and when the part was written); `links` (live
 * tasks only) adds the parents it waited for, and the dependents and batch its end settled, in the
 * transaction of that end.
 */
export function traceOf(
  task: TaskRecord,
  rows: readonly HistoryEntry[],
  archived?: {at: Date; part: string},
  links?: TaskLinks | null,
): TaskTrace {
  const events: TraceEvent[] = [];
  const ev = (at: Date, stage: TraceStage, what: string, by: string | null, attempt: number | null = null, error: string | null = null) =>
    events.push({at, stage, what, by, attempt, error});
  for (const h of timeline(task, rows)) {
    if (h.from === null && h.to === 'submitted') {
      if (isRelay(h.worker)) ev(h.at, 'outbox', 'relayed from the outbox', h.worker);
      ev(h.at, 'insert', 'submitted: inserted into the tasks table', h.worker);
    } else if (h.to === 'running') ev(h.at, 'claim', `claimed: attempt ${h.attempt} started`, h.worker, h.attempt);
    else if (h.from === 'running' && h.attempt > 0 && h.startedAt !== null)
      ev(h.at, 'attempt', `attempt ${h.attempt} ended: ${h.to}`, h.worker, h.attempt, h.error);
    else ev(h.at, 'transition', `${h.from ?? '(none)'} → ${h.to}`, h.worker, h.from === 'running' ? h.attempt : null, h.error);
  }
  if (task.publishedAt !== null) ev(task.publishedAt, 'publish', 'doorbell published (the latest)', null);
  if (links) linkEvents(task, links, ev);
  if (archived) ev(archived.at, 'archive', `archived (${archived.part})`, null);
  // Stable: events at the same instant keep the order the path gives them.
  const order = events.map((e, i) => ({e, i})).sort((a, b) => a.e.at.getTime() - b.e.at.getTime() || a.i - b.i);
  const trace = task.trace ?? null;
  return {
    taskId: task.id,
    type: task.type,
    state: task.state,
    trace,
    traceId: trace ? traceIdOf(trace) : null,
    archived: archived?.part ?? null,
    events: order.map((x) => x.e),
  };
}

/** The events of a task's links: its parents at its insert, its dependents and batch at its end. */
function linkEvents(task: TaskRecord, links: TaskLinks, ev: (at: Date, stage: TraceStage, what: string, by: string | null) => void): void {
  if (links.parents.length > 0) {
    const list = links.parents.map((p) => `${p.id} (${p.type}, ${p.edge})`).join(', ');
    ev(task.createdAt, 'dependents', `waits for ${links.parents.length} parent(s): ${list}`, null);
  }
  // A dependent or batch is settled in the transaction that ends the task: at its finish.
  if (task.finishedAt === null) return;
  for (const d of links.dependents)
    ev(task.finishedAt, 'dependents', `dependent ${d.id} (${d.type}) settled by this end: now ${d.state}`, null);
  const b = links.batch;
  if (b && b.doneAt !== null && b.callbackId !== task.id && Math.abs(b.doneAt.getTime() - task.finishedAt.getTime()) < 1)
    ev(b.doneAt, 'dependents', `batch ${b.id} complete with this end: callback ${b.callbackId} released`, null);
}

const date = (v: ArchivedValue | undefined): Date | null => (typeof v === 'string' ? new Date(v) : null);
const text = (v: ArchivedValue | undefined): string | null => (typeof v === 'string' ? v : null);

/** An archived task (its column maps: docs/archive.md) as the row and history rows traceOf reads. */
export function fromArchived(a: ArchivedTask): {task: TaskRecord; rows: HistoryEntry[]} {
  const t = a.task;
  const trace = traceContextOf(t.traceparent, t.tracestate);
  const task = {
    id: String(t.id),
    type: String(t.type),
    state: t.state as TaskState,
    attempt: Number(t.attempt ?? 0),
    worker: text(t.worker),
    startedAt: date(t.started_at),
    submittedBy: text(t.submitted_by),
    publishedAt: date(t.published_at),
    createdAt: date(t.created_at) ?? new Date(0),
    ...(trace ? {trace} : {}),
  } as TaskRecord;
  const rows = a.history.map((h): HistoryEntry => ({
    taskId: task.id,
    from: (text(h.from_state) as TaskState | null) ?? null,
    to: h.to_state as TaskState,
    attempt: Number(h.attempt ?? 0),
    worker: text(h.worker),
    at: date(h.at) ?? new Date(0),
    error: text(h.error),
    stack: text(h.stack),
    startedAt: date(h.started_at),
  }));
  return {task, rows};
}

/** Throws invalid_input unless `id` is a task id (a lower-case UUID). */
export function checkTraceId(id: string): void {
  if (!isTaskId(id)) throw invalid(`"${id}" is not a task id (a lower-case UUID)`);
}

/** The not_found of an id neither live nor archived. */
export const unknownTask = (id: string): AxError => new AxError('not_found', `task ${id} does not exist (neither live nor archived)`);
