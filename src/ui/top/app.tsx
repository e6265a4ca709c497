/**
 * The `ax top` app: the data hooks, the keymap and the views wired together. Keys are read only
 * when `interactive` (stdin is a terminal: Ink's useInput throws otherwise); keys that arrive in
 * one read are split and each acts (splitKeys).
 */
import {useApp, useInput, useStdout} from 'ink';
import {useEffect, useRef, useState} from 'react';
import type {TopSource} from '../../cli/top.js';
import type {TopTypeRow} from '../../core/inspect/top.js';
import {DEFAULT_SORT, sortRows, type TopSort} from '../../core/inspect/top-sort.js';
import {type Effect, initialUi, reduceKeys, selectedIn, splitKeys, type UiState, visible} from './keymap.js';
import {drillKey, useDrill} from './use-drill.js';
import {useTopData} from './use-top-data.js';
import {TopView} from './views.js';

export interface TopAppProps {
  source: Pick<TopSource, 'refresh' | 'canPause' | 'replay' | 'pause' | 'tasks' | 'task'>;
  intervalMs: number;
  /** The type filter to start with (`--type`). */
  filter?: string;
  /** The order of the table to start with (`--sort`). */
  sort?: TopSort;
  /** Fixed size (tests); otherwise the terminal's, followed on resize. */
  width?: number;
  height?: number;
  interactive?: boolean;
  /** Told when the operator quits, before the app exits. */
  onQuit?: () => void;
}

function useSize(fixed: {width?: number | undefined; height?: number | undefined}): {width: number; height: number} {
  const {stdout} = useStdout();
  const read = () => ({width: fixed.width ?? (stdout.columns || 80), height: fixed.height ?? (stdout.rows || 24)});
  const [size, setSize] = useState(read);
  useEffect(() => {
    const on = () => setSize(read());
    stdout.on('resize', on);
    return () => void stdout.off('resize', on);
  });
  return size;
}

export function TopApp(p: TopAppProps) {
  const {exit} = useApp();
  const [ui, setUi] = useState<UiState>(() => initialUi(p.filter ?? '', p.sort ?? DEFAULT_SORT));
  const {width, height} = useSize(p);
  const types = useRef<TopTypeRow[]>([]);
  const current = useRef<string | null>(null);
  const data = useTopData(p.source, p.intervalMs, current.current);
  const drill = useDrill(p.source, drillKey(ui.mode, ui.drill), p.intervalMs);
  types.current = sortRows(visible(data.snapshot?.types ?? [], ui.filter), ui.sort);
  current.current = selectedIn(types.current, ui.selected)?.type ?? null;
  const uiRef = useRef(ui);
  uiRef.current = ui;
  const tasks = useRef(drill.tasks);
  tasks.current = drill.tasks;

  const run = (effect: Effect): void => {
    if (effect.kind === 'quit') {
      p.onQuit?.();
      return exit();
    }
    const done = effect.kind === 'replay' ? p.source.replay(effect.type) : p.source.pause(effect.type, effect.paused);
    void done.then((message) => setUi((u) => ({...u, message})));
  };
  useInput(
    (input, key) => {
      const ctx = {types: types.current, tasks: tasks.current ?? [], canPause: p.source.canPause};
      const r = reduceKeys(uiRef.current, splitKeys(input, key), ctx);
      uiRef.current = r.state;
      setUi(r.state);
      for (const e of r.effects) run(e);
    },
    {isActive: p.interactive !== false},
  );
  return (
    <TopView
      snapshot={data.snapshot}
      history={data.history}
      ui={ui}
      types={types.current}
      drill={drill}
      width={width}
      height={height}
      intervalMs={p.intervalMs}
    />
  );
}
