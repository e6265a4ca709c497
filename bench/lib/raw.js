// Physical-limit calibrations built from the raw drivers (mysql2, amqplib) with no ax code: a
// batched INSERT of rows shaped like ax's task rows, confirmed publish + manual-ack consume on
// classic and quorum queues, and the pieces of a hand-built batched durable pipeline. Only the
// table is a copy of ax's migrated `tasks` (CREATE TABLE … LIKE tasks, after ax's migrate()), so the
// rows and indexes are exactly ax's of this tree.
import {createHash, randomUUID} from 'node:crypto';

/** A copy of ax's migrated `tasks` table (its columns and every index), named `table`. */
export function taskTableDdl(table) {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` LIKE tasks`;
}

/** Time-ordered UUIDv7-style ids like ax's producer makes (48 bits of ms, then random bits). */
export function newId() {
  const ts = Date.now().toString(16).padStart(12, '0');
  const r = randomUUID();
  return `${ts.slice(0, 8)}-${ts.slice(8, 12)}-7${r.slice(15, 18)}-${r.slice(19)}`;
}

export const TASK_TYPE = 'bench_noop';
const ROW_SQL = "(?, ?, ?, ?, 'submitted', 0, ?, NOW(3), ?, 0, ?, ?, NOW(3), NOW(3), ?)";
const COLUMNS =
  'id, cell, type, pool, state, attempt, max_retries, run_at, timeout_ms, fence, dedup_key, content_hash, created_at, updated_at, payload';
const valuesCache = new Map();

/** The parameters of one task row, as ax writes it (payload {"n": i}, sha256-based content hash). */
export function rowParams(out, id, i) {
  const payload = `{"n":${i}}`;
  const hash = createHash('sha256').update(TASK_TYPE).update('\0').update(payload).digest('hex').slice(0, 32);
  out.push(id, 'default', TASK_TYPE, 'io', 5, null, null, hash, payload);
}

/** `INSERT INTO table (…) VALUES (…), …` for `rows` rows (the statement ax's producer sends). */
export function insertSql(table, rows) {
  let values = valuesCache.get(rows);
  if (!values) {
    values = new Array(rows).fill(ROW_SQL).join(', ');
    valuesCache.set(rows, values);
  }
  return `INSERT INTO \`${table}\` (${COLUMNS}) VALUES ${values}`;
}

/**
 * Calibration (a): `n` rows in multi-row INSERTs of `batch` rows on one connection, autocommit
 * (one fsync per statement). The parameters are built before the clock starts, so this measures
 * the database. Returns {rows, ms}.
 */
export async function rawInsert(conn, table, n, batch = 500) {
  const batches = [];
  for (let lo = 0; lo < n; lo += batch) {
    const params = [];
    const hi = Math.min(n, lo + batch);
    for (let i = lo; i < hi; i++) rowParams(params, newId(), i);
    batches.push({sql: insertSql(table, hi - lo), params});
  }
  const t0 = performance.now();
  for (const b of batches) await conn.query(b.sql, b.params);
  return {rows: n, ms: performance.now() - t0};
}

const RETRYABLE = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

/**
 * Runs a statement, retrying deadlocks and lock-wait timeouts like any real pipeline must
 * (concurrent multi-row INSERTs and claim UPDATEs on the same indexes can deadlock). `onRetry`
 * counts them.
 */
export async function retrying(fn, onRetry) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!RETRYABLE.has(e?.code) || attempt >= 10) throw e;
      onRetry?.(e.code);
    }
  }
}

/** A doorbell body shaped like ax's. */
export const bell = (id) => Buffer.from(`{"v":1,"id":"${id}","type":"${TASK_TYPE}"}`);

/** A doorbell for several tasks (ax's AX_DOORBELL_BATCH form, simplified): {"ids": [...]}. */
export const bells = (ids) => Buffer.from(`{"v":2,"type":"${TASK_TYPE}","ids":${JSON.stringify(ids)}}`);

/** The task ids a doorbell body (either form) names. */
export function bellIds(content) {
  const b = JSON.parse(content.toString('utf8'));
  return b.ids ?? [b.id];
}

/**
 * Settings of the hand-built pipeline (c), the best of the variants measured (docs/benchmarks.md,
 * "Tuning the hand-built pipeline"); `--hand-built k=v,…` overrides them for one run.
 *   batch           rows per INSERT (producer) and tasks per claim / complete UPDATE (consumer)
 *   lanes           producer batches in flight (INSERT then confirmed publish, each lane)
 *   idsPerMessage   task ids per RabbitMQ message (1 = one message per task)
 *   prefetch        consumer prefetch, in messages (2064 × 50 ids: the consumer never waits for
 *                   the broker; ax's worker's 2064 tasks' worth, 42 messages, was slower)
 *   claimWaitMs     longest wait to fill a claim batch; completeWaitMs the same for completions
 *   inFlight        claim (and complete) statements in flight at once
 *   connections     the consumer's MariaDB connections
 *   ackMultiple     ack in delivery order with multiple=true (one frame per run of settled
 *                   deliveries) instead of one ack per message
 */
