import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import {fakeAdmin} from '../helpers/fake-admin.js';

const cells = {big: {types: ['report_*'], mysqlUrl: 'mysql://root@db2:3306/ax'}, small: {types: ['mail_*']}};

describe('admin cells', () => {
  it('refuses an unknown cell before opening anything', async () => {
    const f = fakeAdmin({cells, servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.cells.list('main,nope')).rejects.toMatchObject({code: 'invalid_input'});
    expect(f.opened).toEqual([]);
  });

  it('reads every cell through its own session, a cell that is down reported with its error; closed with the service', async () => {
    const f = fakeAdmin({
      cells,
      servers: (cell) =>
        cell === 'big'
          ? {}
          : {
              store: {
                backlog: async () => ({at: new Date(0), rows: [{type: 'mail_send', due: 2, delayed: 1, running: 0, dead: 3}]}) as never,
                workersList: async () => [],
              },
            },
    });
    // The service of another cell lists them all the same.
    const admin = createAdmin(f.ctx).forCell('small');
    const report = await admin.cells.list();
    expect(report.map((c) => c.cell)).toEqual(['main', 'big', 'small']);
    // mail_* is routed to small: the default cell's waiting ones are misplaced there.
    expect(report[0]).toMatchObject({
      default: true,
      backlog: {due: 2, delayed: 1, running: 0, dead: 3},
      misplaced: [{type: 'mail_send', cell: 'small', tasks: 3}],
    });
    expect(report[1]).toMatchObject({cell: 'big', ownDatabase: true, backlog: null, error: {code: 'unavailable'}});
    expect(report[2]).toMatchObject({cell: 'small', ownDatabase: false, misplaced: []});
    expect(f.closed).toEqual([]);
    await admin.close();
    expect([...f.opened].sort()).toEqual(['big:store', 'main:store', 'small:store']);
    expect([...f.closed].sort()).toEqual(['main:store', 'small:store']);
  });
});
