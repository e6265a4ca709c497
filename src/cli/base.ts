import {Command, Flags, type Errors} from '@oclif/core';
import {AxError} from '../core/errors.js';
import {type AxConfig, loadConfig} from '../core/config/config.js';
import {parseCellList} from '../core/cells/cells.js';
import type {DbFailureReason} from '../core/store/types.js';
import {EXIT_CODES} from './exit-codes.js';
import {createRuntime, openAdmin, type Runtime} from './runtime.js';
import type {Admin} from '../core/admin/service.js';
import {closest} from './suggest.js';

export {EXIT_CODES} from './exit-codes.js';

const SERVERS_HINT =
  'Is the server running? `npm run services` starts MariaDB and RabbitMQ locally; check the host and port in AX_MYSQL_URL, AX_OUTBOX_MYSQL_URL and AX_AMQP_URL.';

/**
 * What to do about each reason MySQL or RabbitMQ could not be used (`details.reason` of an
 * AxError('unavailable')), by `details.scope`: none (ax's database), `outbox`, `amqp`.
 */
const DB_HINTS: Record<DbFailureReason, {ax: string; outbox: string; amqp?: string}> = {
  unreachable: {ax: SERVERS_HINT, outbox: SERVERS_HINT, amqp: SERVERS_HINT},
  access_denied: {
    ax: 'Check the user and password in AX_MYSQL_URL (mysql://user:password@host:3306/database), and that the user may connect from this host.',
    outbox: 'Check the user and password in AX_OUTBOX_MYSQL_URL (default AX_MYSQL_URL), and that the user may connect from this host.',
    amqp: 'Check the user and password in AX_AMQP_URL (amqp://user:password@host:5672/vhost); `rabbitmqctl list_users` lists the users, and guest may only log in from localhost.',
  },
  permission_denied: {
    ax: "Grant the user in AX_MYSQL_URL the rights ax needs on its database, e.g. GRANT ALL ON ax.* TO 'user'@'%'.",
    outbox: 'Grant the user in AX_OUTBOX_MYSQL_URL SELECT, INSERT, UPDATE and DELETE on task_outbox.',
    amqp: "Check the virtual host in AX_AMQP_URL (`rabbitmqctl list_vhosts`) and the user's permissions on it, e.g. rabbitmqctl set_permissions -p <vhost> <user> '.*' '.*' '.*'.",
  },
  unknown_database: {
    ax: '`ax migrate` creates the database and its tables (or fix the database name in AX_MYSQL_URL).',
    outbox: 'Point AX_OUTBOX_MYSQL_URL at the business database that holds task_outbox; ax never creates it.',
  },
  not_migrated: {
    ax: 'Run `ax migrate` with the same AX_MYSQL_URL to create or upgrade the tables.',
    outbox: 'Run `ax migrate --outbox` to create task_outbox in the business database (AX_OUTBOX_MYSQL_URL).',
  },
};

/** The hint printed under an AxError, from its code and, for MySQL failures, its reason. */
export function hintFor(err: AxError): string | undefined {
  if (err.code === 'invalid_input') return 'See --help for the accepted values.';
  if (err.code !== 'unavailable') return undefined;
  const reason = err.details?.reason as DbFailureReason | undefined;
  const hints = reason === undefined ? undefined : DB_HINTS[reason];
  if (hints === undefined) return SERVERS_HINT;
  if (err.details?.scope === 'amqp') return hints.amqp ?? SERVERS_HINT;
  return err.details?.scope === 'outbox' ? hints.outbox : hints.ax;
}

/**
 * The base of every ax command: `--json` (the command's return value is the JSON output),
 * `--config`, "did you mean" for a mistyped flag, and the translation of AxError codes into exit
 * codes and hints — the only place that happens.
 */
export abstract class AxCommand extends Command {
  static override enableJsonFlag = true;
  static override baseFlags = {
    config: Flags.string({description: 'config file (default: $AX_CONFIG or ./ax.config.json)', helpGroup: 'GLOBAL'}),
    cell: Flags.string({
      description: 'the cell to work on (default: AX_CELL); ax worker, scheduler and relay take several, comma-separated',
      helpGroup: 'GLOBAL',
    }),
  };
  /** A command that only reads: it never creates the database (AX_CREATE_DATABASE does not apply). */
  static readOnly = false;
  /**
   * A long-running process (worker, scheduler, relay): its logs are its output, at AX_LOG_LEVEL.
   * Every other command says what it did itself, so the core's info lines (e.g. "type paused")
   * would only repeat it as a JSON line on the operator's terminal: it logs warnings and errors
   * only, unless AX_LOG_LEVEL is set.
   */
  static daemon = false;

