/**
 * The audit trail of admin actions (replay, force replay, cancel, and later pause/resume and
 * purge): who, when, the command and its filter, the reason, how many tasks and which. A row is
 * written by the store in the same transaction as the change it records, so it exists exactly when
 * the change committed. Pure code: the operator's name and the checks on what is recorded.
 */
import {AxError, invalid} from '../errors.js';
import type {AuditListParams, InspectStore} from '../store/types.js';
import type {AuditRecord} from '../store/types.js';

/** Most ids kept in one audit row; past it `taskIds` is null and the filter and time are the reference. */
export const AUDIT_MAX_IDS = 10_000;
/** Longest operator name kept. */
export const MAX_OPERATOR_LENGTH = 255;
export const MAX_AUDIT_LIST = 1000;

/** Where the operator's name comes from: `AX_OPERATOR`, else the OS user and host. */
export interface OperatorSource {
  /** The value of AX_OPERATOR, if set. */
  env: string | undefined;
  user: string;
  host: string;
}

/**
 * Who runs an admin action: AX_OPERATOR (trimmed) when set and not blank, else `user@host`.
 * Throws invalid_input when AX_OPERATOR holds control characters or is longer than
 * MAX_OPERATOR_LENGTH, so the audit trail never records a name other than the one given.
 */
export function operatorName(src: OperatorSource): string {
  const given = src.env?.trim();
  if (given === undefined || given === '') return `${src.user}@${src.host}`.slice(0, MAX_OPERATOR_LENGTH);
  if (/[\u0000-\u001f\u007f-\u009f]/.test(given)) throw invalid('AX_OPERATOR holds control characters: set it to a plain name');
  if (given.length > MAX_OPERATOR_LENGTH) throw invalid(`AX_OPERATOR is longer than ${MAX_OPERATOR_LENGTH} characters`);
  return given;
}

/**
 * An operator name given by a caller that acts for someone else (the web console: `web:<token
 * name>@<client address>`), checked as AX_OPERATOR is: trimmed, not blank, no control characters,
 * at most MAX_OPERATOR_LENGTH characters. Throws invalid_input.
 */
export function checkOperator(name: string): string {
  const given = typeof name === 'string' ? name.trim() : '';
  if (given === '') throw invalid('the operator name is blank');
  if (/[\u0000-\u001f\u007f-\u009f]/.test(given)) throw invalid('the operator name holds control characters');
  if (given.length > MAX_OPERATOR_LENGTH) throw invalid(`the operator name is longer than ${MAX_OPERATOR_LENGTH} characters`);
  return given;
}

/** Throws invalid_input for a limit outside 1..MAX_AUDIT_LIST or an `after` that is not an audit row id. */
export function checkAuditListParams(p: AuditListParams): void {
  if (!Number.isInteger(p.limit) || p.limit < 1 || p.limit > MAX_AUDIT_LIST)
    throw invalid(`limit must be a whole number from 1 to ${MAX_AUDIT_LIST}`);
  if (p.after !== undefined && (!Number.isSafeInteger(p.after) || p.after < 1))
    throw new AxError('invalid_input', `after must be an audit row id (a whole number from 1)`);
}

/** The newest audit rows first, `after` an id for the next page. Throws invalid_input for a bad limit or cursor. */
export async function listAudit(store: Pick<InspectStore, 'auditList'>, p: AuditListParams): Promise<AuditRecord[]> {
  checkAuditListParams(p);
  return store.auditList(p);
}
