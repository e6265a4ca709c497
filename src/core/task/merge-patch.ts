/**
 * JSON Merge Patch (RFC 7396): how `ax dlq replay --patch` changes a payload. Pure code.
 */
import type {JsonObject, JsonValue} from './model.js';

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Applies `patch` to `target` as RFC 7396 §2 says: a patch that is not an object replaces the
 * target; an object patch merges member by member, `null` removing a member, nested objects
 * merged recursively, arrays and scalars replacing. Returns a new value; `target` and `patch` are
 * not changed. Keys are copied as own properties (a `__proto__` key stays a plain key, which
 * validatePayload then refuses). Never throws.
 */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isObject(patch)) return patch;
  const out: JsonObject = {};
  if (isObject(target)) for (const k of Object.keys(target)) define(out, k, target[k]!);
  for (const k of Object.keys(patch)) {
    const v = patch[k]!;
    if (v === null) delete out[k];
    else define(out, k, mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v));
  }
  return out;
}

function define(o: JsonObject, k: string, v: JsonValue): void {
  Object.defineProperty(o, k, {value: v, enumerable: true, writable: true, configurable: true});
}
