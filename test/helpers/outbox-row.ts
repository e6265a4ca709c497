/** An outbox row as the store returns it: every column at its default, `over` on top. */
import type {OutboxRow} from '../../src/core/store/types.js';

export function outboxRow(over: Partial<OutboxRow> & Pick<OutboxRow, 'id' | 'payload' | 'createdAt'>): OutboxRow {
  return {
    taskId: null,
    type: 'order_notify',
    runAt: null,
    delayMs: null,
    pool: null,
    priority: null,
    maxRetries: null,
    timeoutMs: null,
    dedupKey: null,
    key: null,
    traceparent: null,
    tracestate: null,
    deps: null,
    attempts: 0,
    lastError: null,
    failedAt: null,
    ...over,
  };
}
