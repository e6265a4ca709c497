import {expect} from 'vitest';
import {isAxError} from '../../src/core/errors.js';

/** Asserts that `fn` throws AxError('invalid_input') with a message matching `re`. */
export function expectInvalid(fn: () => unknown, re: RegExp): void {
  try {
    fn();
  } catch (e) {
    expect(isAxError(e, 'invalid_input'), String(e)).toBe(true);
    expect((e as Error).message).toMatch(re);
    return;
  }
  throw new Error('expected invalid_input');
}
