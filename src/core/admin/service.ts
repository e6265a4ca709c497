/**
 * The admin service: every operator action and view of ax in one place, behind the CLI, `ax top`,
 * the SDK's admin calls and the HTTP API (like Asynq's Inspector). Callers parse their input, call
 * one method, and render the result; validation, cell routing, connections, auditing and the
 * plan → confirm → run of bulk actions live here and in the core modules it calls.
 *
 * Connections are opened at first use and closed by close() (or `await using`): a call that fails
 * validation opens nothing. Errors are AxErrors: invalid_input (nothing read or changed), not_found,
 * conflict, unavailable (a server could not be reached; nothing changed unless the method says so).
 */
import {checkOperator} from '../audit/audit.js';
import type {AdminContext} from './context.js';
import {type ArchiveAdmin, createArchiveAdmin} from './archive.js';
import {type AuditAdmin, createAuditAdmin} from './audit.js';
import {createOutboxAdmin, type OutboxAdmin} from './outbox.js';
import {createTopAdmin, type TopAdmin} from './top.js';
import {createCronService, type CronService} from './cron.js';
import {createDlqAdmin, type DlqAdmin} from './dlq.js';
import {type AdminSession, createSession} from './session.js';
import {createOverviewSampler, type OverviewSampler} from './overview.js';
import {createTasksAdmin, type TasksAdmin} from './tasks.js';
import {createBatchesAdmin, type BatchesAdmin} from './batches.js';
import {createTypesService, type TypesAdmin} from './types.js';
import {createCellsAdmin, type CellsAdmin} from './cells.js';
import {createDoctorAdmin, type DoctorAdmin} from './doctor.js';
import {createPayloadIndexAdmin, type PayloadIndexAdmin} from './payload-index.js';
import {createProducerAdmin, type ProducerAdmin} from './producer.js';
import {createQueuesAdmin, type QueuesAdmin} from './queues.js';
import {createReconcileAdmin, type ReconcileAdmin} from './reconcile.js';
import {createSchemaAdmin, type SchemaAdmin} from './schema.js';
import {createWorkersAdmin, type WorkersAdmin} from './workers.js';

export type {AdminContext, AdminOpeners} from './context.js';

export interface Admin extends AsyncDisposable {
  /** The cell this service acts on. */
  readonly cell: string;
  readonly tasks: TasksAdmin;
  /** Batches with a callback: their progress (ax batches). */
  readonly batches: BatchesAdmin;
  readonly dlq: DlqAdmin;
  readonly types: TypesAdmin;
  readonly cron: CronService;
  /** This cell's archive (AX_ARCHIVE_DIR): days, an archived task, restore, an archive run. */
  readonly archive: ArchiveAdmin;
  /** The business database's task_outbox: pending and failed rows, the backlog, retry. */
  readonly outbox: OutboxAdmin;
  /** The audit trail of admin actions. */
  readonly audit: AuditAdmin;
  /** `ax top`'s refresh and the registry's flow control behind its pause key. */
  readonly top: TopAdmin;
  /** The cell's workers (ax workers). */
  readonly workers: WorkersAdmin;
  /**
   * The console's overview of this cell, sampled in the background once for all its callers (see
   * core/admin/overview.ts): start() it once (the web server does), then snapshot() answers from
   * memory. Stopped by close(); the services of as() share it.
   */
  readonly overview: OverviewSampler;
  /** The troubleshooting checks (ax doctor): a server down is a finding, not an error. */
  readonly doctor: DoctorAdmin;
  /** Every cell of the configuration side by side (ax cells list), whatever cell this service is on. */
  readonly cells: CellsAdmin;
  /** RabbitMQ's queues of the cell, read only (ax queues). */
  readonly queues: QueuesAdmin;
  /** One reconcile pass (ax reconcile). */
  readonly reconcile: ReconcileAdmin;
  /** ax's schema and the outbox table (ax migrate). */
  readonly schema: SchemaAdmin;
  /** Submitting tasks through a one-shot producer (ax submit), routed to their types' cells. */
  readonly producer: ProducerAdmin;
  /** The payload fields searched by index (ax payload-index). */
  readonly payloadIndexes: PayloadIndexAdmin;
  /**
   * The admin service of another cell (AX_CELLS), sharing this one's lifetime: closed by this
   * one's close(). Throws invalid_input for an unknown cell.
   */
  forCell(cell: string): Admin;
  /**
   * This service acting as `operator` (the web console's `web:<token name>@<client address>`):
   * the same connections, opened once for both (no new pool), whose audited actions record that
   * name instead of the context's (AX_OPERATOR). Its forCell keeps the operator; its close() does
   * nothing (this service owns the connections). Throws invalid_input for a name that is blank,
   * longer than MAX_OPERATOR_LENGTH or holds control characters.
   */
  as(operator: string): Admin;
  /** Closes every connection opened, this cell's and the other cells'. Idempotent. */
  close(): Promise<void>;
}

