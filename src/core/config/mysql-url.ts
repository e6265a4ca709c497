/**
 * MySQL connection URLs (`mysql://user:password@host:3306/database?ssl=true`): their shape, checked
 * when the configuration loads, and the parts the MySQL adapter connects with. Lives in config so
 * that config does not depend on the adapter (the adapter depends on config).
 */
import {invalid} from '../errors.js';

export interface MysqlTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  ssl: boolean;
}

/** Splits a mysql:// URL; throws invalid_input when it is not one or names no database. */
export function parseMysqlUrl(url: string): MysqlTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalid('mysqlUrl is not a URL (expected mysql://user:password@host:3306/database)');
  }
  if (u.protocol !== 'mysql:' && u.protocol !== 'mariadb:') throw invalid('mysqlUrl must start with mysql://');
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]{1,64}$/.test(database)) throw invalid('mysqlUrl must name a database of letters, digits and _');
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    database,
    ssl: u.searchParams.get('ssl') === 'true',
  };
}
