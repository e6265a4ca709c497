/**
 * The text of `ax top`'s drill-down and workers views as plain lines of a given width: the newest
 * tasks of a type (as `ax tasks list --type` lists them, with their last progress), a task and its
 * timeline (as `ax tasks show` renders it: progress and result included), one line per worker (as
 * `ax workers`). Pure. Task ids are never cut; text that comes from a task (errors, payload, progress
 * notes) is made printable and cut to the width.
 */
import {formatRate} from '../../cli/format.js';
import {clip, printable, when} from '../../cli/render.js';
import {renderTask} from '../../cli/task-view.js';
import {formatDuration} from '../../core/duration.js';
import type {TaskDetail} from '../../core/inspect/inspect.js';
import type {TopWorker} from '../../core/inspect/top.js';
import type {TaskRecord} from '../../core/task/model.js';
import {fit} from './layout.js';

const ID_WIDTH = 36;

/** The PROG cell: the last progress reported (`42%`), blank when none. */
const progressCell = (t: TaskRecord): string => (typeof t.progress === 'number' ? `${t.progress}%` : '').padStart(4);

/**
 * A head and one line per task: ID (whole), STATE, ATTEMPT, PROG (last progress), UPDATED, LAST
 * ERROR (cut to what is left).
 */
export function taskListLines(tasks: readonly TaskRecord[], width: number): string[] {
  const w = width - 2;
  const head = `${'ID'.padEnd(ID_WIDTH)} ${'STATE'.padEnd(9)} ${'ATT'.padStart(3)} PROG ${'UPDATED (UTC)'.padEnd(19)} LAST ERROR`;
  const errW = Math.max(0, w - (ID_WIDTH + 1 + 9 + 1 + 3 + 1 + 4 + 1 + 19 + 1));
  const line = (t: TaskRecord): string =>
    `${t.id.padEnd(ID_WIDTH)} ${t.state.padEnd(9)} ${String(t.attempt).padStart(3)} ${progressCell(t)} ${when(t.updatedAt, {seconds: true}).padEnd(19)} ${clip(t.lastError, errW)}`
      .slice(0, Math.max(w, ID_WIDTH))
      .trimEnd();
  return [head.slice(0, Math.max(w, ID_WIDTH)), ...tasks.map(line)];
}

/**
 * The task and its timeline as `ax tasks show` renders it (renderTask), each line printable and
 * cut to the width; when it is longer than `max` lines, the task's lines are kept and the oldest
 * timeline rows give way, with a line saying how many.
 */
export function taskDetailLines(detail: TaskDetail, width: number, max: number): string[] {
  const lines = renderTask(detail, {stacks: 'none'}).map((l) => fit(printable(l), width));
  if (lines.length <= max) return lines;
  const headEnd = lines.indexOf('history (UTC)') + 2; // the title and the table's head
  const keep = Math.max(0, max - headEnd - 1);
  const hidden = lines.length - headEnd - keep;
  return [
    ...lines.slice(0, headEnd),
    fit(`  … ${hidden} older rows (ax tasks show ${detail.task.id})`, width),
    ...lines.slice(lines.length - keep),
  ];
}

/** A head and one line per worker: WORKER, STATUS, IN-FLIGHT, RATE/s, RSS, HEARTBEAT age, POOLS, TYPES. */
export function workerLines(workers: readonly TopWorker[], width: number): string[] {
  const w = width - 2;
  const idW = Math.max(12, Math.min(32, ...workers.map((x) => x.id.length)));
  const head = `${'WORKER'.padEnd(idW)} ${'STATUS'.padEnd(7)} ${'IN-FL'.padStart(5)} ${'RATE/s'.padStart(6)} ${'RSS'.padStart(5)} ${'BEAT'.padStart(5)} POOLS / TYPES`;
  const line = (x: TopWorker): string => {
    const pools = Object.entries(x.pools)
      .map(([p, n]) => `${p}:${n}`)
      .join(' ');
    const cells = [
      clip(x.id, idW).padEnd(idW),
      x.status.toUpperCase().padEnd(7),
      String(x.inFlight).padStart(5),
      (x.rate === null ? '—' : formatRate(x.rate)).padStart(6),
      (x.rssBytes === null ? '—' : `${Math.round(x.rssBytes / 1024 / 1024)}M`).padStart(5),
      formatDuration(x.heartbeatAgeMs).padStart(5),
      `${pools}${x.types.length > 0 ? ` ${x.types.join(',')}` : ''}`,
    ];
    return fit(cells.join(' '), w);
  };
  return [fit(head, w), ...workers.map(line)];
}
