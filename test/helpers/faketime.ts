/**
 * Processes with a skewed wall clock, for the clock-skew fault scenario: Debian's libfaketime
 * (package `faketime`, installed by scripts/tools.sh) preloaded into a spawned `node`, which then
 * reads a wall clock `offsetMs` off the machine's — Date.now(), new Date(), and so every time ax
 * takes from its injected clock.
 *
 * Only the wall clock moves: FAKETIME_DONT_FAKE_MONOTONIC=1 leaves CLOCK_MONOTONIC alone, as on a
 * real host whose NTP is off (the monotonic clock counts from boot whatever the wall clock says).
 * Without it libfaketime also shifts the monotonic clock (to the faked wall time, ~1.8·10⁹ s:
 * timers still work since the shift is constant, but the process would no longer share the
 * machine's monotonic clock, which the scenario's handlers use to stamp their starts in real time).
 */
import {existsSync, readdirSync} from 'node:fs';
import {join} from 'node:path';

/** libfaketime.so.1 of this machine's architecture, or an error saying how to install it. */
export function libfaketime(): string {
  const roots = ['/usr/lib', ...readdirSync('/usr/lib').map((d) => join('/usr/lib', d))];
  for (const r of roots) {
    const lib = join(r, 'faketime', 'libfaketime.so.1');
    if (existsSync(lib)) return lib;
  }
  throw new Error('libfaketime not found: install the Debian package faketime (bash scripts/tools.sh)');
}

/** Environment variables that run a spawned process with its wall clock `offsetMs` ahead (negative: behind). */
export function skewedClock(offsetMs: number): Record<string, string> {
  if (!Number.isInteger(offsetMs / 1000)) throw new Error(`a whole number of seconds, not ${offsetMs} ms`);
  return {
    LD_PRELOAD: libfaketime(),
    FAKETIME: `${offsetMs >= 0 ? '+' : '-'}${Math.abs(offsetMs / 1000)}s`,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}

/**
 * Epoch ms of the machine's monotonic clock reading `monoNs` (process.hrtime.bigint() in any
 * process on this machine), on this process's wall clock (which must be the true one: the test's).
 */
export function monotonicToEpoch(monoNs: bigint): number {
  const nowMs = Date.now();
  const monoNowMs = Number(process.hrtime.bigint()) / 1e6;
  return nowMs - monoNowMs + Number(monoNs) / 1e6;
}
