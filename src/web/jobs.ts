/**
 * Long admin actions started from the console (a dead-letter replay of thousands of tasks): run in
 * the background, their progress polled by id. Kept in memory for `keepMs` after they end (at
 * most `max`, the oldest ended first out); a server restart forgets them, not their effect (the
 * audit trail has every replayed batch).
 */
import {randomUUID} from 'node:crypto';
import type {Logger} from '../core/log.js';
import type {Clock} from '../core/time.js';
import {errorResponse, type ErrorBody} from './errors.js';

export interface JobView {
  id: string;
  kind: string;
  state: 'running' | 'done' | 'failed';
  done: number;
  total: number;
  startedAt: string;
  endedAt: string | null;
  result?: unknown;
  error?: ErrorBody['error'];
}

export interface Jobs {
  /** Starts `run` now; it reports progress through `progress(done, total)`. */
  start(kind: string, total: number, run: (progress: (done: number, total: number) => void) => Promise<unknown>): JobView;
  get(id: string): JobView | undefined;
  /** Resolves when every running job has ended (the server's close). */
  drain(): Promise<void>;
}

export function createJobs(o: {clock: Pick<Clock, 'now'>; logger?: Logger; keepMs?: number; max?: number}): Jobs {
  const keepMs = o.keepMs ?? 3_600_000;
  const max = o.max ?? 1000;
  const jobs = new Map<string, {view: JobView; ended: number | null}>();
  const running = new Set<Promise<unknown>>();
  const prune = (): void => {
    const now = o.clock.now();
    for (const [id, j] of jobs) if (j.ended !== null && j.ended + keepMs < now) jobs.delete(id);
    for (const [id, j] of jobs) {
      if (jobs.size <= max) break;
      if (j.ended !== null) jobs.delete(id);
    }
  };
  return {
    start(kind, total, run) {
      prune();
      const view: JobView = {
        id: randomUUID(),
        kind,
        state: 'running',
        done: 0,
        total,
        startedAt: new Date(o.clock.now()).toISOString(),
        endedAt: null,
      };
      const entry = {view, ended: null as number | null};
      jobs.set(view.id, entry);
      const end = (): void => {
        entry.ended = o.clock.now();
        view.endedAt = new Date(entry.ended).toISOString();
      };
      const p = run((done, t) => {
        view.done = done;
        view.total = t;
      }).then(
        (result) => {
          view.state = 'done';
          view.result = result;
          view.done = view.total;
          end();
        },
        (e: unknown) => {
          const r = errorResponse(e);
          view.state = 'failed';
          view.error = r.body.error;
          // Its answer says "see the server log" for an internal error: so it must be there.
          if (r.internal)
            o.logger?.error('web: a job failed', {job: view.id, kind: view.kind, error: e instanceof Error ? e.stack : String(e)});
          end();
        },
      );
      running.add(p);
      void p.finally(() => running.delete(p));
      return view;
    },
    get: (id) => jobs.get(id)?.view,
    async drain() {
      await Promise.allSettled([...running]);
    },
  };
}
