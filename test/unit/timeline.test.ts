import {describe, expect, it} from 'vitest';
import {attemptBudget, attemptCell, attemptText, timeline} from '../../src/core/inspect/timeline.js';
import {renderTask} from '../../src/cli/task-view.js';
import type {HistoryEntry, TaskRecord} from '../../src/core/task/model.js';
import type {TaskState} from '../../src/core/task/state.js';

const id = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d';
const t = (s: number): Date => new Date(Date.UTC(2026, 11, 1, 12, 0, s));

function task(o: Partial<TaskRecord> = {}): TaskRecord {
  return {
    id,
    cell: 'default',
    type: 'order_notify',
    pool: 'io',
    priority: 'normal',
    state: 'succeeded',
    attempt: 1,
    maxRetries: 3,
    retryBase: 0,
    runAt: t(0),
    timeoutMs: null,
    leaseUntil: null,
    fence: 1,
    worker: 'host-a:1',
    startedAt: t(1),
    submittedBy: 'api:7',
    dedupKey: null,
    key: null,
    lastError: null,
    publishedAt: t(0),
    createdAt: t(0),
    updatedAt: t(2),
    finishedAt: t(2),
    payload: {},
    progress: null,
    progressNote: null,
    progressAt: null,
    ...o,
  };
}

function row(from: TaskState | null, to: TaskState, attempt: number, at: Date, o: Partial<HistoryEntry> = {}): HistoryEntry {
  return {taskId: id, from, to, attempt, worker: 'host-a:1', at, error: null, stack: null, startedAt: null, ...o};
}

const submitted = row(null, 'submitted', 0, t(0), {worker: 'api:7'});
const shape = (h: HistoryEntry[]) => h.map((e) => [e.from, e.to, e.attempt, e.worker, e.at.getUTCSeconds()]);

describe('timeline', () => {
  it('a success: the submit from the task row, its one attempt row as its start on its worker, then its end', () => {
    const h = timeline(task(), [row('running', 'succeeded', 1, t(2), {startedAt: t(1)})]);
    expect(shape(h)).toEqual([
      [null, 'submitted', 0, 'api:7', 0],
      ['submitted', 'running', 1, 'host-a:1', 1],
      ['running', 'succeeded', 1, 'host-a:1', 2],
    ]);
    expect(h[0]).toMatchObject({at: task().createdAt, error: null, stack: null, startedAt: null});
    expect(h[1]).toMatchObject({error: null, stack: null, startedAt: null});
    expect(h[2]!.startedAt).toEqual(t(1));
  });

  it('a failure, a retry on another worker, a success: two attempts, each with its start and worker', () => {
    const rows = [
      row('running', 'failed', 1, t(3), {startedAt: t(1), error: 'boom', stack: 'Error: boom'}),
      row('running', 'succeeded', 2, t(6), {startedAt: t(5), worker: 'host-b:2'}),
    ];
    expect(shape(timeline(task({attempt: 2, worker: 'host-b:2', startedAt: t(5)}), rows))).toEqual([
      [null, 'submitted', 0, 'api:7', 0],
      ['submitted', 'running', 1, 'host-a:1', 1],
      ['running', 'failed', 1, 'host-a:1', 3],
      ['failed', 'running', 2, 'host-b:2', 5],
      ['running', 'succeeded', 2, 'host-b:2', 6],
    ]);
  });

  it('a rescued attempt keeps its start and its dead worker; the attempt running now comes from the task row', () => {
    const rows = [row('running', 'failed', 1, t(40), {startedAt: t(1), error: 'lease expired: worker host-a:1 stopped renewing it'})];
    const h = timeline(task({state: 'running', attempt: 2, worker: 'host-b:2', startedAt: t(42), finishedAt: null}), rows);
    expect(shape(h)).toEqual([
      [null, 'submitted', 0, 'api:7', 0],
      ['submitted', 'running', 1, 'host-a:1', 1],
      ['running', 'failed', 1, 'host-a:1', 40],
      ['failed', 'running', 2, 'host-b:2', 42],
    ]);
  });

  it('a hand-back (release, park) shows the claim it gave back with the claim attempt number', () => {
    const rows = [
      row('running', 'failed', 0, t(2), {startedAt: t(1), error: 'released: io pool queue full'}),
      row('running', 'submitted', 0, t(4), {startedAt: t(3), error: 'not run: paused'}),
      row('running', 'succeeded', 1, t(6), {startedAt: t(5)}),
    ];
    expect(shape(timeline(task(), rows)).map(([from, to, attempt]) => [from, to, attempt])).toEqual([
      [null, 'submitted', 0],
      ['submitted', 'running', 1],
      ['running', 'failed', 0],
      ['failed', 'running', 1],
      ['running', 'submitted', 0],
      ['submitted', 'running', 1],
      ['running', 'succeeded', 1],
    ]);
  });

  it('rows written before schema version 18 (a running row per claim) come out as stored, also mixed with new ones', () => {
    const old = [
      submitted,
      row('submitted', 'running', 1, t(1)),
      row('running', 'failed', 1, t(2), {error: 'boom'}),
      row('failed', 'running', 2, t(3)),
    ];
    // Claimed before the migration, running now: the task row has no start of its own.
    expect(timeline(task({state: 'running', attempt: 2, startedAt: null}), old)).toEqual(old);
    // Its outcome after the migration has no start either; the next attempt is a new one.
    const mixed = [...old, row('running', 'failed', 2, t(4)), row('running', 'succeeded', 3, t(6), {startedAt: t(5)})];
    expect(shape(timeline(task({attempt: 3, startedAt: t(5)}), mixed)).map(([, to, a, , s]) => [to, a, s])).toEqual([
      ['submitted', 0, 0],
      ['running', 1, 1],
      ['failed', 1, 2],
      ['running', 2, 3],
      ['failed', 2, 4],
      ['running', 3, 5],
      ['succeeded', 3, 6],
    ]);
  });

  it('a task not claimed yet: its submit, from the row', () => {
    expect(shape(timeline(task({state: 'submitted', attempt: 0, worker: null, startedAt: null}), []))).toEqual([
      [null, 'submitted', 0, 'api:7', 0],
    ]);
  });

  it('a claim by an older ax wrote its own running row: the start on the outcome row is not shown twice', () => {
    const rows = [submitted, row('submitted', 'running', 1, t(1)), row('running', 'succeeded', 1, t(2), {startedAt: t(0)})];
    expect(timeline(task(), rows).map((e) => e.to)).toEqual(['submitted', 'running', 'succeeded']);
  });
});

