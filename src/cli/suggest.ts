/** "Did you mean …?" for mistyped commands and flags: the nearest candidate by edit distance. */

/** Levenshtein distance (insertions, deletions, substitutions; a swap of neighbours counts 1). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({length: a.length + 1}, (_, i) =>
    Array.from({length: b.length + 1}, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, ((d[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = v;
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/**
 * The candidate nearest to `input`, or undefined when none is close: at most a third of the
 * input's length in edits (at least 1, at most 3), so `submti` finds `submit` but `xyz` finds nothing.
 */
export function closest(input: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(input.length / 3)));
  let best: {c: string; d: number} | undefined;
  for (const c of candidates) {
    const d = editDistance(input.toLowerCase(), c.toLowerCase());
    if (d <= limit && (best === undefined || d < best.d)) best = {c, d};
  }
  return best?.c;
}

/** What a mistyped command line probably meant: the command id and the words after it (its arguments). */
export interface CommandSuggestion {
  id: string;
  args: string[];
}

/**
 * The command a mistyped line meant. oclif hands an unknown command over as the leading words of
 * the line joined with ":" (`dlq replya 0190…` → `dlq:replya:0190…`), arguments included, so the
 * longest run of leading words that is near a command of as many words wins and the words after it
 * are kept as its arguments: `submti x` → submit with [x], `dlq:replya:<id>` → dlq:replay with [<id>]. Undefined
 * when no run of leading words is near a command.
 */
export function closestCommand(id: string, commandIds: readonly string[]): CommandSuggestion | undefined {
  const words = id.split(':');
  for (let n = words.length; n >= 1; n--) {
    const sameLength = commandIds.filter((c) => c.split(':').length === n);
    const near = closest(words.slice(0, n).join(':'), sameLength);
    if (near !== undefined) return {id: near, args: words.slice(n)};
  }
  return undefined;
}
