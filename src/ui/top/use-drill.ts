/**
 * The drill-down's data hook: while the `tasks` view is open, the newest tasks of its type; while
 * the `task` view is open, that task and its timeline. Read when the view opens and again every
 * `intervalMs` (the next read starts when the previous one ended). A failed read is kept as its
 * message next to the last data: never a crash.
 */
import {useEffect, useState} from 'react';
import {errorMessage} from '../../core/errors.js';
import type {TaskDetail} from '../../core/inspect/inspect.js';
import type {TaskRecord} from '../../core/task/model.js';
import type {TopSource} from '../../cli/top.js';

export interface DrillData {
  /** What the data below is of (`tasks:<type>` or `task:<id>`): data of another view is not shown. */
  of: string | null;
  tasks: TaskRecord[] | null;
  detail: TaskDetail | null;
  error: string | null;
}

export const NO_DRILL: DrillData = {of: null, tasks: null, detail: null, error: null};

/** The key of what a view shows: null when it shows no drill-down. */
export function drillKey(mode: string, drill: {type: string | null; task: string | null}): string | null {
  if (mode === 'tasks' && drill.type !== null) return `tasks:${drill.type}`;
  if (mode === 'task' && drill.task !== null) return `task:${drill.task}`;
  return null;
}

export function useDrill(source: Pick<TopSource, 'tasks' | 'task'>, key: string | null, intervalMs: number): DrillData {
  const [data, setData] = useState<DrillData>(NO_DRILL);
  useEffect(() => {
    if (key === null) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const [kind, arg] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
    const tick = async (): Promise<void> => {
      try {
        const next: DrillData =
          kind === 'tasks'
            ? {of: key, tasks: await source.tasks(arg), detail: null, error: null}
            : {of: key, tasks: null, detail: await source.task(arg), error: null};
        if (!stopped) setData(next);
      } catch (e) {
        if (!stopped) setData((d) => (d.of === key ? {...d, error: errorMessage(e)} : {...NO_DRILL, of: key, error: errorMessage(e)}));
      }
      if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
    };
    void tick();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [source, key, intervalMs]);
  return data.of === key ? data : NO_DRILL;
}
