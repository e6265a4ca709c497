/**
 * Indexed payload fields in the admin service (`ax payload-index`, GET /api/v1/payload-indexes):
 * the fields whose `--payload field=value` searches read an index instead of every task of the
 * window (core/store/mysql/payload-index.ts says how, and what each costs at insert). A malformed
 * field or operator is refused (invalid_input) before anything is opened. Add and remove are audited
 * as the operator (AX_OPERATOR), in this cell's trail; the index covers every cell of the database.
 */
import {checkOperator} from '../audit/audit.js';
import {validatePayloadField} from '../inspect/inspect.js';
import type {PayloadIndexInfo} from '../store/types.js';
import type {AdminSession} from './session.js';

export type {PayloadIndexInfo};

export interface PayloadIndexAdmin {
  /** The indexed fields, oldest first. */
  list(): Promise<PayloadIndexInfo[]>;
  /**
   * Indexes `field`: returns once the index is built (about the time of a scan of the tasks table:
   * seconds per million tasks), submits and claims going on meanwhile. created false: it was declared
   * already; built: this call ran the build (false: it was ready, nothing changed; true with created
   * false: a half-built one was finished). Throws invalid_input for a malformed field, conflict when
   * the most fields allowed are indexed, timeout when a transaction holds a table's metadata lock
   * past 10 s (the field stays building).
   */
  add(field: string): Promise<{field: PayloadIndexInfo; created: boolean; built: boolean}>;
  /**
   * Drops `field`'s index (instant): its searches read the rows again. False when it had none
   * (nothing changed). Throws timeout as add does (the field is then listed as building: rm again).
   */
  remove(field: string): Promise<boolean>;
}

export function createPayloadIndexAdmin(s: AdminSession): PayloadIndexAdmin {
  const audit = (command: string, field: string) => ({operator: checkOperator(s.ctx.operator()), command, filter: {field}, reason: null});
  return {
    list: async () => (await s.store()).payloadIndexes(),
    add: async (field) => {
      const f = validatePayloadField(field);
      const a = audit('payload-index add', f);
      return (await s.store()).payloadIndexAdd({field: f, audit: a});
    },
    remove: async (field) => {
      const f = validatePayloadField(field);
      const a = audit('payload-index remove', f);
      return (await s.store()).payloadIndexRemove({field: f, audit: a});
    },
  };
}
