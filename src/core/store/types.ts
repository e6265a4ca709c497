/**
 * The seams of ax's databases, one file per entity under seams/ (each names its MySQL module):
 * this barrel re-exports them so that importers name one path. Services and commands take the
 * narrow seams (or a Pick of them); composition roots and tests take TaskStore/AxStore/OutboxStore.
 */
export type * from './seams/common.js';
export type * from './seams/hot-path.js';
export type * from './seams/holds.js';
export type * from './seams/rescue.js';
export type * from './seams/inspect.js';
export type * from './seams/audit.js';
export type * from './seams/dlq.js';
export type * from './seams/dlq-scan.js';
export type * from './seams/workers.js';
export type * from './seams/doctor.js';
export type * from './seams/flow.js';
export type * from './seams/archive.js';
export type * from './seams/cron.js';
export type * from './seams/outbox.js';
export type * from './seams/schema.js';
export type * from './seams/store.js';