export const HAND_BUILT = {
  batch: 500,
  lanes: 2,
  idsPerMessage: 50,
  prefetch: 2064,
  claimWaitMs: 2,
  completeWaitMs: 5,
  inFlight: 2,
  connections: 4,
  ackMultiple: true,
};

/** Parses `k=v,k=v` into hand-built settings (numbers and booleans); throws on an unknown key. */
export function parseHandBuilt(spec) {
  const out = {...HAND_BUILT};
  for (const part of (spec ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const [k, v] = part.split('=').map((x) => x.trim());
    if (!Object.hasOwn(HAND_BUILT, k)) throw new Error(`unknown hand-built setting ${k} (${Object.keys(HAND_BUILT).join(', ')})`);
    out[k] = typeof HAND_BUILT[k] === 'boolean' ? v === 'true' || v === '1' : Number(v);
    if (typeof out[k] === 'number' && !(out[k] >= 0)) throw new Error(`hand-built ${k} must be a number ≥ 0`);
  }
  return out;
}

/** Publishes `bodies` persistent to `queue` (default exchange) and resolves when all are confirmed. */
export function publishConfirmed(ch, queue, bodies) {
  return Promise.all(
    bodies.map(
      (body) =>
        new Promise((resolve, reject) => {
          ch.publish('', queue, body, {persistent: true, contentType: 'application/json'}, (err) => (err ? reject(err) : resolve()));
        }),
    ),
  );
}

/** Publishes `n` messages in windows of `window`, awaiting each window's confirms. Returns ms. */
export async function publishWindows(ch, queue, n, window = 500) {
  const t0 = performance.now();
  for (let lo = 0; lo < n; lo += window) {
    const bodies = [];
    for (let i = lo; i < Math.min(n, lo + window); i++) bodies.push(bell(`00000000-0000-7000-8000-${String(i).padStart(12, '0')}`));
    await publishConfirmed(ch, queue, bodies);
  }
  return performance.now() - t0;
}

/**
 * Starts a consumer with manual acks (one ack per message, as ax does) and resolves `done` with
 * the time the n-th message was acked.
 */
export async function consumeN(conn, queue, n, prefetch) {
  const ch = await conn.createChannel();
  await ch.prefetch(prefetch);
  let count = 0;
  let resolveDone;
  const done = new Promise((r) => (resolveDone = r));
  const {consumerTag} = await ch.consume(
    queue,
    (m) => {
      if (!m) return;
      ch.ack(m);
      if (++count === n) resolveDone(performance.now());
    },
    {noAck: false},
  );
  return {
    done,
    close: async () => {
      await ch.cancel(consumerTag).catch(() => undefined);
      await ch.close().catch(() => undefined);
    },
  };
}

/**
 * Calibration (b) on one queue: publish n in confirm windows (queue filling up), consume the n
 * back with manual acks, then publish and consume n together. Returns msg/s for each phase.
 */
export async function amqpCalibration(conn, pubCh, queue, n, {window = 500, prefetch = 2000} = {}) {
  const adm = await conn.createChannel();
  await adm.purgeQueue(queue);
  const publishMs = await publishWindows(pubCh, queue, n, window);
  const t0 = performance.now();
  const c1 = await consumeN(conn, queue, n, prefetch);
  const consumeMs = (await c1.done) - t0;
  await c1.close();
  await adm.purgeQueue(queue);
  const c2 = await consumeN(conn, queue, n, prefetch);
  const t1 = performance.now();
  await publishWindows(pubCh, queue, n, window);
  const togetherMs = (await c2.done) - t1;
  await c2.close();
  await adm.purgeQueue(queue);
  await adm.close();
  return {
    publish: (n * 1000) / publishMs,
    consume: (n * 1000) / consumeMs,
    together: (n * 1000) / togetherMs,
  };
}

/**
 * The producer half of calibration (c), the hand-built batched durable pipeline: `lanes` lanes,
 * each looping: one `batch`-row INSERT (autocommit), then a confirmed publish of its doorbells
 * (`idsPerMessage` ids each). Resolves with {retries} (deadlocks retried) when all n are inserted
 * and confirmed.
 */
export async function handBuiltProduce(pool, ch, table, queue, n, {batch = 500, lanes = 2, idsPerMessage = 1} = {}) {
  let next = 0;
  let retries = 0;
  const lane = async () => {
    while (next < n) {
      const lo = next;
      const hi = Math.min(n, lo + batch);
      next = hi;
      const params = [];
      const ids = [];
      for (let i = lo; i < hi; i++) {
        const id = newId();
        rowParams(params, id, i);
        ids.push(id);
      }
      const bodies = [];
      if (idsPerMessage <= 1) for (const id of ids) bodies.push(bell(id));
      else for (let k = 0; k < ids.length; k += idsPerMessage) bodies.push(bells(ids.slice(k, k + idsPerMessage)));
      await retrying(
        () => pool.query(insertSql(table, hi - lo), params),
        () => retries++,
      );
      await publishConfirmed(ch, queue, bodies);
    }
  };
  await Promise.all(Array.from({length: lanes}, lane));
  return {retries};
}
