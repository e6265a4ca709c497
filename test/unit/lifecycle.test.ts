import {describe, expect, it} from 'vitest';
import {graceDeadline, Periodic, type PeriodicOptions} from '../../src/core/lifecycle.js';
import {fakeClock, type FakeClock} from '../helpers/clock.js';

/** A Periodic (period 100 unless `o` says otherwise) that records when each pass ran; `next` picks the wait after pass n. */
function recorder(clock: FakeClock, o: Partial<PeriodicOptions> & {next?: (n: number) => number | undefined} = {}) {
  const at: number[] = [];
  const {next, ...rest} = o;
  const p = new Periodic({
    name: 't',
    clock,
    everyMs: 100,
    onError: () => undefined,
    ...rest,
    run: () => {
      at.push(clock.now());
      return next?.(at.length);
    },
  });
  return {p, at};
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return {promise, resolve};
}

describe('Periodic', () => {
  it('runs a pass every period on the injected clock, counting from the end of the previous pass', async () => {
    const clock = fakeClock();
    const {p, at} = recorder(clock);
    p.start();
    await clock.advanceAsync(99);
    expect(at).toEqual([]);
    await clock.advanceAsync(1);
    await clock.advanceAsync(250);
    expect(at).toEqual([100, 200, 300]);
    await p.stop();
    await clock.advanceAsync(1000);
    expect(at).toHaveLength(3);
    expect(clock.pending()).toBe(0);
  });

  it('never overlaps: runOnce during a pass waits for it; the next timer starts when the pass ends', async () => {
    const clock = fakeClock();
    let active = 0;
    let maxActive = 0;
    const gates: Array<ReturnType<typeof deferred>> = [];
    const p = new Periodic({
      name: 't',
      clock,
      everyMs: 10,
      run: async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        const g = deferred();
        gates.push(g);
        await g.promise;
        active--;
      },
      onError: () => undefined,
    });
    p.start();
    await clock.advanceAsync(10); // the timer pass starts and blocks
    expect(gates).toHaveLength(1);
    const once = p.runOnce();
    await clock.advanceAsync(100); // no timer is armed while a pass runs
    expect(gates).toHaveLength(1);
    gates[0]!.resolve();
    await clock.advanceAsync(0);
    expect(gates).toHaveLength(2); // runOnce's own pass, after the first
    gates[1]!.resolve();
    await once;
    expect(maxActive).toBe(1);
    await p.stop();
  });

  it('stop() waits for the running pass', async () => {
    const clock = fakeClock();
    const gate = deferred();
    let ended = false;
    const p = new Periodic({
      name: 't',
      clock,
      everyMs: 5,
      run: async () => {
        await gate.promise;
        ended = true;
      },
      onError: () => undefined,
    });
    p.start(0);
    await clock.advanceAsync(0);
    let stopped = false;
    const s = p.stop().then(() => (stopped = true));
    await clock.advanceAsync(0);
    expect(stopped).toBe(false);
    gate.resolve();
    await s;
    expect(ended).toBe(true);
    expect(clock.pending()).toBe(0);
  });

  it('reports errors instead of throwing, keeps running, and takes the wait the reporter returns', async () => {
    const clock = fakeClock();
    const errors: string[] = [];
    const at: number[] = [];
    let n = 0;
    const p = new Periodic({
      name: 'flaky',
      clock,
      everyMs: 100,
      run: () => {
        at.push(clock.now());
        if (n++ < 2) throw new Error(`fail ${n}`);
      },
      onError: (e, name) => {
        errors.push(`${name}: ${(e as Error).message}`);
        return 1000; // back off
      },
    });
    await expect(p.runOnce()).resolves.toBeUndefined();
    p.start(0);
    await clock.advanceAsync(0);
    await clock.advanceAsync(1000);
    await clock.advanceAsync(100);
    expect(errors).toEqual(['flaky: fail 1', 'flaky: fail 2']);
    expect(at).toEqual([0, 0, 1000, 1100]);
    expect(p.count).toBe(4);
    await p.stop();
  });

  it('a pass may return the wait before the next one (0: at once)', async () => {
    const clock = fakeClock();
    const {p, at} = recorder(clock, {next: (n) => (n < 3 ? 0 : undefined)});
    p.start(0);
    await clock.advanceAsync(0);
    await clock.advanceAsync(100);
    expect(at).toEqual([0, 0, 0, 100]);
    await p.stop();
  });

  it('adds jitter from the injected random source, and refuses bad options', async () => {
    const clock = fakeClock();
    const {p, at} = recorder(clock, {jitter: 0.5, random: () => 0.5});
    p.start();
    await clock.advanceAsync(300);
    expect(at).toEqual([125, 250]);
    await p.stop();
    const run = () => undefined;
    const onError = () => undefined;
    expect(() => new Periodic({name: 'x', clock, everyMs: -1, run, onError})).toThrow(RangeError);
    expect(() => new Periodic({name: 'x', clock, everyMs: Number.NaN, run, onError})).toThrow(RangeError);
    expect(() => new Periodic({name: 'x', clock, everyMs: 1, jitter: 2, random: () => 0, run, onError})).toThrow(RangeError);
    expect(() => new Periodic({name: 'x', clock, everyMs: 1, jitter: 0.1, run, onError})).toThrow(/random/);
  });
});

describe('graceDeadline', () => {
  it('ends at the grace period, or earlier when the signal aborts', async () => {
    const clock = fakeClock();
    let byTime = false;
    graceDeadline(clock, {graceMs: 50}, 1000).done.then(() => (byTime = true));
    await clock.advanceAsync(49);
    expect(byTime).toBe(false);
    await clock.advanceAsync(1);
    expect(byTime).toBe(true);

    const ac = new AbortController();
    let bySignal = false;
    const d = graceDeadline(clock, {signal: ac.signal}, 1000);
    void d.done.then(() => (bySignal = true));
    ac.abort();
    await clock.advanceAsync(0);
    expect(bySignal).toBe(true);
    d.cancel();
    expect(clock.pending()).toBe(0);
  });
});
