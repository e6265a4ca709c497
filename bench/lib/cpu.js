// CPU time per process from /proc: utime + stime of this process, the worker child (if any),
// mariadbd and beam.smp (RabbitMQ), plus the whole machine's busy time from /proc/stat, so that
// "other" (load we did not cause: other engineers' tests on this shared machine) is visible.
import {execFileSync} from 'node:child_process';
import {readFileSync, readdirSync} from 'node:fs';

let ticksPerSecond = 100;
try {
  ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], {encoding: 'utf8'}).trim()) || 100;
} catch {
  // Linux default.
}
export const CLK_TCK = ticksPerSecond;

/** Server processes whose CPU the suite charges to the workload. */
export const SERVER_COMMS = {mariadbd: 'mariadbd', mysqld: 'mariadbd', 'beam.smp': 'beam.smp', 'redis-server': 'redis-server'};

/** pids by label ('mariadbd', 'beam.smp', …) found through /proc/<pid>/comm. */
export function findServerPids() {
  const out = {};
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let comm;
    try {
      comm = readFileSync(`/proc/${d}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const label = SERVER_COMMS[comm];
    if (label) (out[label] ??= []).push(Number(d));
  }
  return out;
}

/** utime + stime of a pid (all its threads) or of one thread, in clock ticks; NaN when it is gone. */
export function procTicks(pid, tid) {
  try {
    const s = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // Fields after the command: index 0 is field 3 (state); utime is field 14, stime field 15.
    return Number(f[11]) + Number(f[12]);
  } catch {
    return NaN;
  }
}

/** Busy and total ticks of all cores from /proc/stat. */
export function systemTicks() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = v;
  const busy = user + nice + system + irq + softirq + (steal ?? 0);
  return {busy, total: busy + idle + iowait};
}

/** utime + stime of every thread of `pid`: Map tid → ticks. */
export function threadTicks(pid) {
  const out = new Map();
  if (!pid) return out;
  let tids = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tids) {
    const v = procTicks(pid, t);
    if (Number.isFinite(v)) out.set(Number(t), v);
  }
  return out;
}

/**
 * Takes a snapshot of the labelled processes. `procs` maps label → pid or pid list, e.g.
 * {'node (bench)': process.pid, 'node (worker)': child.pid, mariadbd: [..], 'beam.smp': [..]}.
 * With `threadsOf` (the mariadbd pid) it also records every thread of that process, so the CPU
 * of the threads serving our own connections can be told apart (see cpuDelta).
 */
export function snapshot(procs, threadsOf) {
  const ticks = {};
  for (const [label, pids] of Object.entries(procs)) {
    ticks[label] = [].concat(pids).reduce((n, p) => n + procTicks(p), 0);
  }
  return {at: performance.now(), ticks, threads: threadTicks(threadsOf), sys: systemTicks()};
}

/**
 * CPU used between two snapshots: core-ms per label, `ours` (their sum), `machine` (all busy
 * time), `other` (machine − ours) and the wall time. With `ourThreads` (thread ids of mariadbd
 * serving our connections, from information_schema.PROCESSLIST.TID) also `mariadbOurs`: the part
 * of mariadbd's time spent in those threads (the rest is background work — flushing, purge — and
 * other tenants of the shared server).
 */
export function cpuDelta(a, b, ourThreads) {
  const ms = (t) => (t * 1000) / CLK_TCK;
  const perProcess = {};
  let ours = 0;
  for (const label of Object.keys(b.ticks)) {
    const d = ms(b.ticks[label] - a.ticks[label]);
    perProcess[label] = d;
    if (Number.isFinite(d)) ours += d;
  }
  const machine = ms(b.sys.busy - a.sys.busy);
  let mariadbOurs;
  if (ourThreads) {
    mariadbOurs = 0;
    for (const tid of ourThreads) {
      const end = b.threads.get(tid);
      if (end !== undefined) mariadbOurs += ms(end - (a.threads.get(tid) ?? 0));
    }
  }
  return {wallMs: b.at - a.at, perProcess, ours, machine, other: Math.max(0, machine - ours), mariadbOurs};
}
