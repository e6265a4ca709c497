// The demo behind `npm run demo`: starts a worker, a scheduler and the console (`ax worker`, `ax
// scheduler`, `ax web`, whose address it prints),
// submits a few hundred tasks through the SDK (CPU and IO tasks, delayed ones, some that fail and are
// retried, one that dead-letters, one unrecoverable), waits until all are finished and prints a
// summary. Run it through `npm run demo`, which first starts MariaDB/RabbitMQ, builds and migrates.
import {spawn} from 'node:child_process';
import {mkdtempSync, openSync, writeSync} from 'node:fs';
import {createServer} from 'node:net';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {connect} from 'ax-executor';
import {loadConfig} from '../dist/core/config/config.js';
import {createRuntime, openStore} from '../dist/compose.js';

const root = fileURLToPath(new URL('..', import.meta.url));
// Short retry delays so the demo reaches `dead` in seconds (production default: 1s, 2s, 4s, ...).
const userLevel = process.env.AX_LOG_LEVEL;
const env = {AX_RETRY_BASE: '250ms', AX_LOG_LEVEL: 'warn', ...process.env};
Object.assign(process.env, env);
const config = loadConfig();
const rt = createRuntime(config);
const childEnv = {...env, AX_LOG_LEVEL: userLevel ?? 'info', NODE_ENV: 'production'};

// The worker's and scheduler's logs go to files, not the screen: the demo's failures are on purpose
// (their JSON lines would bury the story), and it says in plain words what it waits for.
const logDir = mkdtempSync(path.join(tmpdir(), 'ax-demo-'));
const logOf = (name) => openSync(path.join(logDir, `${name}.log`), 'w');
const worker = spawn(process.execPath, ['bin/run.js', 'worker', '--handlers', 'examples/handlers.js'], {
  cwd: root,
  env: childEnv,
  stdio: ['ignore', 'ignore', logOf('worker')],
});
const workerExited = new Promise((r) => worker.on('exit', (code, signal) => r({code, signal})));
// The scheduler rings for delayed tasks and retries when they are due.
const scheduler = spawn(process.execPath, ['bin/run.js', 'scheduler', '--summary-every', '0'], {
  cwd: root,
  env: childEnv,
  stdio: ['ignore', 'ignore', logOf('scheduler')],
});
console.log(`worker and scheduler started; their logs: ${logDir}/worker.log, scheduler.log`);
const schedulerExited = new Promise((r) => scheduler.on('exit', (code, signal) => r({code, signal})));

