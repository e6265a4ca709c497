import {describe, expect, it} from 'vitest';
import {outboxRowToTask} from '../../src/core/outbox/convert.js';
import {idFromDedupKey} from '../../src/core/task/id.js';
import type {OutboxRow} from '../../src/core/store/types.js';
import {outboxRow} from '../helpers/outbox-row.js';

const defaults = {maxRetries: 5, payloadLimitBytes: 1024, cell: 'default'};
const created = new Date('2026-11-29T10:00:00.000Z');
const row = (over: Partial<OutboxRow> = {}): OutboxRow => outboxRow({id: 7, payload: '{"orderId": 42}', createdAt: created, ...over});

describe('outbox rows → tasks', () => {
  it('maps every column and derives a stable id from the row', () => {
    const r = outboxRowToTask(row({pool: 'cpu', maxRetries: 2, timeoutMs: 30_000}), defaults);
    expect('task' in r && r.task).toMatchObject({
      type: 'order_notify',
      payload: '{"orderId":42}',
      pool: 'cpu',
      maxRetries: 2,
      timeoutMs: 30_000,
      runAtMs: null,
    });
    const again = outboxRowToTask(row({pool: 'cpu', maxRetries: 2, timeoutMs: 30_000}), defaults);
    expect('task' in r && 'task' in again && r.task.id === again.task.id).toBe(true);
    expect('task' in r && r.task.id).toBe(idFromDedupKey('default', `outbox:7:${created.getTime()}`));
  });
  it('uses task_id or dedup_key for the id when given', () => {
    const id = '01900000-0000-7000-8000-000000000001';
    expect(outboxRowToTask(row({taskId: id}), defaults)).toMatchObject({task: {id}});
    expect(outboxRowToTask(row({dedupKey: 'order-42'}), defaults)).toMatchObject({
      task: {id: idFromDedupKey('default', 'order-42'), dedupKey: 'order-42'},
    });
  });
  it('counts delay_ms from created_at and keeps run_at as written', () => {
    expect(outboxRowToTask(row({delayMs: 5000}), defaults)).toMatchObject({task: {runAtMs: created.getTime() + 5000}});
    const at = new Date('2026-11-29T12:00:00Z');
    expect(outboxRowToTask(row({runAt: at}), defaults)).toMatchObject({task: {runAtMs: at.getTime()}});
  });
  it('explains rows that can never be tasks', () => {
    expect(outboxRowToTask(row({payload: 'not json'}), defaults)).toMatchObject({error: expect.stringMatching(/not valid JSON/)});
    expect(outboxRowToTask(row({payload: '[1]'}), defaults)).toMatchObject({error: expect.stringMatching(/JSON object/)});
    expect(outboxRowToTask(row({type: 'Bad'}), defaults)).toMatchObject({error: expect.stringMatching(/domain_action/)});
    expect(outboxRowToTask(row({pool: 'gpu'}), defaults)).toMatchObject({error: expect.stringMatching(/pool/)});
    expect(outboxRowToTask(row({runAt: created, delayMs: 1}), defaults)).toMatchObject({error: expect.stringMatching(/not both/)});
    expect(outboxRowToTask(row({payload: JSON.stringify({x: 'y'.repeat(2000)})}), defaults)).toMatchObject({
      error: expect.stringMatching(/over the limit/),
    });
  });
});
