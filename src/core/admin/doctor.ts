/**
 * `ax doctor` in the admin service: gathers the evidence of the cell through the session (ax's
 * database and RabbitMQ's queue depths, read once) and runs the checks of the troubleshooting
 * table (core/doctor). A server that cannot be reached is a finding, never an error: its checks
 * are skipped and the others still run.
 */
import {diagnose} from '../doctor/doctor.js';
import {gatherBroker, gatherDb, handledTypesOf, sourceError} from '../doctor/gather.js';
import {type DoctorInput, doctorSettings} from '../doctor/settings.js';
import type {DoctorReport, SourceError} from '../doctor/types.js';
import {AxError} from '../errors.js';
import {staleAfterMs} from '../liveness.js';
import type {AdminSession} from './session.js';

export interface DoctorAdmin {
  /**
   * The findings of every check over the window `since` (default 15m). Throws invalid_input for
   * a bad `since`, `late` or `maxSkew` (nothing opened); never unavailable: a server down is the
   * report's finding, with `hint(error)` (the caller's advice for it) in its evidence.
   */
  check(input?: DoctorInput, o?: {hint?: (e: AxError) => string | undefined}): Promise<{since: Date; report: DoctorReport}>;
}

export function createDoctorAdmin(s: AdminSession): DoctorAdmin {
  const {ctx} = s;
  return {
    async check(input = {}, o = {}) {
      const settings = doctorSettings(input, ctx.config, ctx.clock.now());
      const failed = (e: unknown): SourceError => {
        const hint = e instanceof AxError ? o.hint?.(e) : undefined;
        return {...sourceError(e), ...(hint ? {hint} : {})};
      };
      const store = await s.store().catch(failed);
      const broker = await s.brokerReadOnly().catch(failed);
      const [db, mq] = await Promise.all([
        gatherDb(store, {
          clock: ctx.clock,
          since: settings.since,
          republishAfterMs: ctx.config.republishAfterMs,
          liveMs: staleAfterMs(settings.heartbeatMs),
        }),
        gatherBroker(broker),
      ]);
      const handledTypes = handledTypesOf(db, settings.heartbeatMs);
      return {since: settings.since, report: diagnose({settings, db, broker: mq, ...(handledTypes ? {handledTypes} : {})})};
    },
  };
}
