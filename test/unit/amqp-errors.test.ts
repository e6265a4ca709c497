import {describe, expect, test} from 'vitest';
import {amqpConnectError} from '../../src/core/broker/amqp/errors.js';

/** amqplib's own messages, as it throws them from connect() (seen against RabbitMQ 3.x). */
const REFUSED =
  'Handshake terminated by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For details see the broker logfile."';
const NO_VHOST = 'Expected ConnectionOpenOk; got <ConnectionClose channel:0>';

describe('amqpConnectError', () => {
  test("403 ACCESS_REFUSED is a refused login of the URL's user, password redacted", () => {
    const e = amqpConnectError(new Error(REFUSED), 'amqp://app:s3cret@mq:5672/prod');
    expect(e.code).toBe('unavailable');
    expect(e.details).toEqual({reason: 'access_denied', scope: 'amqp'});
    expect(e.message).toMatch(
      /^RabbitMQ at amqp:\/\/app:\*\*\*@mq:5672\/prod refused the login of user "app": the user does not exist, the password is wrong/,
    );
    expect(e.message).not.toContain('s3cret');
    expect(e.message).not.toMatch(/unavailable/);
  });

  test('no user in the URL: amqplib logs in as guest', () => {
    expect(amqpConnectError(new Error(REFUSED), 'amqp://mq').message).toMatch(/user "guest"/);
  });

  test('a connection closed instead of opened is a virtual host refused', () => {
    const e = amqpConnectError(new Error(NO_VHOST), 'amqp://app:x@mq/orders%2Fv2');
    expect(e.details).toEqual({reason: 'permission_denied', scope: 'amqp'});
    expect(e.message).toMatch(/refused to open virtual host "orders\/v2" for user "app"/);
  });

  test('anything else is unreachable, with the driver error as its cause', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {code: 'ECONNREFUSED'});
    const e = amqpConnectError(cause, 'amqp://guest:guest@127.0.0.1:1');
    expect(e.details).toEqual({reason: 'unreachable', scope: 'amqp'});
    expect(e.message).toBe('RabbitMQ at amqp://guest:***@127.0.0.1:1 is unavailable: connect ECONNREFUSED 127.0.0.1:1');
    expect(e.cause).toBe(cause);
  });
});
