/**
 * What `ax top` runs on: a source that opens the task store on first use (and again after a
 * failed open: the TUI starts and keeps retrying while MySQL is down), refreshes through the core
 * inspector, reads the drill-down (the newest tasks of a type, a task's timeline) through the
 * same core functions as `ax tasks list --type` and `ax tasks show`, and carries out the keys' actions (replay through core/dlq, pause and resume through
 * the type registry: core/types/top-flow.ts). Every method resolves: failures come back as messages
 * or in the snapshot.
 */
import {errorMessage} from '../core/errors.js';
import {listTasks, showTask, type TaskDetail} from '../core/inspect/inspect.js';
import type {TaskRecord} from '../core/task/model.js';
import {planReplay, runReplay} from '../core/dlq/replay.js';
import {type FlowControl, refreshTop, type TopSnapshot, type TopState, unreachableSnapshot} from '../core/inspect/top.js';
import type {AxStore} from '../core/store/types.js';
import {createTypesAdmin} from '../core/types/admin.js';
import {topFlowControl} from '../core/types/top-flow.js';
import {disposable} from './dispose.js';
import {openBroker, openStore, type Runtime} from './runtime.js';

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

/** The registry's live handlers window (unused by top's columns, required by the read). */
const FLOW_LIVE_MS = 15_000;

/** Tasks listed when drilling down into a type (the newest first). */
export const DRILL_TASKS = 50;

/** The source; `o.flow` replaces the registry-backed flow control (tests). */
export function createTopSource(rt: Runtime, o: {flow?: FlowControl} = {}): TopSource {
  let store: Promise<AxStore> | undefined;
  const open = (): Promise<AxStore> => {
    store ??= openStore(rt, {connectionLimit: 4});
    store.catch(() => (store = undefined));
    return store;
  };
  const cell = rt.config.cell;
  const flow: FlowControl =
    o.flow ??
    topFlowControl({
      report: async () => (await open()).typesReport({liveMs: FLOW_LIVE_MS}),
      async withAdmin(operator, fn) {
        const s = await open();
        // A resume rings the released backlog; without RabbitMQ the scheduler rings it.
        const broker = await openBroker(rt, {reconnect: false}).catch(() => undefined);
        try {
          return await fn(
            createTypesAdmin({
              store: s,
              ...(broker ? {broker} : {}),
              clock: rt.clock,
              logger: rt.logger,
              operator: () => operator,
              flowRefreshMs: rt.config.flowRefreshMs,
            }),
          );
        } finally {
          await broker?.close().catch(() => undefined);
        }
      },
    });
  return {
    canPause: true,
    async connect() {
      await open();
    },
    async refresh(state, errorsType) {
      let s: AxStore;
      try {
        s = await open();
      } catch (e) {
        return {state, snapshot: unreachableSnapshot(cell, errorMessage(e), state.history)};
      }
      return refreshTop(s, state, {cell, errorsType, flow});
    },
    async replay(type) {
      try {
        const s = await open();
        const operator = rt.operator();
        const sel = {filter: {type}};
        const plan = await planReplay(s, sel);
        await using broker = disposable(await openBroker(rt, {reconnect: false}));
        const r = await runReplay(
          {store: s, broker, clock: rt.clock, logger: rt.logger, actor: rt.actor, operator, reason: null, command: 'top replay'},
          sel,
          plan,
        );
        return `replayed ${r.replayed} dead tasks of ${type}${r.skipped.length > 0 ? `, skipped ${r.skipped.length}` : ''}${r.unrung > 0 ? ` (${r.unrung} not rung yet: the reconciler rings for them)` : ''}`;
      } catch (e) {
        return `replay of ${type} failed: ${errorMessage(e)}`;
      }
    },
    async pause(type, paused) {
      try {
        return await flow.setPaused({type, paused, operator: rt.operator()});
      } catch (e) {
        return `${paused ? 'pause' : 'resume'} of ${type} failed: ${errorMessage(e)}`;
      }
    },
    async tasks(type) {
      return listTasks(await open(), {type, limit: DRILL_TASKS});
    },
    async task(id) {
      return showTask(await open(), id);
    },
    async close() {
      const s = await store?.catch(() => undefined);
      await s?.close();
    },
  };
}
