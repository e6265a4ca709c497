/**
 * An AND-ed WHERE clause with its bound parameters, for the optional filters of the inspection
 * reads (list, DLQ, errors): `if(cond, sql, ...values)` adds a condition only when `cond` holds, so
 * each filter is one line and the order of conditions and parameters always agrees.
 */
export class Where {
  private readonly parts: string[] = [];
  readonly params: unknown[] = [];

  /** Adds `sql` (with `?` for each of `values`). */
  and(sql: string, ...values: unknown[]): this {
    this.parts.push(sql);
    this.params.push(...values);
    return this;
  }

  /** Adds `sql` only when `cond` holds. */
  if(cond: boolean, sql: string, ...values: unknown[]): this {
    return cond ? this.and(sql, ...values) : this;
  }

  get sql(): string {
    return this.parts.join(' AND ');
  }
}

/** `%`, `_` and `\` in a LIKE operand match themselves (ESCAPE '\\'). */
export function likeLiteral(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** `last_error` contains the bound operand (pass it through likeLiteral). */
export const LAST_ERROR_CONTAINS = "last_error LIKE CONCAT('%', ?, '%') ESCAPE '\\\\'";
