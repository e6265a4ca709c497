/**
 * The checks of what a handler reports besides its outcome: a success's result (stored as JSON text
 * in `tasks.result_json`) and its progress (`ctx.progress`). Pure functions, run where the handler
 * runs (the worker's event loop for the IO pool, the worker thread for the CPU pool), so the main
 * thread of a CPU pool receives a result already serialized.
 */

/** The largest result, serialized as JSON (UTF-8 bytes). */
export const RESULT_LIMIT_BYTES = 64 * 1024;

/** A result as stored: its JSON text, or why it cannot be stored (the attempt then fails unrecoverably). */
export type EncodedResult = {ok: true; json: string | undefined} | {ok: false; message: string};

/** A kilobyte figure for messages: `80 KiB`, never rounded down to the limit itself. */
const kib = (bytes: number): string => `${Math.ceil(bytes / 1024)} KiB`;

/**
 * The JSON text of a handler's result. `undefined` and `null` are no result (nothing stored). A
 * result must be JSON: plain objects, arrays, strings, finite numbers, booleans and null (an
 * object's `toJSON` is used, as JSON.stringify does, so a Date becomes its ISO string; object
 * properties that are `undefined` are left out, as JSON.stringify does). Anything else (a function,
 * a symbol, a BigInt, NaN or Infinity, a Map, a class instance, a cycle) and a text over
 * RESULT_LIMIT_BYTES are refused with a message that says what and where.
 */
export function encodeResult(result: unknown): EncodedResult {
  if (result === undefined || result === null) return {ok: true, json: undefined};
  let json: string | undefined;
  try {
    json = JSON.stringify(result, function (this: unknown, key: string, v: unknown): unknown {
      const where = key === '' ? 'the result' : `result key "${key}"`;
      if (typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint') throw new Error(`${where} is a ${typeof v}`);
      if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`${where} is ${v}`);
      if (v === undefined && Array.isArray(this)) throw new Error(`${where} is undefined`);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
        const proto = Object.getPrototypeOf(v) as object | null;
        if (proto !== Object.prototype && proto !== null) {
          const name = (v as {constructor?: {name?: unknown}}).constructor?.name;
          throw new Error(`${where} is a ${typeof name === 'string' && name !== '' ? name : 'non-plain object'}, not a plain object`);
        }
      }
      return v;
    });
  } catch (e) {
    return {ok: false, message: `result is not JSON: ${(e as Error).message}`};
  }
  if (json === undefined) return {ok: false, message: 'result is not JSON'};
  // Short texts cannot be over the limit: UTF-8 takes at most 3 bytes per UTF-16 unit.
  if (json.length * 3 > RESULT_LIMIT_BYTES) {
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > RESULT_LIMIT_BYTES)
      return {
        ok: false,
        message: `result is ${kib(bytes)}, over the ${kib(RESULT_LIMIT_BYTES)} limit (store big data elsewhere and return a reference)`,
      };
  }
  return {ok: true, json};
}

/** The one progress rule (worker, CPU threads, test kit): core/task/progress.ts. */
export {validateProgress as checkProgress, type ProgressReport} from '../task/progress.js';
