/**
 * Issue 24: a producer and a relay killed mid-batch, repeatedly — between the INSERT and the COMMIT,
 * and between the commit and the publish (the producer publishes while its COMMIT goes: a kill there
 * leaves doorbells for rows that never commit, which the claim finds nowhere). The process reaches MariaDB through a fault proxy whose
 * `freezeOn` fault stops it at that exact statement (test/helpers/fault-proxy.ts): with `deliver` the
 * statement runs and its answer is held (committed, never published), without it the statement never
 * reaches the server (the transaction rolls back when the connection goes). Then kill -9, the held
 * bytes are dropped, and the next process starts. A worker and a scheduler run beside them directly.
 * At the end: every acknowledged task (producer) or outbox row (relay) became exactly one task, every
 * task that was written — acknowledged or not — is terminal, none succeeded twice.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {eventually, type TestEnv} from '../helpers/env.js';
import type {Fault} from '../helpers/fault-proxy.js';
import {spawnRelay} from '../helpers/outbox-faults.js';
import {
  checkInvariants,
  createBusinessDb,
  insertLedger,
  newRun,
  outboxCounts,
  waitForQuiescence,
  type BusinessDb,
} from '../helpers/outbox.js';
import {createProcessTestEnv, type ProcessTestEnv} from '../helpers/processes.js';
import {spawnNode, type Spawned} from '../helpers/spawn.js';
import {cleanWitnesses, readWitnesses} from '../helpers/witness.js';
import {allTerminal, closeLink, linkedVars, openLink, type Link} from './load.js';
import {len} from './scale.js';

/** Times each kill point is hit. */
const ROUNDS = len(2, 5);
const INSERT = 'INSERT INTO tasks ';

interface KillPoint {
  name: string;
  fault: Extract<Fault, {kind: 'freezeOn'}>;
  /** Producer only: payload padding (payloads stored apart: their own statements in the transaction). */
  padBytes?: number;
  /** Producer only: whether the batch is committed when the process is stopped there. */
  committed?: boolean;
}

const killed = async (p: Spawned): Promise<void> => {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await p.exited;
};

