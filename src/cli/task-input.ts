/**
 * The tasks `ax submit` was given — one from its type argument and flags, or many as NDJSON on
 * stdin — parsed and validated exactly as the producer will, before anything connects.
 */
import {payloadFromFlags} from './payload.js';
import type {AxConfig} from '../core/config/config.js';
import {AxError, invalid, isAxError} from '../core/errors.js';
import type {TaskSpec} from '../core/task/model.js';
import {parsePayloadText, validateTaskSpec, validateTypeName} from '../core/task/validate.js';

/** Per-task flags; in --stdin mode they apply to every line that does not set the field itself. */
export interface TaskFlags {
  delay?: string | undefined;
  at?: string | undefined;
  pool?: string | undefined;
  priority?: string | undefined;
  'max-retries'?: number | undefined;
  timeout?: string | undefined;
  'dedup-key'?: string | undefined;
  key?: string | undefined;
  debounce?: string | undefined;
  'debounce-key'?: string | undefined;
  throttle?: string | undefined;
  'throttle-key'?: string | undefined;
  id?: string | undefined;
  after?: string[] | undefined;
  'on-parent-failure'?: string | undefined;
}

/** The flags `ax submit` reads its tasks from. */
export interface SubmitInputFlags extends TaskFlags {
  payload?: string | undefined;
  'payload-file'?: string | undefined;
  stdin?: boolean | undefined;
}

const MAX_REPORTED_ERRORS = 20;

/**
 * The task specs to submit, each validated as the producer will validate it (which assigns the real
 * id), in input order. With `stdin` every non-blank line of standard input is one task (a payload
 * when `type` is given, else a full task spec; flags fill the fields a line does not set). Throws
 * invalid_input — naming every bad line, at most 20 — for any bad flag or line: then nothing is
 * returned, so nothing is submitted.
 */
export async function taskSpecsFromInput(
  type: string | undefined,
  flags: SubmitInputFlags,
  cfg: AxConfig,
  nowMs: number,
): Promise<TaskSpec[]> {
  const check = checker(cfg, nowMs);
  if (flags.stdin) return parseNdjson(await readStdin(), type, flags, cfg, check);
  return [check(singleSpec(type, flags, await payloadFromFlags(flags, cfg.payloadLimitBytes)))];
}

/** The flag values as TaskSpec fields (only those given). */
function flagFields(flags: TaskFlags): Partial<Record<keyof TaskSpec, unknown>> {
  if (flags.delay !== undefined && flags.at !== undefined) throw invalid('give either --delay or --at, not both');
  const out: Partial<Record<keyof TaskSpec, unknown>> = {};
  if (flags.delay !== undefined) out.delay = flags.delay;
  if (flags.at !== undefined) out.runAt = flags.at;
  if (flags.pool !== undefined) out.pool = flags.pool;
  if (flags.priority !== undefined) out.priority = flags.priority;
  if (flags['max-retries'] !== undefined) out.maxRetries = flags['max-retries'];
  if (flags.timeout !== undefined) out.timeout = flags.timeout;
  if (flags['dedup-key'] !== undefined) out.dedupKey = flags['dedup-key'];
  if (flags.key !== undefined) out.key = flags.key;
  for (const kind of ['debounce', 'throttle'] as const) {
    const window = flags[kind];
    const key = flags[`${kind}-key`];
    if ((window === undefined) !== (key === undefined)) throw invalid(`give --${kind} <window> and --${kind}-key <key> together`);
    if (window !== undefined && key !== undefined) out[kind] = {key, window};
  }
  if (flags.id !== undefined) out.id = flags.id;
  if (flags.after !== undefined && flags.after.length > 0) out.after = flags.after;
  if (flags['on-parent-failure'] !== undefined) out.onParentFailure = flags['on-parent-failure'];
  return out;
}

