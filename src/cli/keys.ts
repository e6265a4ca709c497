/**
 * A type's task keys in a terminal (`ax types show`): the totals, the top keys with their backlog
 * and running, and the key that dominates the backlog. Keys come from whoever submits: every one
 * is made printable (table() and printable()), never written raw.
 */
import {dominantAdvice, dominantText, type KeysView} from '../core/types/keys.js';
import {printable, table} from './render.js';

const n = (x: number): string => x.toLocaleString('en-US');

/** The "keys" section of `ax types show <type>`. */
/** `limits`: the type's limits in effect (TypeLimits): fair dispatch or a per-key limit changes the advice. */
export function keysLines(type: string, k: KeysView, limits: object): string[] {
  if (!k.indexed) return ['keys: not indexed (`ax migrate --task-keys` adds the index that per-key limits, --fair and this view read)'];
  if (k.withBacklog === 0 && k.withRunning === 0) return ['keys: no task with a key waiting or running'];
  const lines = [
    `keys: ${n(k.withBacklog)} with a backlog (${n(k.backlog)} tasks), ${n(k.withRunning)} running (${n(k.running)} attempts)`,
    ...table(
      ['KEY', 'BACKLOG', 'RUNNING'],
      k.top.map((r) => [r.key, n(r.backlog), n(r.running)]),
      {right: [1, 2], indent: '  '},
    ),
  ];
  if (k.dominant) {
    const advice = dominantAdvice(limits);
    lines.push(printable(`! ${dominantText(type, k.dominant)}${advice ? `: ${advice}` : ' (fair dispatch or a per-key limit is on)'}`));
  }
  return lines;
}
