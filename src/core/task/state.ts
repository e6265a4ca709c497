/**
 * The six task states and the transitions between them. This table is the single source of truth:
 * the MySQL store builds every guarded `UPDATE … WHERE state IN (…)` from `sourcesOf()`, and
 * `assertTransition()` rejects anything else before it reaches SQL.
 */
export const TASK_STATES = ['submitted', 'running', 'succeeded', 'failed', 'dead', 'cancelled'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: readonly TaskState[] = ['succeeded', 'dead', 'cancelled'];

/** The named transitions, each with the states it may start from and the state it leads to. */
export const TRANSITIONS = {
  claim: {from: ['submitted', 'failed'], to: 'running'},
  succeed: {from: ['running'], to: 'succeeded'},
  fail: {from: ['running'], to: 'failed'},
  /** A claimed task handed back unstarted (pool queue full, shutdown); no attempt is used. */
  release: {from: ['running'], to: 'failed'},
  kill: {from: ['running'], to: 'dead'},
  cancel: {from: ['submitted', 'failed'], to: 'cancelled'},
  replay: {from: ['dead'], to: 'submitted'},
} as const satisfies Record<string, {from: readonly TaskState[]; to: TaskState}>;

export type TransitionName = keyof typeof TRANSITIONS;

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