describe('a producer and a relay killed mid-batch, repeatedly', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let link: Link;

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    env = fx.env;
    link = await openLink();
    // A task committed but never published (its writer died before the confirm) is still marked
    // published by its INSERT: the reconciler rings it once the mark is AX_REPUBLISH_AFTER old, on
    // its AX_RECONCILE_EVERY round (5 + 5 min by default; seconds here).
    const vars = {...env.env, AX_REPUBLISH_AFTER: '2s', AX_RECONCILE_EVERY: '1s', AX_RESCUE_EVERY: '500ms'};
    fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], vars);
    fx.spawn(['scheduler'], vars);
  });

  afterAll(async () => {
    await fx?.dispose();
    if (link) await closeLink(link);
  });

  /**
   * Starts `start()`, runs `warmUp` (it works normally for a while), freezes its MariaDB link at
   * `point`, runs `trigger` (what makes it write next), waits for the freeze, runs `whileFrozen`
   * (checks of what the server sees at that moment), kills it and drops what the proxy held. Returns
   * what the process printed.
   */
  async function killAt(
    point: KillPoint,
    steps: {
      start: () => Spawned;
      warmUp: (p: Spawned) => Promise<void>;
      trigger: (p: Spawned) => void | Promise<void>;
      whileFrozen: (p: Spawned) => Promise<void>;
    },
  ): Promise<string> {
    const p = steps.start();
    let timer: NodeJS.Timeout | undefined;
    const died = p.exited.then(({code, signal}) => {
      throw new Error(`the process exited (${code ?? signal}) before ${point.name}: ${p.stderr().slice(-2000)}`);
    });
    died.catch(() => undefined);
    try {
      await Promise.race([steps.warmUp(p), died]);
      link.mysql.set(point.fault);
      const frozen = link.mysql.frozen();
      await steps.trigger(p);
      await Promise.race([
        frozen,
        died,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`${point.name} not reached within 60 s: ${p.stderr().slice(-2000)}`)), 60_000);
        }),
      ]);
      await steps.whileFrozen(p);
    } finally {
      clearTimeout(timer);
      await killed(p);
      link.mysql.reset();
      link.mysql.heal();
    }
    return p.stdout();
  }

  /** Rows changed by the open transactions of the connections through the proxy (InnoDB's view). */
  async function openTransactionRows(): Promise<number> {
    const hosts = link.mysql.connections().map((c) => `127.0.0.1:${c.upstreamPort}`);
    if (hosts.length === 0) return 0;
    const [r] = await env.sql<{n: number | null}>(
      `SELECT SUM(t.trx_rows_modified) AS n FROM information_schema.INNODB_TRX t
         JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE p.HOST IN (${hosts.map(() => '?').join(',')})`,
      hosts,
    );
    return Number(r?.n ?? 0);
  }

  it(`the SDK producer killed ${ROUNDS}× at each point of its batch write: nothing acknowledged is lost, everything written runs once`, async () => {
    // A batch of due tasks is one transaction: START, the INSERT, then the doorbells published while
    // the COMMIT goes (beforeCommit), so a kill can leave doorbells for rows that never commit.
    const points: KillPoint[] = [
      {
        name: 'the INSERT of a batch, run in its transaction, its answer never read',
        fault: {kind: 'freezeOn', pattern: INSERT, deliver: true},
        committed: false,
      },
      {
        name: 'the COMMIT of a batch with payloads stored apart, never sent (its doorbells published)',
        fault: {kind: 'freezeOn', pattern: 'COMMIT', deliver: false},
        padBytes: 8000,
        committed: false,
      },
      {
        name: 'the COMMIT of a batch, done, its answer never read',
        fault: {kind: 'freezeOn', pattern: 'COMMIT', deliver: true},
        committed: true,
      },
    ];
    const acked: string[] = [];
    /** Tasks committed by a killed producer without being acknowledged. */
    let written = 0;
    const countTasks = async () => Number((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks'))[0]!.n);
    const printed = (out: string): string[] =>
      out
        .split('\n')
        .filter(Boolean)
        .flatMap((l) => JSON.parse(l) as string[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const point of points) {
        const vars = linkedVars(env, link, {FAULT_BATCH: '20', ...(point.padBytes ? {FAULT_PAD_BYTES: String(point.padBytes)} : {})});
        /** Asks the producer for one batch and waits for its acknowledgement. */
        const batch = async (p: Spawned): Promise<void> => {
          const before = printed(p.stdout()).length;
          p.child.stdin!.write('go\n');
          await eventually(async () => printed(p.stdout()).length > before, 30_000, 'a batch acknowledged');
        };
        const out = await killAt(point, {
          start: () => fx.track(spawnNode(['test/fixtures/fault-producer.js'], vars, null)),
          // A few batches first: the kill comes to a producer at work, not at its first write.
          warmUp: async (p) => {
            for (let i = 0; i < 3; i++) await batch(p);
          },
          // The next batch is the one stopped: nothing else is in flight.
          trigger: (p) => void p.child.stdin!.write('go\n'),
          // It stands where it was stopped: the batch (or its first part: group commit writes what is
          // there, so 20 submits may go in more than one batch) is committed though not acknowledged,
          // or in a transaction still open.
          whileFrozen: async (p) => {
            const known = acked.length + printed(p.stdout()).length + written;
            if (point.committed) await eventually(async () => (await countTasks()) > known, 10_000, `${point.name}: the batch in MySQL`);
            else expect(await openTransactionRows(), `${point.name}: rows of the open transaction`).toBeGreaterThan(0);
          },
        });
        acked.push(...printed(out));
        // The dead connection's transaction is rolled back; what was committed stays, acknowledged or not.
        await eventually(async () => (await openTransactionRows()) === 0, 10_000, 'the dead connection to be gone');
        const unacknowledged = (await countTasks()) - acked.length - written;
        if (point.committed) expect(unacknowledged, point.name).toBeGreaterThan(0);
        else expect(unacknowledged, point.name).toBe(0);
        written += unacknowledged;
      }
    }
    // Everything written — acknowledged or not — must run: the committed but never published batches
    // are rung by the scheduler's reconciler once AX_REPUBLISH_AFTER has passed.
    const all = (await env.sql<{id: string}>('SELECT id FROM tasks')).map((r) => r.id);
    expect(all.length).toBe(acked.length + written);
    const ids = [...new Set([...acked, ...all])];
    const t0 = Date.now();
    await allTerminal(env, ids, 60_000);
    console.log(
      `[kill-mid-batch] producer: ${ROUNDS * points.length} kills, ${acked.length} tasks acknowledged, ${written} committed but not acknowledged; all terminal ${Date.now() - t0} ms after the last kill`,
    );
    expect(await readWitnesses(env, ids)).toEqual(cleanWitnesses(ids.length));
  });

  it(`the relay killed ${ROUNDS}× at each point of its batch: every outbox row becomes one task, run once`, async () => {
    const biz: BusinessDb = await createBusinessDb({migrate: true});
    try {
      const run = newRun('kill-mid');
      const BATCH = 40;
      /** Outbox rows inserted so far (keys 0..rows-1), BATCH at a time, as one INSERT each. */
      let rows = 0;
      const feed = async (): Promise<void> => {
        await insertLedger(biz, run, BATCH, {from: rows});
        rows += BATCH;
      };
      const points: KillPoint[] = [
        {name: 'the INSERT of a claimed batch, never sent', fault: {kind: 'freezeOn', pattern: INSERT, deliver: false}},
        {name: 'the INSERT of a claimed batch, committed, never published', fault: {kind: 'freezeOn', pattern: INSERT, deliver: true}},
      ];
      const relayVars = () => ({...linkedVars(env, link), AX_RELAY_BATCH: String(BATCH), AX_RELAY_LEASE: '1s'});
      /** The run's rows the relay `pid` claimed and did not mark sent: how many, and how many of them became tasks. */
      const claimedBy = async (pid: number) => {
        const keys = (
          await biz.sql<{k: string}>(
            "SELECT JSON_VALUE(payload, '$.k') AS k FROM task_outbox WHERE JSON_VALUE(payload, '$.run') = ? AND sent_at IS NULL AND claimed_by LIKE ?",
            [run, `relay:%:${pid}`],
          )
        ).map((r) => Number(r.k));
        if (keys.length === 0) return {rows: 0, tasks: 0};
        const [t] = await env.sql<{n: number}>(
          `SELECT COUNT(*) AS n FROM tasks WHERE JSON_VALUE(payload, '$.run') = ? AND JSON_VALUE(payload, '$.k') IN (${keys.map(() => '?').join(',')})`,
          [run, ...keys.map(String)],
        );
        return {rows: keys.length, tasks: Number(t!.n)};
      };
      for (let round = 0; round < ROUNDS; round++) {
        for (const point of points) {
          let pid = 0;
          await killAt(point, {
            start: () => {
              const relay = spawnRelay(env, biz, relayVars());
              pid = relay.pid;
              return fx.track(relay.proc);
            },
            // It relays fresh rows, and takes back and sends the rows of the relays killed before it
            // (their lease is 1 s): when every row is sent, nothing is in flight.
            warmUp: async () => {
              await feed();
              await eventually(async () => (await outboxCounts(biz, run)).sent === rows, 30_000, 'every row so far sent');
            },
            // The next batch is the one stopped: one INSERT of BATCH rows, claimed by one pass.
            trigger: feed,
            // deliver: its INSERT (one autocommit statement for 40 small rows) ran.
            whileFrozen: async () => {
              if (point.fault.deliver)
                await eventually(async () => (await claimedBy(pid)).tasks === BATCH, 10_000, `${point.name}: its tasks`);
            },
          });
          // The batch it was stopped in stays claimed and unsent; its tasks were written (deliver) or not.
          expect(await claimedBy(pid), point.name).toEqual({rows: BATCH, tasks: point.fault.deliver ? BATCH : 0});
        }
      }
      const N = rows;
      // A relay that is left alone takes the rows back once the dead ones' leases are over.
      const last = spawnRelay(env, biz, relayVars());
      fx.track(last.proc);
      const t0 = Date.now();
      const r = await waitForQuiescence(env, biz, run, N, 90_000);
      console.log(
        `[kill-mid-batch] relay: ${ROUNDS * points.length} kills, ${N} outbox rows; all sent and run ${Date.now() - t0} ms after the last kill`,
      );
      await last.stop();
      expect(r).toMatchObject({expected: N, tasks: N, lost: 0, doubledTasks: 0, unexpected: 0, nonTerminal: 0, duplicated: 0});
      const ids = (await env.sql<{id: string}>("SELECT id FROM tasks WHERE JSON_VALUE(payload, '$.run') = ?", [run])).map((x) => x.id);
      expect(await readWitnesses(env, ids)).toEqual(cleanWitnesses(N));
      expect(await checkInvariants(env, biz, run, N)).toMatchObject({outbox: {rows: N, sent: N, unsent: 0}});
    } finally {
      await biz.dispose();
    }
  });
});
