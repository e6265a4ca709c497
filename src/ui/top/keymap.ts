/**
 * The keys of `ax top` as a pure reducer: (state, key) → new state and at most one effect for the
 * app to carry out (quit, replay, pause). No I/O, no React: tested on its own. Several keys that
 * arrive in one read (a burst, or typed ahead) are split first (splitKeys) and reduced in order.
 */
import {PAUSE_UNAVAILABLE} from '../../core/inspect/top.js';
import {DEFAULT_SORT, nextSort, type TopSort} from '../../core/inspect/top-sort.js';

/**
 * table: the types; errors: the selected type's errors; tasks: the newest tasks of `drill.type`;
 * task: the timeline of `drill.task`; workers: one line per worker; help; filter: typing after `/`;
 * confirm: a y/N prompt (`pending`).
 */
export type Mode = 'table' | 'errors' | 'help' | 'filter' | 'confirm' | 'tasks' | 'task' | 'workers';

export interface UiState {
  mode: Mode;
  /** The selected type's name (kept across refreshes while it is listed). */
  selected: string | null;
  /** Only types whose name contains this. */
  filter: string;
  /** The filter being typed after `/`. */
  draft: string;
  /** A one-line notice (the outcome of an action, why a key does nothing). */
  message: string | null;
  /** In `confirm` mode: the action y carries out (replay, pause or resume of the selected type). */
  pending: Action | null;
  /** The order of the type table. */
  sort: TopSort;
  /** The drill-down: the type whose tasks are listed, the selected task, the task whose timeline is shown. */
  drill: {type: string | null; selected: string | null; task: string | null};
}

export const initialUi = (filter = '', sort: TopSort = DEFAULT_SORT): UiState => ({
  mode: 'table',
  selected: null,
  filter,
  draft: '',
  message: null,
  pending: null,
  sort,
  drill: {type: null, selected: null, task: null},
});

/** The parts of Ink's key object the keymap reads. */
export interface Key {
  upArrow?: boolean;
  downArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  return?: boolean;
  escape?: boolean;
  backspace?: boolean;
  delete?: boolean;
  ctrl?: boolean;
}

export type Action = {kind: 'replay'; type: string} | {kind: 'pause'; type: string; paused: boolean};
export type Effect = {kind: 'quit'} | Action;

/** What an action is called in the prompt and its notices. */
const verb = (a: Action): string => (a.kind === 'replay' ? 'replay' : a.paused ? 'pause' : 'resume');

/** What the keymap needs to know of the data on screen. */
export interface KeyContext {
  /** The types listed (after the filter, in the table's order). */
  types: ReadonlyArray<{type: string; dead: number; paused: boolean | null}>;
  /** The tasks listed in the `tasks` view, newest first (empty elsewhere or while reading). */
  tasks?: ReadonlyArray<{id: string}>;
  /** Whether flow control (pause/resume) exists. */
  canPause: boolean;
}

/** The types whose name contains `filter`. */
export function visible<T extends {type: string}>(types: readonly T[], filter: string): T[] {
  return filter === '' ? [...types] : types.filter((t) => t.type.includes(filter));
}

/** The selected type, or the first listed when the selection is gone. */
export function selectedIn<T extends {type: string}>(types: readonly T[], selected: string | null): T | undefined {
  return types.find((t) => t.type === selected) ?? types[0];
}

/** The selected task of the drill-down, or the first listed. */
export function selectedTask<T extends {id: string}>(tasks: readonly T[], selected: string | null): T | undefined {
  return tasks.find((t) => t.id === selected) ?? tasks[0];
}

const CONTROL_KEYS: Record<string, Key> = {
  '\r': {return: true},
  '\n': {return: true},
  '\u007F': {backspace: true},
  '\b': {backspace: true},
  '\u001B': {escape: true},
};

/**
 * One read of the terminal as separate keys. Ink hands printable text that arrived together as
 * one `input` ("py", "/user\r"): each character is a key of its own (Enter and Backspace among
 * them). Escape sequences (arrows) come one per read from Ink already and are passed on as they are.
 */
export function splitKeys(input: string, key: Key): Array<{input: string; key: Key}> {
  const chars = [...input];
  if (chars.length <= 1 || input.startsWith('\u001B') || key.upArrow || key.downArrow || key.pageUp || key.pageDown) return [{input, key}];
  return chars.map((ch) => {
    const control = CONTROL_KEYS[ch];
    if (control) return {input: '', key: control};
    if (ch === '\u0003') return {input: 'c', key: {ctrl: true}};
    return {input: ch, key: {}};
  });
}

/** Keys reduced in order: the last state and the effects in the order the keys asked for them. */
export function reduceKeys(
  s: UiState,
  keys: ReadonlyArray<{input: string; key: Key}>,
  ctx: KeyContext,
): {state: UiState; effects: Effect[]} {
  const effects: Effect[] = [];
  let state = s;
  for (const k of keys) {
    const r = reduceKey(state, k.input, k.key, ctx);
    state = r.state;
    if (r.effect) effects.push(r.effect);
    if (r.effect?.kind === 'quit') break;
  }
  return {state, effects};
}

