/**
 * Structured logging on pino (the one place it is imported): one JSON object per line on stderr
 * (stdout is for command output), or pino-pretty's coloured lines when stderr is a terminal. Times
 * are ISO 8601 (UTC), errors are serialized with their stack and cause, and secrets are redacted:
 * passwords in URLs anywhere in the message or the fields, and the values of secret field names
 * (password, secret, token, … and any configured with `redact`). Payloads are never logged at info
 * level. A disabled level costs one no-op call: nothing is copied, redacted or serialized.
 */
import {createRequire} from 'node:module';
import pino, {type DestinationStream} from 'pino';
import type PinoPretty from 'pino-pretty';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
/** `auto`: pretty when stderr is a terminal, else JSON lines. */
export type LogFormat = 'auto' | 'json' | 'pretty';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  /** Extra field names (case-insensitive, at any depth) whose values are replaced by `***`. */
  redact?: readonly string[];
  /** Output format when no `write` is given (default `auto`). */
  format?: LogFormat;
}

/** Field names whose values are always redacted (compared lower-case, without `_` and `-`). */
const SECRET_FIELDS = ['password', 'passwd', 'pwd', 'secret', 'token', 'apikey', 'authorization', 'cookie', 'credentials'];
const CENSOR = '***';
/** `scheme://user:password@` → `scheme://user:***@`. */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*):[^\s/@]*@/gi;
const MAX_DEPTH = 6;

const norm = (k: string): string => k.toLowerCase().replace(/[-_]/g, '');

/** An Error as a plain object: type, message, code, stack and cause (pino's serializer). */
function serializeError(e: Error): Record<string, unknown> {
  return pino.stdSerializers.err(e) as unknown as Record<string, unknown>;
}

/** Copies `v` with secrets redacted and Errors serialized; strings have URL passwords masked. */
function scrub(v: unknown, secret: ReadonlySet<string>, depth: number): unknown {
  if (typeof v === 'string') return v.includes('://') ? v.replace(URL_PASSWORD, `$1:${CENSOR}@`) : v;
  if (v === null || typeof v !== 'object') return v;
  if (depth >= MAX_DEPTH) return '[too deep]';
  if (v instanceof Error) return scrub(serializeError(v), secret, depth + 1);
  if (Array.isArray(v)) return v.map((x) => scrub(x, secret, depth + 1));
  if (v instanceof Date || Buffer.isBuffer(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v))
    out[k] = secret.has(norm(k)) && x !== undefined && x !== null ? CENSOR : scrub(x, secret, depth + 1);
  return out;
}

function stderrDestination(format: LogFormat): DestinationStream {
  if (format === 'pretty' || (format === 'auto' && process.stderr.isTTY === true)) {
    // Loaded only when wanted: pino-pretty is not needed (nor paid for) on a server.
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
    return pretty({destination: 2, sync: true, colorize: process.stderr.isTTY === true, translateTime: "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'"});
  }
  // Synchronous: the last lines before a process.exit() (a crash, a fail-fast start) are not lost.
  return pino.destination({fd: 2, sync: true});
}

const noop = (): void => undefined;

function wrap(p: pino.Logger, secret: ReadonlySet<string>): Logger {
  const method = (lvl: Exclude<LogLevel, 'silent'>): Logger['info'] => {
    if (!p.isLevelEnabled(lvl)) return noop;
    return (msg, fields) => {
      const m = scrub(msg, secret, 0) as string;
      if (fields === undefined) p[lvl](m);
      else p[lvl](scrub(fields, secret, 0) as object, m);
    };
  };
  return {
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
    child: (f) => wrap(p.child(scrub(f, secret, 0) as pino.Bindings), secret),
  };
}

/**
 * A logger at `level` with `base` fields on every line. Lines go to `write` when given (tests),
 * else to stderr in `opts.format`. Never throws for any field value (cycles end as `[too deep]`).
 */
export function createLogger(
  level: LogLevel = 'info',
  base: Record<string, unknown> = {},
  write?: (line: string) => void,
  opts: LoggerOptions = {},
): Logger {
  const secret = new Set([...SECRET_FIELDS, ...(opts.redact ?? [])].map(norm));
  const destination: DestinationStream = write ? {write} : stderrDestination(opts.format ?? 'auto');
  const p = pino(
    {
      level,
      base: null,
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {level: (label) => ({level: label})},
    },
    destination,
  );
  return wrap(Object.keys(base).length > 0 ? p.child(scrub(base, secret, 0) as pino.Bindings) : p, secret);
}

export const silentLogger: Logger = createLogger('silent', {}, noop);

/** The logger options of a configuration (`logFormat`, `logRedact`). */
export function logOptions(c: {logFormat: LogFormat; logRedact: string}): LoggerOptions {
  const redact = c.logRedact
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return {format: c.logFormat, redact};
}

/**
 * `fields` with every instant as an ISO 8601 string: numbers (epoch ms) under keys ending in `At`
 * (`lastLoadAt`, `lastSuccessAt`), at any depth, so logs and health bodies never show epoch ms.
 */
export function isoTimes<T>(fields: T): T {
  if (Array.isArray(fields)) return fields.map((x: unknown) => isoTimes(x)) as T;
  if (fields === null || typeof fields !== 'object' || fields instanceof Date) return fields;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    out[k] = k.endsWith('At') && typeof v === 'number' && Number.isFinite(v) ? new Date(v).toISOString() : isoTimes(v);
  }
  return out as T;
}
