/**
 * The metrics registry of one ax process: the only module that imports prom-client (enforced by
 * eslint.config.js). Services never call it: the subscribers of this directory turn events of the
 * typed stream (core/events.ts) into counters and histograms, and gauges are read on scrape.
 *
 * Conventions (README "Metrics"): every series of ax starts with `ax_`, counters end in `_total`,
 * times are seconds and sizes bytes, and labels are bounded (type, outcome, pool, state — never a
 * task id). Every series carries the process's `cell` as a label. The process metrics of
 * prom-client (`process_*`, `nodejs_*`: CPU, memory, event-loop lag, GC) come along.
 */
import {Counter, Gauge, Histogram, Registry, collectDefaultMetrics} from 'prom-client';

export type {Counter, Gauge, Histogram} from 'prom-client';

/** Buckets of the attempt duration and start delay histograms, seconds: 1 ms … 5 min. */
export const SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** prom-client default metrics that break the Prometheus naming rules (gauges ending in _total). */
const LINT_FAILING_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

export interface MetricsRegistryOptions {
  /** The cell of the process: a label on every series. */
  cell: string;
  /** Add prom-client's process metrics (default true). */
  processMetrics?: boolean;
}

/** What `/metrics` answers: the text exposition format and its content type. */
export interface MetricsText {
  contentType: string;
  body: string;
}

/**
 * One prom-client registry (never the global one, so tests and in-process benchmarks may hold
 * several) with factory methods that register each metric once: asking twice for the same name
 * returns the existing metric, so subscribers of several services may share a series.
 */
export class MetricsRegistry {
  private readonly reg = new Registry();

  constructor(o: MetricsRegistryOptions) {
    this.reg.setDefaultLabels({cell: o.cell});
    if (o.processMetrics ?? true) {
      collectDefaultMetrics({register: this.reg});
      // Gauges named like counters: `promtool check metrics` rejects them (prom-client issue #578).
      for (const name of LINT_FAILING_DEFAULTS) this.reg.removeSingleMetric(name);
    }
  }

  counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return this.existing(name) ?? new Counter({name, help, labelNames, registers: [this.reg]});
  }

  /** A gauge; `collect` (when given) runs at each scrape, before the value is read. */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (g: Gauge<L>) => void): Gauge<L> {
    return (
      this.existing(name) ??
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers: [this.reg],
        ...(collect
          ? {
              collect: function (this: Gauge<L>) {
                collect(this);
              },
            }
          : {}),
      })
    );
  }

  histogram<L extends string>(name: string, help: string, labelNames: readonly L[] = [], buckets = SECONDS_BUCKETS): Histogram<L> {
    return this.existing(name) ?? new Histogram({name, help, labelNames, buckets, registers: [this.reg]});
  }

  /** The exposition text of every registered metric (what `/metrics` serves). */
  async text(): Promise<MetricsText> {
    return {contentType: this.reg.contentType, body: await this.reg.metrics()};
  }

  private existing<T>(name: string): T | undefined {
    return this.reg.getSingleMetric(name) as T | undefined;
  }
}
