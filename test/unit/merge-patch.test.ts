import {describe, expect, it} from 'vitest';
import {mergePatch} from '../../src/core/task/merge-patch.js';
import type {JsonValue} from '../../src/core/task/model.js';

describe('mergePatch (RFC 7396)', () => {
  // Appendix A of RFC 7396: [original, patch, result].
  const appendixA: Array<[JsonValue, JsonValue, JsonValue]> = [
    [{a: 'b'}, {a: 'c'}, {a: 'c'}],
    [{a: 'b'}, {b: 'c'}, {a: 'b', b: 'c'}],
    [{a: 'b'}, {a: null}, {}],
    [{a: 'b', b: 'c'}, {a: null}, {b: 'c'}],
    [{a: ['b']}, {a: 'c'}, {a: 'c'}],
    [{a: 'c'}, {a: ['b']}, {a: ['b']}],
    [{a: {b: 'c'}}, {a: {b: 'd', c: null}}, {a: {b: 'd'}}],
    [{a: [{b: 'c'}]}, {a: [1]}, {a: [1]}],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{a: 'b'}, ['c'], ['c']],
    [{a: 'foo'}, null, null],
    [{a: 'foo'}, 'bar', 'bar'],
    [{e: null}, {a: 1}, {e: null, a: 1}],
    [[1, 2], {a: 'b', c: null}, {a: 'b'}],
    [{}, {a: {bb: {ccc: null}}}, {a: {bb: {}}}],
  ];
  it.each(appendixA)('applies %j + %j', (original, patch, result) => {
    expect(mergePatch(original, patch)).toEqual(result);
  });

  it('the example of section 3', () => {
    const target = {
      title: 'Goodbye!',
      author: {givenName: 'John', familyName: 'Doe'},
      tags: ['example', 'sample'],
      content: 'This will be unchanged',
    };
    const patch = {title: 'Hello!', phoneNumber: '+01-123-456-7890', author: {familyName: null}, tags: ['example']};
    expect(mergePatch(target, patch)).toEqual({
      title: 'Hello!',
      author: {givenName: 'John'},
      tags: ['example'],
      content: 'This will be unchanged',
      phoneNumber: '+01-123-456-7890',
    });
  });

  it('changes neither the target nor the patch', () => {
    const target = {a: {b: 1}, c: 2};
    const patch = {a: {b: null, d: 3}};
    mergePatch(target, patch);
    expect(target).toEqual({a: {b: 1}, c: 2});
    expect(patch).toEqual({a: {b: null, d: 3}});
  });

  it('keeps a __proto__ key of the patch as a plain own key (validation then refuses it)', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}}') as JsonValue;
    const out = mergePatch({}, patch) as Record<string, unknown>;
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
