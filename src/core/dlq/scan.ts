/**
 * The dead-letter scan (issue 10 §5): every AX_DLQ_SCAN_EVERY the scheduler reports the tasks that
 * died since its previous pass, per type, as a warn log line and a `dlq:new` event.
 *
 * Windows are half-open database-time intervals [since, until) chained pass to pass, so each death
 * falls in exactly one window of a process: reported once. `until` lags the database clock by
 * `settleMs`, so a death whose transaction commits a moment after its history time was taken is
 * still seen. The watermark lives in memory: a (re)started scheduler begins at its start time and
 * does not report the deaths of its downtime (`ax dlq list --since` shows them); each scheduler
 * replica reports the deaths it sees, so with N replicas a death is reported N times.
 */
import type {AxEvents} from '../events.js';
import type {Logger} from '../log.js';
import type {DbClockStore, InspectStore} from '../store/types.js';

export interface DeadLetterScanOptions {
  store: Pick<InspectStore, 'failureGroups'> & Pick<DbClockStore, 'clockNow'>;
  events: AxEvents;
  logger: Logger;
  /** How far behind the database clock a window ends (default 1000 ms). */
  settleMs?: number;
}

/** New deaths of one type in one window. */
export interface NewDeadTasks {
  type: string;
  count: number;
  since: Date;
  until: Date;
}

export class DeadLetterScan {
  private from: Date | null = null;
  private readonly settleMs: number;

  constructor(private readonly o: DeadLetterScanOptions) {
    this.settleMs = o.settleMs ?? 1000;
  }

  /** Sets the watermark to now (database time) when it has none: deaths from then on are new. Throws unavailable. */
  async begin(): Promise<void> {
    if (this.from === null) this.from = await this.windowEnd();
  }

  /**
   * One pass: the deaths since the watermark per type, logged (warn) and emitted, then the
   * watermark moves to the window's end. The first pass without begin() only sets the watermark.
   * Throws (store unavailable) with the watermark unchanged, so the next pass covers the window.
   */
  async scan(): Promise<NewDeadTasks[]> {
    const until = await this.windowEnd();
    const since = this.from;
    if (since === null || until <= since) {
      this.from ??= until;
      return [];
    }
    const groups = await this.o.store.failureGroups({since, until, deadOnly: true});
    this.from = until;
    const perType = new Map<string, number>();
    for (const g of groups) perType.set(g.type, (perType.get(g.type) ?? 0) + g.count);
    const found = [...perType].sort(([a], [b]) => a.localeCompare(b)).map(([type, count]) => ({type, count, since, until}));
    for (const n of found) {
      this.o.logger.warn('new dead tasks', {type: n.type, count: n.count, since: since.toISOString(), until: until.toISOString()});
      this.o.events.emit('dlq:new', {type: n.type, count: n.count, since: since.getTime(), until: until.getTime()});
    }
    return found;
  }

  private async windowEnd(): Promise<Date> {
    return new Date((await this.o.store.clockNow()).getTime() - this.settleMs);
  }
}
