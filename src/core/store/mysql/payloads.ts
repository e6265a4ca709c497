/**
 * Big payloads stored apart from the hot `tasks` row (a claim check, migration 15). A payload whose
 * JSON text is longer than the store's inline limit (AX_PAYLOAD_INLINE, in UTF-8 bytes) is written
 * to `task_payloads` compressed, and its task row keeps `payload = ''` (never a valid payload: a
 * payload is a JSON object). Every read of a payload goes through PAYLOAD_BODY_COLUMN, so the
 * statement that reads a task row reads its stored-apart body too (no second round trip), and
 * payloadText() gives the text either way. A payload at the limit or below stays inline.
 *
 * The body's format is MySQL's and MariaDB's COMPRESS(): the text's length as 4 bytes, low byte
 * first, then a zlib stream. So `UNCOMPRESS(body)` reads it in SQL (the payload filter of
 * `ax tasks list`, ad-hoc queries), while the compression runs in the client, off the database's CPU.
 */
import {deflate, inflateSync} from 'node:zlib';
import {promisify} from 'node:util';
import {AxError} from '../../errors.js';
import type {Row} from './db.js';

const deflateAsync = promisify(deflate);

/** The `payload` column of a task whose payload is stored apart. */
export const PAYLOAD_APART = '';

/**
 * The select-list item that reads a stored-apart body with its `tasks` row, as `payload_body` (NULL
 * for an inline payload: the subquery only runs for rows whose payload is apart, one primary-key
 * lookup each). Needs the table unaliased as `tasks` in the FROM. For a plain read: the body comes
 * from the statement's snapshot, like the row.
 */
export const PAYLOAD_BODY_COLUMN = `IF(tasks.payload = '', (SELECT p.body FROM task_payloads p WHERE p.task_id = tasks.id), NULL) AS payload_body`;

/**
 * PAYLOAD_BODY_COLUMN for a locking read of `tasks` (FOR UPDATE: the claim, dlq replay, the
 * archiver). A subquery does not inherit the outer lock: without its own it would read the body
 * from the transaction's snapshot, which can predate a row lock the statement waited for (a patch
 * committed meanwhile would be missed). The shared lock makes it a current read of the latest
 * committed body, taken after the row's lock, as every writer of bodies does.
 */
export const PAYLOAD_BODY_LOCKED = `IF(tasks.payload = '', (SELECT p.body FROM task_payloads p WHERE p.task_id = tasks.id LOCK IN SHARE MODE), NULL) AS payload_body`;

/** A task's payload text in SQL, inline or stored apart (for filters such as JSON_VALUE). */
export const PAYLOAD_TEXT_SQL = `IF(tasks.payload = '', (SELECT CONVERT(UNCOMPRESS(p.body) USING utf8mb4) FROM task_payloads p WHERE p.task_id = tasks.id), tasks.payload)`;

/** zlib level: 1 (fastest) compresses JSON nearly as well as 6 at a third of the CPU (docs/benchmarks.md). */
const LEVEL = 1;

/** Whether a payload of this text is stored apart under the inline limit `inlineBytes`. */
export function isBig(text: string, inlineBytes: number): boolean {
  // Most payloads are far below the limit: the length in UTF-16 units bounds the UTF-8 length from
  // below and 3× from above, so only texts near the limit are measured.
  if (text.length * 3 <= inlineBytes) return false;
  if (text.length > inlineBytes) return true;
  return Buffer.byteLength(text, 'utf8') > inlineBytes;
}

/** The stored body of a payload text (COMPRESS() format). */
export async function packPayload(text: string): Promise<Buffer> {
  const raw = Buffer.from(text, 'utf8');
  const z = await deflateAsync(raw, {level: LEVEL});
  const head = Buffer.alloc(4);
  head.writeUInt32LE(raw.length, 0);
  return Buffer.concat([head, z]);
}

/**
 * The text of a stored body. Throws AxError('internal') when the body is not a COMPRESS() body or
 * its length does not match (a manual edit or a damaged row): a payload is never guessed.
 */
export function unpackPayload(body: Buffer, taskId: string): string {
  try {
    if (body.length < 5) throw new Error(`${body.length} bytes`);
    const text = inflateSync(body.subarray(4));
    const expected = body.readUInt32LE(0);
    if (text.length !== expected) throw new Error(`${text.length} bytes, its header says ${expected}`);
    return text.toString('utf8');
  } catch (e) {
    throw new AxError('internal', `the stored-apart payload of task ${taskId} (task_payloads) is unreadable: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/** The payload text of a row read with PAYLOAD_BODY_COLUMN. */
export function payloadText(r: Row): string {
  const body = r.payload_body as Buffer | null | undefined;
  return body === null || body === undefined ? (r.payload as string) : unpackPayload(body, r.id as string);
}

/** The stored bodies of the big payloads among `texts` (index → body); compressed in parallel off the event loop. */
export async function packBig(texts: readonly string[], inlineBytes: number): Promise<Map<number, Buffer>> {
  const out = new Map<number, Buffer>();
  const jobs: Array<Promise<void>> = [];
  texts.forEach((t, i) => {
    if (isBig(t, inlineBytes)) jobs.push(packPayload(t).then((body) => void out.set(i, body)));
  });
  // The usual batch has no big payload: nothing to wait for.
  if (jobs.length > 0) await Promise.all(jobs);
  return out;
}

/**
 * Most bytes of values one statement carries: well under the server's max_allowed_packet (16 MiB
 * by default on MariaDB, 64 MiB on MySQL 8), which refuses a bigger statement outright. A batch of
 * 500 tasks with 64 KiB payloads is 32 MB: it is written as several statements of one transaction.
 */
export const STATEMENT_VALUE_BYTES = 4 * 1024 * 1024;

/** `items` in order, cut into runs of at most `max` bytes by `bytes` (an item bigger than `max` alone). */
export function chunkByBytes<T>(items: readonly T[], bytes: (x: T) => number, max = STATEMENT_VALUE_BYTES): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let size = 0;
  for (const x of items) {
    const n = bytes(x);
    if (cur.length > 0 && size + n > max) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(x);
    size += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/**
 * The upserts of stored-apart bodies, as few statements as STATEMENT_VALUE_BYTES allows. Params:
 * (task id, body) pairs. Run only after the tasks' rows were written or locked in the same
 * transaction, so an old row for one of the ids can only be an orphan (no task): it is replaced.
 */
export function bodiesUpserts(rows: ReadonlyArray<readonly [string, Buffer]>): Array<{sql: string; params: unknown[]}> {
  return chunkByBytes(rows, ([id, body]) => id.length + body.length).map((chunk) => ({
    sql: `INSERT INTO task_payloads (task_id, body) VALUES ${chunk.map(() => '(?, ?)').join(', ')} ON DUPLICATE KEY UPDATE body = VALUES(body)`,
    params: chunk.flatMap(([id, body]) => [id, body]),
  }));
}
