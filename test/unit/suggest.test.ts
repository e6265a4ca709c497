import {describe, expect, test} from 'vitest';
import {closestCommand} from '../../src/cli/suggest.js';

describe('closestCommand', () => {
  const ids = ['submit', 'dlq:replay', 'dlq:list', 'tasks:list', 'tasks:show'];

  test('without arguments: the nearest command', () => {
    expect(closestCommand('submti', ids)).toEqual({id: 'submit', args: []});
    expect(closestCommand('tasks:lsit', ids)).toEqual({id: 'tasks:list', args: []});
  });

  test('with arguments: the nearest command for the leading words, the rest kept as its arguments', () => {
    expect(closestCommand('submti:x', ids)).toEqual({id: 'submit', args: ['x']});
    expect(closestCommand('dlq:replya:0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d', ids)).toEqual({
      id: 'dlq:replay',
      args: ['0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'],
    });
    expect(closestCommand('tsks:show:a:b', ids)).toEqual({id: 'tasks:show', args: ['a', 'b']});
  });

  test('nothing near: undefined', () => {
    expect(closestCommand('xyzzy:foo', ids)).toBeUndefined();
    expect(closestCommand('xyzzy', ids)).toBeUndefined();
  });
});
