/**
 * The daemon host (src/core/host) on a fake clock, a fake process and fake services: the start
 * order and its failure, the crash guard (exit 7), signals and the graceful stop, a start during an
 * outage, readiness, and the summary line.
 */
import {EventEmitter} from 'node:events';
import {describe, expect, it} from 'vitest';
import {connectWithRetry} from '../../src/core/connect-retry.js';
import {AxError} from '../../src/core/errors.js';
import {CRASH_EXIT_CODE, type HostProcess} from '../../src/core/host/guard.js';
import {runHost, type HostOptions, type HostProbe, type HostState} from '../../src/core/host/host.js';
import type {Service, StopOptions} from '../../src/core/lifecycle.js';
import {createLogger} from '../../src/core/log.js';
import {MetricsRegistry} from '../../src/core/metrics/registry.js';
import {fakeClock, type FakeClock} from '../helpers/clock.js';

/** A process that only emits what the test says and records exits. */
class FakeProcess extends EventEmitter implements HostProcess {
  exits: number[] = [];
  exit(code?: number): void {
    this.exits.push(code ?? 0);
  }
}

/** A service that records its calls into `log`; `ready()` follows `isReady` while started. */
class FakeService implements Service {
  isReady = true;
  started = false;
  stoppedWith: StopOptions | undefined;
  constructor(
    readonly name: string,
    private readonly log: string[],
    private readonly failStart?: Error,
  ) {}
  async start(): Promise<void> {
    this.log.push(`start ${this.name}`);
    if (this.failStart) throw this.failStart;
    this.started = true;
  }
  async stop(o: StopOptions = {}): Promise<void> {
    this.log.push(`stop ${this.name}`);
    this.stoppedWith = o;
    this.started = false;
  }
  ready(): boolean {
    return this.started && this.isReady;
  }
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

const down = (): AxError =>
  new AxError('unavailable', 'MySQL is unavailable: connect ECONNREFUSED', {
    cause: Object.assign(new Error('connect ECONNREFUSED'), {code: 'ECONNREFUSED'}),
  });

interface Harness {
  clock: FakeClock;
  proc: FakeProcess;
  log: string[];
  lines: () => Array<Record<string, unknown>>;
  probe: () => HostProbe;
  running: Promise<HostState>;
  opts: HostOptions<string>;
}

/** Host options around `services` (built on the connection "conn"); override any of them. */
function harness(services: FakeService[], over: Partial<HostOptions<string>> = {}, log: string[] = []): Harness {
  const clock = fakeClock(1_000);
  const proc = new FakeProcess();
  const out: string[] = [];
  let probe: HostProbe | undefined;
  let onRunning!: (h: HostState) => void;
  const running = new Promise<HostState>((r) => (onRunning = r));
  const opts: HostOptions<string> = {
    name: 'fake',
    clock,
    logger: createLogger('info', {}, (l) => out.push(l)),
    process: proc,
    graceMs: 30_000,
    serve: async (p) => {
      probe = p;
      log.push('serve');
      return {
        url: 'http://127.0.0.1:1',
        metrics: new MetricsRegistry({cell: 'default'}),
        close: async () => void log.push('close endpoint'),
      };
    },
    connect: async () => {
      log.push('connect');
      return {cells: ['conn'], [Symbol.asyncDispose]: async () => void log.push('close connections')};
    },
    services: () => services,
    onRunning: (h) => onRunning(h),
    result: (reason) => ({value: {reason: reason.kind}}),
    ...over,
  };
  return {
    clock,
    proc,
    log,
    lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>),
    probe: () => probe as HostProbe,
    running,
    opts,
  };
}

