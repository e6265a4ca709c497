/**
 * An AdminContext over fake servers, for the admin service's unit tests: every opener records what
 * it opened (`<cell>:<server>`, with its options) and hands out the test's fake, or throws
 * AxError('unavailable') when the test gave none for that server; every close is recorded too.
 */
import type {AdminContext, OneShotProducer} from '../../src/core/admin/context.js';
import type {Broker} from '../../src/core/broker/types.js';
import {cellConfig, cellMap, type CellsSetting} from '../../src/core/cells/cells.js';
import {loadConfig} from '../../src/core/config/config.js';
import {AxError} from '../../src/core/errors.js';
import {createLogger} from '../../src/core/log.js';
import type {AxStore, OutboxStore, SchemaStore} from '../../src/core/store/types.js';
import type {Clock} from '../../src/core/time.js';
import {fakeClock} from './clock.js';

/** The fakes of one cell; a server left out is unreachable. Only the methods a test calls are needed. */
export interface FakeServers {
  store?: Partial<AxStore>;
  broker?: Partial<Broker>;
  outbox?: Partial<OutboxStore>;
  schema?: Partial<SchemaStore>;
  producer?: Partial<OneShotProducer>;
}

export interface FakeAdmin {
  ctx: AdminContext;
  /** What was opened, in order: `main:store`, `main:broker(declare)`, `big:outbox(requireTable=false)`, … */
  opened: string[];
  /** What was closed, in order. */
  closed: string[];
}

/**
 * A context on cell `main` (AX_CELL) with the other cells of `cells`; `servers(cell)` gives each
 * cell's fakes. The clock is fake, at 2026-05-01T00:00:00Z.
 */
export function fakeAdmin(o: {cells?: CellsSetting; servers: (cell: string) => FakeServers; clock?: Clock}): FakeAdmin {
  const config = loadConfig({env: {}, cwd: '/nonexistent', overrides: {cell: 'main', cells: o.cells ?? {}}});
  const cells = cellMap(config.cells, config.cell);
  const clock = o.clock ?? fakeClock(Date.parse('2026-05-01T00:00:00Z'));
  const opened: string[] = [];
  const closed: string[] = [];
  const logger = createLogger('error', {}, () => undefined);
  const ctxOf = (cell: string): AdminContext => {
    const fakes = o.servers(cell);
    function open<T extends object>(what: string, fake: T | undefined): T {
      opened.push(`${cell}:${what}`);
      if (fake === undefined) throw new AxError('unavailable', `${cell} ${what} is down (fake)`, {details: {reason: 'unreachable'}});
      const close = async (): Promise<void> => void closed.push(`${cell}:${what}`);
      return new Proxy(fake, {get: (t, k) => (k === 'close' ? close : Reflect.get(t, k))});
    }
    return {
      config: cell === config.cell ? config : cellConfig(config, cells, cell),
      clock,
      random: () => 0.5,
      logger,
      actor: 'test:1',
      operator: () => 'tester',
      cells,
      open: {
        store: async () => open('store', fakes.store) as AxStore,
        broker: async (x) => open(`broker(declare=${x.declare})`, fakes.broker) as Broker,
        outbox: async (x) => open(`outbox(requireTable=${x.requireTable})`, fakes.outbox) as OutboxStore,
        schema: async () => open('schema', fakes.schema) as SchemaStore,
        archiveTarget: () => {
          throw new AxError('unavailable', 'no archive in this fake');
        },
        producer: async () => open('producer', fakes.producer) as OneShotProducer,
      },
      forCell: (c) => {
        if (!cells.names.includes(c)) throw new AxError('invalid_input', `unknown cell "${c}"`);
        return ctxOf(c);
      },
    };
  };
  return {ctx: ctxOf(config.cell), opened, closed};
}

/** A fake whose every method rejects with `err`: shows which server a call reached first. */
export function rejecting<T extends object>(err: Error): T {
  return new Proxy({} as T, {get: (_t, k) => (k === 'then' ? undefined : async () => Promise.reject(err))});
}
