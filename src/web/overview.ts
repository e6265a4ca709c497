/**
 * The overview and the types page read `ax top`'s snapshot (the same reads, alerts and rules as
 * the TUI and the Prometheus rules) and the cell's overview sampler (admin.overview: counts per
 * state, the last hour's series, sampled in the background). One reading per cell is shared by
 * every open browser: a reading younger than `maxAgeMs` is answered again, and concurrent requests
 * wait for the one reading in flight; the sampler answers from memory. So five browsers cost what
 * one does.
 */
import type {Admin} from '../core/admin/service.js';
import {initialTopState, type TopSnapshot, type TopState} from '../core/inspect/top.js';
import type {Clock} from '../core/time.js';

export interface OverviewProvider {
  /** The cell's overview: the top snapshot with the series and counts. */
  get(admin: Admin): Promise<Record<string, unknown>>;
  /** The cell's top snapshot alone (the types page's rates, failure % and p95). */
  top(admin: Admin): Promise<TopSnapshot>;
}

export function createOverviewProvider(o: {clock: Pick<Clock, 'monotonic'>; maxAgeMs?: number}): OverviewProvider {
  const maxAgeMs = o.maxAgeMs ?? 1500;
  interface Reading {
    top: TopSnapshot;
    outbox: {pending: number; failed: number; oldestAgeMs: number | null} | null;
  }
  const cells = new Map<string, {state: TopState; at: number; reading: Reading | null; inFlight: Promise<Reading> | null}>();
  const read = (admin: Admin): Promise<Reading> => {
    let c = cells.get(admin.cell);
    if (!c) cells.set(admin.cell, (c = {state: initialTopState(), at: -Infinity, reading: null, inFlight: null}));
    const entry = c;
    if (entry.reading && o.clock.monotonic() - entry.at < maxAgeMs) return Promise.resolve(entry.reading);
    entry.inFlight ??= Promise.all([
      admin.top.refresh(entry.state, {errorsType: null}),
      // The business database's outbox, when there is one (no task_outbox table: null, not an error).
      admin.outbox.stats().then(
        (b) => ({pending: b.unsent, failed: b.failed, oldestAgeMs: b.oldestAgeMs}),
        () => null,
      ),
    ])
      .then(([r, outbox]) => {
        entry.state = r.state;
        entry.reading = {top: r.snapshot, outbox};
        entry.at = o.clock.monotonic();
        return entry.reading;
      })
      .finally(() => {
        entry.inFlight = null;
      });
    return entry.inFlight;
  };
  const top = async (admin: Admin): Promise<TopSnapshot> => (await read(admin)).top;
  return {
    top,
    async get(admin) {
      admin.overview.start();
      const {top: snapshot, outbox} = await read(admin);
      const {types: _types, errors: _errors, failures, ...rest} = snapshot;
      const sampled = admin.overview.snapshot();
      const live = sampled.states;
      const done = sampled.finished;
      return {
        ...rest,
        // Live states now; succeeded and cancelled over the sampler's window (finishedSince), never counted over the table.
        states:
          live && done
            ? {
                submitted: live.submitted,
                running: live.running,
                failed: live.failed,
                dead: live.dead,
                succeeded: done.succeeded,
                cancelled: done.cancelled,
              }
            : null,
        finishedSince: done?.since ?? null,
        oldestDueAgeMs: sampled.oldestDueAgeMs,
        series: sampled.series,
        sampledAt: sampled.at,
        outbox,
        failures: [...failures, ...sampled.failures],
      };
    },
  };
}