describe('runHost', () => {
  it('starts the endpoint, connects, starts the services in order; a signal stops them in reverse with the grace period (exit 0)', async () => {
    const log: string[] = [];
    const a = new FakeService('a', log);
    const b = new FakeService('b', log);
    const h = harness([a, b], {}, log);
    const run = runHost(h.opts);
    const state = await h.running;
    expect(state.phase).toBe('running');
    expect(h.log).toEqual(['serve', 'connect', 'start a', 'start b']);
    h.proc.emit('SIGTERM', 'SIGTERM');
    const outcome = await run;
    expect(outcome).toEqual({value: {reason: 'signal'}, exitCode: 0});
    expect(h.log).toEqual(['serve', 'connect', 'start a', 'start b', 'stop b', 'stop a', 'close connections', 'close endpoint']);
    expect(a.stoppedWith).toEqual({graceMs: 30_000});
    expect(h.lines().find((l) => l.msg === 'stopping fake')).toMatchObject({signal: 'SIGTERM'});
    expect(state.phase).toBe('stopped');
  });

  it('a second signal while stopping exits at once (143 for SIGTERM, 130 for SIGINT)', async () => {
    const log: string[] = [];
    let release!: () => void;
    const slow = new FakeService('slow', log);
    slow.stop = async () => {
      log.push('stop slow');
      await new Promise<void>((r) => (release = r));
    };
    const h = harness([slow], {}, log);
    const run = runHost(h.opts);
    await h.running;
    h.proc.emit('SIGINT', 'SIGINT');
    await new Promise((r) => setImmediate(r));
    expect(h.log).toContain('stop slow');
    h.proc.emit('SIGTERM', 'SIGTERM');
    h.proc.emit('SIGINT', 'SIGINT');
    expect(h.proc.exits).toEqual([143, 130]);
    release();
    expect((await run).exitCode).toBe(0);
  });

  it('a service whose stop throws: logged, the others still stop, exit 1', async () => {
    const log: string[] = [];
    const a = new FakeService('a', log);
    const b = new FakeService('b', log);
    b.stop = async () => {
      log.push('stop b');
      throw new Error('stuck');
    };
    const h = harness([a, b], {}, log);
    const run = runHost(h.opts);
    await h.running;
    h.proc.emit('SIGTERM', 'SIGTERM');
    expect((await run).exitCode).toBe(1);
    expect(h.log.slice(-4)).toEqual(['stop b', 'stop a', 'close connections', 'close endpoint']);
    expect(h.lines().find((l) => l.level === 'error')).toMatchObject({msg: 'fake: a service failed to stop', error: 'stuck'});
  });

  it('a service whose start throws: the ones started are stopped, the rest never start, everything is closed, the error is thrown', async () => {
    const log: string[] = [];
    const boom = new AxError('invalid_input', 'bad handlers module');
    const services = [new FakeService('a', log), new FakeService('b', log, boom), new FakeService('c', log)];
    const h = harness(services, {}, log);
    await expect(runHost(h.opts)).rejects.toBe(boom);
    expect(h.log).toEqual(['serve', 'connect', 'start a', 'start b', 'stop b', 'stop a', 'close connections', 'close endpoint']);
    expect(services[0]!.stoppedWith).toEqual({graceMs: 0});
  });

  it('an endpoint that cannot start (port in use): nothing connects, the error is thrown', async () => {
    const log: string[] = [];
    const h = harness([new FakeService('a', log)], {serve: () => Promise.reject(new AxError('conflict', 'the port is in use'))}, log);
    await expect(runHost(h.opts)).rejects.toMatchObject({code: 'conflict'});
    expect(h.log).toEqual([]);
  });

  it('an uncaught exception drains the services and exits 7; an unhandled rejection is counted and the host keeps running', async () => {
    const log: string[] = [];
    const a = new FakeService('a', log);
    const h = harness([a], {result: (r, s) => ({value: {reason: r.kind, rejections: s.guard.unhandledRejections}, exitCode: 1})}, log);
    const run = runHost(h.opts);
    const state = await h.running;
    h.proc.emit('unhandledRejection', new Error('stray promise'));
    expect(state.phase).toBe('running');
    expect(state.guard.unhandledRejections).toBe(1);
    h.proc.emit('uncaughtException', new Error('handler blew up'));
    const outcome = await run;
    // The crash wins over the daemon's own exit code.
    expect(outcome).toEqual({value: {reason: 'crash', rejections: 1}, exitCode: CRASH_EXIT_CODE});
    expect(h.log).toContain('stop a');
    expect(a.stoppedWith).toEqual({graceMs: 30_000});
    const errors = h.lines().filter((l) => l.level === 'error');
    expect(errors.map((l) => l.msg)).toEqual([
      'unhandled promise rejection (the process keeps running)',
      'uncaught exception; draining in-flight work, then exiting',
    ]);
    // Another one while exiting: exit 7 at once.
    h.proc.emit('uncaughtException', new Error('again'));
    expect(h.proc.exits).toEqual([CRASH_EXIT_CODE]);
  });

  it('without the crash guard, stray errors are left to node (no listeners installed)', async () => {
    const h = harness([new FakeService('a', [])], {crashGuard: false});
    const run = runHost(h.opts);
    await h.running;
    expect(h.proc.listenerCount('uncaughtException')).toBe(0);
    expect(h.proc.listenerCount('unhandledRejection')).toBe(0);
    expect(h.proc.listenerCount('SIGTERM')).toBe(1);
    h.proc.emit('SIGTERM', 'SIGTERM');
    expect((await run).exitCode).toBe(0);
  });

  it('a server down at start is waited for (/readyz 503 with the last attempt), then the daemon starts and becomes ready', async () => {
    const log: string[] = [];
    const a = new FakeService('a', log);
    let attempts = 0;
    const h = harness([a], {}, log);
    const ctx = {config: {connectFailFast: false, connectRetryMaxMs: 2_000}, clock: h.clock, random: () => 1, logger: h.opts.logger};
    h.opts.connect = async (retry) => {
      const conn = await connectWithRetry(
        ctx,
        'MySQL',
        async () => {
          if (++attempts < 4) throw down();
          return 'conn';
        },
        retry,
      );
      return {cells: [conn], [Symbol.asyncDispose]: async () => undefined};
    };
    const run = runHost(h.opts);
    await h.clock.advanceAsync(0);
    expect(h.probe().ready()).toBe(false);
    expect(h.probe().details()).toMatchObject({state: 'connecting', connect: {what: 'MySQL', attempt: 1, retryInMs: 250}});
    await h.clock.advanceAsync(250);
    expect(h.probe().details()).toMatchObject({state: 'connecting', connect: {attempt: 2, retryInMs: 500}});
    expect(a.started).toBe(false);
    await h.clock.advanceAsync(500 + 1_000);
    await h.running;
    expect(attempts).toBe(4);
    expect(h.probe().ready()).toBe(true);
    expect(h.probe().details()).toEqual({state: 'running'});
    h.proc.emit('SIGTERM', 'SIGTERM');
    expect((await run).exitCode).toBe(0);
    expect(h.probe().ready()).toBe(false);
  });

  it('a signal while waiting for a server ends the waiting: stopped before start, exit 0, no service built', async () => {
    let built = false;
    const h = harness([], {
      services: () => {
        built = true;
        return [];
      },
    });
    const ctx = {config: {connectFailFast: false, connectRetryMaxMs: 2_000}, clock: h.clock, random: () => 1, logger: h.opts.logger};
    h.opts.connect = async (retry) => {
      await connectWithRetry(ctx, 'RabbitMQ', () => Promise.reject(down()), retry);
      return {cells: ['never'], [Symbol.asyncDispose]: async () => undefined};
    };
    const run = runHost(h.opts);
    await h.clock.advanceAsync(0);
    h.proc.emit('SIGTERM', 'SIGTERM');
    expect(await run).toEqual({value: {stoppedBeforeStart: true, signal: 'SIGTERM'}, exitCode: 0});
    expect(built).toBe(false);
  });

  it('a crash while waiting for a server: stopped before start, exit 7', async () => {
    const h = harness([]);
    h.opts.connect = (retry) =>
      new Promise((_, reject) => retry.signal?.addEventListener('abort', () => reject(new AxError('closed', 'stopped while connecting'))));
    const run = runHost(h.opts);
    await h.clock.advanceAsync(0);
    h.proc.emit('uncaughtException', new Error('boom'));
    expect(await run).toEqual({value: {stoppedBeforeStart: true, crashed: true}, exitCode: CRASH_EXIT_CODE});
  });

  it('a connection that fails for good (not retryable) is thrown; nothing is built', async () => {
    const h = harness([], {connect: () => Promise.reject(new AxError('unavailable', 'access denied'))});
    await expect(runHost(h.opts)).rejects.toMatchObject({code: 'unavailable'});
  });

  it('readiness follows every hosted service while running', async () => {
    const a = new FakeService('a', []);
    const b = new FakeService('b', []);
    const h = harness([a, b]);
    const run = runHost(h.opts);
    await h.running;
    expect(h.probe().ready()).toBe(true);
    b.isReady = false;
    expect(h.probe().ready()).toBe(false);
    b.isReady = true;
    expect(h.probe().ready()).toBe(true);
    h.proc.emit('SIGTERM', 'SIGTERM');
    await run;
    expect(h.probe().ready()).toBe(false);
  });

  it('logs the summary line every period while running, and no more once stopping', async () => {
    let n = 0;
    const h = harness([new FakeService('a', [])], {
      summary: {everyMs: 60_000, msg: 'fake summary', fields: () => ({n: ++n, at: new Date(0)})},
    });
    const run = runHost(h.opts);
    await h.running;
    await h.clock.advanceAsync(60_000 * 3);
    const summaries = () => h.lines().filter((l) => l.msg === 'fake summary');
    expect(summaries().map((l) => [l.n, l.at])).toEqual([
      [1, '1970-01-01T00:00:00.000Z'],
      [2, '1970-01-01T00:00:00.000Z'],
      [3, '1970-01-01T00:00:00.000Z'],
    ]);
    h.proc.emit('SIGTERM', 'SIGTERM');
    await run;
    await h.clock.advanceAsync(60_000 * 3);
    expect(summaries()).toHaveLength(3);
    expect(h.clock.pending()).toBe(0);
  });
});
