/**
 * Task keys (TaskSpec.key) where they enter ax without a server: validateTaskKey itself, a cron
 * schedule's key, an outbox row's task_key (a bad one is the row's error), the columns
 * enqueueInTransaction writes, and the `tasks list --key` filter.
 */
import {describe, expect, it} from 'vitest';
import {validateCronInput} from '../../src/core/cron/schedule.js';
import {isAxError} from '../../src/core/errors.js';
import {parseListFilter} from '../../src/core/inspect/inspect.js';
import {outboxRowToTask} from '../../src/core/outbox/convert.js';
import {enqueueInTransaction} from '../../src/core/outbox/enqueue.js';
import {OUTBOX_ADDED_COLUMNS, OUTBOX_DDL, OUTBOX_PRODUCER_COLUMNS, outboxColumnsUpgradeSql} from '../../src/core/outbox/schema.js';
import {MAX_TASK_KEY_LENGTH, validateTaskKey, validateTaskSpec} from '../../src/core/task/validate.js';
import {outboxRow} from '../helpers/outbox-row.js';

/** The invalid_input message of `f`, or a failure when it does not throw one. */
function refusal(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(isAxError(e, 'invalid_input'), String(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected invalid_input, nothing was thrown');
}

describe('validateTaskKey', () => {
  it('takes 1 to 128 characters as given, inner spaces and non-ASCII included', () => {
    for (const k of ['t', 'tenant:42', 'customer 7', 'kunde:Müller', '租户:42', 'x'.repeat(MAX_TASK_KEY_LENGTH)])
      expect(validateTaskKey(k)).toBe(k);
  });
  it('refuses a key too long or empty, and anything not a string', () => {
    expect(refusal(() => validateTaskKey('x'.repeat(MAX_TASK_KEY_LENGTH + 1)))).toMatch(/key must be a string of 1 to 128 characters/);
    expect(refusal(() => validateTaskKey(''))).toMatch(/1 to 128 characters/);
    for (const v of [42, null, {}, ['tenant:42'], true]) expect(refusal(() => validateTaskKey(v))).toMatch(/key must be a string/);
  });
  it('refuses control characters anywhere', () => {
    for (const k of ['tenant\n42', 'tenant\t42', 'a\u0000b', 'a\u007fb', 'a\u0085b'])
      expect(refusal(() => validateTaskKey(k))).toMatch(/key must not contain control characters/);
  });
  it('refuses whitespace at either end (MySQL would compare "k" and "k " as one key)', () => {
    for (const k of [' tenant:42', 'tenant:42 ', '\u00a0tenant', 'tenant\u3000'])
      expect(refusal(() => validateTaskKey(k))).toMatch(/key must not begin or end with whitespace/);
  });
  it('names the field it checks', () => {
    expect(refusal(() => validateTaskKey(' k', 'task_key'))).toMatch(/^task_key must not begin/);
  });
  it('is what submit applies to TaskSpec.key', () => {
    const defaults = {maxRetries: 5, payloadLimitBytes: 1024, cell: 'default'};
    const id = (): string => '01900000-0000-7000-8000-000000000001';
    expect(validateTaskSpec({type: 'order_notify', key: 'tenant:42'}, defaults, 0, id).key).toBe('tenant:42');
    expect(validateTaskSpec({type: 'order_notify'}, defaults, 0, id).key).toBeNull();
    expect(refusal(() => validateTaskSpec({type: 'order_notify', key: 'tenant:42 '}, defaults, 0, id))).toMatch(/key must not/);
  });
});

describe('a cron schedule with a key', () => {
  const base = {name: 'nightly', cron: '0 2 * * *', tz: 'UTC', type: 'report_daily'};
  const opts = {payloadLimitBytes: 1024, nowMs: Date.parse('2026-12-01T00:00:00Z')};
  it('keeps the key for every occurrence; none by default', () => {
    expect(validateCronInput({...base, key: 'tenant:42'}, opts).key).toBe('tenant:42');
    expect(validateCronInput(base, opts).key).toBeNull();
  });
  it('refuses a bad key (invalid_input)', () => {
    expect(refusal(() => validateCronInput({...base, key: 'tenant\n42'}, opts))).toMatch(/key must not contain control characters/);
    expect(refusal(() => validateCronInput({...base, key: ''}, opts))).toMatch(/key must be a string of 1 to 128/);
    expect(refusal(() => validateCronInput({...base, key: 7}, opts))).toMatch(/key must be a string/);
  });
});

describe('an outbox row with task_key', () => {
  const defaults = {maxRetries: 5, payloadLimitBytes: 1024, cell: 'default'};
  const row = (key: string | null) => outboxRow({id: 3, payload: '{}', createdAt: new Date('2026-12-01T00:00:00Z'), key});
  it('becomes a task with that key; NULL: none', () => {
    expect(outboxRowToTask(row('tenant:42'), defaults)).toMatchObject({task: {key: 'tenant:42'}});
    expect(outboxRowToTask(row(null), defaults)).toMatchObject({task: {key: null}});
  });
  it('with a bad key is an error naming the column (the relay fails the row)', () => {
    expect(outboxRowToTask(row('tenant:42\r'), defaults)).toEqual({error: 'task_key must not contain control characters'});
    expect(outboxRowToTask(row(''), defaults)).toEqual({error: expect.stringMatching(/^task_key must be a string of 1 to 128/)});
    expect(outboxRowToTask(row(' t'), defaults)).toEqual({error: 'task_key must not begin or end with whitespace'});
  });
  it('is a producer column, in the DDL and added to an older table by `ax migrate --outbox`', () => {
    expect(OUTBOX_PRODUCER_COLUMNS).toContain('task_key');
    expect(OUTBOX_DDL).toMatch(/\btask_key\s+VARCHAR\(128\) NULL/);
    expect(OUTBOX_ADDED_COLUMNS.map((c) => c.name)).toContain('task_key');
    expect(outboxColumnsUpgradeSql(new Set(['priority']))).toMatch(/^ALTER TABLE task_outbox ADD COLUMN task_key VARCHAR\(128\) NULL/);
    expect(outboxColumnsUpgradeSql(new Set(['priority', 'task_key', 'traceparent', 'tracestate', 'deps']))).toBeNull();
  });
});

describe('enqueueInTransaction and the task_key column', () => {
  const capture = () => {
    const calls: Array<{sql: string; values: unknown[]}> = [];
    return {calls, conn: {query: async (sql: string, values: unknown[] = []) => void calls.push({sql, values})}};
  };
  const columnsOf = (sql: string): string[] => /\(([^)]*)\) VALUES/.exec(sql)![1]!.split(', ');
  it('writes task_key when a task sets a key (NULL for the others of the INSERT)', async () => {
    const {calls, conn} = capture();
    await enqueueInTransaction(conn, [
      {type: 'order_notify', key: 'tenant:42'},
      {type: 'order_notify', payload: {n: 1}},
    ]);
    const cols = columnsOf(calls[0]!.sql);
    expect(cols).toContain('task_key');
    const width = cols.length - 1; // created_at is UTC_TIMESTAMP(3), not a parameter
    const at = cols.indexOf('task_key');
    expect([calls[0]!.values[at], calls[0]!.values[width + at]]).toEqual(['tenant:42', null]);
  });
  it('leaves the column out when no task sets a key (a table not yet upgraded still takes them)', async () => {
    const {calls, conn} = capture();
    await enqueueInTransaction(conn, {type: 'order_notify'});
    expect(columnsOf(calls[0]!.sql)).not.toContain('task_key');
  });
  it('refuses a bad key before writing anything', async () => {
    const {calls, conn} = capture();
    await expect(enqueueInTransaction(conn, [{type: 'order_notify'}, {type: 'order_notify', key: 'a\nb'}])).rejects.toThrow(
      /task 1: key must not contain control characters/,
    );
    expect(calls).toEqual([]);
  });
  it('refuses debounce and throttle, which the outbox cannot carry, before writing anything', async () => {
    const {calls, conn} = capture();
    for (const gate of ['debounce', 'throttle'])
      await expect(
        enqueueInTransaction(conn, [{type: 'order_notify'}, {type: 'order_notify', [gate]: {key: 'k', window: '5s'}}]),
      ).rejects.toThrow(new RegExp(`task 1: ${gate} is not carried by the outbox`));
    expect(calls).toEqual([]);
  });
});

describe('tasks list --key', () => {
  it('filters by the key exactly, checked as submit checks it', () => {
    expect(parseListFilter({key: 'tenant:42'}, 0).filter.key).toBe('tenant:42');
    expect(parseListFilter({}, 0).filter.key).toBeUndefined();
    expect(refusal(() => parseListFilter({key: 'tenant:42 '}, 0))).toMatch(/key must not begin or end with whitespace/);
    expect(refusal(() => parseListFilter({key: 'x'.repeat(129)}, 0))).toMatch(/1 to 128 characters/);
  });
});
