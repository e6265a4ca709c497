/**
 * `ax cells list`: each configured cell, where it lives (its database and RabbitMQ target, own or
 * shared with the default cell), its backlog by state, its live workers, and the tasks it holds of
 * types now routed to another cell. One cell that cannot be read is reported as such; the others
 * are still read.
 */
import {errorMessage, isAxError} from '../errors.js';
import {workerStatus} from '../liveness.js';
import type {InspectStore, WorkerRegistryStore} from '../store/types.js';
import {type CellMap, misplacedTypes} from './cells.js';

export interface CellReport {
  cell: string;
  /** The default cell (AX_CELL): it takes every type no pattern names. */
  default: boolean;
  /** The patterns that route types here (the default cell: also every type no pattern names). */
  types: string[];
  /** host:port/database, without credentials. */
  database: string;
  /** host:port/vhost of RabbitMQ, without credentials (a cluster: each node's, comma-separated). */
  amqp: string;
  /** Whether the database / RabbitMQ are the default cell's (kept apart by the cell column and queue names). */
  ownDatabase: boolean;
  ownAmqp: boolean;
  /** null when the cell could not be read (see error). */
  backlog: {due: number; delayed: number; running: number; dead: number} | null;
  workers: {live: number; stale: number} | null;
  /** Types with waiting or running tasks here that AX_CELLS routes to another cell now. */
  misplaced: Array<{type: string; cell: string; tasks: number}>;
  /** Why the cell could not be read (its database unreachable, not migrated, …). */
  error?: {code: string; message: string};
}

export interface CellSource {
  cell: string;
  mysqlUrl: string;
  amqpUrl: string;
  /** Opens the cell's store, read-only; the report closes it. */
  open(): Promise<Pick<InspectStore, 'backlog'> & Pick<WorkerRegistryStore, 'workersList'> & {close(): Promise<void>}>;
}

/** host:port/path of a URL, without user and password. */
export function urlTarget(url: string, defaultPort: number): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || defaultPort}${u.pathname === '' ? '/' : decodeURIComponent(u.pathname)}`;
  } catch {
    return '<invalid url>';
  }
}

/** urlTarget of each URL of a comma-separated list (AX_AMQP_URL naming a cluster's nodes), comma-separated. */
export function urlTargets(list: string, defaultPort: number): string {
  return list
    .split(',')
    .map((u) => urlTarget(u.trim(), defaultPort))
    .join(',');
}

/** Reads every cell side by side (each its own connection, closed after). */
export async function cellsReport(o: {
  map: CellMap;
  sources: CellSource[];
  defaults: {mysqlUrl: string; amqpUrl: string};
  heartbeatMs: number;
}): Promise<CellReport[]> {
  return Promise.all(o.sources.map((s) => oneCell(o, s)));
}

async function oneCell(
  o: {map: CellMap; defaults: {mysqlUrl: string; amqpUrl: string}; heartbeatMs: number},
  s: CellSource,
): Promise<CellReport> {
  const base: CellReport = {
    cell: s.cell,
    default: s.cell === o.map.defaultCell,
    types: o.map.patterns.filter((p) => p.cell === s.cell).map((p) => p.text),
    database: urlTarget(s.mysqlUrl, 3306),
    amqp: urlTargets(s.amqpUrl, 5672),
    ownDatabase: s.cell !== o.map.defaultCell && s.mysqlUrl !== o.defaults.mysqlUrl,
    ownAmqp: s.cell !== o.map.defaultCell && s.amqpUrl !== o.defaults.amqpUrl,
    backlog: null,
    workers: null,
    misplaced: [],
  };
  try {
    const store = await s.open();
    try {
      const [{rows}, list] = await Promise.all([store.backlog(), store.workersList()]);
      const backlog = {due: 0, delayed: 0, running: 0, dead: 0};
      for (const r of rows) {
        backlog.due += r.due;
        backlog.delayed += r.delayed;
        backlog.running += r.running;
        backlog.dead += r.dead;
      }
      const workers = {live: 0, stale: 0};
      for (const w of list) {
        const st = workerStatus(w, o.heartbeatMs);
        if (st !== 'stopped') workers[st]++;
      }
      const pending = new Map(rows.map((r) => [r.type, r.due + r.delayed + r.running]));
      const misplaced = misplacedTypes(
        o.map,
        s.cell,
        [...pending].filter(([, n]) => n > 0).map(([t]) => t),
      ).map((m) => ({
        ...m,
        tasks: pending.get(m.type) ?? 0,
      }));
      return {...base, backlog, workers, misplaced};
    } finally {
      await store.close().catch(() => undefined);
    }
  } catch (e) {
    return {...base, error: {code: isAxError(e) ? e.code : 'internal', message: errorMessage(e)}};
  }
}
