/** `ax scheduler --only`: parsing the parts, and one cell's composition of the parts chosen. */
import {describe, expect, it} from 'vitest';
import {parseSchedulerParts, SCHEDULER_PART_NAMES} from '../../src/core/scheduler/components.js';
import {schedulerCell} from '../../src/core/scheduler/cell.js';
import {ArchiverService} from '../../src/core/scheduler/maintenance/archiver.js';
import {CellMetricsService} from '../../src/core/scheduler/maintenance/cell-metrics.js';
import {DeadLetterScanner} from '../../src/core/scheduler/maintenance/dlq-scan.js';
import {Reconciler} from '../../src/core/scheduler/maintenance/reconciler.js';
import {Rescuer} from '../../src/core/scheduler/maintenance/rescuer.js';
import {PeriodicService} from '../../src/core/scheduler/maintenance/periodic-service.js';
import {Scheduler} from '../../src/core/scheduler/scheduler.js';
import {loadConfig} from '../../src/core/config/config.js';
import {silentLogger} from '../../src/core/log.js';
import {MetricsRegistry} from '../../src/core/metrics/registry.js';
import type {Archiver} from '../../src/core/archive/archiver.js';
import type {Broker} from '../../src/core/broker/types.js';
import type {AxStore} from '../../src/core/store/types.js';
import {fakeClock} from '../helpers/clock.js';

describe('parseSchedulerParts', () => {
  it('defaults to every part, in the order of the table', () => {
    expect(parseSchedulerParts(undefined)).toEqual(['dispatcher', 'rescuer', 'reconciler', 'dlq-scan', 'archiver', 'cell-metrics']);
    expect(SCHEDULER_PART_NAMES).toHaveLength(6);
  });

  it('keeps the parts named, in the order of the table, once each, spaces and empty items ignored', () => {
    expect(parseSchedulerParts('archiver,rescuer')).toEqual(['rescuer', 'archiver']);
    expect(parseSchedulerParts(' dlq-scan , dispatcher,dlq-scan,')).toEqual(['dispatcher', 'dlq-scan']);
  });

  it('an unknown part is invalid_input naming it and listing the parts', () => {
    expect(() => parseSchedulerParts('rescuer,archive')).toThrow(
      expect.objectContaining({
        code: 'invalid_input',
        message: '--only: unknown part "archive"; the parts are dispatcher, rescuer, reconciler, dlq-scan, archiver, cell-metrics',
      }),
    );
    expect(() => parseSchedulerParts('x,y')).toThrow(/unknown parts "x", "y"/);
  });

  it('an empty list is invalid_input', () => {
    expect(() => parseSchedulerParts(' , ')).toThrow(
      expect.objectContaining({code: 'invalid_input', message: expect.stringMatching(/at least one part/)}),
    );
  });
});

describe('schedulerCell', () => {
  const config = loadConfig({env: {}, cwd: '/nonexistent'});
  const build = (only: string | undefined, metrics?: MetricsRegistry) => {
    let archivers = 0;
    const cell = schedulerCell({
      config,
      store: {} as AxStore,
      broker: {} as Broker,
      clock: fakeClock(),
      random: () => 0.5,
      logger: silentLogger,
      parts: parseSchedulerParts(only),
      id: 'scheduler:test',
      archiver: () => {
        archivers++;
        return {} as Archiver;
      },
      ...(metrics ? {metrics} : {}),
    });
    return {cell, archivers: () => archivers};
  };

  it('all parts: the dead-letter scan first, then dispatcher, rescuer, reconciler, cell metrics, archiver', () => {
    const {cell} = build(undefined, new MetricsRegistry({cell: 'default'}));
    expect(cell.services.map((s) => s.constructor)).toEqual([
      DeadLetterScanner,
      Scheduler,
      Rescuer,
      Reconciler,
      CellMetricsService,
      ArchiverService,
    ]);
    expect(cell.dispatcher).toBe(cell.services[1]);
  });

  it('no endpoint: no cell metrics (nobody would read them)', () => {
    expect(build(undefined).cell.services.map((s) => s.constructor)).not.toContain(CellMetricsService);
  });

  it('--only rescuer,archiver: those alone, no dispatcher; the summary comes from the shared events', () => {
    const {cell, archivers} = build('rescuer,archiver');
    expect(cell.services.map((s) => s.constructor)).toEqual([Rescuer, ArchiverService]);
    expect(cell.dispatcher).toBeUndefined();
    expect(archivers()).toBe(1);
    cell.events.emit('lease:expired', {id: 't1', attempt: 1, to: 'failed', worker: 'w'});
    expect(cell.summary()).toMatchObject({id: 'scheduler:test', rescued: 1});
  });

  it('the archiver is not built when it does not run', () => {
    expect(build('dispatcher').archivers()).toBe(0);
  });
});

describe('PeriodicService', () => {
  it('runs begin once, passes every period after the start, and is ready only between start and stop', async () => {
    const clock = fakeClock();
    const calls: string[] = [];
    const s = new PeriodicService({
      name: 'test loop',
      clock,
      logger: silentLogger,
      everyMs: 1000,
      begin: async () => void calls.push('begin'),
      run: async () => void calls.push('pass'),
    });
    expect(s.ready()).toBe(false);
    await s.begin();
    await s.start();
    expect(s.ready()).toBe(true);
    expect(calls).toEqual(['begin']);
    await clock.advanceAsync(2500);
    expect(calls).toEqual(['begin', 'pass', 'pass']);
    await s.stop();
    expect(s.ready()).toBe(false);
    await clock.advanceAsync(5000);
    expect(calls).toEqual(['begin', 'pass', 'pass']);
    await s.start();
    expect(s.ready()).toBe(false);
  });
});
