/** DbClockStore on MySQL. */
import {type Db, select} from './db.js';

export async function clockNow(db: Db): Promise<Date> {
  const rows = await select(db, db.pool, 'SELECT NOW(3) AS now');
  return rows[0]?.now as Date;
}
