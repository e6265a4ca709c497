/**
 * W3C trace context as ax keeps it with a task (traceparent, tracestate), and the shapes of the
 * spans core/trace.ts makes. Nothing here loads OpenTelemetry: the types are ax's own, so the
 * declarations of the modules that use them never name `@opentelemetry/api` (an optional peer).
 */

/** A W3C trace context as stored with a task: a valid version-00 traceparent, and the tracestate when there was one. */
export interface TraceContext {
  traceparent: string;
  tracestate: string | null;
}

/** The span of one attempt (see Tracing.attemptSpan). */
export interface AttemptSpan {
  /** Runs `fn` with the span active (its spans are children of the attempt's); returns what fn returns. */
  run<T>(fn: () => T): T;
  /** Ends the span: an error status (with `error`) unless `ok`. Calling it again does nothing. */
  end(ok: boolean, error?: string): void;
}

/** A span over a batch of tasks: the producer's INSERT or a worker's claim (see Tracing.batchSpan). */
export interface BatchSpan {
  end(ok: boolean, error?: string): void;
}

/** W3C traceparent, version 00: version-traceid-parentid-flags in lower-case hex. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** W3C's limit a tracestate may be cut to; a longer one is dropped (the traceparent is kept). */
export const MAX_TRACESTATE = 512;

/**
 * A stored or written trace context checked: null for anything but a valid version-00 traceparent
 * (an all-zero trace or span id is invalid); a tracestate that is not printable ASCII of at most
 * MAX_TRACESTATE characters is dropped. Never throws (an outbox row's bad context is ignored).
 */
export function traceContextOf(traceparent: unknown, tracestate?: unknown): TraceContext | null {
  if (typeof traceparent !== 'string') return null;
  const m = TRACEPARENT.exec(traceparent);
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return null;
  const ok =
    typeof tracestate === 'string' && tracestate.length > 0 && tracestate.length <= MAX_TRACESTATE && /^[\x20-\x7e]+$/.test(tracestate);
  return {traceparent, tracestate: ok ? tracestate : null};
}

/** The trace id (32 hex digits) of a valid traceparent. */
export function traceIdOf(tc: TraceContext): string {
  return tc.traceparent.slice(3, 35);
}
