/**
 * Read-then-lock in rounds, for a change to "up to `limit` rows matching a filter" whose filter is
 * checked in a wide index range (a locking read over it would hold every entry it reads, the other
 * types' waiting rows among them, against their claims).
 */

/** Rounds of one call: candidates that moved between the read and the lock are replaced this often. */
const ROUNDS = 5;

/**
 * `pick(want)` reads up to `want` candidate ids without locks; `change(ids)` locks them by primary
 * key in its own transaction, re-checks the filter and changes the rows that still match, returning
 * what it changed. A candidate that moved in between no longer matches and is replaced by the next
 * round, so fewer than `limit` results means no more rows matched (unless every round lost rows).
 */
export async function pickThenLock<T>(
  limit: number,
  pick: (want: number) => Promise<string[]>,
  change: (ids: string[]) => Promise<T[]>,
): Promise<T[]> {
  const out: T[] = [];
  for (let round = 0; round < ROUNDS && out.length < limit; round++) {
    const want = limit - out.length;
    const ids = await pick(want);
    if (ids.length === 0) break;
    out.push(...(await change(ids)));
    if (ids.length < want) break;
  }
  return out;
}
