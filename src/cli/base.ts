import {Command, Flags, type Errors} from '@oclif/core';
import {AxError, type AxErrorCode} from '../core/errors.js';
import {type AxConfig, loadConfig} from '../core/config/config.js';
import {createRuntime, type Runtime} from './runtime.js';

/** Exit codes of every ax command (README "Exit codes"). Parse errors from oclif exit 2 as well. */
export const EXIT_CODES: Record<AxErrorCode, number> = {
  internal: 1,
  invalid_input: 2,
  not_found: 3,
  conflict: 4,
  unavailable: 5,
  timeout: 6,
  closed: 1,
};

const HINTS: Partial<Record<AxErrorCode, string>> = {
  unavailable:
    'Is the server running? `npm run services` starts MariaDB and RabbitMQ locally; check AX_MYSQL_URL, AX_OUTBOX_MYSQL_URL and AX_AMQP_URL.',
  invalid_input: 'See --help for the accepted values.',
};

/**
 * The base of every ax command: `--json` (the command's return value is the JSON output),
 * `--config`, and the translation of AxError codes into exit codes and hints — the only place
 * that happens.
 */
export abstract class AxCommand extends Command {
  static override enableJsonFlag = true;
  static override baseFlags = {
    config: Flags.string({description: 'config file (default: $AX_CONFIG or ./ax.config.json)', helpGroup: 'GLOBAL'}),
  };

  /** Loads the configuration (file, env, then non-secret overrides from flags). */
  protected runtime(configFile: string | undefined, overrides: Partial<AxConfig> = {}): Runtime {
    const cfg = loadConfig({...(configFile === undefined ? {} : {file: configFile}), overrides});
    // In --json mode stdout holds only the JSON document; logs go to stderr and default to warnings.
    const quiet = this.jsonEnabled() && process.env.AX_LOG_LEVEL === undefined;
    return createRuntime(quiet ? {...cfg, logLevel: 'warn'} : cfg);
  }

  protected override toErrorJson(err: unknown): unknown {
    if (err instanceof AxError) return {error: {code: err.code, message: err.message, ...(err.details ? {details: err.details} : {})}};
    const e = err as {message?: string; oclif?: {exit?: number}};
    return {error: {code: e.oclif?.exit === 2 ? 'invalid_input' : 'internal', message: e.message ?? String(err)}};
  }

  protected override async catch(err: Errors.CLIError & {exitCode?: number}): Promise<unknown> {
    // oclif's own catch reads exitCode, but parse errors carry their code (2) in `oclif.exit`.
    if (this.jsonEnabled() && !(err instanceof AxError)) process.exitCode = err.oclif?.exit ?? err.exitCode ?? 1;
    if (err instanceof AxError) {
      const exit = EXIT_CODES[err.code];
      if (this.jsonEnabled()) {
        process.exitCode = exit;
        this.logJson(this.toErrorJson(err));
        return;
      }
      const hint = HINTS[err.code];
      this.error(err.message, {exit, ...(hint ? {suggestions: [hint]} : {})});
    }
    return super.catch(err);
  }
}
