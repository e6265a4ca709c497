/**
 * Browser sessions of the console, in the server's memory: a login with a token makes one, its id
 * goes to the browser in an HttpOnly, SameSite=Strict cookie, and its CSRF token to the page (which
 * sends it back in `X-CSRF-Token` on every change). Sessions end `ttlMs` after login, at logout,
 * or when the server stops (signing in again is one token paste). At most `max` live sessions:
 * the oldest is dropped to make room, so a flood of logins cannot grow memory.
 */
import {timingSafeEqual} from 'node:crypto';
import type {Clock} from '../../core/time.js';
import type {RandomBytes, Role} from './tokens.js';

export interface Session {
  id: string;
  name: string;
  role: Role;
  csrf: string;
  expiresAt: number;
}

export interface Sessions {
  create(who: {name: string; role: Role}): Session;
  /** The live session of `id`, or undefined (unknown or expired: an expired one is forgotten). */
  get(id: string | undefined): Session | undefined;
  remove(id: string | undefined): void;
  /** Whether `given` is the session's CSRF token (constant time). */
  checkCsrf(s: Session, given: string | undefined): boolean;
  readonly size: number;
}

export function createSessions(o: {clock: Clock; bytes: RandomBytes; ttlMs: number; max?: number}): Sessions {
  const max = o.max ?? 10_000;
  const live = new Map<string, Session>();
  return {
    create(who) {
      if (live.size >= max) live.delete(live.keys().next().value as string);
      const s: Session = {
        id: o.bytes(32).toString('base64url'),
        name: who.name,
        role: who.role,
        csrf: o.bytes(32).toString('base64url'),
        expiresAt: o.clock.now() + o.ttlMs,
      };
      live.set(s.id, s);
      return s;
    },
    get(id) {
      if (id === undefined) return undefined;
      const s = live.get(id);
      if (s && s.expiresAt <= o.clock.now()) {
        live.delete(id);
        return undefined;
      }
      return s;
    },
    remove(id) {
      if (id !== undefined) live.delete(id);
    },
    checkCsrf(s, given) {
      if (given === undefined) return false;
      const a = Buffer.from(s.csrf);
      const b = Buffer.from(given);
      return a.length === b.length && timingSafeEqual(a, b);
    },
    get size() {
      return live.size;
    },
  };
}
