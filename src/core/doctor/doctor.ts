/**
 * Runs the checks over gathered data and sums them up. Pure: the same data gives the same report.
 * A server that could not be read is itself a finding (a problem), and every check that needed it
 * is reported `skipped` with the reason instead of guessing.
 */
import {clockCheck, lateStartCheck, memoryCheck, workerClockCheck} from './checks-env.js';
import {deathsCheck, duplicatesCheck, swallowedCheck} from './checks-outcomes.js';
import {flowCheck} from './checks-flow.js';
import {keysCheck} from './checks-keys.js';
import {poisonCheck, queueFullCheck, saturationCheck, slowCheck} from './checks-slow.js';
import {lateCheck, notDueCheck, poolsCheck, unrungCheck, workersCheck, wrongPoolCheck} from './checks-waiting.js';
import {finding} from './evidence.js';
import type {Check, DoctorData, DoctorReport, Finding, SourceError, Status} from './types.js';

/** Every check, in the order of the troubleshooting table. */
export const CHECKS: ReadonlyArray<Check> = [
  workersCheck,
  poolsCheck,
  wrongPoolCheck,
  notDueCheck,
  lateCheck,
  unrungCheck,
  deathsCheck,
  swallowedCheck,
  queueFullCheck,
  saturationCheck,
  slowCheck,
  poisonCheck,
  flowCheck,
  keysCheck,
  duplicatesCheck,
  memoryCheck,
  clockCheck,
  workerClockCheck,
  lateStartCheck,
];

const STATUSES: readonly Status[] = ['ok', 'info', 'warn', 'problem', 'skipped'];

function serverFinding(id: 'mysql' | 'rabbitmq', what: string, e: SourceError | null, okTitle: string): Finding {
  if (e === null) return finding(id, 'services', 'ok', okTitle);
  const next = e.hint ? [e.hint] : [`check ${id === 'mysql' ? 'AX_MYSQL_URL' : 'AX_AMQP_URL'} and that the server runs`];
  return finding(id, 'services', 'problem', e.message || `${what} unavailable`, e.reason ? [`reason: ${e.reason}`] : [], next);
}

/** The findings of every check over `data`, then the verdict and counts. */
export function diagnose(data: DoctorData): DoctorReport {
  const {db, broker} = data;
  const findings: Finding[] = [
    serverFinding('mysql', 'MySQL', db.ok ? null : db.error, db.ok ? `MySQL answered in ${db.value.rttMs} ms` : ''),
    serverFinding('rabbitmq', 'RabbitMQ', broker.ok ? null : broker.error, 'RabbitMQ answered'),
  ];
  for (const check of CHECKS) {
    if (!db.ok || (check.needsBroker && !broker.ok)) {
      const down = !db.ok ? 'MySQL' : 'RabbitMQ';
      findings.push(finding(check.id, check.symptom, 'skipped', `not checked: ${down} unavailable`));
      continue;
    }
    findings.push(
      ...check.run({
        db: db.value,
        broker: broker.ok ? broker.value : null,
        settings: data.settings,
        ...(data.handledTypes ? {handledTypes: data.handledTypes} : {}),
      }),
    );
  }
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<Status, number>;
  for (const f of findings) counts[f.status]++;
  const verdict = !db.ok || !broker.ok ? 'unavailable' : counts.problem > 0 ? 'problem' : counts.warn > 0 ? 'warn' : 'ok';
  return {verdict, counts, findings};
}
