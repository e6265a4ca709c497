import {describe, expect, it} from 'vitest';
import {csrfRefusal, identify, isLoopback, type Who} from '../../../src/web/auth/access.js';
import {createLoginLimiter} from '../../../src/web/auth/login-limit.js';
import {createSessions} from '../../../src/web/auth/sessions.js';
import {findToken, hashToken, newToken, parseTokens} from '../../../src/web/auth/tokens.js';
import {fakeClock} from '../../helpers/clock.js';

let counter = 0;
const bytes = (n: number): Buffer => Buffer.alloc(n, ++counter);

describe('console tokens', () => {
  it('makes a token whose entry parses back and finds it; the entry holds only the hash', () => {
    const t = newToken('alice', 'operator', bytes);
    expect(t.token).toMatch(/^axt_[A-Za-z0-9_-]{43}$/);
    expect(t.entry).not.toContain(t.token.slice(4));
    const entries = parseTokens(`${t.entry}, ${newToken('bob', 'viewer', bytes).entry}`);
    expect(entries.map((e) => [e.name, e.role])).toEqual([
      ['alice', 'operator'],
      ['bob', 'viewer'],
    ]);
    expect(findToken(entries, t.token)?.name).toBe('alice');
    expect(findToken(entries, t.token + 'x')).toBeUndefined();
    expect(entries[0]?.hash.equals(hashToken(t.token))).toBe(true);
  });

  it('refuses malformed entries, unknown roles, bad names and a name given twice', () => {
    const good = newToken('alice', 'viewer', bytes).entry;
    expect(parseTokens('')).toEqual([]);
    expect(() => parseTokens('alice:viewer:plain')).toThrow(/name:role:sha256/);
    expect(() => parseTokens(good.replace('viewer', 'admin'))).toThrow(/role "admin"/);
    expect(() => parseTokens(good.replace('alice', 'al ice'))).toThrow(/token name/);
    expect(() => parseTokens(`${good},${good}`)).toThrow(/twice/);
    expect(() => newToken('x', 'root', bytes)).toThrow(/role "root"/);
  });
});

describe('console sessions', () => {
  it('expire after the ttl, end at logout, and check the CSRF token exactly', () => {
    const clock = fakeClock(1000);
    const s = createSessions({clock, bytes, ttlMs: 60_000});
    const a = s.create({name: 'alice', role: 'operator'});
    expect(s.get(a.id)?.name).toBe('alice');
    expect(s.checkCsrf(a, a.csrf)).toBe(true);
    expect(s.checkCsrf(a, a.csrf.slice(1))).toBe(false);
    expect(s.checkCsrf(a, undefined)).toBe(false);
    clock.advance(59_999);
    expect(s.get(a.id)).toBeDefined();
    clock.advance(1);
    expect(s.get(a.id)).toBeUndefined();
    const b = s.create({name: 'bob', role: 'viewer'});
    s.remove(b.id);
    expect(s.get(b.id)).toBeUndefined();
  });

  it('keeps at most max sessions, dropping the oldest', () => {
    const s = createSessions({clock: fakeClock(0), bytes, ttlMs: 60_000, max: 2});
    const [a, b, c] = [1, 2, 3].map((i) => s.create({name: `u${i}`, role: 'viewer'}));
    expect(s.size).toBe(2);
    expect(s.get(a?.id)).toBeUndefined();
    expect(s.get(b?.id)?.name).toBe('u2');
    expect(s.get(c?.id)?.name).toBe('u3');
  });
});

describe('login rate limit', () => {
  it('refuses an address after 5 failures within a minute until the oldest leaves the window', () => {
    const clock = fakeClock(0);
    const l = createLoginLimiter({clock});
    for (let i = 0; i < 4; i++) {
      l.failed('10.0.0.1');
      clock.advance(1000);
    }
    expect(l.retryAfterMs('10.0.0.1')).toBe(0);
    l.failed('10.0.0.1');
    expect(l.retryAfterMs('10.0.0.1')).toBe(60_000 - 4000);
    expect(l.retryAfterMs('10.0.0.2')).toBe(0);
    clock.advance(60_000 - 4000);
    expect(l.retryAfterMs('10.0.0.1')).toBe(0);
  });
});

describe('access rules', () => {
  const sessions = createSessions({clock: fakeClock(0), bytes, ttlMs: 60_000});
  const tokens = parseTokens(newToken('svc', 'producer', bytes).entry);

  it('identifies a bearer token, a session, the local operator without tokens, or nobody', () => {
    const t = newToken('svc2', 'viewer', bytes);
    const list = parseTokens(t.entry);
    expect(identify({authorization: `Bearer ${t.token}`, sessionId: undefined}, {tokens: list, sessions, localName: 'me'})).toMatchObject({
      name: 'svc2',
      role: 'viewer',
      via: 'token',
    });
    expect(identify({authorization: 'Bearer nope', sessionId: undefined}, {tokens: list, sessions, localName: 'me'})).toBe('bad_token');
    const s = sessions.create({name: 'alice', role: 'operator'});
    expect(identify({authorization: undefined, sessionId: s.id}, {tokens: list, sessions, localName: 'me'})).toMatchObject({
      via: 'session',
      name: 'alice',
    });
    expect(identify({authorization: undefined, sessionId: undefined}, {tokens: list, sessions, localName: 'me'})).toBeNull();
    expect(identify({authorization: undefined, sessionId: undefined}, {tokens: [], sessions, localName: 'me'})).toMatchObject({
      via: 'local',
      role: 'operator',
    });
    expect(tokens).toHaveLength(1);
  });

  it('needs the CSRF token for a session change, refuses cross-site local changes, lets reads and bearer tokens through', () => {
    const s = sessions.create({name: 'alice', role: 'operator'});
    const bySession: Who = {name: 'alice', role: 'operator', via: 'session', session: s};
    const local: Who = {name: 'me', role: 'operator', via: 'local'};
    const req = {method: 'POST', csrfHeader: undefined, origin: undefined, secFetchSite: undefined, host: '127.0.0.1:8080'};
    expect(csrfRefusal(bySession, {...req, method: 'GET'}, sessions)).toBeNull();
    expect(csrfRefusal(bySession, req, sessions)).toMatch(/X-CSRF-Token/);
    expect(csrfRefusal(bySession, {...req, csrfHeader: s.csrf}, sessions)).toBeNull();
    expect(csrfRefusal({name: 'svc', role: 'producer', via: 'token'}, req, sessions)).toBeNull();
    expect(csrfRefusal(local, req, sessions)).toBeNull();
    expect(csrfRefusal(local, {...req, origin: 'https://evil.example'}, sessions)).toMatch(/cross-site/);
    expect(csrfRefusal(local, {...req, origin: 'http://127.0.0.1:8080'}, sessions)).toBeNull();
    expect(csrfRefusal(local, {...req, secFetchSite: 'cross-site'}, sessions)).toMatch(/cross-site/);
    expect(csrfRefusal(local, {...req, origin: 'null'}, sessions)).toMatch(/cross-site/);
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', 'localhost', '::1', '127.3.2.1'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '10.0.0.1', '::'].some(isLoopback)).toBe(false);
  });
});
