import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {payloadFromFlags} from '../cli/payload.js';
import {openBroker, openStore} from '../cli/runtime.js';
import type {Broker} from '../core/broker/types.js';
import {createClient} from '../core/client.js';
import type {AxConfig} from '../core/config/config.js';
import {AxError, invalid, isAxError} from '../core/errors.js';
import type {TaskSpec} from '../core/task/model.js';
import {parsePayloadText, validateTaskSpec, validateTypeName} from '../core/task/validate.js';

/** The `--json` output of `ax submit`. */
export interface SubmitResult {
  /** One id per task, in input order (with --id or --dedup-key: the id a re-submit finds again). */
  ids: string[];
  inserted: number;
  existing: number;
  /** Written but not yet rung for; the reconciler publishes them later. */
  unpublished: number;
}

/** Per-task flags; in --stdin mode they apply to every line that does not set the field itself. */
interface TaskFlags {
  delay?: string | undefined;
  at?: string | undefined;
  pool?: string | undefined;
  'max-retries'?: string | undefined;
  timeout?: string | undefined;
  'dedup-key'?: string | undefined;
  id?: string | undefined;
}

const MAX_REPORTED_ERRORS = 20;

export default class Submit extends AxCommand {
  static override summary = 'Submit one task, or many as NDJSON on stdin.';
  static override description = `The task is validated, written to MySQL (the truth) and, when due, rung for on RabbitMQ. Prints the task ids, one per line.

Task types are domain_action: lower-case words joined by "_", at least two (order_notify). The payload is a JSON object (default {}), at most AX_PAYLOAD_LIMIT bytes (64 KiB).

With --stdin every line is one task. With a type argument each line is a payload object; without one each line is a full task spec with the fields type, payload, delay or runAt, pool, maxRetries, timeout, dedupKey and id, e.g. {"type": "order_notify", "payload": {"orderId": 1}, "delay": "5s"}. Flags such as --delay, --pool or --timeout apply to every line that does not set the field. Every line is checked before anything is written: one bad line and nothing is submitted.

Submitting is idempotent: the same --id or --dedup-key with the same type and payload returns the existing task; with different content it is refused (exit 4).

Exit codes: 2 bad input, 4 conflict, 5 MySQL or RabbitMQ unavailable.`;
  static override examples = [
    {description: 'Run a task now', command: `<%= config.bin %> submit order_notify --payload '{"orderId": 42}'`},
    {description: 'Run it in 5 seconds', command: `<%= config.bin %> submit order_notify --payload '{"orderId": 42}' --delay 5s`},
    {
      description: 'At a given time (ISO-8601 with an offset), on the CPU pool',
      command: `<%= config.bin %> submit report_build --at 2026-12-01T02:00:00+08:00 --pool cpu`,
    },
    {
      description: 'Idempotent: a second submit with the same key returns the same task',
      command: `<%= config.bin %> submit user_register_credit --payload-file credit.json --dedup-key user-7:signup`,
    },
    {
      description: 'Many payloads of one type, one JSON object per line',
      command: `cat payloads.ndjson | <%= config.bin %> submit order_notify --stdin --json`,
    },
    {
      description: 'Many full task specs',
      command: `printf '%s\\n' '{"type":"order_notify","payload":{"orderId":1},"delay":"1m"}' | <%= config.bin %> submit --stdin`,
    },
  ];
  static override args = {
    type: Args.string({description: 'task type (domain_action); omit with --stdin to read full task specs', ignoreStdin: true}),
  };
  static override flags = {
    payload: Flags.string({char: 'p', description: 'payload as a JSON object'}),
    'payload-file': Flags.string({description: 'read the payload (a JSON object) from this file'}),
    stdin: Flags.boolean({description: 'read many tasks from stdin, one JSON object per line (NDJSON)'}),
    delay: Flags.string({description: 'run after this delay: milliseconds or 500ms, 5s, 30m, 1h30m, 2d (max 366d)'}),
    at: Flags.string({description: 'run at this ISO-8601 time with an offset, e.g. 2026-12-01T02:00:00+08:00'}),
    pool: Flags.string({description: 'worker pool: io (default) or cpu'}),
    'max-retries': Flags.string({description: 'retries after the first attempt before the task is dead (default 5)'}),
    timeout: Flags.string({description: "per-attempt timeout, e.g. 30s (default: the handler's, else 10m)"}),
    'dedup-key': Flags.string({description: 'business key, unique per cell: re-submitting it returns the existing task'}),
    id: Flags.string({description: 'caller-chosen task id (lower-case UUID), for blind retries'}),
  };

  async run(): Promise<SubmitResult> {
    const {args, flags} = await this.parse(Submit);
    const rt = this.runtime(flags.config);

    // Everything is validated before the first connection, so bad input never writes anything.
    const check = checker(rt.config, rt.clock.now());
    const specs = flags.stdin
      ? parseNdjson(await readStdin(), args.type, flags, rt.config, check)
      : [check(singleSpec(args.type, flags, await payloadFromFlags(flags, rt.config.payloadLimitBytes)))];

    const store = await openStore(rt);
    let broker: Broker;
    try {
      broker = await openBroker(rt, {reconnect: false});
    } catch (e) {
      await store.close().catch(() => undefined);
      throw e;
    }
    const client = createClient({
      ...rt,
      store,
      broker,
      // A one-shot command must end: give up (exit 5) if MySQL stays unavailable this long.
      giveUpAfterMs: rt.config.queryTimeoutMs,
      release: async () => {
        await broker.close().catch(() => undefined);
        await store.close().catch(() => undefined);
      },
    });
    let result: SubmitResult;
    try {
      const ids: string[] = [];
      for (const spec of specs) ids.push(await client.submit(spec));
      const report = await client.flush();
      result = {ids, inserted: report.inserted, existing: report.existing, unpublished: report.unpublished};
    } finally {
      await client.close().catch(() => undefined);
    }

    if (!this.jsonEnabled()) {
      for (const id of result.ids) this.log(id);
      if (result.existing > 0)
        this.logToStderr(
          `${result.existing} task(s) already existed with the same content (idempotent re-submit): nothing new was written for them`,
        );
      if (result.unpublished > 0)
        this.logToStderr(
          `${result.unpublished} task(s) are stored but not yet rung for (RabbitMQ did not confirm); the reconciler will publish them`,
        );
    }
    return result;
  }
}

/** The flag values as TaskSpec fields (only those given). */
function flagFields(flags: TaskFlags): Partial<Record<keyof TaskSpec, unknown>> {
  if (flags.delay !== undefined && flags.at !== undefined) throw invalid('give either --delay or --at, not both');
  const out: Partial<Record<keyof TaskSpec, unknown>> = {};
  if (flags.delay !== undefined) out.delay = flags.delay;
  if (flags.at !== undefined) out.runAt = flags.at;
  if (flags.pool !== undefined) out.pool = flags.pool;
  if (flags['max-retries'] !== undefined) {
    const s = flags['max-retries'].trim();
    if (!/^\d+$/.test(s)) throw invalid(`--max-retries must be a whole number, got "${flags['max-retries']}"`);
    out.maxRetries = Number(s);
  }
  if (flags.timeout !== undefined) out.timeout = flags.timeout;
  if (flags['dedup-key'] !== undefined) out.dedupKey = flags['dedup-key'];
  if (flags.id !== undefined) out.id = flags.id;
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
