/**
 * AX_AMQP_URL as one URL or the nodes of a cluster (comma-separated): parsed in order, every entry
 * checked, a bad one named by its place without its password, and nothing started (the
 * configuration does not load). The same rules for a cell's amqpUrl in AX_CELLS.
 */
import {describe, expect, it, test} from 'vitest';
import {parseAmqpUrls} from '../../src/core/config/amqp-urls.js';
import {loadConfig} from '../../src/core/config/config.js';
import {parseCells} from '../../src/core/cells/cells.js';
import {urlTargets} from '../../src/core/cells/report.js';
import {isAxError} from '../../src/core/errors.js';

const load = (AX_AMQP_URL: string) => loadConfig({env: {AX_AMQP_URL}, cwd: '/nonexistent'});

describe('parseAmqpUrls', () => {
  it('takes one URL as a list of one', () => {
    expect(parseAmqpUrls('amqp://guest:guest@127.0.0.1:5672')).toEqual(['amqp://guest:guest@127.0.0.1:5672']);
  });

  it('splits a cluster list in order, trimming the spaces around entries', () => {
    expect(parseAmqpUrls(' amqp://ax:pw@mq1:5672/prod , amqps://ax:pw@mq2:5671/prod,amqp://ax:pw@mq3/prod ')).toEqual([
      'amqp://ax:pw@mq1:5672/prod',
      'amqps://ax:pw@mq2:5671/prod',
      'amqp://ax:pw@mq3/prod',
    ]);
  });

  it('keeps a percent-encoded comma inside a password', () => {
    expect(parseAmqpUrls('amqp://ax:a%2Cb@mq1,amqp://ax:a%2Cb@mq2')).toEqual(['amqp://ax:a%2Cb@mq1', 'amqp://ax:a%2Cb@mq2']);
  });

  test.each<[string, RegExp]>([
    ['', /amqpUrl must name a RabbitMQ URL/],
    ['   ', /amqpUrl must name a RabbitMQ URL/],
    ['http://mq1:5672', /amqpUrl must start with amqp:\/\/ or amqps:\/\/, got "http:\/\/mq1:5672"/],
    ['amqp://a@mq1,,amqp://a@mq2', /amqpUrl \(entry 2 of 3\) is empty: the URLs of a cluster are separated by single commas/],
    ['amqp://a@mq1,', /amqpUrl \(entry 2 of 2\) is empty/],
    ['amqp://a@mq1,mq2:5672', /amqpUrl \(entry 2 of 2\) must start with amqp:\/\/ or amqps:\/\/, got "mq2:5672"/],
    ['amqp://a@mq1,amqp://', /amqpUrl \(entry 2 of 2\) is not a URL with a host/],
    ['amqp://a@mq1,amqp://a@mq1', /amqpUrl \(entry 2 of 2\) lists amqp:\/\/a@mq1 twice/],
  ])('refuses %j', (value, message) => {
    let thrown: unknown;
    try {
      parseAmqpUrls(value);
    } catch (e) {
      thrown = e;
    }
    expect(isAxError(thrown, 'invalid_input')).toBe(true);
    expect((thrown as Error).message).toMatch(message);
  });

  it('never shows the password of the entry it refuses', () => {
    const bad = [
      'amqp://ax:hunter2@mq1,http://ax:hunter2@mq2',
      'amqp://ax:hunter2@mq1,ax:hunter2@mq2:5672',
      'amqp://ax:hunter2@mq1,amqp://ax:hunter2@mq1',
      'amqp://ax:hunter2@mq1,amqp//ax:hunter2@mq2',
    ];
    for (const value of bad) {
      expect(() => parseAmqpUrls(value), value).toThrow(/entry 2 of 2/);
      try {
        parseAmqpUrls(value);
      } catch (e) {
        expect((e as Error).message, value).not.toContain('hunter2');
      }
    }
  });
});

describe('AX_AMQP_URL in the configuration', () => {
  it('loads a cluster list as it was written (the broker splits it)', () => {
    const list = 'amqp://ax:pw@mq1:5672,amqp://ax:pw@mq2:5672,amqp://ax:pw@mq3:5672';
    expect(load(list).amqpUrl).toBe(list);
  });

  it('refuses a list with a bad entry, naming the setting and the entry: nothing loads', () => {
    expect(() => load('amqp://ax:pw@mq1:5672,amqp:/mq2:5672')).toThrow(
      /amqpUrl \(AX_AMQP_URL\) \(entry 2 of 2\) must start with amqp:\/\/ or amqps:\/\//,
    );
  });

  it('applies the same rules to a cell’s amqpUrl in AX_CELLS', () => {
    const cells = parseCells({big: {types: ['order_*'], amqpUrl: 'amqp://a@mq1/big,amqp://a@mq2/big'}}, 'env');
    expect(cells.big?.amqpUrl).toBe('amqp://a@mq1/big,amqp://a@mq2/big');
    expect(() => parseCells({big: {types: [], amqpUrl: 'amqp://a@mq1/big,,amqp://a@mq2/big'}}, 'env')).toThrow(
      /cell "big": amqpUrl \(entry 2 of 3\) is empty/,
    );
    expect(() => parseCells({big: {types: [], amqpUrl: ['amqp://a@mq1']}}, 'env')).toThrow(/cell "big": amqpUrl must be a string/);
  });

  it('ax cells list shows each node of a cluster without credentials', () => {
    expect(urlTargets('amqp://ax:pw@mq1:5672/prod,amqp://ax:pw@mq2/prod', 5672)).toBe('mq1:5672/prod,mq2:5672/prod');
  });
});
