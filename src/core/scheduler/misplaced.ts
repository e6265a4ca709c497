/** The scheduler's start-up check of cells (docs/operating/cells.md): tasks left in a cell their type no longer routes to. */
import {type CellMap, misplacedTypes} from '../cells/cells.js';
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {InspectStore} from '../store/types.js';

/**
 * Logs a warning for each type with waiting or running tasks in `cell` that `cells` (AX_CELLS)
 * routes to another cell now: they still run here (this cell's workers need the handler), new ones
 * go there. A failed read is logged and ignored: it only informs.
 */
export async function warnMisplaced(o: {
  cells: CellMap;
  cell: string;
  logger: Logger;
  store: Pick<InspectStore, 'backlog'>;
}): Promise<void> {
  try {
    const {rows} = await o.store.backlog();
    const pending = rows.filter((r) => r.due + r.delayed + r.running > 0);
    for (const m of misplacedTypes(
      o.cells,
      o.cell,
      pending.map((r) => r.type),
    )) {
      const r = pending.find((x) => x.type === m.type);
      o.logger.warn(
        `type ${m.type} is routed to cell ${m.cell} now, but ${(r?.due ?? 0) + (r?.delayed ?? 0) + (r?.running ?? 0)} of its tasks wait or run in cell ${o.cell}: they still run here (keep a worker with its handler on this cell until they drain: ax tasks stats --cell ${o.cell}); new ones go to ${m.cell}`,
        {type: m.type, cell: o.cell, routedTo: m.cell},
      );
    }
  } catch (e) {
    o.logger.warn('could not check for tasks of types routed to another cell', {error: errorMessage(e)});
  }
}
