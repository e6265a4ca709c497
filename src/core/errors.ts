/**
 * The few error classes of ax. Every failure that crosses a public boundary is an AxError with a
 * code; the CLI maps codes to exit codes and hints, the SDK lets callers branch on `code`.
 */
export type AxErrorCode =
  | 'invalid_input' // the caller's input is wrong; nothing was changed
  | 'not_found' // the named task/schedule/... does not exist
  | 'conflict' // the same id or dedup key exists with different content
  | 'unavailable' // MySQL or RabbitMQ cannot be reached (or refused us)
  | 'timeout' // an operation did not finish in time (confirm, query, shutdown)
  | 'closed' // the client or service was already closed
  | 'internal'; // a bug or an invariant violation

export class AxError extends Error {
  readonly code: AxErrorCode;
  /** Structured details safe to print (never secrets, never payloads). */
  readonly details: Record<string, unknown> | undefined;

  constructor(code: AxErrorCode, message: string, options?: {cause?: unknown; details?: Record<string, unknown>}) {
    super(message, options?.cause === undefined ? undefined : {cause: options.cause});
    this.name = 'AxError';
    this.code = code;
    this.details = options?.details;
  }
}

export const invalid = (message: string, details?: Record<string, unknown>): AxError =>
  new AxError('invalid_input', message, details ? {details} : undefined);

export const isAxError = (e: unknown, code?: AxErrorCode): e is AxError => e instanceof AxError && (code === undefined || e.code === code);

/** Best-effort message of anything thrown (handlers may throw non-Errors). */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e) ?? String(e);
  } catch {
    return String(e);
  }
}

/** Most lines and characters of a stack kept per failed attempt. */
export const STACK_LINES = 10;
export const STACK_BYTES = 2048;

/**
 * The first STACK_LINES lines of an error's stack, at most STACK_BYTES characters (cut with "…"),
 * or undefined when the thrown value has no string stack.
 */
export function stackHead(e: unknown): string | undefined {
  const stack = typeof e === 'object' && e !== null ? (e as {stack?: unknown}).stack : undefined;
  if (typeof stack !== 'string' || stack === '') return undefined;
  const lines = stack.split('\n').slice(0, STACK_LINES).join('\n');
  return lines.length > STACK_BYTES ? `${lines.slice(0, STACK_BYTES - 1)}…` : lines;
}
