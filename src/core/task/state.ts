/**
 * The six task states and the transitions between them. This table is the single source of truth:
 * the MySQL store builds the guard of every state-changing `UPDATE` (`state IN (…)`, and the fence
 * and expired-lease conditions a transition asks for) from `guardOf()`, so the database refuses any
 * move the table does not allow. Code that decides in memory first asks `canApply()`, or
 * `assertTransition()` to refuse with AxError('conflict').
 */
import {AxError} from '../errors.js';

export const TASK_STATES = ['submitted', 'running', 'succeeded', 'failed', 'dead', 'cancelled'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: readonly TaskState[] = ['succeeded', 'dead', 'cancelled'];

/**
 * A transition: the states it may start from, the state it leads to, and what else its guarded
 * UPDATE must check. `fenced`: the row must still be at the fence the caller holds: for an outcome
 * the fence of its claim (a late "zombie" outcome changes nothing), for a claim the fence its read
 * saw (any change in between makes the UPDATE match nothing). `leaseExpired`: only while the lease
 * is over (a renewal in between wins). `due`: only once the row's run_at has come (database clock).
 */
export interface Transition {
  from: readonly TaskState[];
  to: TaskState;
  fenced?: true;
  leaseExpired?: true;
  due?: true;
}

/** The named transitions. Outcomes (core/store/types.ts) are keyed by these names. */
export const TRANSITIONS = {
  claim: {from: ['submitted', 'failed'], to: 'running', fenced: true, due: true},
  complete: {from: ['running'], to: 'succeeded', fenced: true},
  fail: {from: ['running'], to: 'failed', fenced: true},
  deadLetter: {from: ['running'], to: 'dead', fenced: true},
  /** A claimed task handed back unstarted (pool queue full, shutdown); no attempt is used. */
  release: {from: ['running'], to: 'failed', fenced: true},
  /** The rescuer: a running task whose worker stopped renewing its lease; the attempt counts. */
  rescue: {from: ['running'], to: 'failed', fenced: true, leaseExpired: true},
  rescueDeadLetter: {from: ['running'], to: 'dead', fenced: true, leaseExpired: true},
  /**
   * Flow control (core/flow): a claimed task its type may not run now (paused, breaker open, no
   * handler) goes back to storage due later, the attempt given back.
   */
  park: {from: ['running'], to: 'submitted', fenced: true},
  /** The same for a task not claimed at all: the admission step said no before the claim. */
  defer: {from: ['submitted', 'failed'], to: 'submitted', fenced: true},
  /** A task no live worker had a handler for during AX_UNHANDLED_DEAD_AFTER. */
  unhandledDead: {from: ['submitted', 'failed'], to: 'dead', fenced: true},
  cancel: {from: ['submitted', 'failed'], to: 'cancelled'},
  /**
   * An operator's cancel of a running task (`ax tasks cancel`, the SDK's cancel): guarded by the
   * fence the cancel read under its row lock, and it moves the fence on, so the attempt's late
   * outcome (and lease renewals) of the worker that ran it are stale and change nothing. The worker
   * learns of it by a control message, else at its next lease renewal, and stops the handler.
   */
  cancelRunning: {from: ['running'], to: 'cancelled', fenced: true},
  replay: {from: ['dead'], to: 'submitted'},
  /** `ax dlq replay --force`: also finished tasks, skipping the idempotency check of a finished task. */
  forceReplay: {from: ['dead', 'succeeded', 'cancelled'], to: 'submitted'},
} as const satisfies Record<string, Transition>;

export type TransitionName = keyof typeof TRANSITIONS;

/** The guard a transition's UPDATE must carry, from the table (see Transition). */
export interface Guard {
  from: readonly TaskState[];
  fenced: boolean;
  leaseExpired: boolean;
  due: boolean;
}

export function guardOf(t: TransitionName): Guard {
  const x: Transition = TRANSITIONS[t];
  return {from: x.from, fenced: x.fenced === true, leaseExpired: x.leaseExpired === true, due: x.due === true};
}

/** Throws AxError('conflict') unless `t` may move a task that is in state `from`; returns the target state. */
export function assertTransition(t: TransitionName, from: TaskState): TaskState {
  if (!canApply(t, from)) {
    throw new AxError('conflict', `transition ${t} cannot start from ${from} (allowed from: ${TRANSITIONS[t].from.join(', ')})`);
  }
  return TRANSITIONS[t].to;
}

export function isTaskState(s: unknown): s is TaskState {
  return typeof s === 'string' && (TASK_STATES as readonly string[]).includes(s);
}

export function isTerminal(s: TaskState): boolean {
  return TERMINAL_STATES.includes(s);
}

export function sourcesOf(t: TransitionName): readonly TaskState[] {
  return TRANSITIONS[t].from;
}

/** True when `t` may move a task that is in state `from`. */
export function canApply(t: TransitionName, from: TaskState): boolean {
  return (TRANSITIONS[t].from as readonly TaskState[]).includes(from);
}

/** Every (from, to) pair the machine allows, derived from TRANSITIONS. */
export function allowedEdges(): Array<[TaskState, TaskState]> {
  const edges = new Map<string, [TaskState, TaskState]>();
  for (const {from, to} of Object.values(TRANSITIONS)) {
    for (const f of from) edges.set(`${f}>${to}`, [f, to]);
  }
  return [...edges.values()];
}
