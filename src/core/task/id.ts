import {createHash} from 'node:crypto';
import type {Random} from '../time.js';

const HEX = Array.from({length: 256}, (_, i) => i.toString(16).padStart(2, '0'));

function format(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < 16; i++) {
    s += HEX[b[i] as number];
    if (i === 3 || i === 5 || i === 7 || i === 9) s += '-';
  }
  return s;
}

/**
 * Makes UUIDv7 task ids: 48 bits of milliseconds, then random bits, so ids sort by creation time.
 * Within one millisecond the random tail keeps them unique (122 - 48 = 74 random bits).
 */
export function createIdGenerator(now: () => number, random: Random): () => string {
  const b = new Uint8Array(16);
  return () => {
    const ms = now();
    b[0] = Math.floor(ms / 2 ** 40) & 0xff;
    b[1] = Math.floor(ms / 2 ** 32) & 0xff;
    b[2] = (ms >>> 24) & 0xff;
    b[3] = (ms >>> 16) & 0xff;
    b[4] = (ms >>> 8) & 0xff;
    b[5] = ms & 0xff;
    for (let i = 6; i < 16; i++) b[i] = Math.floor(random() * 256) & 0xff;
    b[6] = ((b[6] as number) & 0x0f) | 0x70;
    b[8] = ((b[8] as number) & 0x3f) | 0x80;
    return format(b);
  };
}

/**
 * The id of a task identified by a dedup key and no explicit id: a name-based UUID (version 8) of
 * the cell and key, so every producer that submits the same key gets the same id back at once.
 */
export function idFromDedupKey(cell: string, dedupKey: string): string {
  const h = createHash('sha256').update(`ax-dedup\0${cell}\0${dedupKey}`).digest();
  h[6] = ((h[6] as number) & 0x0f) | 0x80;
  h[8] = ((h[8] as number) & 0x3f) | 0x80;
  return format(h);
}

const ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isTaskId(s: unknown): s is string {
  return typeof s === 'string' && ID_RE.test(s);
}
