/** The relay's counters and outbox lag, as a subscriber of its event stream. */
import type {AxEvents, AxEventMap} from '../events.js';

/** Counters and the outbox lag, for logs, health and metrics. */
export interface RelayStats {
  relayed: number;
  published: number;
  failedRows: number;
  transientErrors: number;
  purged: number;
  batches: number;
  lag: AxEventMap['relay:lag']['lag'] | null;
  lastSuccessAt: number | null;
  lastError: string | null;
  blocked: boolean;
}

/** Counts the relay events on `events` into a live stats object (read it at any time). */
export function countRelayEvents(events: AxEvents): RelayStats {
  const s: RelayStats = {
    relayed: 0,
    published: 0,
    failedRows: 0,
    transientErrors: 0,
    purged: 0,
    batches: 0,
    lag: null,
    lastSuccessAt: null,
    lastError: null,
    blocked: false,
  };
  events.on('relay:batch', (e) => {
    s.batches++;
    s.relayed += e.relayed;
    s.published += e.published;
    s.failedRows += e.failed;
  });
  events.on('relay:pass', (e) => {
    if (e.error === null) {
      s.lastSuccessAt = e.at;
      s.lastError = null;
    } else {
      s.transientErrors++;
      s.lastError = e.error;
    }
  });
  events.on('relay:blocked', (e) => (s.blocked = e.blocked));
  events.on('relay:lag', (e) => (s.lag = e.lag));
  events.on('relay:purged', (e) => (s.purged += e.rows));
  return s;
}
