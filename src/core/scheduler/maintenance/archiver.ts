/**
 * The archiver as a Service: one archive run every AX_ARCHIVE_EVERY (0: off; core/archive). Every
 * scheduler may run it: the cell's archive lock lets one work at a time.
 */
import {archiveLoop, type ArchiveLoopOptions} from '../../archive/service.js';
import {LoopService} from './loop-service.js';

/** archiveLoop as a Service: ready between start and stop (also when off); `stop()` aborts a running pass between batches. */
export class ArchiverService extends LoopService {
  constructor(o: ArchiveLoopOptions) {
    super(archiveLoop(o));
  }
}
