/** The human view of one task and its timeline, shared by `ax tasks show` and `ax dlq show`. */
import type {TaskLinks} from '../core/store/types.js';
import type {TaskDetail} from '../core/inspect/inspect.js';
import {attemptBudget, attemptText} from '../core/inspect/timeline.js';
import {oneLine, printable, table, when} from './render.js';

const PAYLOAD_PREVIEW = 400;

/**
 * The human view of a task: its row, then its timeline as a table (showTask: each attempt's start
 * on the worker it ran on, then its end); `stacks: 'last'` adds the
 * latest failed attempt's stack (`ax tasks show`), `'none'` leaves stacks to the caller.
 */
export function renderTask({task: t, history, links}: TaskDetail, opts: {stacks: 'last' | 'none'} = {stacks: 'last'}): string[] {
  const payload = JSON.stringify(t.payload);
  // A waiting task (parents or batch left) is submitted but not due: its run_at is a placeholder.
  const waiting = links !== undefined && t.state === 'submitted' && t.runAt.getUTCFullYear() >= 9999;
  const runAt = !waiting
    ? when(t.runAt)
    : links.waitingFor > 0
      ? `waiting for ${links.waitingFor} parent${links.waitingFor === 1 ? '' : 's'}`
      : 'waiting for its batch';
  const lines = [
    `${t.id}  ${t.type}  ${waiting ? 'SUBMITTED (waiting)' : t.state.toUpperCase()}`,
    `  pool ${t.pool} · priority ${t.priority} · ${attemptText(attemptBudget(t))} · timeout ${t.timeoutMs === null ? 'default' : `${t.timeoutMs} ms`} · cell ${t.cell}`,
    `  run at    ${runAt}    published ${when(t.publishedAt)}`,
    `  created   ${when(t.createdAt)}    updated   ${when(t.updatedAt)}    finished ${when(t.finishedAt)}`,
  ];
  if (t.worker !== null || t.leaseUntil !== null)
    lines.push(`  worker    ${t.worker ?? '-'}    started   ${when(t.startedAt)}    lease until ${when(t.leaseUntil)}`);
  if (t.dedupKey !== null) lines.push(`  dedup key ${printable(t.dedupKey)}`);
  if (t.key !== null) lines.push(`  key       ${printable(t.key)}`);
  if (t.trace) lines.push(`  trace     ${t.trace.traceparent} (\`ax trace ${t.id}\`)`);
  if (t.lastError !== null) lines.push(`  last error ${printable(t.lastError)}`);
  if (links) lines.push(...linkLines(links));
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

/** The most parents or dependents the human view lists (--json has all). */
const LINKS_SHOWN = 10;

/** A task's dependencies and batch, for renderTask. */
function linkLines(l: TaskLinks): string[] {
  const out: string[] = [];
  const list = (what: string, xs: Array<{id: string; type: string; state: string}>): void => {
    if (xs.length === 0) return;
    const shown = xs.slice(0, LINKS_SHOWN).map((x) => `${x.id} ${x.type} ${x.state}`);
    out.push(`  ${what.padEnd(9)} ${shown.join(', ')}${xs.length > LINKS_SHOWN ? `, … (${xs.length} in all; --json for all)` : ''}`);
  };
  list('parents', l.parents);
  if (l.onParentFailure === 'run') out.push('  on parent failure: run anyway');
  list('dependents', l.dependents);
  const b = l.batch;
  if (b)
    out.push(
      `  batch     ${b.id}  ${b.succeeded + b.dead + b.cancelled}/${b.total} ended (succeeded ${b.succeeded}, dead ${b.dead}, cancelled ${b.cancelled}) · callback ${b.callbackId} ${b.callbackState ?? '-'}`,
    );
  return out;
}
