/** The claim check's pure parts (src/core/store/mysql/payloads.ts): the size rule and the body format. */
import {deflateSync} from 'node:zlib';
import {describe, expect, it} from 'vitest';
import {isBig, packBig, packPayload, unpackPayload} from '../../src/core/store/mysql/payloads.js';

describe('payloads stored apart', () => {
  it('counts UTF-8 bytes: at the limit stays inline, one byte more is big', () => {
    const at = `{"s":"${'é'.repeat(100)}${'x'.repeat(1016 - 200)}"}`;
    expect(Buffer.byteLength(at)).toBe(1024);
    expect(at.length).toBeLessThan(1024);
    expect(isBig(at, 1024)).toBe(false);
    expect(isBig(at.replace('x', 'xx'), 1024)).toBe(true);
    expect(isBig('{}', 0)).toBe(true);
    expect(isBig('{}', 2)).toBe(false);
    expect(isBig('x'.repeat(400), 1024)).toBe(false);
    expect(isBig('x'.repeat(1025), 1024)).toBe(true);
  });

  it('a body is COMPRESS() format (length, low byte first, then zlib) and comes back byte for byte', async () => {
    const text = JSON.stringify({note: 'čaj ☕ 𝄞', items: Array.from({length: 300}, (_, i) => ({i}))});
    const body = await packPayload(text);
    expect(body.readUInt32LE(0)).toBe(Buffer.byteLength(text));
    expect(body.length).toBeLessThan(Buffer.byteLength(text));
    expect(unpackPayload(body, 't1')).toBe(text);
    // One written by the database (COMPRESS) reads the same.
    const raw = Buffer.from(text);
    const head = Buffer.alloc(4);
    head.writeUInt32LE(raw.length);
    expect(unpackPayload(Buffer.concat([head, deflateSync(raw, {level: 9})]), 't1')).toBe(text);
  });

  it('an unreadable body is an internal error naming the task, never a guessed payload', async () => {
    const body = await packPayload('{"a":1}');
    const wrongLength = Buffer.from(body);
    wrongLength.writeUInt32LE(99, 0);
    for (const bad of [Buffer.alloc(0), Buffer.from('garbage!'), wrongLength])
      expect(() => unpackPayload(bad, 'task-9')).toThrow(
        expect.objectContaining({code: 'internal', message: expect.stringContaining('task-9')}),
      );
  });

  it('packBig compresses only the big ones, by index', async () => {
    const texts = ['{}', JSON.stringify({s: 'y'.repeat(50)}), '{"a":1}'];
    const out = await packBig(texts, 10);
    expect([...out.keys()]).toEqual([1]);
    expect(unpackPayload(out.get(1)!, 'x')).toBe(texts[1]);
    expect((await packBig(texts, 1000)).size).toBe(0);
  });
});