/** The admin service over `ctx`'s cell; `session` (tests, the SDK) replaces the lazily opened connections. */
export function createAdmin(ctx: AdminContext, session: AdminSession = createSession(ctx)): Admin {
  /** The other cells' services and their sessions, each made at its first use. */
  const others = new Map<string, {admin: Admin; session: AdminSession}>();
  const other = (cell: string): {admin: Admin; session: AdminSession} => {
    let o = others.get(cell);
    if (!o) {
      const c = ctx.forCell(cell);
      const s = createSession(c);
      o = {admin: createAdmin(c, s), session: s};
      others.set(cell, o);
    }
    return o;
  };
  const overview = createOverviewSampler({store: () => session.store(), clock: ctx.clock, logger: ctx.logger});
  const close = async (): Promise<void> => {
    await overview.stop();
    for (const o of others.values()) await o.admin.close();
    await session.close();
  };
  return assemble(session, {
    overview,
    sessionOf: (cell) => (cell === ctx.config.cell ? session : other(cell).session),
    other: (cell) => other(cell).admin,
    close,
  });
}

/** How a service reaches the other cells, and what its close() does. */
interface Routing {
  /** The cell's overview sampler: one per cell, whichever operator the service acts as. */
  overview: OverviewSampler;
  /** The session of a cell: this one's, or another cell's (made at its first use). */
  sessionOf(cell: string): AdminSession;
  /** The service of another cell. */
  other(cell: string): Admin;
  close(): Promise<void>;
}

/** The domains of the service over `session`. */
function assemble(session: AdminSession, r: Routing): Admin {
  const cell = session.ctx.config.cell;
  const dlq = createDlqAdmin(session);
  const admin: Admin = {
    cell,
    tasks: createTasksAdmin(session, dlq),
    batches: createBatchesAdmin(session),
    dlq,
    types: createTypesService(session),
    cron: createCronService(session, r.sessionOf),
    archive: createArchiveAdmin(session),
    outbox: createOutboxAdmin(session),
    audit: createAuditAdmin(session),
    top: createTopAdmin(session),
    overview: r.overview,
    workers: createWorkersAdmin(session),
    doctor: createDoctorAdmin(session),
    cells: createCellsAdmin(session, r.sessionOf),
    queues: createQueuesAdmin(session),
    reconcile: createReconcileAdmin(session),
    schema: createSchemaAdmin(session),
    producer: createProducerAdmin(session),
    payloadIndexes: createPayloadIndexAdmin(session),
    forCell: (c) => (c === cell ? admin : r.other(c)),
    as: (operator) => actingAs(session, r, checkOperator(operator)),
    close: r.close,
    [Symbol.asyncDispose]: r.close,
  };
  return admin;
}

/** The service over `session`'s connections whose context's operator is `operator` (checked); closing it closes nothing. */
function actingAs(session: AdminSession, r: Routing, operator: string): Admin {
  const as = (s: AdminSession): AdminSession => ({...s, ctx: {...s.ctx, operator: () => operator}, close: async () => undefined});
  return assemble(as(session), {
    overview: r.overview,
    sessionOf: (cell) => as(r.sessionOf(cell)),
    other: (cell) => r.other(cell).as(operator),
    close: async () => undefined,
  });
}
