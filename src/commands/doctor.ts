import {Flags} from '@oclif/core';
import {AxCommand, hintFor} from '../cli/base.js';
import {DOCTOR_PROBLEM_EXIT_CODE, doctorExitCode} from '../cli/exit-codes.js';
import {printable} from '../cli/render.js';
import {ATTEMPTS_SAMPLE, SUCCESS_SAMPLE} from '../core/doctor/gather.js';
import {DEFAULT_LATE, DEFAULT_MAX_SKEW, DEFAULT_SINCE} from '../core/doctor/settings.js';
import {type DoctorReport, type Finding, SYMPTOMS, type Status} from '../core/doctor/types.js';

export interface DoctorResult extends DoctorReport {
  since: string;
  exitCode: number;
}

const HEADINGS: Record<(typeof SYMPTOMS)[number], string> = {
  services: 'Servers',
  'not-running': 'Submitted but not running',
  failing: 'Failing without retries',
  slow: 'Consumption dropped',
  duplicates: 'Duplicates',
  memory: 'Memory growing',
  timing: 'Timing inaccurate',
};
const MARK: Record<Status, string> = {ok: 'ok', info: 'info', warn: 'WARN', problem: 'PROBLEM', skipped: 'skipped'};

export default class Doctor extends AxCommand {
  static override readOnly = true;
  static override summary = 'Check the live system against the troubleshooting table: what is wrong, the evidence, what to run next.';
  static override description = `Reads ax's database (backlog per type and pool, workers and their heartbeats, the failed attempts, deaths, repeated successes and attempt durations of the window, due tasks nobody rang, the database clock) and RabbitMQ's queue depths once, then runs one check per row of the troubleshooting table: submitted but not running (not due yet, late backlog, no live worker for the pool, a waiting type no live worker has a handler for, wrong pool, nobody ringing), failing without retries (no handler, retries used up, unrecoverable errors, swallowed errors), consumption dropped (pool queue full, every slot busy, attempts timing out, poison messages, open circuit breakers, paused types with a backlog), duplicates (two successes of one task, expired leases), memory growing (each live worker's resident memory, sampled once a minute and written with its heartbeat), timing inaccurate (this host's clock against the database's, how long after due the attempts started).

Each finding has a status — PROBLEM, WARN, info, ok or skipped — its evidence and the next command to run. A server that cannot be reached is itself a finding, and the checks that need it are skipped. The history checks read the window --since (default ${DEFAULT_SINCE}) through idx_history_failures: every failure of the window, and of a busy window only the latest ${SUCCESS_SAMPLE} successes (for repeats) and ${ATTEMPTS_SAMPLE} attempt ends (for durations), so the cost stays bounded. Nothing is changed (connecting to RabbitMQ declares ax's exchange and queues when missing, as ax submit and the worker do).

--json gives {verdict (ok, warn, problem, unavailable), counts per status, findings: [{id, symptom, status, title, evidence, next}], since, exitCode}.

Exit codes: 0 nothing wrong (warnings allowed), ${DOCTOR_PROBLEM_EXIT_CODE} a problem found (or a warning with --strict), 5 MySQL or RabbitMQ unavailable, 2 bad flag value.`;
  static override examples = [
    {description: 'What is wrong right now?', command: '<%= config.bin %> doctor'},
    {
      description: 'Look at the last hour, warnings fail too (for a CI smoke test)',
      command: '<%= config.bin %> doctor --since 1h --strict',
    },
    {
      description: 'Only the problems, for a script',
      command: `<%= config.bin %> doctor --json | jq '.findings[] | select(.status == "problem")'`,
    },
  ];
  static override flags = {
    since: Flags.string({description: `window of the history checks: a duration back from now or an ISO time (default ${DEFAULT_SINCE})`}),
    late: Flags.string({description: `a due task waiting longer than this is late (default ${DEFAULT_LATE})`}),
    'max-skew': Flags.string({description: `largest clock difference with the database tolerated (default ${DEFAULT_MAX_SKEW})`}),
    strict: Flags.boolean({description: `warnings exit ${DOCTOR_PROBLEM_EXIT_CODE} too`, default: false}),
  };

  async run(): Promise<DoctorResult> {
    const {flags} = await this.parse(Doctor);
    await using admin = this.admin(flags);
    const {since, report} = await admin.doctor.check(
      {
        ...(flags.since === undefined ? {} : {since: flags.since}),
        ...(flags.late === undefined ? {} : {late: flags.late}),
        ...(flags['max-skew'] === undefined ? {} : {maxSkew: flags['max-skew']}),
      },
      // A server down is a finding, with the hint every command prints for its error.
      {hint: hintFor},
    );
    const exitCode = doctorExitCode(report.verdict, flags.strict);
    if (!this.jsonEnabled()) for (const line of render(report, exitCode)) this.log(line);
    process.exitCode = exitCode;
    return {since: since.toISOString(), exitCode, ...report};
  }
}

function render(r: DoctorReport, exitCode: number): string[] {
  const out: string[] = [];
  for (const symptom of SYMPTOMS) {
    const fs = r.findings.filter((f) => f.symptom === symptom);
    if (fs.length === 0) continue;
    out.push(HEADINGS[symptom]);
    for (const f of fs) if (f.status !== 'skipped' || f.evidence.length > 0) out.push(...renderFinding(f));
    // Checks skipped for the same reason (a server down) on one line.
    const bare = new Map<string, string[]>();
    for (const f of fs) if (f.status === 'skipped' && f.evidence.length === 0) bare.set(f.title, [...(bare.get(f.title) ?? []), f.id]);
    for (const [title, ids] of bare) out.push(`  ${MARK.skipped.padEnd(9)}${title}  [${ids.join(', ')}]`);
    out.push('');
  }
  const c = r.counts;
  out.push(`${c.problem} problem(s), ${c.warn} warning(s), ${c.ok} ok, ${c.info} info, ${c.skipped} skipped — exit ${exitCode}`);
  return out;
}

function renderFinding(f: Finding): string[] {
  const pad = ' '.repeat(11);
  return [
    `  ${MARK[f.status].padEnd(9)}${printable(f.title)}  [${f.id}]`,
    ...f.evidence.map((e) => `${pad}· ${printable(e)}`),
    ...f.next.map((n) => `${pad}→ ${printable(n)}`),
  ];
}
