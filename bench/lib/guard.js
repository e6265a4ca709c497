// Keeps the benchmark suite from hanging and from leaving things behind:
//   - phase(name, ms, fn): runs one phase with a timeout; on expiry it SIGKILLs every child process
//     the suite started, runs the registered leftovers (dropping databases) and throws
//     PhaseTimeoutError naming the phase, so the run fails loudly instead of waiting forever;
//   - trackChild / exited / stopChild: child processes whose exit is never missed (an `exit` event
//     listened for after the child died never fires: that is how P6 once hung the suite);
//   - leftover(fn): cleanups that must run even when a phase is abandoned (each bounded in time).
// See docs/benchmarks.md, "Timeouts and cleanup".

const children = new Set();
const leftovers = new Set();

/** Thrown when a phase outlives its timeout; `phase` is its name. */
export class PhaseTimeoutError extends Error {
  constructor(phase, ms) {
    super(`benchmark phase ${phase} timed out after ${formatMs(ms)} (raise it with --phase-timeout ${phase}=<duration>)`);
    this.name = 'PhaseTimeoutError';
    this.phase = phase;
  }
}

export function formatMs(ms) {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** "90s", "20m", "1h", "1500ms" or a number of seconds → milliseconds; throws on anything else. */
export function parseDurationMs(s) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(String(s).trim());
  if (!m) throw new Error(`not a duration: ${JSON.stringify(s)} (examples: 90s, 20m, 1h)`);
  const unit = {ms: 1, s: 1000, m: 60_000, h: 3_600_000}[m[2] ?? 's'];
  const ms = Math.round(Number(m[1]) * unit);
  if (ms < 1) throw new Error(`duration must be positive: ${JSON.stringify(s)}`);
  return ms;
}

/**
 * Parses `--phase-timeout`: "20m" (every phase) or "p6=5m,p1=30m,default=10m" (per phase; a
 * phase's name is matched in full first, then up to its first dot: "p1.quorum" → "p1").
 * Returns (name) => ms.
 */
export function phaseTimeouts(spec, defaultMs) {
  const per = new Map();
  let dflt = defaultMs;
  for (const part of (spec ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq < 0) dflt = parseDurationMs(part);
    else if (part.slice(0, eq).trim() === 'default') dflt = parseDurationMs(part.slice(eq + 1));
    else per.set(part.slice(0, eq).trim(), parseDurationMs(part.slice(eq + 1)));
  }
  return (name) => per.get(name) ?? per.get(name.split('.')[0]) ?? dflt;
}

/** Registers a child process: killed if a phase times out or the suite exits. Returns it. */
export function trackChild(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

const gone = (child) => child.exitCode !== null || child.signalCode !== null;

/** Resolves once `child` has exited, also when it already had. */
export function exited(child) {
  if (gone(child)) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Resolves with true when `p` settles within `ms`, false otherwise (the timer never keeps the process alive). */
export function within(p, ms) {
  let timer;
  return Promise.race([
    Promise.resolve(p).then(
      () => true,
      () => true,
    ),
    new Promise((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
      timer.unref?.();
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Sends `signal`; SIGKILL if the child has not exited after `graceMs`. Resolves once it is gone. */
export async function stopChild(child, {signal = 'SIGTERM', graceMs = 15_000} = {}) {
  if (gone(child)) return;
  child.kill(signal);
  if (!(await within(exited(child), graceMs))) {
    child.kill('SIGKILL');
    await exited(child);
  }
}

/** Stops every tracked child still alive (SIGTERM, then SIGKILL after `graceMs`). */
export async function stopChildren(graceMs = 15_000) {
  await Promise.all([...children].map((c) => stopChild(c, {graceMs})));
}

/** SIGKILLs every tracked child still alive; returns how many. */
export function killChildren() {
  let n = 0;
  for (const c of children) {
    if (gone(c)) continue;
    c.kill('SIGKILL');
    n++;
  }
  return n;
}

/** Registers a cleanup that must run even if its phase is abandoned; returns the unregister function. */
export function leftover(fn) {
  leftovers.add(fn);
  return () => leftovers.delete(fn);
}

/** Runs (and forgets) every registered leftover cleanup, each bounded by `eachMs`. */
export async function runLeftovers(log = () => {}, eachMs = 30_000) {
  const all = [...leftovers].reverse();
  leftovers.clear();
  for (const fn of all) {
    const p = Promise.resolve()
      .then(fn)
      .catch((e) => log(`cleanup: ${e?.message ?? e}`));
    if (!(await within(p, eachMs))) log(`cleanup: gave up after ${formatMs(eachMs)}`);
  }
}

/**
 * Runs `fn()` as the phase `name`, failing with PhaseTimeoutError after `ms`: then every child
 * process is SIGKILLed and the leftovers run before the error is thrown. `fn`'s own errors pass through.
 */
export async function phase(name, ms, fn, log = () => {}) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new PhaseTimeoutError(name, ms)), ms);
  });
  try {
    return await Promise.race([fn(), expired]);
  } catch (e) {
    if (e instanceof PhaseTimeoutError) {
      log(`${e.message}: killing ${killChildren()} child process(es), cleaning up`);
      await runLeftovers(log);
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

// Whatever happens, no benchmark child outlives the suite.
process.on('exit', () => killChildren());
