/**
 * The `ax top` app: the data hook, the keymap and the views wired together. Keys are read only
 * when `interactive` (stdin is a terminal: Ink's useInput throws otherwise).
 */
import {useApp, useInput, useStdout} from 'ink';
import {useEffect, useRef, useState} from 'react';
import type {TopSource} from '../../cli/top.js';
import type {TopTypeRow} from '../../core/inspect/top.js';
import {type Effect, initialUi, reduceKey, selectedIn, type UiState, visible} from './keymap.js';
import {useTopData} from './use-top-data.js';
import {TopView} from './views.js';

export interface TopAppProps {
  source: Pick<TopSource, 'refresh' | 'canPause' | 'replay' | 'pause'>;
  intervalMs: number;
  /** The type filter to start with (`--type`). */
  filter?: string;
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
  const [ui, setUi] = useState<UiState>(() => initialUi(p.filter ?? ''));
  const {width, height} = useSize(p);
  const types = useRef<TopTypeRow[]>([]);
  const current = useRef<string | null>(null);
  const data = useTopData(p.source, p.intervalMs, current.current);
  types.current = visible(data.snapshot?.types ?? [], ui.filter);
  current.current = selectedIn(types.current, ui.selected)?.type ?? null;
  const uiRef = useRef(ui);
  uiRef.current = ui;

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
      const r = reduceKey(uiRef.current, input, key, {types: types.current, canPause: p.source.canPause});
      uiRef.current = r.state;
      setUi(r.state);
      if (r.effect) run(r.effect);
    },
    {isActive: p.interactive !== false},
  );
  return (
    <TopView
      snapshot={data.snapshot}
      history={data.history}
      ui={ui}
      types={types.current}
      width={width}
      height={height}
      intervalMs={p.intervalMs}
    />
  );
}
