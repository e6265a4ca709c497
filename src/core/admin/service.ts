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
import type {AdminContext} from './context.js';
import {type ArchiveAdmin, createArchiveAdmin} from './archive.js';
import {type AuditAdmin, createAuditAdmin} from './audit.js';
import {createOutboxAdmin, type OutboxAdmin} from './outbox.js';
import {createTopAdmin, type TopAdmin} from './top.js';
import {createCronService, type CronService} from './cron.js';
import {createDlqAdmin, type DlqAdmin} from './dlq.js';
import {type AdminSession, createSession} from './session.js';
import {createTasksAdmin, type TasksAdmin} from './tasks.js';
import {createTypesService, type TypesAdmin} from './types.js';
import {createCellsAdmin, type CellsAdmin} from './cells.js';
import {createDoctorAdmin, type DoctorAdmin} from './doctor.js';
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
  /**
   * The admin service of another cell (AX_CELLS), sharing this one's lifetime: closed by this
   * one's close(). Throws invalid_input for an unknown cell.
   */
  forCell(cell: string): Admin;
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
  const forCell = (cell: string): Admin => (cell === ctx.config.cell ? admin : other(cell).admin);
  const sessionOf = (cell: string): AdminSession => (cell === ctx.config.cell ? session : other(cell).session);
  const close = async (): Promise<void> => {
    for (const o of others.values()) await o.admin.close();
    await session.close();
  };
  const admin: Admin = {
    cell: ctx.config.cell,
    tasks: createTasksAdmin(session),
    dlq: createDlqAdmin(session),
    types: createTypesService(session),
    cron: createCronService(session, sessionOf),
    archive: createArchiveAdmin(session),
    outbox: createOutboxAdmin(session),
    audit: createAuditAdmin(session),
    top: createTopAdmin(session),
    workers: createWorkersAdmin(session),
    doctor: createDoctorAdmin(session),
    cells: createCellsAdmin(session, sessionOf),
    queues: createQueuesAdmin(session),
    reconcile: createReconcileAdmin(session),
    schema: createSchemaAdmin(session),
    producer: createProducerAdmin(session),
    forCell,
    close,
    [Symbol.asyncDispose]: close,
  };
  return admin;
}
