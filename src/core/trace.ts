/**
 * Tracing through the OpenTelemetry API (`@opentelemetry/api`), an optional peer dependency: this
 * module is the only one that loads it, once, with a dynamic import when it is first evaluated.
 * When the import fails (the package is not installed) every function here is a no-op that returns
 * null, and nothing else of it is loaded. With the API but no tracer provider registered, the API's
 * own no-op tracer answers (a few object allocations per traced batch or attempt).
 *
 * What ax traces: the W3C trace context (`traceparent`, `tracestate`) active at `submit()` (or at
 * `enqueueInTransaction`) is kept on the task row; the producer's batch INSERT, the worker's claim
 * and each attempt of a task that has one get a span. A task submitted outside any trace carries
 * nothing and gets no span.
 */
import type * as OtelApi from '@opentelemetry/api';
import {type AttemptSpan, type BatchSpan, type TraceContext, traceContextOf} from './trace-context.js';

export type {AttemptSpan, BatchSpan, TraceContext};

/** The tracing functions; every one returns null (and does nothing) without the API. */
export interface Tracing {
  /** True when `@opentelemetry/api` was loaded. */
  readonly enabled: boolean;
  /** The active span's context as W3C headers, or null (no API, no active span, or an invalid one). */
  active(): TraceContext | null;
  /**
   * A span over a batch of tasks, started at `startMs` (epoch ms, default now): a link to each
   * traced task's context (tasks without one are left out), and a child of that context when the
   * batch has only one distinct trace. Null when no task of the batch is traced.
   */
  batchSpan(
    name: string,
    contexts: ReadonlyArray<TraceContext | null | undefined>,
    attributes: Record<string, string | number>,
    startMs?: number,
  ): BatchSpan | null;
  /** The span of one attempt of a traced task: a child of the submit's span (`parent`). */
  attemptSpan(name: string, parent: TraceContext, attributes: Record<string, string | number>): AttemptSpan | null;
}

const noTracing: Tracing = {
  enabled: false,
  active: () => null,
  batchSpan: () => null,
  attemptSpan: () => null,
};

/** `f()`, or null when it throws: tracing never fails a submit, a claim or an attempt (a broken tracer SDK is ignored). */
function safe<T>(f: () => T): T | null {
  try {
    return f();
  } catch {
    return null;
  }
}

/** The tracing functions over `api` (null: the no-ops). Exported for tests; use `tracing`. */
export function createTracing(api: typeof OtelApi | null): Tracing {
  if (api === null) return noTracing;
  const tracer = (): OtelApi.Tracer => api.trace.getTracer('ax-executor');
  const spanContextOf = (tc: TraceContext): OtelApi.SpanContext => {
    const [, traceId, spanId, flags] = tc.traceparent.split('-') as [string, string, string, string];
    return {
      traceId,
      spanId,
      traceFlags: parseInt(flags, 16),
      isRemote: true,
      ...(tc.tracestate === null ? {} : {traceState: api.createTraceState(tc.tracestate)}),
    };
  };
  const parentOf = (tc: TraceContext): OtelApi.Context => api.trace.setSpanContext(api.ROOT_CONTEXT, spanContextOf(tc));
  const ender =
    (span: OtelApi.Span) =>
    (ok: boolean, error?: string): void =>
      void safe(() => {
        if (!span.isRecording()) return;
        if (!ok) span.setStatus({code: api.SpanStatusCode.ERROR, ...(error === undefined ? {} : {message: error})});
        span.end();
      });
  const batchSpan = (...[name, contexts, attributes, startMs]: Parameters<Tracing['batchSpan']>): BatchSpan | null => {
    const distinct = new Map<string, TraceContext>();
    for (const tc of contexts) if (tc) distinct.set(tc.traceparent, tc);
    if (distinct.size === 0) return null;
    const only = distinct.size === 1 ? [...distinct.values()][0]! : null;
    const links = only ? [] : [...distinct.values()].map((tc) => ({context: spanContextOf(tc)}));
    const span = tracer().startSpan(
      name,
      {kind: api.SpanKind.INTERNAL, attributes, links, ...(startMs === undefined ? {} : {startTime: startMs})},
      only ? parentOf(only) : api.ROOT_CONTEXT,
    );
    return {end: ender(span)};
  };
  return {
    enabled: true,
    // Called by every submit: no closure of its own.
    active() {
      try {
        const sc = api.trace.getSpanContext(api.context.active());
        if (!sc || !api.isSpanContextValid(sc)) return null;
        const traceparent = `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
        return traceContextOf(traceparent, sc.traceState?.serialize());
      } catch {
        return null;
      }
    },
    batchSpan: (name, contexts, attributes, startMs) => safe(() => batchSpan(name, contexts, attributes, startMs)),
    attemptSpan: (name, parent, attributes) =>
      safe((): AttemptSpan => {
        const span = tracer().startSpan(name, {kind: api.SpanKind.CONSUMER, attributes}, parentOf(parent));
        const active = api.trace.setSpan(parentOf(parent), span);
        return {run: (fn) => api.context.with(active, fn), end: ender(span)};
      }),
  };
}

/** Loaded once, here only: null when `@opentelemetry/api` cannot be imported. */
const loaded: typeof OtelApi | null = await import('@opentelemetry/api').catch(() => null);

/** This process's tracing: the API's when it is installed, else the no-ops. */
export const tracing: Tracing = createTracing(loaded);
