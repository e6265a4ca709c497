/**
 * `ax top` in the admin service: the live view's refresh (core/inspect/top.ts) with each type's
 * breaker, pause and parked tasks from the type registry, and the pause/resume of its `p` key
 * through the types service (core/types/top-flow.ts: audited as `types pause|resume`, reason
 * "ax top"). Its replay is dlq.plan(…).run() and its drill-down tasks.list and tasks.show.
 */
import {type FlowControl, refreshTop, type TopSnapshot, type TopState} from '../inspect/top.js';
import {topFlowControl} from '../types/top-flow.js';
import type {AdminSession} from './session.js';
import {createTypesService} from './types.js';

/** The registry's live handlers window (unused by top's columns, required by the read). */
const FLOW_LIVE_MS = 15_000;

export interface TopAdmin {
  /** Opens the task store now; throws its AxError('unavailable') (the reason in details) when it cannot. */
  connect(): Promise<void>;
  /**
   * One refresh of the view: the read, the history moved on, the snapshot (see refreshTop). Read
   * failures are in the snapshot; throws only when the store cannot be opened (unavailable), and
   * the next call tries again. `flow` replaces the registry's flow control (tests).
   */
  refresh(state: TopState, o: {errorsType: string | null; flow?: FlowControl}): Promise<{state: TopState; snapshot: TopSnapshot}>;
  /**
   * The registry's flow control: breaker, pause and parked count per type (one registry read), and
   * pause/resume through the types service — as the context's operator (AX_OPERATOR, read when the
   * change is made), which is the `operator` its caller reads from the same place.
   */
  readonly flow: FlowControl;
}

export function createTopAdmin(s: AdminSession): TopAdmin {
  const types = createTypesService(s);
  const flow = topFlowControl({
    report: async () => (await s.store()).typesReport({liveMs: FLOW_LIVE_MS}),
    withAdmin: (_operator, fn) => fn(types),
    keys: {read: async (type) => (await s.store()).typeKeys({type, limit: 1}), now: () => s.ctx.clock.now()},
  });
  return {
    async connect() {
      await s.store();
    },
    async refresh(state, o) {
      const store = await s.store();
      return refreshTop(store, state, {cell: s.ctx.config.cell, errorsType: o.errorsType, flow: o.flow ?? flow});
    },
    flow,
  };
}
