/** Hiding the password of a connection URL (mysql://, amqp://) in logs and error messages. */

/** A URL with its password replaced by `***`; `<invalid url>` when it does not parse. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<invalid url>';
  }
}
