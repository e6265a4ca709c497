/** Validation of TaskSpec.debounce and .throttle (core/task/validate.ts): bounds, exclusions, due time. */
import {describe, expect, it} from 'vitest';
import {isAxError} from '../../src/core/errors.js';
import {MAX_GATE_WINDOW_MS, validateGate, validateTaskSpec} from '../../src/core/task/validate.js';

const defaults = {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'};
const NOW = Date.parse('2026-12-07T10:00:00Z');
const newId = (): string => '0193a000-0000-7000-8000-000000000001';
const spec = (extra: Record<string, unknown>) => validateTaskSpec({type: 'doc_reindex', ...extra}, defaults, NOW, newId);

/** The invalid_input message of `f`, failing the test when it does not throw one. */
function refusal(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(isAxError(e, 'invalid_input'), String(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected invalid_input, nothing was thrown');
}

describe('debounce and throttle validation', () => {
  it('accepts a key and a window from 1 ms to 24 h, as ms or a duration', () => {
    expect(validateGate({key: 'doc:7', window: '5s'}, 'debounce')).toEqual({key: 'doc:7', windowMs: 5000});
    expect(validateGate({key: 'k', window: 1}, 'throttle')).toEqual({key: 'k', windowMs: 1});
    expect(validateGate({key: 'k', window: '24h'}, 'throttle')).toEqual({key: 'k', windowMs: MAX_GATE_WINDOW_MS});
    expect(validateGate(undefined, 'debounce')).toBeNull();
  });

  it('a debounced task is due its window after the submit; a throttled one keeps its own delay', () => {
    const d = spec({debounce: {key: 'doc:7', window: '10s'}});
    expect(d).toMatchObject({debounce: {key: 'doc:7', windowMs: 10_000}, throttle: null, delayMs: 10_000, runAtMs: null});
    const t = spec({throttle: {key: 'tenant:3', window: '1m'}, delay: '2s'});
    expect(t).toMatchObject({throttle: {key: 'tenant:3', windowMs: 60_000}, debounce: null, delayMs: 2000});
    expect(spec({})).toMatchObject({debounce: null, throttle: null, delayMs: 0});
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['window 0', {debounce: {key: 'k', window: 0}}, /^debounce window must be at least 1ms$/],
    [
      'window over a day',
      {debounce: {key: 'k', window: MAX_GATE_WINDOW_MS + 1}},
      /^debounce window 86400001 is over a day: the longest is 24h$/,
    ],
    ['window 2d', {throttle: {key: 'k', window: '2d'}}, /^throttle window 2d is over a day/],
    ['a negative window', {throttle: {key: 'k', window: '-5s'}}, /throttle window "-5s" is negative/],
    ['no window', {debounce: {key: 'k'}}, /^debounce window is required/],
    ['no key', {debounce: {window: '5s'}}, /^debounce key must be a string of 1 to 128 characters/],
    ['a key too long', {throttle: {key: 'x'.repeat(129), window: '5s'}}, /^throttle key must be a string of 1 to 128/],
    ['a key with a control character', {debounce: {key: 'a\nb', window: '5s'}}, /^debounce key must not contain control characters$/],
    ['a key ending in a space', {debounce: {key: 'k ', window: '5s'}}, /^debounce key must not begin or end with whitespace$/],
    ['an unknown field', {debounce: {key: 'k', window: '5s', extend: true}}, /^unknown debounce field "extend"/],
    ['not an object', {throttle: 'tenant:3'}, /^throttle must be an object \{key, window\}/],
    [
      'debounce and throttle',
      {debounce: {key: 'k', window: '5s'}, throttle: {key: 'k', window: '5s'}},
      /^give either debounce or throttle, not both$/,
    ],
    ['debounce and dedupKey', {debounce: {key: 'k', window: '5s'}, dedupKey: 'd'}, /^give either dedupKey or debounce, not both$/],
    ['throttle and dedupKey', {throttle: {key: 'k', window: '5s'}, dedupKey: 'd'}, /^give either dedupKey or throttle, not both$/],
    ['debounce and delay', {debounce: {key: 'k', window: '5s'}, delay: 0}, /^debounce sets the due time/],
    ['debounce and runAt', {debounce: {key: 'k', window: '5s'}, runAt: '2026-12-07T11:00:00Z'}, /^debounce sets the due time/],
  ])('refuses %s', (_what, extra, message) => {
    expect(refusal(() => spec(extra))).toMatch(message);
  });
});
