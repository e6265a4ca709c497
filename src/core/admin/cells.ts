/**
 * The cells of the configuration in the admin service (`ax cells list`): each cell read side by
 * side through its own session (closed with the service), one that cannot be read reported with
 * its error while the others still are.
 */
import {parseCellList} from '../cells/cells.js';
import {type CellReport, cellsReport} from '../cells/report.js';
import type {AdminSession} from './session.js';

export interface CellsAdmin {
  /**
   * Where each cell lives, its backlog and its live workers: every cell of the configuration, or
   * those `cells` names (comma-separated). Throws invalid_input for an unknown cell (nothing
   * opened); a cell whose database is unavailable has `error` set instead (never thrown).
   */
  list(cells?: string): Promise<CellReport[]>;
}

export function createCellsAdmin(s: AdminSession, sessionOf: (cell: string) => AdminSession): CellsAdmin {
  const {ctx} = s;
  return {
    async list(cells) {
      const names = cells === undefined ? ctx.cells.names : parseCellList(ctx.cells, cells);
      const defaults = ctx.forCell(ctx.cells.defaultCell).config;
      return cellsReport({
        map: ctx.cells,
        defaults,
        heartbeatMs: defaults.heartbeatMs,
        sources: names.map((cell) => {
          const c = ctx.forCell(cell).config;
          return {
            cell,
            mysqlUrl: c.mysqlUrl,
            amqpUrl: c.amqpUrl,
            // The session keeps the store: the report's close() leaves it to the service's close().
            open: async () => {
              const store = await sessionOf(cell).store();
              return {backlog: () => store.backlog(), workersList: () => store.workersList(), close: async () => undefined};
            },
          };
        }),
      });
    },
  };
}
