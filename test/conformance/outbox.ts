/**
 * The outbox conformance suite: every method of OutboxRelayStore and OutboxAdminStore (and
 * Closable), as each implementation must behave. Run by test/integration/outbox-store.test.ts
 * against the MySQL outbox.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {OutboxStore} from '../../src/core/store/types.js';

export interface OutboxHarness {
  /** An outbox whose table does not exist yet. */
  outbox: OutboxStore;
  /** Inserts unsent rows as a business service would; returns their ids. */
  insertRows(n: number, type?: string): Promise<number[]>;
  /** Ages sent rows by `ms` (for purge). */
  ageSent(ids: number[], ms: number): Promise<void>;
  dispose(): Promise<void>;
}

export function outboxConformance(name: string, make: () => Promise<OutboxHarness>): void {
  describe(`OutboxStore conformance: ${name}`, () => {
    let h: OutboxHarness;
    let o: OutboxStore;
    beforeAll(async () => {
      h = await make();
      o = h.outbox;
    });
    afterAll(async () => h?.dispose());

    it('creates the table once (idempotent) and says whether it exists', async () => {
      expect(await o.outboxTableExists()).toBe(false);
      await o.outboxCreateTable();
      await o.outboxCreateTable();
      expect(await o.outboxTableExists()).toBe(true);
      expect(o.database).toMatch(/^axt_biz_/);
    });

    it('claims oldest first, skips rows claimed by a live relay, and marks only its own claims sent', async () => {
      const ids = await h.insertRows(3);
      const a = await o.outboxClaim({owner: 'relay-a', limit: 2, leaseMs: 60_000});
      expect(a.map((r) => r.id)).toEqual(ids.slice(0, 2));
      // Rows as read by the claim: `attempts` counts earlier claims.
      expect(a[0]).toMatchObject({attempts: 0, type: 'order_notify', lastError: null, failedAt: null});
      const b = await o.outboxClaim({owner: 'relay-b', limit: 10, leaseMs: 60_000});
      expect(b.map((r) => r.id)).toEqual([ids[2]]);
      expect(await o.outboxMarkSent({ids: ids.slice(0, 2), owner: 'relay-b'})).toBe(0);
      expect(await o.outboxMarkSent({ids: ids.slice(0, 2), owner: 'relay-a'})).toBe(2);
      expect(await o.outboxMarkSent({ids: ids.slice(0, 2), owner: 'relay-a'})).toBe(0);
      expect(await o.outboxRowStates({ids: [...ids, 999_999]})).toEqual(
        new Map([
          [ids[0], 'sent'],
          [ids[1], 'sent'],
          [ids[2], 'pending'],
        ]),
      );
      // A release hands the row back with its error; it can be claimed again at once.
      await o.outboxRelease({ids: [ids[2]!], owner: 'relay-b', error: 'broker down'});
      const again = await o.outboxClaim({owner: 'relay-a', limit: 10, leaseMs: 60_000});
      expect(again.map((r) => [r.id, r.attempts, r.lastError])).toEqual([[ids[2], 1, 'broker down']]);
      expect(await o.outboxMarkSent({ids: [ids[2]!], owner: 'relay-a'})).toBe(1);
    });

    it('passes over the id ranges the caller says it holds (skip), and claims them once they are not skipped', async () => {
      const ids = await h.insertRows(5);
      const got = await o.outboxClaim({
        owner: 'relay-s',
        limit: 2,
        leaseMs: 60_000,
        skip: [
          [ids[0]!, ids[1]!],
          [ids[3]!, ids[3]!],
        ],
      });
      expect(got.map((r) => r.id)).toEqual([ids[2], ids[4]]);
      const rest = await o.outboxClaim({owner: 'relay-s', limit: 10, leaseMs: 60_000, skip: []});
      expect(rest.map((r) => r.id)).toEqual([ids[0], ids[1], ids[3]]);
      expect(await o.outboxMarkSent({ids, owner: 'relay-s'})).toBe(5);
    });

    it('marks failed rows, lists them, reports the lag, and retries them (some or all)', async () => {
      const ids = await h.insertRows(3);
      expect((await o.outboxListUnsent({limit: 100})).map((r) => r.id)).toEqual(ids);
      await o.outboxClaim({owner: 'relay-a', limit: 10, leaseMs: 60_000});
      await o.outboxMarkFailed({
        rows: [
          {id: ids[0]!, error: 'bad payload'},
          {id: ids[1]!, error: 'bad type'},
        ],
        owner: 'relay-a',
      });
      await o.outboxRelease({ids: [ids[2]!], owner: 'relay-a', error: 'transient'});
      expect((await o.outboxListFailed({limit: 100})).map((r) => [r.id, r.lastError])).toEqual([
        [ids[0], 'bad payload'],
        [ids[1], 'bad type'],
      ]);
      expect((await o.outboxListUnsent({limit: 100})).map((r) => r.id)).toEqual([ids[2]]);
      const lag = await o.outboxLag();
      expect(lag).toMatchObject({unsent: 1, failed: 2});
      expect(lag.oldestAgeMs).toBeGreaterThanOrEqual(0);
      expect((await o.outboxRowStates({ids})).get(ids[0]!)).toBe('failed');
      expect(await o.outboxRetryFailed({ids: [ids[0]!, ids[2]!]})).toBe(1);
      expect(await o.outboxRetryFailed({ids: []})).toBe(0);
      expect(await o.outboxRetryFailed({ids: 'all'})).toBe(1);
      expect(await o.outboxLag()).toMatchObject({unsent: 3, failed: 0});
      const all = await o.outboxClaim({owner: 'relay-a', limit: 10, leaseMs: 60_000});
      expect(await o.outboxMarkSent({ids: all.map((r) => r.id), owner: 'relay-a'})).toBe(3);
      expect(await o.outboxLag()).toEqual({unsent: 0, failed: 0, oldestAgeMs: null});
    });

    it('purges sent rows older than the retention, at most `limit` per call', async () => {
      const ids = await h.insertRows(3);
      await o.outboxClaim({owner: 'relay-p', limit: 10, leaseMs: 60_000});
      await o.outboxMarkSent({ids, owner: 'relay-p'});
      await h.ageSent(ids, 7_200_000);
      const before = await o.outboxPurgeSent({olderThanMs: 3_600_000, limit: 2});
      expect(before).toBe(2);
      expect(await o.outboxPurgeSent({olderThanMs: 3_600_000, limit: 100})).toBeGreaterThanOrEqual(1);
      expect(await o.outboxPurgeSent({olderThanMs: 3_600_000, limit: 100})).toBe(0);
      expect(await o.outboxRowStates({ids})).toEqual(new Map());
    });

    it('closes once; `await using` disposes it', async () => {
      await o.close();
      await o.close();
      await expect(o.outboxLag()).rejects.toThrow();
      await o[Symbol.asyncDispose]();
    });
  });
}
