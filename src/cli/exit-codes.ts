import type {AxErrorCode} from '../core/errors.js';

/** Exit codes of every ax command (docs/reference/cli.md, "Exit codes"). Parse errors from oclif exit 2 as well. */
export const EXIT_CODES: Record<AxErrorCode, number> = {
  internal: 1,
  invalid_input: 2,
  not_found: 3,
  conflict: 4,
  unavailable: 5,
  timeout: 6,
  closed: 1,
};

/** The EXIT CODES line of every ax command's --help (added by the help class, src/cli/help.ts). */
export const EXIT_CODES_HELP =
  '0 done, 1 internal error, 2 bad input or usage (nothing changed), 3 not found, 4 conflict, 5 MySQL or RabbitMQ unavailable, login refused or not migrated, 6 timeout, 7 worker stopped after an uncaught exception in handler code, 127 unknown command.';

/** `ax doctor` found a problem (or, with --strict, a warning). */
export const DOCTOR_PROBLEM_EXIT_CODE = 8;

/** The exit code of an `ax doctor` verdict: 5 a server unavailable (as for every command), 8 a problem, else 0. */
export function doctorExitCode(verdict: 'ok' | 'warn' | 'problem' | 'unavailable', strict: boolean): number {
  if (verdict === 'unavailable') return EXIT_CODES.unavailable;
  return verdict === 'problem' || (strict && verdict === 'warn') ? DOCTOR_PROBLEM_EXIT_CODE : 0;
}
