import {SETTINGS} from '../config/config.js';
import {AxError, errorMessage, invalid} from '../errors.js';
import type {CancelResult} from '../inspect/cancel.js';
import {checkCancelReason} from '../inspect/cancel.js';
import type {FlushReport} from '../producer/producer.js';
import {createIdGenerator, isTaskId} from '../task/id.js';
import {PRIORITIES, type JsonObject, type NewTask, type Priority} from '../task/model.js';
import type {TaskState} from '../task/state.js';
import {MAX_RETRIES_LIMIT, validateTaskSpec, type TaskDefaults} from '../task/validate.js';
import {defineHandlers, isHandlerMap, type ResolvedHandler} from '../worker/handlers.js';
import {backoffOf, runAttempt, type TaskRun} from './attempt.js';
import {createTestClock} from './clock.js';
import type {ParentInfo} from './context.js';
import {checkLinks, dependenciesOf, type ParentFailurePolicy} from './links.js';
import type {
  DrainReport,
  TestBatchInfo,
  TestBatchOptions,
  TestBatchResult,
  TestClient,
  TestClientOptions,
  TestTask,
  TestTaskSpec,
} from './client-model.js';

export type * from './client-model.js';

/** A task as kept: the public fields, its own timeout and its debounce key. */
interface Row extends TestTask {
  timeoutMs: number | null;
  /** `type\0key` of its debounce, or null. */
  gate: string | null;
  /** Its type and payload's hash: "the same content" of a resubmit, as the store compares it. */
  contentHash: string;
  /** For a batch's callback: the batch whose end it waits for. */
  callbackOf: string | null;
}

/** A batch of submitBatch with a callback. */
interface Batch {
  id: string;
  callbackId: string;
  members: string[];
  createdAt: Date;
  doneAt: Date | null;
}

const FINAL: ReadonlySet<TaskState> = new Set(['succeeded', 'dead', 'cancelled']);
const rank = (p: Priority): number => PRIORITIES.indexOf(p);

/**
 * Creates the in-process client (see TestClient). Submits are validated as the real client does
 * (validateTaskSpec: bad input throws invalid_input and stores nothing); ids, dedup keys (an
 * existing id with the same content returns it, with other content is a conflict that flush()
 * throws), debounce and throttle behave as in ax. Attempts run as the worker runs them (runAttempt:
 * the same normalisation, retry decision and backoff), one at a time. Throws invalid_input for bad options.
 */
