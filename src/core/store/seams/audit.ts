/** The audit trail of admin actions (`admin_audit`): what an action records, and the rows as read (on MySQL: mysql/audit.ts). */

/**
 * What an admin action tells the store to record in `admin_audit` (see core/audit/audit.ts). The
 * store adds the time (database clock), the count and the ids of the tasks the change touched.
 */
export interface AuditContext {
  /** AX_OPERATOR, else user@host (operatorName). */
  operator: string;
  /** The command, e.g. `tasks cancel`, `dlq replay`. */
  command: string;
  /** The selection as given (ids or filter flags); stored as JSON. */
  filter: Record<string, unknown>;
  reason: string | null;
}

/** One row of the audit trail. */
export interface AuditRecord {
  id: number;
  at: Date;
  operator: string;
  command: string;
  filter: Record<string, unknown>;
  reason: string | null;
  taskCount: number;
  /** The ids touched, or null when there were more than AUDIT_MAX_IDS (the filter and time are the reference). */
  taskIds: string[] | null;
}

export interface AuditListParams {
  limit: number;
  /** Only rows older than this id (the cursor of the previous page). */
  after?: number;
}
