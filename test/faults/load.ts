/**
 * What the fault scenarios share: ax processes that reach MariaDB and RabbitMQ only through fault
 * proxies (one pair per process, so a fault can hit one process or all), a producer in the test
 * process behind its own pair, a steady load of submits (steadyLoad: acknowledged at submit;
 * flushedLoad: acknowledged at each tick's flush), and the wait for every task to finish.
 */
import {createClient, type AxClient} from '../../src/core/client.js';
import type {TaskSpec} from '../../src/core/task/model.js';
import {createRuntime, openBroker, openStore} from '../../src/compose.js';
import {loadConfig} from '../../src/core/config/config.js';
import {createLogger} from '../../src/core/log.js';
import {AMQP_URL, MYSQL_ROOT, eventually, type TestEnv} from '../helpers/env.js';
import {startFaultProxy, targetOf, type FaultProxy} from '../helpers/fault-proxy.js';

/** A process's way to the servers. */
export interface Link {
  mysql: FaultProxy;
  amqp: FaultProxy;
}

export async function openLink(): Promise<Link> {
  return {mysql: await startFaultProxy(targetOf(MYSQL_ROOT)), amqp: await startFaultProxy(targetOf(AMQP_URL))};
}

export const closeLink = async (l: Link): Promise<void> => void (await Promise.all([l.mysql.close(), l.amqp.close()]));

/** `env.env` with both URLs through `link`, plus `extra`. */
export const linkedVars = (env: TestEnv, link: Link, extra: Record<string, string> = {}): Record<string, string> => ({
  ...env.env,
  AX_MYSQL_URL: link.mysql.url(env.env.AX_MYSQL_URL!),
  AX_AMQP_URL: link.amqp.url(env.env.AX_AMQP_URL!),
  ...extra,
});

/** An SDK client in this process whose connections go through `link`. */
export async function linkedClient(
  env: TestEnv,
  link: Link,
  extra: Record<string, string> = {},
): Promise<{client: AxClient; close: () => Promise<void>}> {
  const config = loadConfig({env: linkedVars(env, link, extra), cwd: '/nonexistent'});
  const rt = createRuntime(config, createLogger(config.logLevel, {test: 'faults-producer'}));
  const store = await openStore(rt);
  const broker = await openBroker(rt, {reconnect: true});
  const client = createClient({...rt, store, broker, release: async () => undefined});
  return {
    client,
    close: async () => {
      await client.close();
      await store.close();
      await broker.close();
    },
  };
}

/** What a load run submitted: every id `submit()` returned (unless not kept), and when each may first run. */
export interface Submitted {
  ids: string[];
  dueAt: Map<string, number>;
  /** Tasks submitted, kept or not. */
  count: number;
}

export interface LoadShape {
  /** Every `sleepEvery`-th task sleeps `sleepMs` (attempts in flight when a fault hits); default 5 and 1.5 s. */
  sleepEvery?: number;
  sleepMs?: number;
  /** Keep the ids (default true; a soak of millions counts only and checks in SQL). */
  keepIds?: boolean;
}

/**
 * Submits `perSecond` tasks a second until `stop()`: mostly no-ops, some sleeps (LoadShape), every
 * tenth delayed by 1–4 s (checked for early runs). Each payload carries `at` (the submit time, ms)
 * and a delayed one `due`, so latency and early runs can be read from storage. `submit()` only
 * buffers (it waits when the buffer is full), so the load goes on through outages; `stop()` waits for
 * the flush.
 */
