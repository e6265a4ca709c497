import {describe, expect, it} from 'vitest';
import {createLogger, isoTimes, logOptions} from '../../src/core/log.js';

const capture = (level: Parameters<typeof createLogger>[0], base = {}, redact: string[] = []) => {
  const out: string[] = [];
  const log = createLogger(level, base, (l) => out.push(l), {redact});
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return {log, lines: (): any[] => out.map((l) => JSON.parse(l) as unknown)};
};

describe('logger (pino)', () => {
  it('writes one JSON object a line: level label, ISO time, base and child fields, msg', () => {
    const {log, lines} = capture('info', {pid: 42});
    log.child({worker: 'w1'}).info('worker started', {pools: {io: 4}});
    expect(lines()).toEqual([
      {
        level: 'info',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        pid: 42,
        worker: 'w1',
        pools: {io: 4},
        msg: 'worker started',
      },
    ]);
  });

  it('drops lines below its level, and a disabled level never reads its fields', () => {
    const {log, lines} = capture('warn');
    let reads = 0;
    const fields = {
      get costly() {
        reads++;
        return 1;
      },
    };
    log.debug('no', fields);
    log.info('no', fields);
    expect(reads).toBe(0);
    log.warn('yes', fields);
    expect(reads).toBe(1);
    expect(lines().map((l) => [l.level, l.msg])).toEqual([['warn', 'yes']]);
    const silent = capture('silent');
    silent.log.error('nothing');
    expect(silent.lines()).toEqual([]);
  });

  it('serializes errors with their type, code, stack and cause, wherever they are in the fields', () => {
    const {log, lines} = capture('info');
    const e = Object.assign(new Error('boom', {cause: new Error('socket closed')}), {code: 'ECONNRESET'});
    log.error('claim failed', {error: e, nested: {errors: [new TypeError('bad')]}});
    const [line] = lines();
    expect(line.error).toMatchObject({type: 'Error', code: 'ECONNRESET'});
    expect(line.error.message).toContain('boom');
    expect(line.error.stack).toMatch(/^Error: boom\n\s+at .*log\.test\.ts/);
    expect(line.error.stack).toContain('caused by: Error: socket closed');
    expect(line.nested.errors[0]).toMatchObject({type: 'TypeError', message: 'bad', stack: expect.stringContaining('TypeError: bad')});
  });

  it('redacts passwords in URLs (message, fields, base) and secret field names, built-in and configured', () => {
    const {log, lines} = capture('info', {url: 'mysql://ax:s3cret@db:3306/ax'}, ['X-Signing-Key']);
    log.warn('cannot reach amqp://guest:hunter2@mq:5672 now', {
      password: 'p',
      nested: {api_key: 'k', Authorization: 'Bearer t', list: ['amqps://u:pw@host/vh'], xSigningKey: 'sig', keep: 'visible'},
      error: new Error('connect to mysql://root:rootpw@db/ax failed'),
    });
    const text = JSON.stringify(lines());
    for (const secret of ['s3cret', 'hunter2', 'rootpw', '"p"', '"k"', 'Bearer t', ':pw@', 'sig"']) expect(text).not.toContain(secret);
    const [line] = lines();
    expect(line.url).toBe('mysql://ax:***@db:3306/ax');
    expect(line.msg).toBe('cannot reach amqp://guest:***@mq:5672 now');
    expect(line).toMatchObject({password: '***', nested: {api_key: '***', Authorization: '***', xSigningKey: '***', keep: 'visible'}});
    expect(line.nested.list).toEqual(['amqps://u:***@host/vh']);
    expect(line.error.message).toBe('connect to mysql://root:***@db/ax failed');
  });

  it('survives cyclic fields', () => {
    const {log, lines} = capture('info');
    const a: Record<string, unknown> = {name: 'a'};
    a.self = a;
    log.info('cycle', {a});
    expect(lines()[0].a.name).toBe('a');
  });

  it('logOptions reads the format and the comma-separated extra secret names of a configuration', () => {
    expect(logOptions({logFormat: 'json', logRedact: ' apiSecret, x-token ,,'})).toEqual({
      format: 'json',
      redact: ['apiSecret', 'x-token'],
    });
  });

  it('isoTimes turns epoch-ms instants (keys ending in At) into ISO strings, at any depth', () => {
    expect(isoTimes({lastLoadAt: 0, held: 3, lastReconcile: {finishedAt: 86_400_000, at: 5}, none: null, lastSuccessAt: null})).toEqual({
      lastLoadAt: '1970-01-01T00:00:00.000Z',
      held: 3,
      lastReconcile: {finishedAt: '1970-01-02T00:00:00.000Z', at: 5},
      none: null,
      lastSuccessAt: null,
    });
  });
});
