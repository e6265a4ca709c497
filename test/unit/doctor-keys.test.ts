/** ax doctor's task-key findings: a type whose backlog one key dominates, and how the keys are read. */
import {describe, expect, it, vi} from 'vitest';
import {diagnose} from '../../src/core/doctor/doctor.js';
import {KEYS_TYPES, keysOf} from '../../src/core/doctor/gather.js';
import {doctorSettings} from '../../src/core/doctor/settings.js';
import type {DbEvidence, Finding} from '../../src/core/doctor/types.js';
import type {TypeKeysReport, TypeRecord, TypesReport, WorkerRow} from '../../src/core/store/types.js';
import {workerRow} from '../helpers/worker-row.js';
import {healthyEvidence} from '../helpers/doctor-evidence.js';
import {typeRecord} from '../helpers/type-record.js';

const NOW = new Date('2026-12-01T12:00:00.000Z');
const ago = (ms: number): Date => new Date(NOW.getTime() - ms);
const settings = doctorSettings(
  {},
  {heartbeatMs: 5000, leaseMs: 30_000, poolQueueCapacity: 2000, schedulerHoldMs: 3000, schedulerLoadEveryMs: 1000},
  NOW.getTime(),
);
const w1: WorkerRow = workerRow(NOW, 2000, {host: 'h1', pid: 10, pools: {io: 100}, types: ['order_notify']});
const rec = (type: string, over: Partial<TypeRecord> = {}): TypeRecord =>
  typeRecord(type, ago(86_400_000), {updatedAt: ago(60_000), ...over});
const flow = (over: Partial<TypesReport> = {}): TypesReport => ({at: NOW, types: [], handlers: {}, all: [], parked: {}, ...over});
const backlogRow = (type: string, due: number, delayed: number) => ({type, due, delayed, running: 0, dead: 0, oldestDueAt: null});
const keys = (top: Array<[string, number]>, withBacklog = top.length): TypeKeysReport => ({
  backlog: top.reduce((n, [, b]) => n + b, 0),
  withBacklog,
  running: 0,
  withRunning: 0,
  top: top.map(([key, backlog]) => ({key, backlog, running: 0})),
});

function run(over: Partial<DbEvidence>): Finding[] {
  const value = healthyEvidence(NOW, [w1], {flow: flow(), ...over});
  return diagnose({
    settings,
    db: {ok: true, value},
    broker: {ok: true, value: {depths: {}, queues: {io: 'q.io', cpu: 'q.cpu', poison: 'q.poison'}}},
  }).findings;
}
const keyFindings = (fs: Finding[]) => fs.filter((f) => f.id.startsWith('keys'));

describe('a key that holds most of a type’s backlog', () => {
  it('is a warning naming the type and the key, with the commands that share the workers between keys', () => {
    const fs = run({
      backlog: {at: NOW, rows: [backlogRow('order_notify', 100_000, 20_000)]},
      keys: {order_notify: keys([['tenant:42', 111_600]], 37)},
    });
    expect(keyFindings(fs)).toEqual([
      {
        id: 'keys.dominant',
        symptom: 'slow',
        status: 'warn',
        title: "key tenant:42 holds 93 % of order_notify's backlog of 120,000: consider --fair or --max-running-per-key",
        evidence: ['111,600 of 120,000 waiting tasks; 36 other keys with a backlog'],
        next: [
          'ax types set order_notify --fair   (keys take turns: the others no longer wait behind this one)',
          'ax types set order_notify --max-running-per-key N   (this key runs at most N at once)',
          'ax types show order_notify   (its top keys)',
        ],
      },
    ]);
  });

  it('is only information when the type already shares its workers between keys (fair, or a per-key limit)', () => {
    const fs = run({
      backlog: {at: NOW, rows: [backlogRow('order_notify', 1000, 0)]},
      keys: {order_notify: keys([['tenant:42', 900]])},
      flow: flow({all: [rec('order_notify', {settings: {fair: true}})]}),
    });
    expect(keyFindings(fs)).toMatchObject([{id: 'keys.dominant', status: 'info', next: ['ax types show order_notify   (its top keys)']}]);
    expect(keyFindings(fs)[0]!.title).toContain('waits its turn');
  });

  it('is nothing below half of the backlog or when the keys were not read; ok when read and none dominates', () => {
    expect(
      keyFindings(run({backlog: {at: NOW, rows: [backlogRow('order_notify', 1000, 0)]}, keys: {order_notify: keys([['tenant:42', 400]])}})),
    ).toMatchObject([{id: 'keys.ok', status: 'ok'}]);
    expect(keyFindings(run({}))).toEqual([]);
  });
});

describe('keysOf (gather)', () => {
  it('reads the top key of the largest backlogs of at least 100 waiting tasks, at most KEYS_TYPES of them', async () => {
    const typeKeys = vi.fn(async ({type}: {type: string}) => keys([[`${type}:k`, 1]]));
    const rows = [
      backlogRow('small_one', 60, 39),
      backlogRow('big_one', 0, 100),
      ...Array.from({length: 30}, (_, i) => backlogRow(`t_${i}`, 200 + i, 0)),
    ];
    const r = await keysOf({typeKeys}, {at: NOW, rows});
    expect(typeKeys).toHaveBeenCalledTimes(KEYS_TYPES);
    expect(Object.keys(r)).not.toContain('small_one');
    expect(Object.keys(r)).not.toContain('big_one'); // 100: the smallest of the 31 big enough
    expect(Object.keys(r)).toContain('t_29');
    expect(typeKeys).toHaveBeenCalledWith({type: 't_29', limit: 1});
  });
});
