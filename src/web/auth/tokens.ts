/**
 * The console's API tokens (AX_WEB_TOKENS): who may use `ax web` and with which role. A token is
 * shown once when made (`ax web token`) and only its SHA-256 is kept in the configuration.
 *
 * Why SHA-256 and not a slow password hash: a token is 32 random bytes (256 bits), so a leaked hash
 * cannot be reversed by guessing, and every API request is checked against it — scrypt's deliberate
 * ~50 ms per check would be the console's latency. Hashes are compared with timingSafeEqual, and
 * every configured token is compared (no early exit), so timing says nothing about which matched.
 */
import {createHash, timingSafeEqual} from 'node:crypto';
import {invalid} from '../../core/errors.js';

export const ROLES = ['viewer', 'operator', 'producer'] as const;
export type Role = (typeof ROLES)[number];

export interface TokenEntry {
  /** Who holds it, as the audit trail names them (`web:<name>@<address>`). */
  name: string;
  role: Role;
  /** SHA-256 of the token, 32 bytes. */
  hash: Buffer;
}

const TOKEN_PREFIX = 'axt_';
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The SHA-256 of `token`. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** A new token (`axt_` and 43 base64url characters: 32 random bytes) and its configuration entry. */
/** Cryptographic random bytes (crypto.randomBytes; injected so tests can fix them). */
export type RandomBytes = (n: number) => Buffer;

export function newToken(name: string, role: string, bytes: RandomBytes): {token: string; entry: string} {
  checkName(name);
  checkRole(role);
  const token = TOKEN_PREFIX + bytes(32).toString('base64url');
  return {token, entry: `${name}:${role}:sha256:${hashToken(token).toString('hex')}`};
}

/**
 * Parses AX_WEB_TOKENS: comma-separated `name:role:sha256:<64 hex>` entries (what `ax web token`
 * prints). Empty: no tokens (the console is then open on loopback only). Throws invalid_input
 * naming the entry for a bad name, role or hash, or a name given twice.
 */
export function parseTokens(setting: string): TokenEntry[] {
  const out: TokenEntry[] = [];
  for (const raw of setting.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const [name = '', role = '', algo = '', hex = '', ...rest] = item.split(':');
    checkName(name);
    checkRole(role);
    if (algo !== 'sha256' || !/^[0-9a-f]{64}$/.test(hex) || rest.length > 0)
      throw invalid(
        `AX_WEB_TOKENS entry for "${name}" is not name:role:sha256:<64 hex digits> (make one with: ax web token --name ${name} --role ${role})`,
      );
    if (out.some((t) => t.name === name)) throw invalid(`AX_WEB_TOKENS names "${name}" twice`);
    out.push({name, role, hash: Buffer.from(hex, 'hex')});
  }
  return out;
}

/** The entry whose hash is `token`'s, or undefined; compares against every entry in constant time each. */
export function findToken(entries: readonly TokenEntry[], token: string): TokenEntry | undefined {
  const h = hashToken(token);
  let found: TokenEntry | undefined;
  for (const e of entries) if (timingSafeEqual(e.hash, h) && found === undefined) found = e;
  return found;
}

function checkName(name: string): void {
  if (!NAME.test(name))
    throw invalid(`token name "${name}" must be 1 to 64 letters, digits, ".", "_" or "-" (starting with a letter or digit)`);
}

function checkRole(role: string): asserts role is Role {
  if (!(ROLES as readonly string[]).includes(role)) throw invalid(`role "${role}" is not one of ${ROLES.join(', ')}`);
}
