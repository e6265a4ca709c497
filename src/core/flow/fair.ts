/**
 * Fair dispatch across task keys, as pure policy. A fair type's keyed doorbells are permits: a
 * claim holding P of them gives each key (those with due tasks it sees, and its doorbells' own) a
 * share of the P by weight (fairShares), takes its doorbells' own tasks while their key is within
 * its share, and lends the rest round-robin (fairPlan) to keys below their share, whose oldest due
 * tasks it claims instead. So a key with 100k due tasks and a key with 10 both progress: the small
 * key's tasks start with the next claims, not after the flood's doorbells; doorbells already
 * spread over keys keep their own tasks. The store runs it inside the claim's transaction with the
 * type's registry row locked (the cursor lives there: claims of a fair type are serialized per
 * type, like those of a limited one).
 */

/** Where the round robin stands: the key served last and how many tasks its current turn took. */
export interface FairCursor {
  key: string | null;
  taken: number;
}

export interface FairKey {
  key: string;
  /** Tasks this key may be given in this claim: what is left of its share. */
  available: number;
}

export interface FairPlan {
  /** Tasks per key, in the order their turns came. */
  take: Array<{key: string; n: number}>;
  cursor: FairCursor;
}

/**
 * Plans `need` tasks round-robin over `keys` (sorted ascending, as the index returns them; only
 * keys with due tasks). The first turn goes to the cursor's key when its turn is not over and it
 * still has tasks, else to the next key after it (wrapping around). A turn takes up to the key's
 * weight; a key out of tasks is passed over. Returns fewer than `need` when the keys run out.
 */
export function fairPlan(keys: readonly FairKey[], cursor: FairCursor, need: number, weightOf: (key: string) => number): FairPlan {
  const left = keys.map((k) => k.available);
  const taken = new Map<string, number>();
  const order: string[] = [];
  if (keys.length === 0 || need <= 0) return {take: [], cursor};
  // The turn in progress: the cursor's key, if present and its weight not used up.
  let i = cursor.key === null ? -1 : keys.findIndex((k) => k.key >= cursor.key!);
  let inTurn = 0;
  if (i >= 0 && keys[i]!.key === cursor.key && cursor.taken < weightOf(cursor.key)) inTurn = cursor.taken;
  else if (i >= 0 && keys[i]!.key === cursor.key) i = (i + 1) % keys.length;
  else if (i < 0) i = 0;
  let last: FairCursor = cursor;
  let idle = 0;
  while (need > 0 && idle < keys.length) {
    const k = keys[i]!;
    const n = Math.min(need, weightOf(k.key) - inTurn, left[i]!);
    if (n > 0) {
      if (!taken.has(k.key)) order.push(k.key);
      taken.set(k.key, (taken.get(k.key) ?? 0) + n);
      left[i]! -= n;
      need -= n;
      last = {key: k.key, taken: inTurn + n};
      idle = 0;
      if (need === 0) break;
    } else idle++;
    inTurn = 0;
    i = (i + 1) % keys.length;
  }
  return {take: order.map((key) => ({key, n: taken.get(key)!})), cursor: last};
}

/**
 * Each key's share of a claim of `permits` doorbells: permits × weight ÷ the weights of `keys` (the
 * keys with due tasks the claim sees, and those of its own doorbells), rounded up, at least 1. A
 * claim takes its doorbells' own tasks while their key is within its share, and lends the rest of
 * its doorbells round-robin (fairPlan) to keys below theirs. So when the doorbells already spread
 * fairly (many keys, each a little) nothing is swapped; when one key floods, it gets its share and
 * the other keys the rest.
 */
export function fairShares(permits: number, keys: Iterable<string>, weightOf: (key: string) => number): Map<string, number> {
  const all = [...new Set(keys)];
  const w = (k: string): number => {
    const x = weightOf(k);
    return Number.isFinite(x) && x > 0 ? x : 1;
  };
  const total = all.reduce((a, k) => a + w(k), 0);
  return new Map(all.map((k) => [k, Math.max(1, Math.ceil((permits * w(k)) / Math.max(1, total)))]));
}
