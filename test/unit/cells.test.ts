import {describe, expect, test} from 'vitest';
import {
  cellConfig,
  cellMap,
  cellOf,
  misplacedTypes,
  parseCellList,
  parseCells,
  requireCellOfTypes,
  typeSelector,
} from '../../src/core/cells/cells.js';
import {loadConfig} from '../../src/core/config/config.js';
import {createClient} from '../../src/core/client.js';
import {createLogger} from '../../src/core/log.js';
import {systemClock} from '../../src/core/time.js';

const CELLS = {
  big: {types: ['order_*', 'invoice_render'], mysqlUrl: 'mysql://u:secret@db2:3306/ax_big', amqpUrl: 'amqp://g:g@mq2/big'},
  small: {types: ['user_register_credit', 'report_daily_*']},
};

describe('parseCells: the AX_CELLS setting', () => {
  test('JSON text (env) and objects (file) give the same setting; empty is none', () => {
    expect(parseCells(JSON.stringify(CELLS), 'env AX_CELLS')).toEqual(CELLS);
    expect(parseCells(CELLS, 'ax.config.json')).toEqual(CELLS);
    expect(parseCells('', 'env')).toEqual({});
    expect(parseCells({}, 'file')).toEqual({});
  });

  test.each<[unknown, RegExp]>([
    ['{"big": ', /cells \(env\) is not valid JSON/],
    ['[]', /must be a JSON object/],
    [{Big: {types: []}}, /cell "Big": a cell name is 1-32 characters/],
    [{big: ['order_*']}, /cell "big" must be an object with "types"/],
    [{big: {}}, /"types" must be a list/],
    [{big: {types: ['order_*'], mysql: 'x'}}, /unknown key "mysql"/],
    [{big: {types: ['order*']}}, /"order\*" is neither a task type .* nor a prefix/],
    [{big: {types: ['order_%']}}, /"order_%" is neither/],
    [{big: {types: ['*']}}, /"\*" is neither/],
    [{big: {types: ['order']}}, /"order" is neither/],
    [{big: {types: ['_*']}}, /"_\*" is neither/],
    [{big: {types: [7]}}, /7 is neither/],
    [{big: {types: [], mysqlUrl: 'postgres://x/y'}}, /cell "big": mysqlUrl must start with mysql:\/\//],
    [{big: {types: [], amqpUrl: 'http://x'}}, /amqpUrl must start with amqp:\/\//],
  ])('refuses %j', (raw, message) => {
    expect(() => parseCells(raw, 'env')).toThrow(message);
  });
});

describe('cellMap and cellOf: routing a type to its cell', () => {
  const map = cellMap(CELLS, 'default');

  test.each([
    ['order_notify', 'big'],
    ['order_bulk_export', 'big'],
    ['invoice_render', 'big'],
    ['invoice_send', 'default'],
    ['user_register_credit', 'small'],
    ['user_register', 'default'],
    ['report_daily_sales', 'small'],
    ['report_daily', 'default'],
    ['orders_sync', 'default'],
  ])('%s → %s', (type, cell) => {
    expect(cellOf(map, type)).toBe(cell);
  });

  test('the default cell first, then the others by name', () => {
    expect(map.names).toEqual(['default', 'big', 'small']);
    expect(cellMap({}, 'eu').names).toEqual(['eu']);
  });

  test.each<[Record<string, {types: string[]}>, RegExp]>([
    [{a: {types: ['order_notify']}, b: {types: ['order_notify']}}, /type "order_notify" is mapped to two cells, "a" and "b"/],
    [{a: {types: ['order_*']}, b: {types: ['order_*']}}, /type "order_\*" is mapped to two cells/],
    [{a: {types: ['order_*']}, b: {types: ['order_notify']}}, /"order_notify" \(cell "b"\) and "order_\*" \(cell "a"\) overlap/],
    [{a: {types: ['order_bulk_*']}, b: {types: ['order_*']}}, /overlap/],
  ])('refuses a type mapped to two cells: %j', (cells, message) => {
    expect(() => cellMap(cells, 'default')).toThrow(message);
  });

  test('overlaps within one cell, and prefixes that only look alike, are fine', () => {
    const m = cellMap({a: {types: ['order_*', 'order_notify']}, b: {types: ['orders_*', 'invoice_x']}}, 'default');
    expect(cellOf(m, 'orders_sync')).toBe('b');
    expect(() => cellMap({a: {types: ['order_*']}, b: {types: ['order_x']}}, 'default')).toThrow(/overlap/);
  });

  test('the default cell may take patterns but not servers of its own', () => {
    expect(cellOf(cellMap({default: {types: ['order_*']}}, 'default'), 'order_notify')).toBe('default');
    expect(() => cellMap({default: {types: [], mysqlUrl: 'mysql://x/y'}}, 'default')).toThrow(/default cell .* give it no mysqlUrl/);
  });
});

describe('parseCellList: the --cell flag', () => {
  const map = cellMap(CELLS, 'default');
  test('absent: the default cell; a list, blanks and repeats dropped', () => {
    expect(parseCellList(map, undefined)).toEqual(['default']);
    expect(parseCellList(map, 'big, small,big,')).toEqual(['big', 'small']);
  });
  test('unknown cells, an empty list, several where one is wanted: refused', () => {
    expect(() => parseCellList(map, 'big,nope')).toThrow(/unknown cell "nope": the configured cells are default, big, small/);
    expect(() => parseCellList(map, ' , ')).toThrow(/--cell needs a cell name/);
    expect(() => parseCellList(map, 'big,small', {single: true})).toThrow(/--cell takes one cell here, got big, small/);
  });
});

describe('cellConfig: the configuration a cell runs with', () => {
  const cfg = loadConfig({env: {AX_CELLS: JSON.stringify(CELLS), AX_MYSQL_URL: 'mysql://root@db1:3306/ax'}, cwd: '/nonexistent'});
  const map = cellMap(cfg.cells, cfg.cell);

  test('its own servers, or the defaults; the outbox stays the business one', () => {
    const big = cellConfig(cfg, map, 'big');
    expect(big).toMatchObject({
      cell: 'big',
      mysqlUrl: CELLS.big.mysqlUrl,
      amqpUrl: CELLS.big.amqpUrl,
      outboxMysqlUrl: 'mysql://root@db1:3306/ax',
    });
    const small = cellConfig(cfg, map, 'small');
    expect(small).toMatchObject({cell: 'small', mysqlUrl: cfg.mysqlUrl, amqpUrl: cfg.amqpUrl});
    expect(() => cellConfig(cfg, map, 'nope')).toThrow(/unknown cell "nope"/);
  });

  test('loadConfig refuses a bad AX_CELLS naming the variable, and a type in two cells', () => {
    expect(() => loadConfig({env: {AX_CELLS: '{"a": {"types": ["x"]}}'}, cwd: '/nonexistent'})).toThrow(
      /cells \(env AX_CELLS\): cell "a": "x" is neither/,
    );
    expect(() =>
      loadConfig({env: {AX_CELLS: '{"a": {"types": ["order_*"]}, "b": {"types": ["order_notify"]}}'}, cwd: '/nonexistent'}),
    ).toThrow(/overlap/);
  });
});

describe('typeSelector: the outbox rows of a cell’s relay', () => {
  const map = cellMap(CELLS, 'default');
  test('a cell takes its own patterns; the default cell every type but the other cells’', () => {
    expect(typeSelector(map, ['big'])).toEqual({all: false, negate: false, exact: ['invoice_render'], prefixes: ['order_']});
    expect(typeSelector(map, ['default'])).toEqual({
      all: false,
      negate: true,
      exact: ['invoice_render', 'user_register_credit'],
      prefixes: ['order_', 'report_daily_'],
    });
    expect(typeSelector(map, ['default', 'small'])).toEqual({all: false, negate: true, exact: ['invoice_render'], prefixes: ['order_']});
    expect(typeSelector(map, ['small', 'big', 'default'])).toEqual({all: true});
    expect(typeSelector(cellMap({}, 'default'), ['default'])).toEqual({all: true});
  });
});

describe('moved types', () => {
  const map = cellMap(CELLS, 'default');
  test('misplacedTypes: types held by a cell that routing sends elsewhere now', () => {
    expect(misplacedTypes(map, 'default', ['order_notify', 'invoice_send', 'user_register_credit'])).toEqual([
      {type: 'order_notify', cell: 'big'},
      {type: 'user_register_credit', cell: 'small'},
    ]);
    expect(misplacedTypes(map, 'big', ['order_notify'])).toEqual([]);
  });
  test('requireCellOfTypes: a --cell that is not the types’ cell', () => {
    expect(() => requireCellOfTypes(map, 'big', ['order_notify', 'invoice_render'])).not.toThrow();
    expect(() => requireCellOfTypes(map, 'small', ['order_notify'])).toThrow(
      /task type "order_notify" belongs to cell "big" \(AX_CELLS\), not "small": drop --cell, or use --cell big/,
    );
  });
});

describe('the client routes submits to their type’s cell', () => {
  /** A store+broker pair that records the tasks written and their cell. */
  function fakeCell(cell: string, written: Array<{cell: string; id: string; type: string}>) {
    return {
      config: {...loadConfig({env: {}, cwd: '/nonexistent'}), cell, submitFlushMs: 1},
      store: {
        tasksInsert: async ({tasks}: {tasks: Array<{id: string; type: string; cell: string}>}) => {
          for (const t of tasks) written.push({cell, id: t.id, type: t.type});
          return {inserted: tasks.map((t) => t.id), existing: [], conflicts: []};
        },
        doorbellsMark: async () => undefined,
        clockNow: async () => new Date(),
        // The cron admin's write: recorded with its cell, then stopped (only the routing is tested here).
        schedulesAdd: async ({schedule}: {schedule: {type: string}}) => {
          schedules.push(`${schedule.type}@${cell}`);
          throw new Error('stop after the write');
        },
      },
      broker: {publish: async () => undefined, on: () => undefined},
      release: async () => void released.push(cell),
    };
  }
  const released: string[] = [];
  const schedules: string[] = [];
  /** A client of the default cell routing by CELLS; every cell it opens is recorded in `opened` and writes to `written`. */
  const routedClient = (opened: string[], written: Array<{cell: string; id: string; type: string}> = []) =>
    createClient({
      ...(fakeCell('default', written) as never as Parameters<typeof createClient>[0]),
      clock: systemClock,
      random: () => 0.5,
      logger: createLogger('silent'),
      actor: 'test',
      operator: () => 'test',
      route: {
        cellOf: cellMap(CELLS, 'default'),
        open: async (cell) => {
          opened.push(cell);
          return fakeCell(cell, written) as never;
        },
      },
    });

  test('each cell opened at its first submit, flushed and closed with the others', async () => {
    const written: Array<{cell: string; id: string; type: string}> = [];
    const opened: string[] = [];
    const client = routedClient(opened, written);
    await client.submit({type: 'invoice_send', payload: {}});
    await client.submit({type: 'order_notify', payload: {}});
    await client.submit({type: 'order_ship', payload: {}});
    await client.submit({type: 'user_register_credit', payload: {}});
    await expect(client.submit({type: 'Bad', payload: {}})).rejects.toThrow(/not domain_action/);
    expect(opened).toEqual(['big', 'small']);
    const report = await client.close();
    expect(report.inserted).toBe(4);
    expect(written.map((w) => `${w.type}@${w.cell}`).sort()).toEqual([
      'invoice_send@default',
      'order_notify@big',
      'order_ship@big',
      'user_register_credit@small',
    ]);
    expect(released.sort()).toEqual(['big', 'default', 'small']);
  });

  test("a cron schedule is added in its type's cell, whose scheduler fires it", async () => {
    const opened: string[] = [];
    const client = routedClient(opened);
    schedules.length = 0;
    await expect(client.cron.add({name: 'nightly-notify', cron: '0 2 * * *', tz: 'UTC', type: 'order_notify'})).rejects.toThrow(
      'stop after the write',
    );
    await expect(client.cron.add({name: 'nightly-invoice', cron: '0 2 * * *', tz: 'UTC', type: 'invoice_send'})).rejects.toThrow(
      'stop after the write',
    );
    expect(schedules).toEqual(['order_notify@big', 'invoice_send@default']);
    expect(opened).toEqual(['big']);
    await client.close();
  });
});
