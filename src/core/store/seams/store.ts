/** The whole task database as composition roots and tests see it: every seam together. */

import type {ArchiveStore} from './archive.js';
import type {Closable} from './common.js';
import type {ScheduleStore} from './cron.js';
import type {DlqScanStore} from './dlq-scan.js';
import type {DeadLetterStore} from './dlq.js';
import type {DoctorStore} from './doctor.js';
import type {FlowStore} from './flow.js';
import type {DispatchHoldStore} from './holds.js';
import type {HotPathStore} from './hot-path.js';
import type {InspectStore} from './inspect.js';
import type {RescueStore} from './rescue.js';
import type {WorkerRegistryStore} from './workers.js';

/**
 * Everything ax's task database offers, for composition roots and tests. Services and commands
 * take the narrow seams (the files beside this one, or a Pick of them), never this.
 */
export type TaskStore = HotPathStore &
  DispatchHoldStore &
  RescueStore &
  InspectStore &
  DeadLetterStore &
  DlqScanStore &
  WorkerRegistryStore &
  DoctorStore &
  ArchiveStore &
  FlowStore &
  Closable;

/** The task store and the schedules in the same database: what `openStore()` hands out. */
export type AxStore = TaskStore & ScheduleStore;
