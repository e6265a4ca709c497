/**
 * The dead-letter scan (issue 10 §5): every AX_DLQ_SCAN_EVERY the scheduler reports the tasks that
 * died since the previous pass of its cell, per type, as a warn log line and a `dlq:new` event.
 *
 * Windows are half-open database-time intervals [since, until) chained pass to pass, so each death
 * falls in exactly one window: reported once. `until` lags the database clock by `settleMs`, so a
 * death whose transaction commits a moment after its history time was taken is still seen. The
 * watermark is stored (DlqScanStore, table dlq_scan): a restarted scheduler resumes where the cell's
 * scan stopped and its first pass reports the deaths of its downtime; the scheduler replicas of a
 * cell share it, and only the one whose compare-and-set moves it reports a window, so a death is
 * reported once however many replicas run. A pass that fails before its compare-and-set leaves the
 * watermark, so the next pass covers its window; one that dies between the compare-and-set and the
 * log line loses that report (at most once, never twice).
 */
import type {AxEvents} from '../events.js';
import type {Logger} from '../log.js';
import type {DbClockStore, DlqScanStore, InspectStore} from '../store/types.js';

export interface DeadLetterScanOptions {
  store: Pick<InspectStore, 'failureGroups'> & Pick<DbClockStore, 'clockNow'> & DlqScanStore;
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
  private readonly settleMs: number;

  constructor(private readonly o: DeadLetterScanOptions) {
    this.settleMs = o.settleMs ?? 1000;
  }

  /**
   * Creates the cell's watermark at now (database time) when it has none — deaths from then on
   * are new — and keeps a stored one (a restart resumes from it). Throws unavailable.
   */
  async begin(): Promise<void> {
    if ((await this.o.store.dlqScanGet()) === null) await this.o.store.dlqScanAdvance({from: null, to: await this.windowEnd()});
  }

  /**
   * One pass: the deaths since the stored watermark per type; when this pass moves the watermark
   * to the window's end (another replica did not first), they are logged (warn) and emitted and
   * returned, else nothing is. Without a watermark (no begin()), the pass only creates it. Throws
   * (store unavailable) with the watermark unchanged, so the next pass covers the window.
   */
  async scan(): Promise<NewDeadTasks[]> {
    const until = await this.windowEnd();
    const since = await this.o.store.dlqScanGet();
    if (since === null) {
      await this.o.store.dlqScanAdvance({from: null, to: until});
      return [];
    }
    if (until <= since) return [];
    const groups = await this.o.store.failureGroups({since, until, deadOnly: true});
    if (!(await this.o.store.dlqScanAdvance({from: since, to: until}))) return [];
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
