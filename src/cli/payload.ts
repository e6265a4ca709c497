import {readFile} from 'node:fs/promises';
import {invalid} from '../core/errors.js';
import type {JsonObject} from '../core/task/model.js';
import {parsePayloadText} from '../core/task/validate.js';

/**
 * The payload given with `--payload <json>` or `--payload-file <path>` (at most one), parsed and
 * validated against the payload limit; undefined when neither is given. Throws invalid_input naming
 * the flag for both at once, an unreadable file, bad JSON, a non-object or an oversized payload.
 */
export async function payloadFromFlags(
  flags: {payload?: string | undefined; 'payload-file'?: string | undefined},
  limitBytes: number,
): Promise<JsonObject | undefined> {
  if (flags.payload !== undefined && flags['payload-file'] !== undefined)
    throw invalid('give either --payload or --payload-file, not both');
  if (flags.payload !== undefined) return parsePayloadText(flags.payload, limitBytes, '--payload');
  const file = flags['payload-file'];
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw invalid(`--payload-file ${file} cannot be read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return parsePayloadText(text, limitBytes, `--payload-file ${file}`);
}
