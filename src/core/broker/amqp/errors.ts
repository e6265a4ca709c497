/** Translating amqplib's connection failures into AxError('unavailable') with a reason, as the MySQL adapter does. */
import {AxError, errorMessage} from '../../errors.js';
import {redactUrl} from '../../config/redact-url.js';

/** Why RabbitMQ could not be used: `details.reason` (with `details.scope: 'amqp'`) of the AxError. */
export type AmqpFailureReason = 'unreachable' | 'access_denied' | 'permission_denied';

/** The user amqplib logs in as: the URL's, else its default (guest). */
function userOf(url: string): string {
  try {
    const u = new URL(url);
    return u.username === '' ? 'guest' : decodeURIComponent(u.username);
  } catch {
    return '?';
  }
}

/** The URL's virtual host: its path without the leading slash, else "/". */
function vhostOf(url: string): string {
  try {
    const path = new URL(url).pathname.replace(/^\//, '');
    return path === '' ? '/' : decodeURIComponent(path);
  } catch {
    return '?';
  }
}

/**
 * A failed amqplib connect as AxError('unavailable'), the password redacted from the URL named:
 * - reason `access_denied` when the server refused the login (403 ACCESS_REFUSED during the
 *   handshake: unknown user, wrong password, or a user such as guest that may only log in from
 *   localhost; RabbitMQ does not say which);
 * - reason `permission_denied` when it refused to open the URL's virtual host (it does not exist,
 *   or the user has no permissions on it: amqplib reports the server closing the connection
 *   instead of answering connection.open);
 * - reason `unreachable` for anything else (no server, reset, timeout).
 * `details.scope` is `amqp` so that the CLI's hint names AX_AMQP_URL. The driver's error is the cause.
 */
export function amqpConnectError(e: unknown, url: string): AxError {
  const at = `RabbitMQ at ${redactUrl(url)}`;
  const said = errorMessage(e);
  const fail = (reason: AmqpFailureReason, message: string) =>
    new AxError('unavailable', message, {cause: e, details: {reason, scope: 'amqp'}});
  if (/\b403\b|ACCESS[-_]REFUSED/.test(said))
    return fail(
      'access_denied',
      `${at} refused the login of user "${userOf(url)}": the user does not exist, the password is wrong, or the user may not log in from this host (guest may only from localhost; RabbitMQ does not say which). It said: ${said}`,
    );
  if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(said) || /NOT[-_]ALLOWED/.test(said))
    return fail(
      'permission_denied',
      `${at} refused to open virtual host "${vhostOf(url)}" for user "${userOf(url)}": the virtual host does not exist or the user has no permissions on it. It said: ${said}`,
    );
  return fail('unreachable', `${at} is unavailable: ${said}`);
}
