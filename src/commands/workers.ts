import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {iso, table} from '../cli/render.js';
import {formatRate} from '../cli/format.js';
import {formatDuration} from '../core/duration.js';
import {DEFAULT_WORKERS_SINCE, type WorkerStatus, type WorkerView} from '../core/inspect/workers.js';
import {SCALE_OUT_TASKS_PER_S, STALE_AFTER_BEATS} from '../core/thresholds.js';

export interface WorkerJson extends Omit<WorkerView, 'startedAt' | 'heartbeatAt' | 'types' | 'windowS'> {
  startedAt: string;
  heartbeatAt: string;
  /** Attempts per type over the last heartbeat interval: succeeded, failed, dead, released. */
  types: Record<string, {succeeded: number; failed: number; dead: number; released: number}>;
}

export interface WorkersResult {
  counts: Record<WorkerStatus, number>;
  /** Attempts per second over every live worker (null: none has reported two heartbeats yet). */
  rate: number | null;
  workers: WorkerJson[];
}

export default class Workers extends AxCommand {
  static override readOnly = true;
  static override summary = 'List the workers: live, stale and stopped, their pools, in-flight tasks, rate and last heartbeat.';
  static override description = `Every worker writes a heartbeat row every AX_HEARTBEAT (default 5s) with its in-flight count and its per-type counters. A worker is live while its heartbeat is fresh, stale when it missed ${STALE_AFTER_BEATS} heartbeats (it crashed, froze or lost MySQL: its running tasks come back when their leases expire), stopped when it shut down cleanly. RATE is attempts finished per second over its last heartbeat interval; RSS its resident memory then (ax doctor judges its trend); "scale out" marks a worker above ${SCALE_OUT_TASKS_PER_S}/s. Live workers are always listed; stale and stopped ones whose last heartbeat is within --since (default ${DEFAULT_WORKERS_SINCE}), or all with --all.

Exit codes: 2 bad flag value, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Who is working?', command: '<%= config.bin %> workers'},
    {
      description: 'Crashed workers of the last day, for a script',
      command: '<%= config.bin %> workers --since 1d --json | jq \'.workers[] | select(.status == "stale")\'',
    },
  ];
  static override flags = {
    since: Flags.string({description: `stale and stopped workers seen within this duration (default ${DEFAULT_WORKERS_SINCE})`}),
    all: Flags.boolean({description: 'every worker ever registered in the cell', exclusive: ['since']}),
  };

  async run(): Promise<WorkersResult> {
    const {flags} = await this.parse(Workers);
    await using admin = this.admin(flags);
    const r = await admin.workers.list(flags.all ? {all: true} : flags.since === undefined ? {} : {since: flags.since});
    if (!this.jsonEnabled()) for (const line of render(r.workers, r.counts, r.rate)) this.log(line);
    return {counts: r.counts, rate: r.rate, workers: r.workers.map(workerJson)};
  }
}

function workerJson(w: WorkerView): WorkerJson {
  const {startedAt, heartbeatAt, types, windowS: _w, ...rest} = w;
  return {
    ...rest,
    startedAt: startedAt.toISOString(),
    heartbeatAt: iso(heartbeatAt)!,
    types: Object.fromEntries(
      Object.entries(types).map(([t, c]) => [t, {succeeded: c.succeeded, failed: c.failed, dead: c.dead, released: c.released}]),
    ),
  };
}

function render(workers: WorkerView[], counts: Record<WorkerStatus, number>, rate: number | null): string[] {
  const head = `${counts.live} live, ${counts.stale} stale, ${counts.stopped} stopped${rate === null ? '' : `; ${formatRate(rate)} attempts/s`}`;
  if (workers.length === 0) return ['no workers registered in this cell (start one: ax worker --handlers ./handlers.js)'];
  const rows = workers.map((w) => [
    w.id,
    w.status.toUpperCase(),
    Object.entries(w.pools)
      .map(([p, n]) => `${p}:${n}`)
      .join(' '),
    String(w.inFlight),
    w.rate === null ? '—' : formatRate(w.rate) + (w.scaleOut ? ' scale out' : ''),
    w.rssBytes === null ? '—' : `${Math.round(w.rssBytes / 1024 / 1024)}M`,
    `${formatDuration(w.heartbeatAgeMs)} ago`,
    w.startedAt.toISOString().slice(0, 19).replace('T', ' '),
  ]);
  return [
    ...table(['WORKER', 'STATUS', 'POOLS', 'IN-FLIGHT', 'RATE/S', 'RSS', 'HEARTBEAT', 'STARTED (UTC)'], rows, {
      right: [3, 4, 5],
      keep: [0],
    }),
    head,
  ];
}
