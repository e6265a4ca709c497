/**
 * Live data: a loader run now and again every `intervalMs` while the tab is visible (a hidden tab
 * stops polling; coming back reloads at once). One request at a time; a failed load keeps the last
 * data and reports the error until a load succeeds. Changing `deps` starts over with no data.
 * `until`: polling stops once it holds for the data (a finished job).
 */
import {useCallback, useEffect, useRef, useState} from 'react';

export interface Polled<T> {
  data: T | undefined;
  error: unknown;
  /** Loads again now (after an action). */
  reload: () => void;
}

export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: readonly unknown[], until?: (d: T) => boolean): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const loadRef = useRef(load);
  loadRef.current = load;
  const untilRef = useRef(until);
  untilRef.current = until;
  const kick = useRef<() => void>(() => undefined);

  useEffect(() => {
    let alive = true;
    let timer: number | undefined;
    let busy = false;
    let again = false;
    setData(undefined);
    setError(null);
    const run = async (): Promise<void> => {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      window.clearTimeout(timer);
      let finished = false;
      try {
        const d = await loadRef.current();
        if (!alive) return;
        setData(d);
        setError(null);
        finished = untilRef.current?.(d) === true;
      } catch (e) {
        if (alive) setError(e);
      } finally {
        busy = false;
      }
      if (!alive || finished) return;
      if (again) {
        again = false;
        void run();
      } else if (!document.hidden) timer = window.setTimeout(() => void run(), intervalMs);
    };
    const onVisible = (): void => {
      if (!document.hidden) void run();
      else window.clearTimeout(timer);
    };
    kick.current = () => void run();
    document.addEventListener('visibilitychange', onVisible);
    void run();
    return () => {
      alive = false;
      window.clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [intervalMs, ...deps]);

  const reload = useCallback(() => kick.current(), []);
  return {data, error, reload};
}
