import {invalid} from '../errors.js';
import type {Logger} from '../log.js';
import type {ForcedReplay, JsonObject, JsonValue} from '../task/model.js';
import {validateProgress} from '../task/progress.js';
import {isTaskId} from '../task/id.js';
import {validateTypeName} from '../task/validate.js';
import type {TaskContext} from '../worker/handlers.js';
import type {ParentInfo} from '../task/links.js';

export type {ParentInfo} from '../task/links.js';

/** The parents of a task by id: empty when it has none. */
export type Parents = Readonly<Record<string, ParentInfo>>;

/** The context a handler gets from the test kit: the worker's own TaskContext. */
export type TestTaskContext = TaskContext;

/** One line a handler logged through `ctx.logger`: its level, message and fields (a child's fields merged in). */
export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown>;
}

/** One accepted `ctx.progress()` call: the whole percentage, the note (null when none), and when (clock ms). */
export interface ProgressCall {
  percent: number;
  note: string | null;
  atMs: number;
}

/** A Logger that appends every line to `lines`; `child()` loggers append there too, with their fields. */
export function recordingLogger(lines: LogLine[], base: Record<string, unknown> = {}): Logger {
  const at =
    (level: LogLine['level']) =>
    (msg: string, fields?: Record<string, unknown>): void =>
      void lines.push({level, msg: String(msg), fields: {...base, ...fields}});
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (fields) => recordingLogger(lines, {...base, ...fields}),
  };
}

const PARENT_STATES: ReadonlySet<string> = new Set(['succeeded', 'dead', 'cancelled']);

/**
 * The `parents` option as given (id → {type, state, result?}), checked: task ids as keys, a valid
 * type, a final state, a JSON result (absent means null). Throws invalid_input naming the parent.
 */
export function checkParents(parents: unknown): Parents {
  if (parents === undefined) return {};
  if (parents === null || typeof parents !== 'object' || Array.isArray(parents))
    throw invalid('parents must be an object of task id → {type, state, result}');
  const out: Record<string, ParentInfo> = {};
  for (const [id, p] of Object.entries(parents as Record<string, unknown>)) {
    if (!isTaskId(id)) throw invalid(`parent id "${id}" is not a task id (a lower-case UUID)`);
    if (p === null || typeof p !== 'object') throw invalid(`parent ${id} must be {type, state, result}`);
    const {type, state, result} = p as Record<string, unknown>;
    validateTypeName(type);
    if (typeof state !== 'string' || !PARENT_STATES.has(state))
      throw invalid(`parent ${id}: state must be one of succeeded, dead, cancelled`);
    out[id] = {
      type: type as string,
      state: state as ParentInfo['state'],
      result: jsonCopy((result ?? null) as JsonValue, `parent ${id} result`),
    };
  }
  return Object.freeze(out);
}

/** A deep copy through JSON, as a value stored and read back would be; invalid_input when it is not JSON. */
export function jsonCopy<T extends JsonValue>(value: T, what: string): T {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw invalid(`${what} is not JSON: ${(e as Error).message}`);
  }
  if (text === undefined) throw invalid(`${what} is not JSON`);
  return JSON.parse(text) as T;
}

/** What a fake context is made of. */
export interface ContextInput {
  taskId: string;
  type: string;
  attempt: number;
  payload: JsonObject;
  signal: AbortSignal;
  parents: Parents;
  replay?: ForcedReplay;
  /** Receives the lines of ctx.logger. */
  logs: LogLine[];
  /** Receives the accepted progress calls. */
  progress: ProgressCall[];
  now: () => number;
}

/** The fake TaskContext of one attempt. */
export function testContext(i: ContextInput): TestTaskContext {
  return {
    taskId: i.taskId,
    type: i.type,
    attempt: i.attempt,
    payload: i.payload,
    signal: i.signal,
    logger: recordingLogger(i.logs),
    ...(i.replay === undefined ? {} : {replay: i.replay}),
    parents: i.parents,
    progress(percent: number, note?: string): void {
      const p = validateProgress(percent, note);
      i.progress.push({...p, atMs: i.now()});
    },
  };
}
