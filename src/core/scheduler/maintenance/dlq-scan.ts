/**
 * The dead-letter scan as a Service: creates the cell's watermark at start (DeadLetterScan.begin),
 * then every AX_DLQ_SCAN_EVERY reports the tasks that died since (dlq:new; core/dlq/scan.ts).
 */
import {DeadLetterScan, type DeadLetterScanOptions} from '../../dlq/scan.js';
import type {Clock} from '../../time.js';
import {PeriodicService} from './periodic-service.js';

export interface DeadLetterScannerOptions extends DeadLetterScanOptions {
  clock: Clock;
  everyMs: number;
}

/** The scan's loop; `start()` throws (unavailable) when the watermark cannot be read or created. */
export class DeadLetterScanner extends PeriodicService {
  constructor(o: DeadLetterScannerOptions) {
    const scan = new DeadLetterScan(o);
    super({
      name: 'dead-letter scan',
      clock: o.clock,
      logger: o.logger,
      everyMs: o.everyMs,
      begin: () => scan.begin(),
      run: async () => {
        await scan.scan();
      },
    });
  }
}