export function steadyLoad(client: AxClient, perSecond: number, shape: LoadShape = {}) {
  const {sleepEvery = 5, sleepMs = 1500, keepIds = true} = shape;
  const into: Submitted = {ids: [], dueAt: new Map(), count: 0};
  let stopped = false;
  const tick = async (): Promise<void> => {
    const batch = Math.max(1, Math.round(perSecond / 10));
    for (let i = 0; i < batch && !stopped; i++) {
      const n = into.count++;
      const delayMs = n % 10 === 9 ? 1000 + (n % 4) * 1000 : 0;
      const sleep = n % sleepEvery === sleepEvery - 1;
      const at = Date.now();
      const payload = {n, at, ...(delayMs > 0 ? {due: at + delayMs} : {}), ...(sleep ? {ms: sleepMs} : {})};
      const id = await client.submit({type: sleep ? 'test_sleep' : 'test_noop', payload, ...(delayMs > 0 ? {delay: delayMs} : {})});
      if (keepIds) {
        into.ids.push(id);
        if (delayMs > 0) into.dueAt.set(id, at + delayMs);
      }
    }
  };
  let chain = Promise.resolve();
  const timer = setInterval(() => {
    if (!stopped) chain = chain.then(tick);
  }, 100);
  return {
    submitted: into,
    async stop(): Promise<Submitted> {
      stopped = true;
      clearInterval(timer);
      await chain;
      await client.flush();
      return into;
    },
  };
}

/** Waits until every id is succeeded, dead or cancelled (polling storage directly, not through a proxy). */
export async function allTerminal(env: TestEnv, ids: string[], timeoutMs: number): Promise<void> {
  await eventually(
    async () => {
      let open = 0;
      for (let i = 0; i < ids.length; i += 2000) {
        const part = ids.slice(i, i + 2000);
        const [row] = await env.sql<{n: number}>(
          `SELECT COUNT(*) AS n FROM tasks WHERE id IN (${part.map(() => '?').join(',')}) AND state IN ('succeeded', 'dead', 'cancelled')`,
          part,
        );
        open += part.length - Number(row!.n);
      }
      return open === 0;
    },
    timeoutMs,
    `all ${ids.length} tasks to finish`,
  );
}

export interface FlushedLoad {
  /** Acknowledged task ids, in order. */
  readonly ids: string[];
  /** Earliest start of each acknowledged task: the time before its submit plus its delay. */
  readonly dueAt: Map<string, number>;
  /** Flushes that failed (their tasks are not counted as acknowledged), with why. */
  readonly failures: string[];
  /** Longest flush so far, ms. */
  readonly maxFlushMs: number;
  /** Stops after the tick in progress; resolves when it is done. */
  stop(): Promise<void>;
}

/**
 * Submits `perTick` tasks made by `make(n)` (n counts from 0) every `tickMs`, flushing after each
 * batch, until stop(). Unlike steadyLoad, a task counts as acknowledged only once its flush
 * resolved, and ticks never overlap: a slow flush (a fault) holds the stream back, as a producer
 * with a full buffer would, and `failures` and `maxFlushMs` say how flushes fared (the broker
 * cluster scenario, where the producer's own broker is among the faults).
 */
export function flushedLoad(client: AxClient, o: {perTick: number; tickMs: number; make: (n: number) => TaskSpec}): FlushedLoad {
  const ids: string[] = [];
  const dueAt = new Map<string, number>();
  const failures: string[] = [];
  let maxFlushMs = 0;
  let running = true;
  let n = 0;
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      const batch: Array<{id: string; due: number}> = [];
      for (let k = 0; k < o.perTick; k++) {
        const spec = o.make(n++);
        const before = Date.now();
        const id = await client.submit(spec);
        batch.push({id, due: before + delayOf(spec)});
      }
      try {
        await client.flush();
        for (const b of batch) {
          ids.push(b.id);
          dueAt.set(b.id, b.due);
        }
      } catch (e) {
        failures.push(e instanceof Error ? e.message : String(e));
      }
      maxFlushMs = Math.max(maxFlushMs, Date.now() - started);
      const rest = o.tickMs - (Date.now() - started);
      if (rest > 0 && running) await new Promise((r) => setTimeout(r, rest));
    }
  })();
  return {
    ids,
    dueAt,
    failures,
    get maxFlushMs() {
      return maxFlushMs;
    },
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** A spec's delay in ms (numbers only: the scenarios use numbers). */
function delayOf(spec: TaskSpec): number {
  if (spec.delay === undefined) return 0;
  if (typeof spec.delay !== 'number') throw new Error('flushedLoad: give delays in ms');
  return spec.delay;
}
