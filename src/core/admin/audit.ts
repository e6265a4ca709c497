/**
 * The audit trail in the admin service: who did which admin action, newest first, a page at a
 * time. Input is validated before the store is opened (invalid_input).
 */
import {checkAuditListParams, listAudit} from '../audit/audit.js';
import type {AuditRecord} from '../store/types.js';
import type {AdminSession} from './session.js';

/** Entries shown when no limit is given. */
export const DEFAULT_AUDIT_LIST = 50;

export interface AuditPage {
  /** Newest first. */
  entries: AuditRecord[];
  /** Pass as `after` for the next (older) page; null when this page is the last. */
  next: number | null;
}

export interface AuditAdmin {
  /**
   * A page of the audit trail, newest first: at most `limit` entries (1 to MAX_AUDIT_LIST, default
   * DEFAULT_AUDIT_LIST) older than the entry `after`. Throws invalid_input for a bad limit or
   * cursor (nothing opened), unavailable when MySQL cannot be reached.
   */
  list(page?: {limit?: number | undefined; after?: number | undefined}): Promise<AuditPage>;
}

export function createAuditAdmin(s: AdminSession): AuditAdmin {
  return {
    async list(page = {}) {
      const p = {limit: page.limit ?? DEFAULT_AUDIT_LIST, ...(page.after === undefined ? {} : {after: page.after})};
      checkAuditListParams(p);
      const entries = await listAudit(await s.store(), p);
      const last = entries.at(-1);
      return {entries, next: entries.length === p.limit && last ? last.id : null};
    },
  };
}
