/**
 * parseReplayRequest: the checks of `ax dlq replay` flags and client.dlq.replay arguments, before
 * anything is read — each refusal invalid_input with a message that names the flag.
 */
import {describe, expect, it} from 'vitest';
import {
  checkRate,
  MAX_REASON,
  MAX_REPLAY_IDS,
  parsePatch,
  parseReplayRequest,
  type ReplayRequestInput,
} from '../../src/core/dlq/replay-request.js';
import {isAxError} from '../../src/core/errors.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const ID = '01900000-0000-7000-8000-000000000001';
const base = {payloadLimitBytes: 65_536};
const parse = (input: Omit<ReplayRequestInput, 'payloadLimitBytes'>) => parseReplayRequest({...base, ...input}, NOW);

function refusal(input: Omit<ReplayRequestInput, 'payloadLimitBytes'>): string {
  try {
    parse(input);
  } catch (e) {
    if (isAxError(e) && e.code === 'invalid_input') return e.message;
    throw e;
  }
  throw new Error('accepted');
}

describe('parseReplayRequest', () => {
  it('takes ids, or a filter, or --all, with the options carried through', () => {
    expect(parse({ids: [ID, ID]})).toEqual({sel: {ids: [ID, ID]}, opts: {force: false, reason: null, payloadLimitBytes: 65_536}});
    expect(parse({filter: {type: 'order_notify', since: '1h', error: 'smtp'}, rate: 2000, reason: 'fixed'})).toEqual({
      sel: {filter: {type: 'order_notify', since: new Date(NOW - 3_600_000), errorContains: 'smtp'}},
      opts: {force: false, reason: 'fixed', payloadLimitBytes: 65_536},
      rate: 2000,
    });
    expect(parse({all: true}).sel).toEqual({filter: {}, all: true});
    expect(parse({ids: [ID], force: true, reason: 'receipt lost', patch: '{"a": null}'}).opts).toEqual({
      force: true,
      reason: 'receipt lost',
      payloadLimitBytes: 65_536,
      patch: {a: null},
    });
    expect(parse({filter: {type: 'order_notify'}, patch: {smtp: {host: 'mx2'}}}).opts.patch).toEqual({smtp: {host: 'mx2'}});
  });

  it('refuses ids mixed with a filter or --all', () => {
    expect(refusal({ids: [ID], filter: {type: 'order_notify'}})).toMatch(/either ids or a filter .* not both/);
    expect(refusal({ids: [ID], filter: {since: '1h'}})).toMatch(/not both/);
    expect(refusal({ids: [ID], all: true})).toMatch(/not both/);
  });

  it('refuses no selection, --all with a filter, malformed and too many ids, a bad filter', () => {
    expect(refusal({})).toMatch(/name the tasks to replay/);
    expect(refusal({ids: []})).toMatch(/name the tasks to replay/);
    expect(refusal({all: true, filter: {type: 'order_notify'}})).toMatch(/--all .* does not combine with a filter/);
    expect(refusal({ids: ['nope', ID, '42']})).toMatch(/not task ids \(lower-case UUIDs\): nope, 42$/);
    const many = Array.from({length: MAX_REPLAY_IDS + 1}, (_, i) => `01900000-0000-7000-8000-${String(i).padStart(12, '0')}`);
    expect(refusal({ids: many})).toMatch(new RegExp(`at most ${MAX_REPLAY_IDS} ids`));
    expect(refusal({filter: {type: 'Not A Type'}})).toMatch(/type/);
    expect(refusal({filter: {since: 'yesterday-ish'}})).toMatch(/since/);
    expect(refusal({filter: {error: '  '}})).toMatch(/error must not be empty/);
  });

  it('refuses --rate 0, negative, NaN and infinite rates', () => {
    for (const rate of [0, -5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(refusal({filter: {type: 'order_notify'}, rate})).toMatch(/--rate must be a positive number of tasks per second/);
    expect(() => checkRate(0.5)).not.toThrow();
  });

  it('refuses --force without a reason (missing or blank), and a reason that is too long', () => {
    for (const reason of [undefined, null, '', '   ']) expect(refusal({ids: [ID], force: true, reason})).toMatch(/--force needs --reason/);
    expect(refusal({ids: [ID], reason: 'x'.repeat(MAX_REASON + 1)})).toMatch(/--reason is longer than 1000 characters/);
    expect(parse({ids: [ID], reason: 'x'.repeat(MAX_REASON)}).opts.reason).toHaveLength(MAX_REASON);
  });

  it('refuses a --patch that is not JSON or not an object, as text or as an object', () => {
    for (const bad of ['[1]', 'null', '"x"', '3', 'true'])
      expect(refusal({ids: [ID], patch: bad})).toMatch(/--patch must be a JSON object/);
    expect(refusal({ids: [ID], patch: '{oops'})).toMatch(/--patch is not valid JSON/);
    for (const bad of [[1], null, 7] as never[]) expect(refusal({filter: {type: 'order_notify'}, patch: bad})).toMatch(/--patch must be/);
    expect(parsePatch('{"a": {"b": null}}')).toEqual({a: {b: null}});
  });
});
