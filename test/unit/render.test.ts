import {describe, expect, test} from 'vitest';
import {table} from '../../src/cli/render.js';

describe('table', () => {
  const head = ['ID', 'TYPE', 'LAST ERROR'];
  const rows = [
    ['0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d', 'order_notify', 'connect ECONNREFUSED 10.0.0.7:443 while calling the payment API'],
    ['0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0e', 'invoice_send', '-'],
  ];

  test('without a width (piped output) nothing is cut', () => {
    const lines = table(head, rows, {width: undefined});
    expect(lines[1]).toContain('while calling the payment API');
    expect(lines.every((l) => !l.includes('…'))).toBe(true);
  });

  test('on a terminal the widest column is cut with … so every line fits', () => {
    const lines = table(head, rows, {width: 80});
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(80);
    expect(lines[1]).toMatch(/^0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d {2}order_notify {2}connect ECONNREFUSED.*…$/);
    expect(lines[2]).toMatch(/invoice_send {2}-$/);
  });

  test('a very narrow terminal shrinks the other columns, never below their header, and never cuts an id', () => {
    const lines = table(head, rows, {width: 30});
    expect(lines[0]).toMatch(/^ID {34} {2}TYPE {4} {2}LAST ERROR$/);
    // Wider than 30: the terminal wraps the line rather than the id being cut.
    expect(lines[1]).toBe('0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d  order_n…  connect E…');
  });

  // The columns of `ax tasks list` and `ax dlq list` with realistic cells.
  const id = '01a234a8-3748-746c-9d2e-5f6a7b8c9d0e';
  const error = 'Error: connect ECONNREFUSED 10.0.0.7:443 while calling the payment API (attempt 3, request 7f3e9a)';
  const tasksHead = ['ID', 'TYPE', 'STATE', 'ATTEMPT', 'RUN AT', 'UPDATED', 'LAST ERROR'];
  const taskRow = [id, 'order_notify', 'failed', '3/6', '2026-05-01 12:00:03', '2026-05-01 12:00:04', error];
  const dlqHead = ['ID', 'TYPE', 'ATTEMPTS', 'DIED (UTC)', 'LAST ERROR'];
  const dlqRow = [id, 'order_notify', '6/6', '2026-05-01 12:00:04', error];

  test.each([80, 120])('at %i columns every task id is whole in tasks list and dlq list', (width) => {
    for (const [h, r] of [
      [tasksHead, taskRow],
      [dlqHead, dlqRow],
    ] as const) {
      const lines = table([...h], [[...r]], {width});
      expect(lines[1]?.startsWith(`${id}  order_`)).toBe(true);
      expect(lines[1]).toMatch(/…$/); // the error is what gives way
    }
  });

  test('at 120 columns dlq list fits the line exactly, cutting only the error', () => {
    const lines = table(dlqHead, [dlqRow], {width: 120});
    expect(lines[1]).toHaveLength(120);
    expect(lines[1]).toMatch(new RegExp(`^${id} {2}order_notify {2}6/6 {7}2026-05-01 12:00:04 {2}Error: connect ECONNREFUSED.*…$`));
  });

  test('piped (no width): nothing is cut, the whole error included', () => {
    const lines = table(tasksHead, [taskRow], {width: undefined});
    expect(lines[1]).toContain(error);
    expect(lines[1]).not.toContain('…');
  });

  test('keep: a listed column (a worker id) is never cut; right-aligned numbers are never cut', () => {
    const worker = 'worker-host-with-a-long-name.example:12345';
    const lines = table(['WORKER', 'POOLS', 'IN-FLIGHT'], [[worker, 'io:8 cpu:2 extra:4 more:16', '1234567890']], {
      keep: [0],
      right: [2],
      width: 40,
    });
    expect(lines[1]).toMatch(new RegExp(`^${worker} {2}io:8 cp… {2}1234567890$`));
  });

  test('a column of ids with empty or "-" cells is still an id column', () => {
    const lines = table(
      ['SAMPLE', 'NOTE'],
      [
        [id, 'x'.repeat(50)],
        ['-', 'y'],
      ],
      {width: 50},
    );
    expect(lines[1]?.startsWith(`${id}  `)).toBe(true);
  });

  test('a table that fits is unchanged; right-aligned numbers stay aligned', () => {
    const lines = table(
      ['TYPE', 'TOTAL'],
      [
        ['a_b', '7'],
        ['c_d', '1234'],
      ],
      {right: [1], width: 80},
    );
    expect(lines).toEqual(['TYPE  TOTAL', 'a_b       7', 'c_d    1234']);
  });
});
