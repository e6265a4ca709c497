/**
 * The scheduler's metrics from its events: doorbells rung, publishes that failed, rescued leases,
 * reconcile passes and the new dead tasks of the dead-letter scan (dlq:new). The cell's gauges
 * (backlog, workers) come from the database instead: see cell.ts.
 */
import type {AxEvents} from '../events.js';
import type {MetricsRegistry} from './registry.js';
import {commonMetrics} from './common.js';
import {seconds, subscribe} from './subscribe.js';

/** Registers the scheduler series on `m` and subscribes them to `events`; returns the unsubscribe. */
export function schedulerMetrics(m: MetricsRegistry, events: AxEvents): () => void {
  const dlqNew = m.counter(
    'ax_dlq_new_total',
    'Tasks that died, as the dead-letter scan found them (each once per cell, by one scheduler replica), by type.',
    ['type'],
  );
  const publishFailed = m.counter('ax_scheduler_publish_failures_total', 'Due tasks the scheduler could not publish (kept and retried).');
  const expired = m.counter(
    'ax_leases_expired_total',
    'Running tasks whose lease expired, moved by the rescuer, by where to: failed or dead.',
    ['to'],
  );
  const republished = m.counter(
    'ax_reconcile_republished_total',
    'Due tasks the reconciler rang again (never published, or long overdue).',
  );
  const reconcileDuration = m.histogram('ax_reconcile_duration_seconds', 'Duration of a reconcile pass.');
  const held = m.gauge('ax_scheduler_held_tasks', 'Tasks in the scheduler’s timing wheel after its last load.');
  const offCommon = commonMetrics(m, events);
  const off = subscribe(events, {
    'dlq:new': (e) => dlqNew.inc({type: e.type}, e.count),
    'scheduler:publish-failed': (e) => publishFailed.inc(e.count),
    'scheduler:loaded': (e) => held.set(e.held),
    'lease:expired': (e) => expired.inc({to: e.to}),
    'reconcile:done': (r) => {
      if (r.dryRun) return;
      republished.inc(r.undispatched.republished);
      reconcileDuration.observe(seconds(r.durationMs));
    },
  });
  return () => {
    off();
    offCommon();
  };
}
