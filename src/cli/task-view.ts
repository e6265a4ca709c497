/** The human view of one task and its timeline, shared by `ax tasks show` and `ax dlq show`. */
import type {TaskDetail} from '../core/inspect/inspect.js';
import {attemptBudget, attemptText} from '../core/inspect/timeline.js';
import {oneLine, printable, table, when} from './render.js';

const PAYLOAD_PREVIEW = 400;

/**
 * The human view of a task: its row, then its timeline as a table (showTask: each attempt's start
 * on the worker it ran on, then its end); `stacks: 'last'` adds the
 * latest failed attempt's stack (`ax tasks show`), `'none'` leaves stacks to the caller.
 */
export function renderTask({task: t, history}: TaskDetail, opts: {stacks: 'last' | 'none'} = {stacks: 'last'}): string[] {
  const payload = JSON.stringify(t.payload);
  const lines = [
    `${t.id}  ${t.type}  ${t.state.toUpperCase()}`,
    `  pool ${t.pool} · priority ${t.priority} · ${attemptText(attemptBudget(t))} · timeout ${t.timeoutMs === null ? 'default' : `${t.timeoutMs} ms`} · cell ${t.cell}`,
    `  run at    ${when(t.runAt)}    published ${when(t.publishedAt)}`,
    `  created   ${when(t.createdAt)}    updated   ${when(t.updatedAt)}    finished ${when(t.finishedAt)}`,
  ];
  if (t.worker !== null || t.leaseUntil !== null)
    lines.push(`  worker    ${t.worker ?? '-'}    started   ${when(t.startedAt)}    lease until ${when(t.leaseUntil)}`);
  if (t.dedupKey !== null) lines.push(`  dedup key ${printable(t.dedupKey)}`);
  if (t.key !== null) lines.push(`  key       ${printable(t.key)}`);
  if (t.trace) lines.push(`  trace     ${t.trace.traceparent} (\`ax trace ${t.id}\`)`);
  if (t.lastError !== null) lines.push(`  last error ${printable(t.lastError)}`);
  lines.push(
    `  payload   ${payload.length > PAYLOAD_PREVIEW ? `${payload.slice(0, PAYLOAD_PREVIEW)}… (${payload.length} chars; --json for all)` : payload}`,
  );
  if (typeof t.progress === 'number')
    lines.push(`  progress  ${t.progress}%${t.progressNote ? ` · ${printable(t.progressNote)}` : ''}    at ${when(t.progressAt)}`);
  if (t.result !== undefined && t.result !== null) {
    const result = JSON.stringify(t.result);
    lines.push(
      `  result    ${result.length > PAYLOAD_PREVIEW ? `${result.slice(0, PAYLOAD_PREVIEW)}… (${result.length} chars; --json for all)` : result}`,
    );
  }
  lines.push('', 'history (UTC)');
  const rows = history.map((h) => [when(h.at), `${h.from ?? '·'} → ${h.to}`, String(h.attempt), h.worker ?? '-', oneLine(h.error)]);
  lines.push(...table(['TIME', 'TRANSITION', 'ATTEMPT', 'BY', 'ERROR / REASON'], rows, {indent: '  ', keep: [3]}));
  // The latest failed attempt's stack (first lines, as stored); --json has every attempt's.
  const last = opts.stacks === 'last' ? history.findLast((h) => h.stack !== null) : undefined;
  if (last?.stack) lines.push('', `stack of attempt ${last.attempt}`, ...last.stack.split('\n').map((l) => `  ${printable(l)}`));
  return lines;
}
