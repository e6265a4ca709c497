/**
 * The cell's gauges as a Service (core/metrics/cell.ts: backlog, workers, and flow control's
 * gauges, refreshed from MySQL every AX_METRICS_CELL_EVERY). One process per cell serves them: the
 * scheduler, on its health endpoint.
 */
import {CellMetrics, type CellMetricsOptions} from '../../metrics/cell.js';
import {flowGauges} from '../../metrics/flow.js';
import {LoopService} from './loop-service.js';

export type CellMetricsServiceOptions = Omit<CellMetricsOptions, 'extra' | 'store'> & {
  store: CellMetricsOptions['store'] & Parameters<typeof flowGauges>[1];
};

/** Refreshes at start, then every period; ready between start and stop (a failing refresh shows in ax_cell_metrics_up). */
export class CellMetricsService extends LoopService {
  constructor(o: CellMetricsServiceOptions) {
    // Paused types, breaker states and parked counts, read in the same pass.
    super(new CellMetrics({...o, extra: [flowGauges(o.metrics, o.store)]}));
  }
}
