/** Series every ax process may feed: tasks written and doorbells rung, from whichever service emits them. */
import type {AxEvents} from '../events.js';
import type {MetricsRegistry} from './registry.js';
import {subscribe} from './subscribe.js';

/** Registers ax_tasks_submitted_total and ax_doorbells_published_total; returns the unsubscribe. */
export function commonMetrics(m: MetricsRegistry, events: AxEvents): () => void {
  const submitted = m.counter('ax_tasks_submitted_total', 'New tasks written by this process (relay, producer), by type.', ['type']);
  const published = m.counter('ax_doorbells_published_total', 'Tasks rung for (doorbells confirmed by RabbitMQ), by who rang.', ['by']);
  return subscribe(events, {
    'task:submitted': (e) => submitted.inc({type: e.type}, e.count),
    'doorbell:published': (e) => published.inc({by: e.by}, e.count),
  });
}