describe('renderTask', () => {
  it('shows each attempt as a running line at its start, on its worker, then its end; the row says when it started', () => {
    const rows = [
      row('running', 'failed', 1, t(3), {startedAt: t(1), error: 'boom'}),
      row('running', 'succeeded', 2, t(6), {startedAt: t(5), worker: 'host-b:2'}),
    ];
    const detail = task({attempt: 2, worker: 'host-b:2', startedAt: t(5)});
    const lines = renderTask({task: detail, history: timeline(detail, rows)});
    expect(lines.find((l) => l.trimStart().startsWith('worker'))).toMatch(/host-b:2 +started +2026-12-01 12:00:05\.000/);
    const table = lines.slice(lines.indexOf('history (UTC)') + 2).map((l) => l.trim().split(/\s{2,}/));
    expect(table).toEqual([
      ['2026-12-01 12:00:00.000', '· → submitted', '0', 'api:7'],
      ['2026-12-01 12:00:01.000', 'submitted → running', '1', 'host-a:1'],
      ['2026-12-01 12:00:03.000', 'running → failed', '1', 'host-a:1', 'boom'],
      ['2026-12-01 12:00:05.000', 'failed → running', '2', 'host-b:2'],
      ['2026-12-01 12:00:06.000', 'running → succeeded', '2', 'host-b:2'],
    ]);
  });
});

describe('attempts against the budget', () => {
  // maxRetries 0 (1 attempt allowed): died at attempt 1, replayed (retry_base 1), now on attempt 2.
  const replayedRows = [
    row('running', 'dead', 1, t(3), {startedAt: t(1), error: 'boom'}),
    row('dead', 'submitted', 1, t(10), {worker: 'ax-cli:1', error: 'replayed by carol: smtp fixed'}),
  ];

  it('never replayed: attempt n of 1 + max retries', () => {
    const detail = task({attempt: 2, maxRetries: 3});
    expect(attemptBudget(detail)).toEqual({attempt: 2, allowed: 4, sinceReplay: null});
    expect(attemptCell(attemptBudget(detail))).toBe('2/4');
    expect(renderTask({task: detail, history: timeline(detail, [])})[1]).toContain(' · attempt 2 of 4 · ');
  });

  it('after a DLQ replay: counted within the replay\'s budget, never "attempt 2 of 1"', () => {
    const detail = task({state: 'running', attempt: 2, maxRetries: 0, retryBase: 1, startedAt: t(11), finishedAt: null});
    expect(attemptBudget(detail)).toEqual({attempt: 2, allowed: 1, sinceReplay: 1});
    const line = renderTask({task: detail, history: timeline(detail, replayedRows)})[1];
    expect(line).toContain(' · attempt 2 (1 of 1 since the replay) · ');
    expect(line).not.toContain('2 of 1');
    expect(attemptCell(attemptBudget(detail))).toBe('1/1 (2 in all)');
  });

  it('shows the last progress (its note made printable) and the result, only when there are some', () => {
    const plain = renderTask({task: task(), history: []}).join('\n');
    expect(plain).not.toMatch(/progress|result/);
    const detail = task({progress: 40, progressNote: 'rows\u001b[31m 400', progressAt: t(5), result: {invoice: 'INV-7'}});
    const lines = renderTask({task: detail, history: []});
    expect(lines).toContain('  progress  40% · rows\uFFFD[31m 400    at 2026-12-01 12:00:05.000');
    expect(lines).toContain('  result    {"invoice":"INV-7"}');
  });

  it('replayed and not run yet: none of the new budget used', () => {
    const detail = task({state: 'submitted', attempt: 2, maxRetries: 0, retryBase: 2, finishedAt: null});
    expect(attemptText(attemptBudget(detail))).toBe('attempt 2 (0 of 1 since the replay)');
  });
});
