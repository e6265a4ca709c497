/**
 * The data hook of `ax top`: refreshes through the source every `intervalMs` (the next refresh
 * starts when the previous one ended, so a slow database never stacks reads), keeps the history
 * and the latest snapshot. A source that throws is shown as a failure and retried: never a crash;
 * the last data stays on screen but its alert says it is stale (never "ok" from old data).
 */
import {useEffect, useRef, useState} from 'react';
import {errorMessage} from '../../core/errors.js';
import {initialTopState, staleAlert, type TopSample, type TopSnapshot} from '../../core/inspect/top.js';
import type {TopSource} from '../../cli/top.js';

export interface TopData {
  snapshot: TopSnapshot | null;
  history: readonly TopSample[];
}

export function useTopData(source: Pick<TopSource, 'refresh'>, intervalMs: number, errorsType: string | null): TopData {
  const [data, setData] = useState<TopData>({snapshot: null, history: []});
  const state = useRef(initialTopState());
  const type = useRef(errorsType);
  type.current = errorsType;
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async (): Promise<void> => {
      try {
        const r = await source.refresh(state.current, type.current);
        state.current = r.state;
        if (!stopped) setData({snapshot: r.snapshot, history: r.state.history});
      } catch (e) {
        const alert = staleAlert(state.current.history);
        if (!stopped) setData((d) => ({...d, snapshot: d.snapshot && {...d.snapshot, alert, failures: [errorMessage(e)]}}));
      }
      if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
    };
    void tick();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [source, intervalMs]);
  return data;
}
