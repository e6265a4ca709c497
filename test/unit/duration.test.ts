import {describe, expect, test} from 'vitest';
import {parseDuration} from '../../src/core/duration.js';

/** DURATION_RULE, the one rule for every duration: units in any case, fractions rounded to the ms. */
describe('parseDuration: one rule for all durations', () => {
  test.each<[string | number, number]>([
    ['250', 250],
    [250, 250],
    ['5s', 5000],
    ['5S', 5000],
    ['2M', 120_000],
    ['1H30M', 5_400_000],
    ['250MS', 250],
    ['1.5s', 1500],
    ['0.25m', 15_000],
    ['1.0004s', 1000],
    ['1.5ms', 2],
    ['1h30m15s', 5_415_000],
    [' 5s ', 5000],
  ])('accepts %j as %d ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  test.each<[string | number, RegExp]>([
    ['1.5', /"1.5" is not a duration/],
    ['1h 30m', /"1h 30m" is not a duration/],
    ['5 s', /"5 s" is not a duration/],
    ['5w', /"5w" is not a duration/],
    ['s', /"s" is not a duration/],
    ['', /"" is not a duration/],
    ['-5s', /"-5s" is negative/],
    [1.5, /whole number of milliseconds/],
    [-1, /whole number of milliseconds/],
    ['367d', /too large: the maximum is 366d/],
  ])('refuses %j', (input, message) => {
    expect(() => parseDuration(input, 'delay')).toThrow(message);
  });
});
