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

  test('a very narrow terminal shrinks several columns, never below their header', () => {
    const lines = table(head, rows, {width: 30});
    expect(lines[0]).toMatch(/^ID {6} {2}TYPE {4} {2}LAST ERROR$/);
    expect(lines[1]).toBe('0190f1c…  order_n…  connect E…');
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
