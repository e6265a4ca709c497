/**
 * Task keys (issue 25) as doctor findings: a type whose backlog is mostly one key's (a tenant's
 * flood), from the keys read of the largest backlogs (DbEvidence.keys). Without fair dispatch or a
 * per-key limit its tasks go first and every other key waits behind them: a warning naming the
 * type and the key. With one on, the key only waits its turn: info.
 */
import {limitsOf} from '../flow/limits.js';
import {dominantAdvice, dominantKey, dominantText} from '../types/keys.js';
import {finding} from './evidence.js';
import type {Check, CheckContext, Finding} from './types.js';

/** The type's claimable tasks (due and delayed, parked included), keyed or not. */
function waiting(c: CheckContext, type: string): number {
  const r = c.db.backlog.rows.find((b) => b.type === type);
  return r ? r.due + r.delayed : 0;
}

/** One finding per type whose backlog one key dominates (core/types/keys.ts dominantKey). */
export const keysCheck: Check = {
  id: 'keys',
  symptom: 'slow',
  run(c: CheckContext): Finding[] {
    const keys = c.db.keys;
    if (!keys) return [];
    const out: Finding[] = [];
    for (const [type, r] of Object.entries(keys).sort(([a], [b]) => a.localeCompare(b))) {
      const d = dominantKey(waiting(c, type), r.top);
      if (d === null) continue;
      const settings = c.db.flow?.all.find((t) => t.type === type)?.settings;
      const advice = dominantAdvice(limitsOf(settings));
      const others = Math.max(0, r.withBacklog - 1);
      out.push(
        finding(
          'keys.dominant',
          'slow',
          advice ? 'warn' : 'info',
          advice
            ? `${dominantText(type, d)}: ${advice}`
            : `${dominantText(type, d)} (fair dispatch or a per-key limit is on: it waits its turn)`,
          [
            `${d.backlog.toLocaleString('en-US')} of ${d.of.toLocaleString('en-US')} waiting tasks; ${others.toLocaleString('en-US')} other key${others === 1 ? '' : 's'} with a backlog`,
          ],
          advice
            ? [
                `ax types set ${type} --fair   (keys take turns: the others no longer wait behind this one)`,
                `ax types set ${type} --max-running-per-key N   (this key runs at most N at once)`,
                `ax types show ${type}   (its top keys)`,
              ]
            : [`ax types show ${type}   (its top keys)`],
        ),
      );
    }
    if (out.length === 0) out.push(finding('keys.ok', 'slow', 'ok', "no task key holds most of a type's backlog"));
    return out;
  },
};