export function createTestClient(opts: TestClientOptions): TestClient {
  if (opts === null || typeof opts !== 'object') throw invalid('createTestClient expects {handlers}');
  const handlers = isHandlerMap(opts.handlers) ? opts.handlers : defineHandlers(opts.handlers);
  const clock = opts.clock ?? createTestClock();
  const defaults: TaskDefaults = {
    maxRetries: opts.maxRetries ?? (SETTINGS.maxRetries.default as number),
    payloadLimitBytes: opts.payloadLimitBytes ?? (SETTINGS.payloadLimitBytes.default as number),
    cell: SETTINGS.cell.default as string,
  };
  if (!Number.isInteger(defaults.maxRetries) || defaults.maxRetries < 0 || defaults.maxRetries > MAX_RETRIES_LIMIT)
    throw invalid(`maxRetries must be a whole number from 0 to ${MAX_RETRIES_LIMIT}`);
  const backoff = backoffOf(opts);
  const random = opts.random ?? (() => 0);
  const newId = createIdGenerator(() => clock.now());
  const tasks = new Map<string, Row>();
  const seq = new Map<string, number>();
  const runs: TaskRun[] = [];
  /** Throttle windows by type and key: the task that opened it and when it closes. */
  const windows = new Map<string, {keptId: string; until: number}>();
  let report: FlushReport = {inserted: 0, existing: 0, unpublished: 0, conflicts: []};
  let closed = false;
  let current: {id: string; abort: AbortController} | null = null;
  const batches = new Map<string, Batch>();
  /** Dependents cancelled because a parent failed, so far (runnable() passes again while it grows). */
  let cascaded = 0;

  const counts = (b: Batch): {succeeded: number; dead: number; cancelled: number} => {
    const c = {succeeded: 0, dead: 0, cancelled: 0};
    for (const id of b.members) {
      const st = (tasks.get(id) as Row).state;
      if (st === 'succeeded' || st === 'dead' || st === 'cancelled') c[st]++;
    }
    return c;
  };

  /** Whether every task of a batch ended; the first time, its callback gets `payload.batch`. */
  const batchEnded = (b: Batch): boolean => {
    if (b.doneAt) return true;
    const c = counts(b);
    if (c.succeeded + c.dead + c.cancelled < b.members.length) return false;
    b.doneAt = new Date(clock.now());
    const cb = tasks.get(b.callbackId) as Row;
    cb.payload = {...cb.payload, batch: {id: b.id, total: b.members.length, ...c}};
    return true;
  };

  const move = (t: Row, to: TaskState, error: string | null = null): void => {
    t.history.push({from: t.state, to, attempt: t.attempt, at: new Date(clock.now()), error});
    t.state = to;
    if (error !== null) t.lastError = error;
  };

  const write = (n: NewTask, after: string[], policy: ParentFailurePolicy, callbackOf: string | null = null): void => {
    const gate = n.debounce ?? n.throttle;
    const gateKey = gate ? `${n.type}\0${gate.key}` : '';
    if (n.throttle) {
      const w = windows.get(gateKey);
      if (w && clock.now() < w.until) {
        (report.throttled ??= []).push({id: n.id, keptId: w.keptId, key: n.throttle.key});
        return;
      }
      windows.set(gateKey, {keptId: n.id, until: clock.now() + n.throttle.windowMs});
    }
    if (n.debounce)
      for (const t of tasks.values())
        if (t.state === 'submitted' && t.attempt === 0 && t.gate === gateKey) move(t, 'cancelled', `replaced by ${n.id} (debounce)`);
    const t: Row = {
      id: n.id,
      type: n.type,
      payload: JSON.parse(n.payload) as JsonObject,
      state: 'submitted',
      attempt: 0,
      maxRetries: n.maxRetries,
      pool: n.pool,
      priority: n.priority,
      key: n.key,
      dedupKey: n.dedupKey,
      runAt: new Date(n.runAtMs ?? n.submittedAtMs + n.delayMs),
      after,
      onParentFailure: policy,
      result: null,
      progress: null,
      lastError: null,
      submittedBy: current?.id ?? null,
      history: [],
      timeoutMs: n.timeoutMs,
      gate: n.debounce ? gateKey : null,
      contentHash: n.contentHash,
      callbackOf,
    };
    tasks.set(t.id, t);
    seq.set(t.id, seq.size);
    report.inserted++;
  };

  const submit = async (spec: TestTaskSpec): Promise<string> => {
    if (closed) throw new AxError('closed', 'the test client is closed');
    const n = validateTaskSpec(spec, defaults, clock.now(), newId);
    const deps = dependenciesOf(n);
    checkLinks(new Map([[n.id, deps.after]]), (id) => tasks.has(id));
    const old = tasks.get(n.id);
    if (old) {
      if (old.contentHash === n.contentHash) report.existing++;
      else report.conflicts.push({id: n.id, existingId: old.id, reason: 'the id or dedup key exists with other content'});
      return n.id;
    }
    write(n, deps.after, deps.policy);
    return n.id;
  };

  /** One task of a submitBatch, validated; invalid_input prefixed with `what`. */
  const linkedTask = (spec: unknown, what: string, now: number): {n: NewTask; after: string[]; policy: ParentFailurePolicy} => {
    try {
      const n = validateTaskSpec(spec, defaults, now, newId);
      const d = dependenciesOf(n);
      if (n.debounce || n.throttle)
        throw invalid('debounce and throttle are not for submitBatch (a gate could drop a task the others count on)');
      return {n, after: d.after, policy: d.policy};
    } catch (e) {
      throw invalid(`${what}: ${errorMessage(e)}`);
    }
  };

  const submitBatch = async (specs: TestTaskSpec[], o: TestBatchOptions = {}): Promise<TestBatchResult> => {
    if (closed) throw new AxError('closed', 'the test client is closed');
    if (!Array.isArray(specs) || specs.length === 0) throw invalid('submitBatch needs at least one task');
    const now = clock.now();
    const items = specs.map((sp, i) => linkedTask(sp, `task ${i}`, now));
    const links = new Map<string, string[]>();
    for (const {n, after} of items) {
      if (links.has(n.id)) throw invalid(`task ${n.id} is given twice in the batch`);
      links.set(n.id, after);
    }
    checkLinks(links, (id) => tasks.has(id));
    let callback: NewTask | undefined;
    if (o.callback !== undefined) {
      const c = linkedTask(o.callback, 'callback', now);
      if (c.after.length > 0) throw invalid('callback: a batch callback waits for its batch; give it no after');
      if (c.n.runAtMs !== null || c.n.delayMs !== 0)
        throw invalid('callback: a batch callback is due when its batch ended; give it no delay or runAt');
      if ('batch' in (JSON.parse(c.n.payload) as object))
        throw invalid('callback: its payload gets a "batch" key when it runs; give it none');
      if (links.has(c.n.id)) throw invalid(`callback: task ${c.n.id} is also in the batch`);
      for (const id of [c.n.id, ...links.keys()])
        if (tasks.has(id)) throw invalid(`task ${id} is already stored: the tasks of a batch are new`);
      callback = c.n;
    }
    const r: TestBatchResult = {ids: [], conflicts: [], inserted: 0, existing: 0};
    for (const {n, after, policy} of items) {
      const old = tasks.get(n.id);
      if (!old) {
        write(n, after, policy);
        report.inserted--; // counted in the result, not in the next flush()
        r.inserted++;
      } else if (old.contentHash === n.contentHash) r.existing++;
      else r.conflicts.push({id: n.id, existingId: old.id, reason: 'the id or dedup key exists with other content'});
      r.ids.push(n.id);
    }
    if (callback) {
      const batchId = newId();
      write(callback, [], 'cancel', batchId);
      report.inserted--;
      batches.set(batchId, {id: batchId, callbackId: callback.id, members: [...links.keys()], createdAt: new Date(now), doneAt: null});
      r.batchId = batchId;
      r.callbackId = callback.id;
    }
    return r;
  };

  const batch = async (id: string): Promise<TestBatchInfo> => {
    if (!isTaskId(id)) throw invalid(`"${String(id)}" is not a batch id (a lower-case UUID)`);
    const b = batches.get(id);
    if (!b) throw new AxError('not_found', `no batch ${id}`);
    batchEnded(b);
    const cb = tasks.get(b.callbackId) as Row;
    return {
      id,
      callbackId: b.callbackId,
      callbackState: cb.state,
      total: b.members.length,
      ...counts(b),
      createdAt: b.createdAt,
      doneAt: b.doneAt,
    };
  };

  const flush = async (): Promise<FlushReport> => {
    const r = report;
    report = {inserted: 0, existing: 0, unpublished: 0, conflicts: []};
    if (r.conflicts.length > 0)
      throw new AxError('conflict', `${r.conflicts.length} task(s) refused: ${r.conflicts[0]?.reason}`, {
        details: {conflicts: r.conflicts, report: r},
      });
    return r;
  };

  /** A task's public fields, copied (the test cannot change the client's rows). */
  const copy = ({timeoutMs: _t, gate: _g, contentHash: _h, callbackOf: _c, ...t}: Row): TestTask => ({
    ...t,
    after: [...t.after],
    history: [...t.history],
  });

  /** Whether a waiting task can run: its parents all final; cancels it when a parent failed and its policy says so. */
  const ready = (t: Row): boolean => {
    if (t.callbackOf !== null) return batchEnded(batches.get(t.callbackOf) as Batch);
    const parents = t.after.map((id) => tasks.get(id) as Row);
    if (!parents.every((p) => FINAL.has(p.state))) return false;
    const failed = parents.find((p) => p.state !== 'succeeded');
    if (failed && t.onParentFailure === 'cancel') {
      move(t, 'cancelled', `parent ${failed.id} ended ${failed.state}`);
      cascaded++;
      return false;
    }
    return true;
  };

  /**
   * Tasks with a handler that are not final and whose parents are done, by due time, priority,
   * submit order; the dependents of a failed parent are cancelled on the way (their policy permitting).
   */
  const runnable = (): Array<{t: Row; h: ResolvedHandler}> => {
    let out: Array<{t: Row; h: ResolvedHandler}> = [];
    // Again while a pass cancelled a dependent: a cancel cascades to its own dependents.
    for (let before = -1; before !== cascaded;) {
      before = cascaded;
      out = [];
      for (const t of tasks.values()) {
        if ((t.state !== 'submitted' && t.state !== 'failed') || !ready(t)) continue;
        const h = handlers.byType.get(t.type);
        if (h) out.push({t, h});
      }
    }
    return out.sort(
      (a, b) => a.t.runAt.getTime() - b.t.runAt.getTime() || rank(a.t.priority) - rank(b.t.priority) || seq.get(a.t.id)! - seq.get(b.t.id)!,
    );
  };

  const runOne = async (t: Row, h: ResolvedHandler): Promise<void> => {
    t.attempt++;
    move(t, 'running');
    const parents: Record<string, ParentInfo> = {};
    for (const id of t.after) {
      const p = tasks.get(id) as Row;
      parents[id] = {type: p.type, state: p.state as ParentInfo['state'], result: p.result};
    }
    const abort = new AbortController();
    current = {id: t.id, abort};
    let run: TaskRun;
    try {
      run = await runAttempt(
        h,
        {
          taskId: t.id,
          type: t.type,
          attempt: t.attempt,
          maxRetries: t.maxRetries,
          payload: JSON.parse(JSON.stringify(t.payload)) as JsonObject,
          timeoutMs: t.timeoutMs ?? h.timeoutMs ?? (SETTINGS.taskTimeoutMs.default as number),
          parents: Object.freeze(parents),
        },
        {clock, backoff, random, signal: abort.signal},
      );
    } finally {
      current = null;
    }
    runs.push(run);
    const last = run.progress[run.progress.length - 1];
    if (last) t.progress = {percent: last.percent, note: last.note, at: new Date(last.atMs)};
    if (t.state === 'cancelled') return; // cancelled while it ran: its outcome changes nothing
    if (run.next.action === 'complete') {
      t.result = run.result ?? null;
      move(t, 'succeeded');
    } else if (run.next.action === 'retry') {
      t.runAt = new Date(clock.now() + run.next.delayMs);
      move(t, 'failed', run.next.error);
    } else move(t, 'dead', run.next.error);
  };

  const unfinished = (): string[] => [...tasks.values()].filter((t) => !FINAL.has(t.state)).map((t) => t.id);

  const runDue = async (limit = Number.POSITIVE_INFINITY): Promise<DrainReport> => {
    let attempts = 0;
    for (;;) {
      const next = runnable().find(({t}) => t.runAt.getTime() <= clock.now());
      if (!next) return {attempts, unfinished: unfinished()};
      if (attempts >= limit) throw new AxError('internal', `drain stopped after ${limit} attempts: a handler may resubmit tasks forever`);
      await runOne(next.t, next.h);
      attempts++;
    }
  };

  const cancel = async (id: string, reason?: string): Promise<CancelResult> => {
    if (!isTaskId(id)) throw invalid(`"${String(id)}" is not a task id (a lower-case UUID)`);
    checkCancelReason(reason ?? null);
    const t = tasks.get(id);
    if (!t) throw new AxError('not_found', `no task ${id}`);
    if (FINAL.has(t.state))
      throw new AxError('conflict', `task ${id} is ${t.state}: only a submitted, failed or running task can be cancelled`);
    const from = t.state;
    move(t, 'cancelled', `cancelled: ${reason ?? 'no reason given'}`);
    if (from !== 'running') return {id, from};
    if (current?.id === id) current.abort.abort(new Error(`cancelled: ${reason ?? 'no reason given'}`));
    return {id, from, stopped: {worker: 'test', attempt: t.attempt}, notified: true};
  };

  return {
    clock,
    submit,
    submitBatch,
    batch,
    flush,
    close: async () => {
      const r = await flush();
      closed = true;
      return r;
    },
    cancel,
    get tasks() {
      return [...tasks.values()].map(copy);
    },
    task(id) {
      const t = tasks.get(id);
      if (!t) throw new AxError('not_found', `no task ${id}`);
      return copy(t);
    },
    ran: (type) => (type === undefined ? [...runs] : runs.filter((r) => r.type === type)),
    runDue: () => runDue(),
    async drain(o = {}) {
      const limit = o.maxAttempts ?? 10_000;
      let attempts = 0;
      for (;;) {
        attempts += (await runDue(limit - attempts)).attempts;
        const later = runnable()[0];
        if (!later) return {attempts, unfinished: unfinished()};
        await clock.advance(later.t.runAt.getTime() - clock.now());
      }
    },
  };
}
