/**
 * The keys of `ax top` as a pure reducer: (state, key) → new state and at most one effect for the
 * app to carry out (quit, replay, pause). No I/O, no React: tested on its own.
 */
import {PAUSE_UNAVAILABLE} from '../../core/inspect/top.js';

export type Mode = 'table' | 'errors' | 'help' | 'filter' | 'confirm';

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
}

export const initialUi = (filter = ''): UiState => ({mode: 'table', selected: null, filter, draft: '', message: null, pending: null});

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
  /** The types listed (after the filter), in order. */
  types: ReadonlyArray<{type: string; dead: number; paused: boolean | null}>;
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

export function reduceKey(s: UiState, input: string, key: Key, ctx: KeyContext): {state: UiState; effect?: Effect} {
  if (key.ctrl && input === 'c') return {state: s, effect: {kind: 'quit'}};
  if (s.mode === 'filter') return filterKey(s, input, key);
  const current = selectedIn(ctx.types, s.selected);
  if (s.mode === 'confirm') {
    const a = s.pending;
    if (input === 'y' && a) {
      const doing = a.kind === 'replay' ? `replaying the dead tasks of ${a.type}…` : `${a.paused ? 'pausing' : 'resuming'} ${a.type}…`;
      return {state: {...s, mode: 'table', pending: null, message: doing}, effect: a};
    }
    return {state: {...s, mode: 'table', pending: null, message: `${a ? verb(a) : 'action'} cancelled: nothing changed`}};
  }
  if (input === 'q') return {state: s, effect: {kind: 'quit'}};
  if (key.escape) return {state: {...s, mode: 'table', message: null}};
  if (key.upArrow || key.downArrow) {
    if (ctx.types.length === 0) return {state: s};
    const i = current ? ctx.types.indexOf(current) : 0;
    const j = Math.max(0, Math.min(ctx.types.length - 1, i + (key.upArrow ? -1 : 1)));
    return {state: {...s, selected: ctx.types[j]!.type, message: null}};
  }
  switch (input) {
    case '?':
      return {state: {...s, mode: s.mode === 'help' ? 'table' : 'help'}};
    case 'e':
      return {state: {...s, mode: s.mode === 'errors' ? 'table' : 'errors'}};
    case '/':
      return {state: {...s, mode: 'filter', draft: s.filter}};
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

function filterKey(s: UiState, input: string, key: Key): {state: UiState} {
  if (key.escape) return {state: {...s, mode: 'table', draft: ''}};
  if (key.return) return {state: {...s, mode: 'table', filter: s.draft.trim(), draft: '', message: null}};
  if (key.backspace || key.delete) return {state: {...s, draft: s.draft.slice(0, -1)}};
  // Type names are lower-case words and _: anything else cannot match, so it is not taken.
  if (/^[a-z0-9_]+$/.test(input)) return {state: {...s, draft: (s.draft + input).slice(0, 64)}};
  return {state: s};
}
