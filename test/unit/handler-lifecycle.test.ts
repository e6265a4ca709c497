import {describe, expect, it} from 'vitest';
import {isAxError} from '../../src/core/errors.js';
import {silentLogger} from '../../src/core/log.js';
import {defineHandlers} from '../../src/core/worker/handlers.js';

const table = {test_noop: {execute: () => undefined}};

describe('defineHandlers lifecycle', () => {
  it('keeps onStart/onStop, bound to the object they were given on', async () => {
    const calls: string[] = [];
    const hooks = {
      name: 'db',
      async onStart(this: {name: string}) {
        calls.push(`start ${this.name}`);
      },
      onStop(this: {name: string}) {
        calls.push(`stop ${this.name}`);
      },
    };
    const map = defineHandlers(table, hooks);
    await map.lifecycle.onStart?.({logger: silentLogger});
    await map.lifecycle.onStop?.({logger: silentLogger});
    expect(calls).toEqual(['start db', 'stop db']);
    expect(defineHandlers(table).lifecycle).toEqual({});
  });

  it('refuses hooks that are not functions with invalid_input', () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const bad = (l: any) => () => defineHandlers(table, l);
    expect(bad({onStart: 'later'})).toThrow(/onStart must be a function/);
    expect(bad({onStop: 1})).toThrow(/onStop must be a function/);
    expect(bad(null)).toThrow(/lifecycle must be an object/);
    try {
      bad({onStop: 1})();
    } catch (e) {
      expect(isAxError(e, 'invalid_input')).toBe(true);
    }
  });
});
