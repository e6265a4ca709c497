/**
 * Who a request is and what it may do: pure rules over the request's credentials, used by the
 * server's hook (src/web/server.ts).
 *
 * - `Authorization: Bearer <token>`: the token's name and role (API clients; no CSRF check: a
 *   browser never sends this header by itself).
 * - the `ax_session` cookie: the session's name and role; a change needs `X-CSRF-Token`.
 * - neither, when no tokens are configured (loopback only): the local operator; a change is
 *   refused when the browser marks it cross-site (Origin of another host, Sec-Fetch-Site), so a
 *   web page the operator visits cannot drive the console.
 */
import type {Session, Sessions} from './sessions.js';
import {findToken, type Role, type TokenEntry} from './tokens.js';

/** What a route needs: nothing, or one of the roles allowed. */
export type Access = 'public' | 'viewer' | 'operator' | 'producer';

export interface Who {
  name: string;
  role: Role;
  via: 'token' | 'session' | 'local';
  session?: Session;
}

/** The roles each access level admits: operators may do everything viewers and producers may. */
const ADMITS: Record<Exclude<Access, 'public'>, readonly Role[]> = {
  viewer: ['viewer', 'operator'],
  operator: ['operator'],
  producer: ['producer', 'operator'],
};

export function admits(access: Access, role: Role): boolean {
  return access === 'public' || ADMITS[access].includes(role);
}

export interface Credentials {
  authorization: string | undefined;
  sessionId: string | undefined;
}

/**
 * The caller, `null` when anonymous with tokens configured, or `'bad_token'` when a bearer token
 * matches none (counted as a failed login by the caller).
 */
export function identify(
  c: Credentials,
  o: {tokens: readonly TokenEntry[]; sessions: Sessions; localName: string},
): Who | null | 'bad_token' {
  if (c.authorization !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(c.authorization);
    const entry = m ? findToken(o.tokens, m[1] as string) : undefined;
    return entry ? {name: entry.name, role: entry.role, via: 'token'} : 'bad_token';
  }
  const s = o.sessions.get(c.sessionId);
  if (s) return {name: s.name, role: s.role, via: 'session', session: s};
  if (o.tokens.length === 0) return {name: o.localName, role: 'operator', via: 'local'};
  return null;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface CsrfInput {
  method: string;
  csrfHeader: string | undefined;
  origin: string | undefined;
  secFetchSite: string | undefined;
  /** The Host header the request came with. */
  host: string | undefined;
}

/**
 * Why a state-changing request is refused as a cross-site forgery, or null when it may go on:
 * a session needs its CSRF token; a local (no-auth) caller must not be a cross-site browser request.
 */
export function csrfRefusal(who: Who, r: CsrfInput, sessions: Sessions): string | null {
  if (SAFE_METHODS.has(r.method) || who.via === 'token') return null;
  if (who.via === 'session') {
    return who.session && sessions.checkCsrf(who.session, r.csrfHeader)
      ? null
      : 'a change from the console needs the X-CSRF-Token header of its session (reload the page)';
  }
  if (r.secFetchSite !== undefined && r.secFetchSite !== 'same-origin' && r.secFetchSite !== 'none')
    return 'cross-site requests may not change anything';
  if (r.origin !== undefined && r.origin !== 'null') {
    let originHost: string;
    try {
      originHost = new URL(r.origin).host;
    } catch {
      return 'the Origin header is not a URL';
    }
    if (originHost !== r.host) return 'cross-site requests may not change anything';
  } else if (r.origin === 'null') return 'cross-site requests may not change anything';
  return null;
}

/** Loopback host names a browser may use for a console bound to loopback (DNS rebinding guard). */
export function loopbackHosts(port: number, bound?: string): Set<string> {
  const hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  // Bound to another loopback address (127.0.0.2, say): browsers name that one.
  if (bound !== undefined) hosts.add(`${bound.includes(':') ? `[${bound}]` : bound}:${port}`);
  return hosts;
}

export function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