/** Whether `port` on loopback is free (the console takes AX_WEB_PORT, 8080, unless another process has it). */
const portFree = (port) =>
  new Promise((resolve) => {
    const probe = createServer()
      .once('error', () => resolve(false))
      .listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
const webPort = Number(process.env.AX_WEB_PORT ?? 8080);
const web = spawn(process.execPath, ['bin/run.js', 'web', '--port', String((await portFree(webPort)) ? webPort : 0)], {
  cwd: root,
  env: childEnv,
  stdio: ['ignore', 'ignore', 'pipe'],
});
const webExited = new Promise((r) => web.on('exit', (code, signal) => r({code, signal})));
// `ax web` says where it listens on its first line (the rest of its log goes to a file).
const webLog = openSync(path.join(logDir, 'web.log'), 'w');
const consoleUrl = await new Promise((resolve) => {
  let text = '';
  web.stderr.on('data', (chunk) => {
    text += chunk;
    const m = /the console is at (\S+?)\/? /.exec(text);
    if (m) resolve(m[1]);
  });
  web.once('exit', () => resolve(null));
});
web.stderr.on('data', (chunk) => writeSync(webLog, chunk));
console.log(
  consoleUrl
    ? `the console: ${consoleUrl}/ (while the demo runs; \`ax web\` serves it any time)`
    : `the console did not start: see ${logDir}/web.log`,
);

const ax = await connect();
// user_register_credit fails on purpose (the first 0–2 attempts of each task, 60 failures in 120
// attempts): more than the breaker's default 50 %. Raise its threshold for the demo — ahead of the
// worker's registration, as one would before a deploy — or the breaker would (rightly) park the type.
await ax.types.set('user_register_credit', {breaker: {threshold: 0.9}});
console.log('user_register_credit fails on purpose: its breaker opens above 90 % failures for the demo');
console.log('  (ax types set user_register_credit --breaker-threshold 0.9)');
const ids = {};
const track = (type, id) => (ids[type] ??= []).push(id);
console.log('submitting tasks…');
for (let i = 0; i < 200; i++) track('order_notify', await ax.submit({type: 'order_notify', payload: {orderId: i}}));
for (let i = 0; i < 60; i++)
  track('user_register_credit', await ax.submit({type: 'user_register_credit', payload: {userId: i, failTimes: i % 3}}));
for (let i = 0; i < 30; i++) track('report_build', await ax.submit({type: 'report_build', payload: {seed: i, rounds: 20000}, pool: 'cpu'}));
for (let i = 0; i < 20; i++) track('order_notify', await ax.submit({type: 'order_notify', payload: {orderId: 1000 + i}, delay: '2s'}));
track('payment_capture', await ax.submit({type: 'payment_capture', payload: {orderId: 42}, maxRetries: 3}));
track('invoice_render', await ax.submit({type: 'invoice_render', payload: {}}));
const report = await ax.flush();
console.log(`submitted ${report.inserted} tasks (20 of them delayed by 2s)`);

const store = await openStore(rt);
const started = Date.now();
const allIds = Object.values(ids).flat();
/** Counts per type × state of this run's tasks only (the database may hold earlier runs). */
async function runStats() {
  const [rows] = await store.db.pool.query(
    'SELECT type, state, COUNT(*) AS n, SUM(attempt > 1) AS retried FROM tasks WHERE id IN (?) GROUP BY type, state ORDER BY type, state',
    [allIds],
  );
  const byState = {submitted: 0, running: 0, succeeded: 0, failed: 0, dead: 0, cancelled: 0};
  for (const r of rows) byState[r.state] += Number(r.n);
  return {rows, byState, total: allIds.length, retried: rows.reduce((n, r) => n + (r.state === 'succeeded' ? Number(r.retried) : 0), 0)};
}
/**
 * What the unfinished tasks of this run wait for, in plain words: delayed tasks and retries not due
 * yet, and types a pause or an open breaker holds back (with the command that releases them).
 */
async function waitingFor() {
  const [rows] = await store.db.pool.query(
    `SELECT type, state, parked, COUNT(*) AS n, GREATEST(0, TIMESTAMPDIFF(MICROSECOND, NOW(3), MIN(run_at))) / 1000 AS dueInMs
       FROM tasks WHERE id IN (?) AND state IN ('submitted', 'failed') GROUP BY type, state, parked`,
    [allIds],
  );
  const flow = new Map((await store.flowView({liveMs: 15_000})).types.map((t) => [t.type, t]));
  const out = [];
  for (const r of rows) {
    const n = Number(r.n);
    const inS = `${(Number(r.dueInMs) / 1000).toFixed(1)} s`;
    const t = flow.get(r.type);
    if (r.parked === 'breaker' || t?.breaker.state === 'open')
      out.push(
        `${r.type}: its breaker is ${t?.breaker.state ?? 'open'} (too many failures), ${n} tasks wait until the next probe in ${inS}; ax types breaker ${r.type} --reset releases them`,
      );
    else if (r.parked === 'paused' || t?.paused) out.push(`${r.type}: paused, ${n} tasks wait; ax types resume ${r.type} releases them`);
    else if (r.parked) out.push(`${r.type}: ${n} tasks parked (${r.parked}), next in ${inS}`);
    else if (Number(r.dueInMs) > 200) {
      const what = r.state === 'failed' ? (n === 1 ? 'retry' : 'retries') : n === 1 ? 'delayed task' : 'delayed tasks';
      out.push(`${n} ${what} of ${r.type} due in ${inS}`);
    }
  }
  return out;
}

let stats;
let said = '';
for (;;) {
  stats = await runStats();
  const open = stats.byState.submitted + stats.byState.running + stats.byState.failed;
  process.stdout.write(
    `\r${Object.entries(stats.byState)
      .map(([s, n]) => `${s} ${n}`)
      .join('  ')}   `,
  );
  if (open === 0) break;
  // A line of its own whenever what the run waits for changes (the counts alone may sit still).
  const waits = await waitingFor();
  const line = waits.map((w) => w.replace(/[0-9.]+ s\b/g, '')).join('|');
  if (waits.length > 0 && line !== said) process.stdout.write(`\n  waiting: ${waits.join('\n  waiting: ')}\n`);
  said = line;
  if (Date.now() - started > 120_000) {
    console.error('\ndemo did not finish within 120 s');
    process.exitCode = 1;
    break;
  }
  await new Promise((r) => setTimeout(r, 500));
}
console.log(`\n\nall ${stats.total} tasks finished in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
console.log('type                   state       count');
for (const r of stats.rows) console.log(`${r.type.padEnd(22)} ${r.state.padEnd(11)} ${String(r.n).padStart(5)}`);
console.log(`\n${stats.retried} tasks succeeded after one or more retries`);

const dead = await ax.getTask(ids.payment_capture[0]);
console.log(`\ndead-lettered task ${dead.task.id} (${dead.task.type}), its history:`);
for (const h of dead.history)
  console.log(
    `  ${h.at.toISOString()}  ${(h.from ?? '-').padEnd(9)} → ${h.to.padEnd(9)} attempt ${h.attempt}${h.error ? `  ${h.error}` : ''}`,
  );
const bad = await ax.getTask(ids.invoice_render[0]);
console.log(`\nunrecoverable task ${bad.task.id}: ${bad.task.state} after ${bad.task.attempt} attempt: ${bad.task.lastError}`);

if (consoleUrl && process.env.AX_DEMO_KEEP_CONSOLE === '1') {
  console.log(`\nthe console stays at ${consoleUrl}/ until Ctrl-C (AX_DEMO_KEEP_CONSOLE=1)`);
  await new Promise((r) => process.once('SIGINT', r));
}
worker.kill('SIGTERM');
scheduler.kill('SIGTERM');
web.kill('SIGTERM');
const exit = await workerExited;
const sexit = await schedulerExited;
await webExited;
console.log(`\nworker stopped (${exit.signal ?? `exit ${exit.code}`}), scheduler stopped (${sexit.signal ?? `exit ${sexit.code}`})`);
await ax.close();
await store.close();
const ok = stats.byState.succeeded === stats.total - 2 && stats.byState.dead === 2;
console.log(ok ? '\ndemo OK' : '\ndemo finished with unexpected counts');
if (!ok) process.exitCode = 1;
