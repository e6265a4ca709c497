/**
 * An admin service (core/admin) over fakes, for the unit tests of its domains: each opener records
 * what it opened in `opened` (store, broker, broker-ro, outbox, schema, archive) and hands out the
 * fake given, so a test can say what a call opened — and that bad input opened nothing.
 */
import {vi} from 'vitest';
import type {ArchiveTarget} from '../../src/core/archive/target.js';
import type {Broker} from '../../src/core/broker/types.js';
import {cellMap} from '../../src/core/cells/cells.js';
import {type AxConfig, loadConfig} from '../../src/core/config/config.js';
import {type Admin, type AdminContext, createAdmin} from '../../src/core/admin/service.js';
import {AxError} from '../../src/core/errors.js';
import {silentLogger} from '../../src/core/log.js';
import type {AxStore, OutboxStore} from '../../src/core/store/types.js';
import {fakeClock} from './clock.js';

export interface FakeAdminOptions {
  /** The methods of the task store a test expects to be called. */
  store?: Record<string, unknown>;
  broker?: Record<string, unknown>;
  outbox?: Record<string, unknown>;
  archive?: Record<string, unknown>;
  config?: Partial<AxConfig>;
  /** AX_OPERATOR as the runtime reads it (default: "op"); throw to play a bad one. */
  operator?: () => string;
  /** Openers that fail (AxError unavailable), e.g. ['broker']. */
  down?: string[];
  /** The clock's time (ms). */
  now?: number;
}

export interface FakeAdmin {
  admin: Admin;
  ctx: AdminContext;
  /** What was opened, in order (`store`, `broker`, `broker-ro`, `outbox`, `schema`, `archive`). */
  opened: string[];
  /** What was closed, in order. */
  closed: string[];
}

export function fakeAdmin(o: FakeAdminOptions = {}): FakeAdmin {
  const opened: string[] = [];
  const closed: string[] = [];
  const config = {...loadConfig({env: {}, cwd: '/nonexistent'}), ...o.config};
  const open = <T>(name: string, fake: Record<string, unknown> | undefined): T => {
    opened.push(name);
    if (o.down?.includes(name)) throw new AxError('unavailable', `${name} is down`);
    return {...fake, close: vi.fn(async () => void closed.push(name))} as T;
  };
  const ctx: AdminContext = {
    config,
    clock: fakeClock(o.now ?? Date.parse('2026-12-01T12:00:00Z')),
    random: () => 0.5,
    logger: silentLogger,
    actor: 'host:1',
    operator: o.operator ?? (() => 'op'),
    cells: cellMap(config.cells, config.cell),
    open: {
      store: async () => open<AxStore>('store', o.store),
      broker: async (b) => open<Broker>(b.declare ? 'broker' : 'broker-ro', o.broker),
      outbox: async () => open<OutboxStore>('outbox', o.outbox),
      schema: async () => open('schema', {}),
      producer: async () => open('producer', {}),
      archiveTarget: () => {
        opened.push('archive');
        return {location: '/archive', ...o.archive} as unknown as ArchiveTarget;
      },
    },
    forCell: () => ctx,
  };
  return {admin: createAdmin(ctx), ctx, opened, closed};
}
