/**
 * The statements that run all the time on a big table, with the index each must use
 * (test/integration/explain.test.ts checks the plans; docs/queries.md shows them): the rescuer's
 * and the reconciler's (rescue.ts) and the inspection's (inspect.ts).
 */
import {INSPECT_SQL} from './inspect.js';
import {RESCUE_SQL} from './rescue.js';

export const HOT_SQL = {...RESCUE_SQL, ...INSPECT_SQL};