  /**
   * Loads the configuration (file, env, then non-secret overrides from flags) and returns the
   * runtime of the one cell `--cell` names (default AX_CELL). Throws invalid_input for a bad
   * configuration, an unknown cell or several cells.
   */
  protected runtime(flags: {config?: string | undefined; cell?: string | undefined}, overrides: Partial<AxConfig> = {}): Runtime {
    const base = this.baseRuntime(flags.config, overrides);
    return base.forCell(parseCellList(base.cells, flags.cell, {single: true})[0] as string);
  }

  /**
   * The admin service (core/admin/service.ts) of the one cell `--cell` names: what every command
   * that reads or changes ax calls. Connections open at first use; `await using` closes them.
   */
  protected admin(flags: {config?: string | undefined; cell?: string | undefined}, overrides: Partial<AxConfig> = {}): Admin {
    return openAdmin(this.runtime(flags, overrides));
  }

  /** The runtimes of the cells `--cell a,b` names (default: AX_CELL), for the commands that serve several. */
  protected runtimes(flags: {config?: string | undefined; cell?: string | undefined}, overrides: Partial<AxConfig> = {}): Runtime[] {
    const base = this.baseRuntime(flags.config, overrides);
    return parseCellList(base.cells, flags.cell).map((c) => base.forCell(c));
  }

  /** The runtime of the loaded configuration (its cell: the default cell). */
  protected baseRuntime(configFile: string | undefined, overrides: Partial<AxConfig> = {}): Runtime {
    const readOnly = (this.constructor as typeof AxCommand).readOnly;
    const cfg = loadConfig({
      ...(configFile === undefined ? {} : {file: configFile}),
      overrides: readOnly ? {...overrides, createDatabase: false} : overrides,
    });
    // In --json mode stdout holds only the JSON document; logs go to stderr and default to warnings,
    // as they do for every command that is not a daemon (see `daemon`).
    const daemon = (this.constructor as typeof AxCommand).daemon;
    const quiet = (this.jsonEnabled() || !daemon) && process.env.AX_LOG_LEVEL === undefined;
    return createRuntime(quiet ? {...cfg, logLevel: 'warn'} : cfg);
  }

  protected override toErrorJson(err: unknown): unknown {
    if (err instanceof AxError) return {error: {code: err.code, message: err.message, ...(err.details ? {details: err.details} : {})}};
    const e = err as {message?: string; oclif?: {exit?: number}};
    return {error: {code: e.oclif?.exit === 2 ? 'invalid_input' : 'internal', message: e.message ?? String(err)}};
  }

  protected override async catch(err: Errors.CLIError & {exitCode?: number; flags?: unknown}): Promise<unknown> {
    this.suggestFlags(err);
    // oclif's own catch reads exitCode, but parse errors carry their code (2) in `oclif.exit`.
    if (this.jsonEnabled() && !(err instanceof AxError)) process.exitCode = err.oclif?.exit ?? err.exitCode ?? 1;
    if (err instanceof AxError) {
      const exit = EXIT_CODES[err.code];
      if (this.jsonEnabled()) {
        process.exitCode = exit;
        this.logJson(this.toErrorJson(err));
        return;
      }
      const hint = hintFor(err);
      this.error(err.message, {exit, ...(hint ? {suggestions: [hint]} : {})});
    }
    return super.catch(err);
  }

  /** `--dealy`: oclif's "Nonexistent flag" error gains "did you mean --delay?" when a flag is that close. */
  private suggestFlags(err: Errors.CLIError & {flags?: unknown}): void {
    if (!Array.isArray(err.flags) || !/^Nonexistent flag/.test(err.message)) return;
    const ctor = this.constructor as typeof AxCommand;
    const known = Object.keys({...ctor.baseFlags, ...ctor.flags, ...(ctor.enableJsonFlag ? {json: true} : {})}).map((f) => `--${f}`);
    const near = (err.flags as unknown[])
      .map((f) => String(f).replace(/=.*$/, ''))
      .map((f) => [f, closest(f, known)] as const)
      .filter((p): p is readonly [string, string] => p[1] !== undefined);
    if (near.length === 0) return;
    const said = near.map(([f, c]) => `${f} → ${c}`).join(', ');
    const [first, ...rest] = err.message.split('\n');
    const mean = near.length === 1 ? (near[0] as readonly [string, string])[1] : said;
    err.message = [`${first ?? ''} (did you mean ${mean}?)`, ...rest].join('\n');
  }
}
