import {describe, expect, it} from 'vitest';
import {connectRetryDelay, connectWithRetry, isRetryableConnectError} from '../../src/core/connect-retry.js';
import {amqpConnectError} from '../../src/core/broker/amqp/errors.js';
import {AxError, isAxError} from '../../src/core/errors.js';
import {createLogger} from '../../src/core/log.js';
import type {Clock, TimerHandle} from '../../src/core/time.js';

/** A clock whose timers fire on the next microtask, recording each delay asked for. */
function recordingClock(): Clock & {delays: number[]} {
  const delays: number[] = [];
  return {
    delays,
    now: () => 0,
    monotonic: () => 0,
    setTimeout: (fn, ms) => {
      delays.push(ms);
      queueMicrotask(fn);
      return {} as TimerHandle;
    },
    clearTimeout: () => undefined,
  };
}

const down = (): AxError =>
  new AxError('unavailable', 'MySQL at mysql://root@h/ax is unavailable: connect ECONNREFUSED', {
    cause: Object.assign(new Error('connect ECONNREFUSED'), {code: 'ECONNREFUSED'}),
  });

function setup(failFast = false, maxMs = 2000) {
  const clock = recordingClock();
  const out: string[] = [];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const lines = (): any[] => out.map((l) => JSON.parse(l) as unknown);
  const ctx = {
    config: {connectFailFast: failFast, connectRetryMaxMs: maxMs},
    clock,
    random: () => 1,
    logger: createLogger('info', {}, (l) => out.push(l)),
  };
  return {clock, ctx, lines};
}

describe('connectWithRetry', () => {
  it('retries an unreachable server with a capped backoff, logging each attempt, until it connects', async () => {
    const {clock, ctx, lines} = setup(false, 1000);
    let calls = 0;
    const v = await connectWithRetry(ctx, 'MySQL', async () => {
      if (++calls < 6) throw down();
      return 'connected';
    });
    expect(v).toBe('connected');
    expect(clock.delays).toEqual([250, 500, 1000, 1000, 1000]);
    const warns = lines().filter((l) => l.level === 'warn');
    expect(warns.map((l) => [l.msg, l.to, l.attempt, l.retryInMs])).toEqual([
      ['cannot connect, retrying', 'MySQL', 1, 250],
      ['cannot connect, retrying', 'MySQL', 2, 500],
      ['cannot connect, retrying', 'MySQL', 3, 1000],
      ['cannot connect, retrying', 'MySQL', 4, 1000],
      ['cannot connect, retrying', 'MySQL', 5, 1000],
    ]);
    expect(warns[0].error).toMatch(/ECONNREFUSED/);
    expect(lines().at(-1)).toMatchObject({level: 'info', msg: 'connected', to: 'MySQL', attempts: 6});
  });

  it('jitters each wait down to between half and all of the cap', () => {
    expect(connectRetryDelay(1, 30_000, () => 0)).toBe(125);
    expect(connectRetryDelay(1, 30_000, () => 1)).toBe(250);
    expect(connectRetryDelay(4, 30_000, () => 0.5)).toBe(1500);
    expect(connectRetryDelay(40, 30_000, () => 0)).toBe(15_000);
  });

  it('fails at once with connectFailFast, and on refusals no wait can fix', async () => {
    const fast = setup(true);
    await expect(connectWithRetry(fast.ctx, 'MySQL', () => Promise.reject(down()))).rejects.toSatisfy((e) => isAxError(e, 'unavailable'));
    expect(fast.clock.delays).toEqual([]);

    const denied = new AxError('unavailable', 'access denied', {
      cause: Object.assign(new Error('Access denied'), {code: 'ER_ACCESS_DENIED_ERROR'}),
    });
    const schema = new AxError('unavailable', 'database ax is at schema version 0: run `ax migrate`');
    const vhost = new AxError('unavailable', 'RabbitMQ unavailable', {
      cause: new Error('Handshake terminated by server: 403 (ACCESS-REFUSED)'),
    });
    // amqplib's words when the server closes the connection instead of opening a missing virtual host.
    const noVhost = amqpConnectError(new Error('Expected ConnectionOpenOk; got <ConnectionClose channel:0>'), 'amqp://u:p@h/nope');
    for (const e of [denied, schema, vhost, noVhost, new AxError('invalid_input', 'bad url'), new Error('bug')]) {
      expect(isRetryableConnectError(e)).toBe(false);
      const s = setup();
      await expect(connectWithRetry(s.ctx, 'MySQL', () => Promise.reject(e))).rejects.toBe(e);
      expect(s.clock.delays).toEqual([]);
    }
    expect(isRetryableConnectError(down())).toBe(true);
  });

  it('ends the waiting with AxError(closed) when its signal aborts', async () => {
    const {ctx} = setup();
    const ac = new AbortController();
    let calls = 0;
    const p = connectWithRetry(
      ctx,
      'RabbitMQ',
      async () => {
        if (++calls === 3) ac.abort();
        throw down();
      },
      {signal: ac.signal},
    );
    await expect(p).rejects.toSatisfy((e) => isAxError(e, 'closed'));
    expect(calls).toBe(3);
  });
});
