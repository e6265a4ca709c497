/**
 * Error signatures: the message of a failure with what varies from task to task (ids, numbers, hex,
 * quoted values) normalised away, so that `ax dlq stats` and `ax errors` group "order 42 not found"
 * and "order 43 not found" as one cause. Pure: no I/O.
 */

import type {DeadErrorGroup} from '../store/types.js';

/** Longest signature kept (the start of a long message is what tells causes apart). */
export const MAX_SIGNATURE_LENGTH = 200;

// Order matters: the wider shapes first, so a UUID is not read as hex and numbers.
const RULES: Array<[RegExp, string]> = [
  // UUIDs (any version), ULIDs.
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>'],
  [/\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b/g, '<id>'],
  // 0x-prefixed hex, and bare hex runs of 8 or more that hold a digit (hashes, object ids).
  [/\b0x[0-9a-f]+\b/gi, '<hex>'],
  [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/gi, '<hex>'],
  // Numbers, with an optional sign, fraction and exponent; also inside words ("v2", "id42").
  [/[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?/gi, '<n>'],
  // Quoted values: '…', "…" (one line, short).
  [/'[^'\n]{0,200}'/g, "'<s>'"],
  [/"[^"\n]{0,200}"/g, '"<s>"'],
];

/**
 * The signature of an error message: its first line, each id (UUID/ULID) → `<id>`, hex → `<hex>`,
 * number → `<n>`, quoted value → `'<s>'`/`"<s>"`, white space folded, cut to MAX_SIGNATURE_LENGTH.
 * `null` or a blank message → `(no error)`.
 */
export function errorSignature(message: string | null): string {
  const first = (message ?? '').split(/\r?\n/, 1)[0]?.trim() ?? '';
  if (first === '') return '(no error)';
  let s = first;
  for (const [re, to] of RULES) s = s.replace(re, to);
  s = s.replace(/\s+/g, ' ');
  return s.length > MAX_SIGNATURE_LENGTH ? `${s.slice(0, MAX_SIGNATURE_LENGTH - 1)}…` : s;
}

/** Failures grouped by exact message, as the store counts them. */
export type ErrorGroup = DeadErrorGroup;

/** Failures of one type with one signature. */
export interface SignatureRow {
  type: string;
  signature: string;
  count: number;
  firstSeen: Date;
  lastSeen: Date;
  sampleId: string;
  /** One full message with this signature (the most frequent, ties: the first seen). */
  sampleError: string | null;
}

/**
 * Merges exact-message groups into type × signature rows: counts add up, first/last seen widen,
 * the sample is the most frequent message's. Sorted by count (descending), then type, signature.
 */
export function groupBySignature(groups: readonly ErrorGroup[]): SignatureRow[] {
  const rows = new Map<string, SignatureRow & {sampleCount: number}>();
  for (const g of groups) {
    const signature = errorSignature(g.error);
    const key = `${g.type}\u0000${signature}`;
    const row = rows.get(key);
    if (row === undefined) {
      const {error, ...rest} = g;
      rows.set(key, {...rest, signature, sampleError: error, sampleCount: g.count});
      continue;
    }
    row.count += g.count;
    if (g.firstSeen < row.firstSeen) row.firstSeen = g.firstSeen;
    if (g.lastSeen > row.lastSeen) row.lastSeen = g.lastSeen;
    if (g.count > row.sampleCount) Object.assign(row, {sampleId: g.sampleId, sampleError: g.error, sampleCount: g.count});
  }
  return [...rows.values()]
    .map(({sampleCount: _n, ...r}): SignatureRow => r)
    .sort((a, b) => b.count - a.count || a.type.localeCompare(b.type) || a.signature.localeCompare(b.signature));
}
