/**
 * What `ax top` runs on: a source over the admin service (core/admin), whose task store opens on
 * first use (and again after a failed open: the TUI starts and keeps retrying while MySQL is
 * down). It refreshes through admin.top, reads the drill-down (the newest tasks of a type, a task's
 * timeline) through admin.tasks as `ax tasks list --type` and `ax tasks show` do, and carries out
 * the keys' actions: replay through admin.dlq (plan, then run: audited as `top replay`), pause and
 * resume through admin.top's flow control (the types service). Every action resolves: failures
 * come back as messages or in the snapshot.
 */
import {errorMessage} from '../core/errors.js';
import type {TaskDetail} from '../core/inspect/inspect.js';
import type {TaskRecord} from '../core/task/model.js';
import {type FlowControl, type TopSnapshot, type TopState, unreachableSnapshot} from '../core/inspect/top.js';
import {openAdmin, type Runtime} from './runtime.js';

export interface TopSource {
  /** Opens the store now; throws its error (AxError('unavailable') with the reason) when it cannot. */
  connect(): Promise<void>;
  refresh(state: TopState, errorsType: string | null): Promise<{state: TopState; snapshot: TopSnapshot}>;
  /** Whether `p` can pause and resume (flow control exists). */
  readonly canPause: boolean;
  /** Replays every dead task of `type` (audited as `top replay`); resolves with what to tell the operator. */
  replay(type: string): Promise<string>;
  pause(type: string, paused: boolean): Promise<string>;
  /** The newest tasks of `type` (what `ax tasks list --type` lists); throws the store's error. */
  tasks(type: string): Promise<TaskRecord[]>;
  /** A task and its timeline (what `ax tasks show` shows); throws not_found for an unknown id. */
  task(id: string): Promise<TaskDetail>;
  close(): Promise<void>;
}

/** Tasks listed when drilling down into a type (the newest first). */
export const DRILL_TASKS = 50;

/**
 * The source on `rt`'s cell; `o.flow` replaces the registry-backed flow control (tests). The reads
 * share one admin service, open until close(); each action (replay, pause, resume) runs on an admin
 * service of its own, closed when it is done, so RabbitMQ is connected only while an action needs it.
 */
export function createTopSource(rt: Runtime, o: {flow?: FlowControl} = {}): TopSource {
  const admin = openAdmin(rt);
  return {
    canPause: true,
    connect: () => admin.top.connect(),
    async refresh(state, errorsType) {
      try {
        return await admin.top.refresh(state, {errorsType, ...(o.flow ? {flow: o.flow} : {})});
      } catch (e) {
        return {state, snapshot: unreachableSnapshot(admin.cell, errorMessage(e), state.history)};
      }
    },
    async replay(type) {
      try {
        await using action = openAdmin(rt);
        const {run} = await action.dlq.plan({filter: {type}, command: 'top replay'});
        const r = await run();
        return `replayed ${r.replayed} dead tasks of ${type}${r.skipped.length > 0 ? `, skipped ${r.skipped.length}` : ''}${r.unrung > 0 ? ` (${r.unrung} not rung yet: the reconciler rings for them)` : ''}`;
      } catch (e) {
        return `replay of ${type} failed: ${errorMessage(e)}`;
      }
    },
    async pause(type, paused) {
      try {
        await using action = openAdmin(rt);
        return await (o.flow ?? action.top.flow).setPaused({type, paused, operator: rt.operator()});
      } catch (e) {
        return `${paused ? 'pause' : 'resume'} of ${type} failed: ${errorMessage(e)}`;
      }
    },
    tasks: async (type) => (await admin.tasks.list({type, limit: DRILL_TASKS})).tasks,
    task: (id) => admin.tasks.show(id, {archive: false}),
    close: () => admin.close(),
  };
}
