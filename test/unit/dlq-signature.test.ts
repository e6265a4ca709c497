import {describe, expect, it} from 'vitest';
import {errorSignature, groupBySignature, MAX_SIGNATURE_LENGTH, type ErrorGroup} from '../../src/core/dlq/signature.js';

describe('errorSignature', () => {
  it.each([
    ['order 42 not found', 'order <n> not found'],
    ['order 43 not found', 'order <n> not found'],
    ['task 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d timed out after 30000 ms', 'task <id> timed out after <n> ms'],
    ['user 01ARZ3NDEKTSV4RRFFQ69G5FAV is locked', 'user <id> is locked'],
    ['bad pointer 0xDEADbeef in frame', 'bad pointer <hex> in frame'],
    ['object 5f2b9c1e8a7d3e4f missing', 'object <hex> missing'],
    ['HTTP 503 from payments: retry in 2.5s', 'HTTP <n> from payments: retry in <n>s'],
    ['value -1e9 out of range', 'value <n> out of range'],
    ["no such key 'user:17'", "no such key '<s>'"],
    ['field "email" is required', 'field "<s>" is required'],
    ['  spaced\t\tout  ', 'spaced out'],
  ])('%j → %j', (message, signature) => {
    expect(errorSignature(message)).toBe(signature);
  });

  it('keeps words that only look like hex (no digit) and short hex', () => {
    expect(errorSignature('deadbeefcafe decade facade')).toBe('deadbeefcafe decade facade');
    expect(errorSignature('fail at step abc')).toBe('fail at step abc');
  });

  it('uses the first line only, and names a missing error', () => {
    expect(errorSignature('connect ECONNREFUSED 10.0.0.7:5432\n    at TCPConnectWrap (node:net:1)')).toBe(
      'connect ECONNREFUSED <n>.<n>:<n>',
    );
    expect(errorSignature(null)).toBe('(no error)');
    expect(errorSignature('  \n')).toBe('(no error)');
  });

  it('cuts long messages with an ellipsis', () => {
    const s = errorSignature('x'.repeat(1000));
    expect(s).toHaveLength(MAX_SIGNATURE_LENGTH);
    expect(s.endsWith('…')).toBe(true);
  });
});

describe('groupBySignature', () => {
  const d = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  const g = (type: string, error: string | null, count: number, first: number, last: number, sampleId: string): ErrorGroup => ({
    type,
    error,
    count,
    firstSeen: d(first),
    lastSeen: d(last),
    sampleId,
  });

  it('merges messages that differ only in ids and numbers, per type', () => {
    const rows = groupBySignature([
      g('order_notify', 'order 42 not found', 2, 10, 20, 'a'),
      g('order_notify', 'order 43 not found', 5, 5, 15, 'b'),
      g('order_notify', 'smtp down', 1, 1, 1, 'c'),
      g('user_register', 'order 44 not found', 1, 30, 30, 'd'),
    ]);
    expect(rows).toEqual([
      {
        type: 'order_notify',
        signature: 'order <n> not found',
        count: 7,
        firstSeen: d(5),
        lastSeen: d(20),
        sampleId: 'b',
        sampleError: 'order 43 not found',
      },
      {type: 'order_notify', signature: 'smtp down', count: 1, firstSeen: d(1), lastSeen: d(1), sampleId: 'c', sampleError: 'smtp down'},
      {
        type: 'user_register',
        signature: 'order <n> not found',
        count: 1,
        firstSeen: d(30),
        lastSeen: d(30),
        sampleId: 'd',
        sampleError: 'order 44 not found',
      },
    ]);
  });

  it('is empty for no groups', () => {
    expect(groupBySignature([])).toEqual([]);
  });
});
