/**
 * The relay's metrics from its events: outbox rows relayed and failed, passes, the RabbitMQ block,
 * and the outbox lag (relay:lag, read by the relay every few seconds: unsent rows, failed rows,
 * the age of the oldest unsent). Several relays share one outbox, so they report the same lag:
 * alert on max() across them.
 */
import type {AxEvents} from '../events.js';
import type {MetricsRegistry} from './registry.js';
import {commonMetrics} from './common.js';
import {seconds, subscribe} from './subscribe.js';

/** Registers the relay series on `m` and subscribes them to `events`; returns the unsubscribe. */
export function relayMetrics(m: MetricsRegistry, events: AxEvents): () => void {
  const relayed = m.counter('ax_outbox_relayed_total', 'Outbox rows relayed into ax (marked sent).');
  const failedRows = m.counter('ax_outbox_failed_rows_total', 'Outbox rows that can never be relayed, marked failed.');
  const passes = m.counter('ax_relay_passes_total', 'Relay passes, by result: ok or error.', ['result']);
  const blocked = m.gauge('ax_relay_blocked', '1 while RabbitMQ blocks this relay’s publishes (memory or disk alarm).');
  const unsent = m.gauge('ax_outbox_unsent_rows', 'Outbox rows not yet relayed (failed ones excluded), at the last lag read.');
  const failed = m.gauge('ax_outbox_failed_rows', 'Outbox rows marked failed and not retried, at the last lag read.');
  const lag = m.gauge('ax_outbox_lag_seconds', 'Age of the oldest unsent outbox row (0 when none), at the last lag read.');
  blocked.set(0);
  const offCommon = commonMetrics(m, events);
  const off = subscribe(events, {
    'relay:batch': (e) => {
      relayed.inc(e.relayed);
      failedRows.inc(e.failed);
    },
    'relay:pass': (e) => passes.inc({result: e.error === null ? 'ok' : 'error'}),
    'relay:blocked': (e) => blocked.set(e.blocked ? 1 : 0),
    'relay:lag': ({lag: l}) => {
      unsent.set(l.unsent);
      failed.set(l.failed);
      lag.set(l.oldestAgeMs === null ? 0 : seconds(l.oldestAgeMs));
    },
  });
  return () => {
    off();
    offCommon();
  };
}
