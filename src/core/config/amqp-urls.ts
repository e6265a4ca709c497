/**
 * RabbitMQ connection URLs: one server (`amqp://user:password@host:5672/vhost`), or the nodes of one
 * cluster as a comma-separated list (`amqp://…@mq1:5672,amqp://…@mq2:5672,amqp://…@mq3:5672`),
 * which the broker adapter tries in turn (src/core/broker/amqp/nodes.ts). Checked when the
 * configuration loads; lives in config so that config does not depend on the adapter.
 */
import {invalid} from '../errors.js';
import {redactUrl} from './redact-url.js';

/**
 * The URLs of an AX_AMQP_URL-shaped value, in order. Entries are separated by commas and trimmed; a
 * comma inside a URL (in a password) must be written `%2C`. Throws invalid_input, naming `setting`
 * and the entry (its password redacted), when the value is empty, an entry is empty (a stray
 * comma), is not an amqp:// or amqps:// URL, names no host, or is listed twice.
 */
export function parseAmqpUrls(value: string, setting = 'amqpUrl'): string[] {
  const entries = value.split(',').map((s) => s.trim());
  const n = entries.length;
  const which = (i: number): string => (n === 1 ? '' : ` (entry ${i + 1} of ${n})`);
  if (n === 1 && entries[0] === '') throw invalid(`${setting} must name a RabbitMQ URL (amqp://user:password@host:5672/vhost)`);
  const seen = new Set<string>();
  entries.forEach((url, i) => {
    if (url === '') throw invalid(`${setting}${which(i)} is empty: the URLs of a cluster are separated by single commas`);
    if (!/^amqps?:\/\//i.test(url)) throw invalid(`${setting}${which(i)} must start with amqp:// or amqps://, got ${quoted(url)}`);
    let host = '';
    try {
      host = new URL(url).hostname;
    } catch {
      // The message says so below, without echoing what may hold a password.
    }
    if (host === '') throw invalid(`${setting}${which(i)} is not a URL with a host (amqp://user:password@host:5672/vhost)`);
    if (seen.has(url)) throw invalid(`${setting}${which(i)} lists ${redactUrl(url)} twice`);
    seen.add(url);
  });
  return entries;
}

/**
 * An entry that is not an amqp:// URL, as an error message may show it: only what follows its last
 * `@` when it has one (whatever precedes it may be a password, and a URL of another scheme or
 * none does not say where its password is).
 */
function quoted(url: string): string {
  const at = url.lastIndexOf('@');
  return JSON.stringify(at < 0 ? url : `…${url.slice(at)}`);
}
