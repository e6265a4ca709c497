/**
 * A small structured logger: one JSON object per line on stderr (stdout is for command output).
 * Payloads are never logged at info level; URLs passed in fields must already be redacted.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const ORDER: Record<LogLevel, number> = {debug: 10, info: 20, warn: 30, error: 40, silent: 100};

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(
  level: LogLevel = 'info',
  base: Record<string, unknown> = {},
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  const min = ORDER[level];
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (ORDER[lvl] < min) return;
    const rec = {time: new Date().toISOString(), level: lvl, msg, ...base, ...fields};
    write(
      `${JSON.stringify(rec, (_k, v: unknown) => (v instanceof Error ? {message: v.message, code: (v as {code?: unknown}).code} : v))}\n`,
    );
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (f) => createLogger(level, {...base, ...f}, write),
  };
}

export const silentLogger: Logger = createLogger('silent');
