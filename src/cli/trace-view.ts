/** The human view and the --json form of `ax trace`. */
import type {TaskTrace, TraceEvent} from '../core/inspect/trace.js';
import {oneLine, printable, table, when} from './render.js';

/** A trace event for --json output: its time as an ISO string. */
export interface TraceEventJson extends Omit<TraceEvent, 'at'> {
  at: string;
}

/** `ax trace --json`: the trace with ISO times. */
export interface TaskTraceJson extends Omit<TaskTrace, 'events'> {
  events: TraceEventJson[];
}

export function traceJson(t: TaskTrace): TaskTraceJson {
  return {...t, events: t.events.map((e) => ({...e, at: e.at.toISOString()}))};
}

/** The task, its trace context, then its timeline as a table (text only: nothing of a task is markup). */
export function renderTrace(t: TaskTrace): string[] {
  const lines = [`${t.taskId}  ${printable(t.type)}  ${t.state.toUpperCase()}${t.archived === null ? '' : `  (archived: ${t.archived})`}`];
  if (t.trace === null) lines.push('  trace     none (submitted outside any trace)');
  else {
    lines.push(`  trace id  ${t.traceId ?? '-'}`, `  traceparent ${t.trace.traceparent}`);
    if (t.trace.tracestate !== null) lines.push(`  tracestate  ${printable(t.trace.tracestate)}`);
  }
  lines.push('', 'timeline (UTC)');
  const rows = t.events.map((e) => [
    when(e.at),
    e.stage,
    printable(e.what),
    e.attempt === null ? '' : String(e.attempt),
    e.by ?? '-',
    oneLine(e.error),
  ]);
  lines.push(...table(['TIME', 'STAGE', 'WHAT', 'ATTEMPT', 'BY', 'ERROR / REASON'], rows, {indent: '  ', keep: [4]}));
  return lines;
}
