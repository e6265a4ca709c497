/**
 * Flow control (issue 11) as doctor findings: open circuit breakers and paused types, from the type
 * registry read with the rest of the database's evidence (DbEvidence.flow). Without it (a store
 * that has no registry) the check is skipped, saying so.
 */
import type {TypeRecord} from '../store/types.js';
import {age, capped, finding, plural} from './evidence.js';
import type {Check, CheckContext, Finding} from './types.js';

/** Waiting tasks of a type (due and delayed, parked ones included: they are delayed until their recheck). */
function waiting(c: CheckContext, type: string): number {
  const r = c.db.backlog.rows.find((b) => b.type === type);
  return r ? r.due + r.delayed : 0;
}

function parkedLine(c: CheckContext, type: string): string {
  const p = c.db.flow?.parked[type] ?? {};
  const parts = Object.entries(p).map(([kind, n]) => `${n} parked ${kind}`);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

function breakerFinding(c: CheckContext, open: TypeRecord[]): Finding {
  const at = c.db.dbAt;
  const lines = open.map((t) => {
    const b = t.breaker;
    const since = b.changedAt ? `, ${b.state.replace('_', '-')} for ${age(at, b.changedAt)}` : '';
    const until = b.state === 'open' && b.until ? `, next probe in ${age(b.until, at)}` : '';
    return `${t.type}: breaker ${b.state.replace('_', '-')}${since}${until}, opening ${b.openings}; ${plural(waiting(c, t.type), 'task')} waiting${parkedLine(c, t.type)}`;
  });
  const anyOpen = open.some((t) => t.breaker.state === 'open');
  return finding(
    'breaker.open',
    'slow',
    anyOpen ? 'problem' : 'warn',
    anyOpen
      ? `${plural(open.length, 'type')} with an open circuit breaker: workers do not run them (their downstream fails)`
      : `${plural(open.length, 'type')} probing after an open breaker (half-open)`,
    capped(lines),
    [
      ...open.slice(0, 3).map((t) => `ax types show ${t.type}   (transitions, failure rate, what failed)`),
      'fix the downstream; the breaker closes on its own after successful probes, or: ax types breaker <type> --reset',
    ],
  );
}

function pausedFinding(c: CheckContext, paused: TypeRecord[]): Finding[] {
  const at = c.db.dbAt;
  const line = (t: TypeRecord): string =>
    `${t.type}: paused by ${t.pausedBy ?? 'unknown'}${t.pausedAt ? ` ${age(at, t.pausedAt)} ago` : ''}${t.pausedReason ? ` ("${t.pausedReason}")` : ''}; ${plural(waiting(c, t.type), 'task')} waiting${parkedLine(c, t.type)}`;
  const withBacklog = paused.filter((t) => waiting(c, t.type) > 0);
  const idle = paused.filter((t) => waiting(c, t.type) === 0);
  const out: Finding[] = [];
  if (withBacklog.length > 0)
    out.push(
      finding(
        'types.paused',
        'not-running',
        'warn',
        `${plural(withBacklog.length, 'paused type')} with a backlog: accepted, not run until resumed`,
        capped(withBacklog.map(line)),
        [...withBacklog.slice(0, 3).map((t) => `ax types resume ${t.type} --rate 100   (when the reason is gone)`), 'ax types show <type>'],
      ),
    );
  if (idle.length > 0)
    out.push(
      finding('types.paused-idle', 'not-running', 'info', `${plural(idle.length, 'paused type')}, nothing waiting`, capped(idle.map(line))),
    );
  return out;
}

/** Open (or half-open) breakers and paused types, from the type registry. */
export const flowCheck: Check = {
  id: 'flow',
  symptom: 'slow',
  run(c: CheckContext): Finding[] {
    const flow = c.db.flow;
    if (!flow) return [finding('breaker', 'slow', 'skipped', 'the type registry was not read: breakers and paused types unknown')];
    const open = flow.all.filter((t) => t.breaker.state !== 'closed');
    const paused = flow.all.filter((t) => t.paused);
    const out: Finding[] = [];
    if (open.length > 0) out.push(breakerFinding(c, open));
    out.push(...pausedFinding(c, paused));
    if (out.length === 0) out.push(finding('flow.ok', 'slow', 'ok', 'every circuit breaker closed, no type paused'));
    return out;
  },
};
