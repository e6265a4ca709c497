/**
 * "Failing without retries" (retries used up, no handler, unrecoverable errors, errors a handler
 * swallows) and "duplicates" (two successes of one task, attempts whose lease expired while running).
 */
import {capped, countByType, finding, plural, short} from './evidence.js';
import type {Check, CheckContext, Finding} from './types.js';

const NO_HANDLER = /^unknown task type/;
const NO_RETRIES = /no retries left\)$/;
const LEASE_EXPIRED = /^lease expired/;

/** Tasks that died in the window, by why: no handler, out of retries, unrecoverable at once. */
export const deathsCheck: Check = {
  id: 'failing',
  symptom: 'failing',
  run({db, settings}: CheckContext): Finding[] {
    const since = settings.since.toISOString();
    const noHandler = countByType(db.deaths, (e) => NO_HANDLER.test(e));
    const exhausted = countByType(db.deaths, (e) => NO_RETRIES.test(e) || LEASE_EXPIRED.test(e));
    const atOnce = countByType(db.deaths, (e) => !NO_HANDLER.test(e) && !NO_RETRIES.test(e) && !LEASE_EXPIRED.test(e));
    const sample = (x: ReturnType<typeof countByType>): string[] =>
      capped(x.map((d) => `${d.type}: ${plural(d.count, 'task')} — "${short(d.sample.error)}"`));
    const out: Finding[] = [];
    if (noHandler.length > 0)
      out.push(
        finding(
          'failing.no-handler',
          'failing',
          'problem',
          `tasks died because no worker had a handler for their type`,
          sample(noHandler),
          [
            "deploy the handler (the type in the worker's handlers module), then: ax dlq replay --type <type> --yes",
            `ax dlq list --type ${noHandler[0]!.type}`,
          ],
        ),
      );
    if (exhausted.length > 0)
      out.push(
        finding(
          'failing.retries-exhausted',
          'failing',
          'warn',
          `tasks died after using all their retries since ${since}`,
          sample(exhausted),
          [`ax errors --type ${exhausted[0]!.type} --since ${since}`, 'after fixing the cause: ax dlq replay --type <type> --yes'],
        ),
      );
    if (atOnce.length > 0)
      out.push(
        finding(
          'failing.unrecoverable',
          'failing',
          'warn',
          'tasks died without retrying: the handler called the error unrecoverable (or the payload was unreadable)',
          sample(atOnce),
          [`ax dlq list --type ${atOnce[0]!.type}`, 'ax dlq show <id> for the error and its stack'],
        ),
      );
    const retried = db.failures.reduce((n, g) => n + g.count, 0) - db.deaths.reduce((n, g) => n + g.count, 0);
    if (out.length === 0) out.push(finding('failing.deaths', 'failing', 'ok', `no task died since ${since}`));
    if (retried > 0)
      out.push(
        finding(
          'failing.retrying',
          'failing',
          'info',
          `${plural(retried, 'failed attempt')} since ${since} will be (or were) retried`,
          [],
          ['ax errors'],
        ),
      );
    return out;
  },
};

/** Minimum attempts before "never fails, very fast" means anything. */
const SWALLOW_MIN_ATTEMPTS = 20;
/** Average attempt time under which a handler that calls anything is suspiciously fast. */
const SWALLOW_MAX_AVG_MS = 2;

/**
 * Errors a handler swallows leave no trace: ax records what the handler returns. The only hint is a
 * type that never fails and finishes in almost no time. Context (info), never a failure.
 */
export const swallowedCheck: Check = {
  id: 'failing.swallowed',
  symptom: 'failing',
  run({db}: CheckContext): Finding[] {
    const suspicious = db.attempts.filter((a) => a.attempts >= SWALLOW_MIN_ATTEMPTS && a.failed === 0 && a.avgMs < SWALLOW_MAX_AVG_MS);
    const title =
      suspicious.length > 0
        ? `${plural(suspicious.length, 'type')} never fail and finish in under ${SWALLOW_MAX_AVG_MS} ms: if their handlers call anything, they may catch errors and return success`
        : 'no sign of swallowed errors (ax only sees what handlers return: a caught and ignored error looks like a success)';
    return [
      finding(
        'failing.swallowed',
        'failing',
        'info',
        title,
        capped(suspicious.map((a) => `${a.type}: ${a.attempts} attempts, 0 failed, average ${a.avgMs} ms`)),
        suspicious.length > 0 ? ['read the handler: let errors throw (or return a failure) so ax retries them'] : [],
      ),
    ];
  },
};

/** Tasks that succeeded twice (forced replays excepted), and attempts whose lease expired while running. */
export const duplicatesCheck: Check = {
  id: 'duplicates',
  symptom: 'duplicates',
  run({db, settings}: CheckContext): Finding[] {
    const since = settings.since.toISOString();
    const out: Finding[] = [];
    const unexplained = db.repeats.filter((r) => !r.forced);
    const forced = db.repeats.filter((r) => r.forced);
    if (unexplained.length > 0)
      out.push(
        finding(
          'duplicates.succeeded-twice',
          'duplicates',
          'problem',
          `${plural(unexplained.length, 'task')} succeeded more than once since ${since} without a forced replay`,
          capped(unexplained.map((r) => `${r.taskId} ${r.type}: ${r.successes} successes`)),
          [`ax tasks show ${unexplained[0]!.taskId}`],
        ),
      );
    if (forced.length > 0)
      out.push(
        finding(
          'duplicates.forced',
          'duplicates',
          'info',
          `${plural(forced.length, 'task')} succeeded again after a forced replay (asked for)`,
          capped(forced.map((r) => `${r.taskId} ${r.type}: ${r.successes} successes`)),
          ['ax audit list'],
        ),
      );
    const expired = countByType(db.failures, (e) => LEASE_EXPIRED.test(e));
    if (expired.length > 0)
      out.push(
        finding(
          'duplicates.lease-expired',
          'duplicates',
          'warn',
          `${plural(
            expired.reduce((n, e) => n + e.count, 0),
            'attempt',
          )} lost their lease since ${since}: the handler may still have been running when the task was retried`,
          capped(expired.map((e) => `${e.type}: ${e.count} — "${short(e.sample.error)}"`)),
          [
            'handlers must be idempotent (at-least-once); find why the worker stopped renewing (crash, event-loop stall; AX_LEASE)',
            `ax errors --type ${expired[0]!.type} --since ${since}`,
          ],
        ),
      );
    if (out.length === 0)
      out.push(
        finding('duplicates.none', 'duplicates', 'ok', `no task succeeded twice and no lease expired since ${since}`, [
          're-rung doorbells (reconciler, scheduler) never run a task twice: the claim is fenced and drops them',
        ]),
      );
    return out;
  },
};
