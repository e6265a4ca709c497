/**
 * The metrics registry of one ax process: the only module that imports prom-client (enforced by
 * eslint.config.js). Services never call it: the subscribers of this directory turn events of the
 * typed stream (core/events.ts) into counters and histograms, and gauges are read on scrape.
 *
 * Conventions (docs/observability.md, "Metrics and alerts"): every series of ax starts with `ax_`, counters end in `_total`,
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

  /**
   * A counter for hot paths: `cell(labels)` returns the series' cell once (the caller keeps it, per
   * type) and counting is `cell.value += n` — no label hashing per event (prom-client's `inc` with
   * labels costs ~0.7 µs, this an add).
   */
  cellCounter<L extends string>(name: string, help: string, labelNames: readonly L[]): CellCounter<L> {
    return this.existing(name) ?? this.register(new CellCounter<L>(name, help, labelNames));
  }

  /** A histogram for hot paths, the same way (`cell(labels).observe(v)`; prom-client's costs ~1.3 µs). */
  cellHistogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets = SECONDS_BUCKETS): CellHistogram<L> {
    return this.existing(name) ?? this.register(new CellHistogram<L>(name, help, labelNames, buckets));
  }

  /** The exposition text of every registered metric (what `/metrics` serves). */
  async text(): Promise<MetricsText> {
    return {contentType: this.reg.contentType, body: await this.reg.metrics()};
  }

  private register<T extends CellCounter<string> | CellHistogram<string>>(m: T): T {
    this.reg.registerMetric(m as unknown as Parameters<Registry['registerMetric']>[0]);
    return m;
  }

  private existing<T>(name: string): T | undefined {
    return this.reg.getSingleMetric(name) as T | undefined;
  }
}

/** One series of a cell metric: its labels and what it counts. */
interface Series<L extends string, V> {
  labels: Record<L, string>;
  cell: V;
}

/** A value exported in prom-client's shape (what Registry renders). */
interface Exported {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** Series keyed by their label values, created on first use. */
abstract class CellMetric<L extends string, V> {
  protected readonly series = new Map<string, Series<L, V>>();
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
  ) {}

  /** The cell of the series with these labels (created at 0). Keep it: looking it up again costs a key. */
  cell(labels: Record<L, string>): V {
    const key = this.labelNames.map((n) => labels[n]).join('\u0000');
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = {labels: {...labels}, cell: this.create()}));
    return s.cell;
  }

  protected abstract create(): V;
  abstract get(): Promise<{name: string; help: string; type: string; values: Exported[]; aggregator: string}>;
}

/** See MetricsRegistry.cellCounter. */
export class CellCounter<L extends string> extends CellMetric<L, {value: number}> {
  readonly type = 'counter';
  protected create(): {value: number} {
    return {value: 0};
  }
  async get() {
    const values = [...this.series.values()].map((s) => ({labels: s.labels, value: s.cell.value}));
    return {name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator};
  }
}

/** The cell of one histogram series: `observe(v)` is a bucket search over ~15 bounds and two adds. */
export class HistogramCell {
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

/** See MetricsRegistry.cellHistogram. */
export class CellHistogram<L extends string> extends CellMetric<L, HistogramCell> {
  readonly type = 'histogram';
  constructor(
    name: string,
    help: string,
    labelNames: readonly L[],
    private readonly bounds: readonly number[],
  ) {
    super(name, help, labelNames);
  }
  protected create(): HistogramCell {
    return new HistogramCell(this.bounds);
  }
  async get() {
    const values: Exported[] = [];
    for (const {labels, cell} of this.series.values()) {
      let acc = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        acc += cell.counts[i]!;
        values.push({
          labels: {...labels, le: i < this.bounds.length ? this.bounds[i]! : '+Inf'},
          value: acc,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({labels, value: cell.sum, metricName: `${this.name}_sum`});
      values.push({labels, value: cell.count, metricName: `${this.name}_count`});
    }
    return {name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator};
  }
}