/** Moves a selection by one in `names` (null: the first is selected). */
function move(names: readonly string[], current: string | undefined, up: boolean): string | undefined {
  if (names.length === 0) return undefined;
  const i = current === undefined ? 0 : Math.max(0, names.indexOf(current));
  return names[Math.max(0, Math.min(names.length - 1, i + (up ? -1 : 1)))];
}

const back = (k: Key): boolean => k.escape === true || k.backspace === true || k.delete === true;

export function reduceKey(s: UiState, input: string, key: Key, ctx: KeyContext): {state: UiState; effect?: Effect} {
  if (key.ctrl && input === 'c') return {state: s, effect: {kind: 'quit'}};
  if (s.mode === 'filter') return filterKey(s, input, key);
  if (s.mode === 'confirm') return confirmKey(s, input);
  if (input === 'q') return {state: s, effect: {kind: 'quit'}};
  if (s.mode === 'tasks' || s.mode === 'task') return drillKey(s, input, key, ctx);
  const current = selectedIn(ctx.types, s.selected);
  if (back(key)) return {state: {...s, mode: 'table', message: null}};
  if (key.upArrow || key.downArrow) {
    const next = move(
      ctx.types.map((t) => t.type),
      current?.type,
      key.upArrow === true,
    );
    return {state: next === undefined ? s : {...s, selected: next, message: null}};
  }
  if (key.return) {
    if (s.mode !== 'table' && s.mode !== 'errors') return {state: s};
    if (!current) return {state: {...s, message: 'no type selected'}};
    return {state: {...s, mode: 'tasks', message: null, drill: {type: current.type, selected: null, task: null}}};
  }
  switch (input) {
    case '?':
      return {state: {...s, mode: s.mode === 'help' ? 'table' : 'help'}};
    case 'e':
      return {state: {...s, mode: s.mode === 'errors' ? 'table' : 'errors'}};
    case 'w':
      return {state: {...s, mode: s.mode === 'workers' ? 'table' : 'workers'}};
    case '/':
      return {state: {...s, mode: 'filter', draft: s.filter}};
    case 's':
      return {state: {...s, sort: nextSort(s.sort), message: null}};
    case 'S':
      return {state: {...s, sort: {...s.sort, desc: !s.sort.desc}, message: null}};
    case 'p':
      if (!ctx.canPause) return {state: {...s, message: PAUSE_UNAVAILABLE}};
      if (!current) return {state: {...s, message: 'no type selected'}};
      return {state: {...s, mode: 'confirm', message: null, pending: {kind: 'pause', type: current.type, paused: current.paused !== true}}};
    case 'r':
      if (!current) return {state: {...s, message: 'no type selected'}};
      if (current.dead === 0) return {state: {...s, message: `${current.type} has no dead tasks to replay`}};
      return {state: {...s, mode: 'confirm', message: null, pending: {kind: 'replay', type: current.type}}};
    default:
      return {state: s};
  }
}

function confirmKey(s: UiState, input: string): {state: UiState; effect?: Effect} {
  const a = s.pending;
  if (input === 'y' && a) {
    const doing = a.kind === 'replay' ? `replaying the dead tasks of ${a.type}…` : `${a.paused ? 'pausing' : 'resuming'} ${a.type}…`;
    return {state: {...s, mode: 'table', pending: null, message: doing}, effect: a};
  }
  return {state: {...s, mode: 'table', pending: null, message: `${a ? verb(a) : 'action'} cancelled: nothing changed`}};
}

/** The drill-down: ↑↓ pick a task, Enter shows its timeline, Esc/Backspace go back one level. */
function drillKey(s: UiState, input: string, key: Key, ctx: KeyContext): {state: UiState} {
  const d = s.drill;
  if (back(key)) {
    if (s.mode === 'task') return {state: {...s, mode: 'tasks', message: null, drill: {...d, task: null}}};
    return {state: {...s, mode: 'table', message: null, drill: {type: null, selected: null, task: null}}};
  }
  if (input === '?') return {state: {...s, mode: 'help', drill: {type: null, selected: null, task: null}}};
  if (s.mode === 'task') return {state: s};
  const tasks = ctx.tasks ?? [];
  const current = selectedTask(tasks, d.selected);
  if (key.upArrow || key.downArrow) {
    const next = move(
      tasks.map((t) => t.id),
      current?.id,
      key.upArrow === true,
    );
    return {state: next === undefined ? s : {...s, drill: {...d, selected: next}}};
  }
  if (key.return) {
    if (!current) return {state: {...s, message: 'no task selected'}};
    return {state: {...s, mode: 'task', message: null, drill: {...d, selected: current.id, task: current.id}}};
  }
  return {state: s};
}

function filterKey(s: UiState, input: string, key: Key): {state: UiState} {
  if (key.escape) return {state: {...s, mode: 'table', draft: ''}};
  if (key.return) return {state: {...s, mode: 'table', filter: s.draft.trim(), draft: '', message: null}};
  if (key.backspace || key.delete) return {state: {...s, draft: s.draft.slice(0, -1)}};
  // Type names are lower-case words and _: anything else cannot match, so it is not taken.
  if (/^[a-z0-9_]+$/.test(input)) return {state: {...s, draft: (s.draft + input).slice(0, 64)}};
  return {state: s};
}