function singleSpec(type: string | undefined, flags: TaskFlags, payload: TaskSpec['payload']): TaskSpec {
  if (type === undefined) throw invalid('give a task type (e.g. `ax submit order_notify`), or --stdin to read tasks as NDJSON');
  validateTypeName(type);
  const spec = {type, ...flagFields(flags)} as TaskSpec;
  if (payload !== undefined) spec.payload = payload;
  return spec;
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw invalid('--stdin reads NDJSON from a pipe or file, e.g. `cat tasks.ndjson | ax submit --stdin`');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * One task per non-blank line: a payload object when `type` is given, else a full task spec.
 * Every line is parsed and checked; the errors of all of them are reported together.
 */
function parseNdjson(
  text: string,
  type: string | undefined,
  flags: TaskFlags & {payload?: string | undefined; 'payload-file'?: string | undefined},
  cfg: AxConfig,
  check: (spec: TaskSpec) => TaskSpec,
): TaskSpec[] {
  if (flags.payload !== undefined || flags['payload-file'] !== undefined)
    throw invalid('--payload and --payload-file cannot be used with --stdin: put the payloads on stdin');
  if (flags.id !== undefined || flags['dedup-key'] !== undefined) {
    throw invalid(
      '--id and --dedup-key cannot be used with --stdin (every line would share them): give "id"/"dedupKey" in each line\'s task spec instead',
    );
  }
  if (type !== undefined) validateTypeName(type);
  const defaults = flagFields(flags);
  const specs: TaskSpec[] = [];
  const errors: LineError[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    try {
      specs.push(
        check(
          type === undefined
            ? specOfLine(line, defaults)
            : ({type, ...defaults, payload: parsePayloadText(line, cfg.payloadLimitBytes)} as TaskSpec),
        ),
      );
    } catch (e) {
      if (!isAxError(e, 'invalid_input')) throw e;
      errors.push({line: i + 1, message: e.message});
    }
  });
  if (errors.length === 0 && specs.length === 0) throw invalid('stdin held no tasks: give one JSON object per line (NDJSON)');
  reportLineErrors(errors, specs.length + errors.length);
  return specs;
}

/** A full task spec line; flag values fill the fields it does not set. */
function specOfLine(line: string, defaults: Partial<Record<keyof TaskSpec, unknown>>): TaskSpec {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    throw invalid(`not valid JSON: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid('a task spec must be a JSON object such as {"type": "order_notify", "payload": {}}');
  const own = value as Record<string, unknown>;
  const timed = Object.hasOwn(own, 'delay') || Object.hasOwn(own, 'runAt');
  const spec: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(defaults)) if (!Object.hasOwn(own, k) && !(timed && (k === 'delay' || k === 'runAt'))) spec[k] = v;
  // defineProperty, not assignment, so a "__proto__" key stays an own field and is refused as unknown.
  for (const k of Object.keys(own)) Object.defineProperty(spec, k, {value: own[k], enumerable: true, writable: true, configurable: true});
  return spec as unknown as TaskSpec;
}

/** Validates a task exactly as the producer will (which assigns the real id), returning it unchanged. */
function checker(cfg: AxConfig, nowMs: number): (spec: TaskSpec) => TaskSpec {
  const defaults = {maxRetries: cfg.maxRetries, payloadLimitBytes: cfg.payloadLimitBytes, cell: cfg.cell};
  const placeholderId = (): string => '00000000-0000-7000-8000-000000000000';
  return (spec) => {
    validateTaskSpec(spec, defaults, nowMs, placeholderId);
    return spec;
  };
}

interface LineError {
  line: number;
  message: string;
}

/** Throws one invalid_input naming each bad line (the first 20), or returns when there are none. */
function reportLineErrors(errors: LineError[], total: number): void {
  if (errors.length === 0) return;
  const shown = errors.slice(0, MAX_REPORTED_ERRORS).map((e) => `line ${e.line}: ${e.message}`);
  if (errors.length > MAX_REPORTED_ERRORS) shown.push(`… and ${errors.length - MAX_REPORTED_ERRORS} more`);
  const head = errors.length === 1 ? (shown[0] as string) : `${errors.length} of ${total} lines are invalid:\n  ${shown.join('\n  ')}`;
  throw new AxError('invalid_input', `${head}\nnothing was submitted`, {details: {errors: errors.slice(0, MAX_REPORTED_ERRORS)}});
}
