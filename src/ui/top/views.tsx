/**
 * The views of `ax top`: pure components of the snapshot, the history, the drill-down data and the
 * UI state, drawn at a given size (the app passes the terminal's). The text comes from layout.ts
 * and layout-drill.ts; these only arrange and colour it. The frame is exactly `height − 1` lines
 * (the middle part clipped, the footer always at the bottom), so it never scrolls the terminal and
 * every frame overwrites the whole previous one.
 */
import {Box, Text} from 'ink';
import type {TopSample, TopSnapshot, TopTypeRow} from '../../core/inspect/top.js';
import {formatCount} from '../../cli/format.js';
import {DEFAULT_SORT, sortLabel} from '../../core/inspect/top-sort.js';
import {type UiState, selectedIn, selectedTask} from './keymap.js';
import {errorLines, fit, headerLines, HELP_LINES, KEYS_LINE, MIN_WIDTH, sparkLines, typeTableLines} from './layout.js';
import {taskDetailLines, taskListLines, workerLines} from './layout-drill.js';
import {NO_DRILL, type DrillData} from './use-drill.js';

export interface TopViewProps {
  snapshot: TopSnapshot | null;
  history: readonly TopSample[];
  ui: UiState;
  /** The types shown (the snapshot's, filtered and sorted). */
  types: readonly TopTypeRow[];
  /** The drill-down's data (the `tasks` and `task` views). */
  drill?: DrillData;
  width: number;
  height: number;
  intervalMs: number;
}

const ALERT_COLOR = {ok: 'green', P2: 'yellow', P1: 'red', stale: 'magenta'} as const;

export function Header({snapshot, width, intervalMs}: Pick<TopViewProps, 'snapshot' | 'width' | 'intervalMs'>) {
  const [one, two] = headerLines(snapshot, width, intervalMs);
  return (
    <Box flexDirection="column">
      <Text bold>{one}</Text>
      <Text color={snapshot ? ALERT_COLOR[snapshot.alert.level] : undefined}>{two}</Text>
    </Box>
  );
}

export function Sparks({history, width}: Pick<TopViewProps, 'history' | 'width'>) {
  const [title, ...lines] = sparkLines(history, width);
  return (
    <Box flexDirection="column">
      <Text dimColor>{title}</Text>
      {lines.map((l) => (
        <Text key={l.slice(0, 9)} color="cyan">
          {l}
        </Text>
      ))}
    </Box>
  );
}

/** Rows of `lines` around the selected index `at` so that it stays in view. */
function scroll<T>(items: readonly T[], at: number, rows: number): {first: number; shown: T[]} {
  const first = Math.max(0, Math.min(at - rows + 1, items.length - rows));
  return {first, shown: items.slice(first, first + rows)};
}

export function TypeTable({types, ui, width, rows}: Pick<TopViewProps, 'types' | 'ui' | 'width'> & {rows: number}) {
  const [head, ...lines] = typeTableLines(types, width, ui.sort);
  const current = selectedIn(types, ui.selected);
  const at = Math.max(0, current ? types.indexOf(current) : 0);
  const {first, shown} = scroll(lines, at, rows);
  return (
    <Box flexDirection="column">
      <Text dimColor>{`  ${head}`}</Text>
      {types.length === 0 ? (
        <Text dimColor>{ui.filter ? `  no type matches "${ui.filter}"` : '  no tasks waiting, running or dead'}</Text>
      ) : (
        shown.map((l, i) => {
          const sel = first + i === at;
          return (
            <Text key={types[first + i]!.type} inverse={sel}>
              {`${sel ? '›' : ' '} ${l}`}
            </Text>
          );
        })
      )}
    </Box>
  );
}

export function Errors({snapshot, type, width, max}: {snapshot: TopSnapshot | null; type: string | undefined; width: number; max: number}) {
  const [title, ...lines] = errorLines(snapshot, type, width, max);
  return (
    <Box flexDirection="column">
      <Text bold>{title}</Text>
      {lines.map((l, i) => (
        <Text key={i} color="red">
          {l}
        </Text>
      ))}
    </Box>
  );
}

export function Help() {
  return (
    <Box flexDirection="column">
      {HELP_LINES.map((l, i) => (
        <Text key={i}>{l}</Text>
      ))}
    </Box>
  );
}

/** The newest tasks of the drilled type, the selected one marked. */
export function Tasks({ui, drill, width, rows}: {ui: UiState; drill: DrillData; width: number; rows: number}) {
  const type = ui.drill.type ?? '';
  const title = fit(`newest tasks of ${type} (ax tasks list --type ${type}) · Enter timeline · Esc back`, width);
  if (drill.tasks === null)
    return (
      <Box flexDirection="column">
        <Text bold>{title}</Text>
        <Text dimColor>{drill.error === null ? 'reading…' : `! ${fit(drill.error, width - 2)}`}</Text>
      </Box>
    );
  const [head, ...lines] = taskListLines(drill.tasks, width);
  const current = selectedTask(drill.tasks, ui.drill.selected);
  const at = Math.max(0, current ? drill.tasks.indexOf(current) : 0);
  const {first, shown} = scroll(lines, at, Math.max(1, rows - 2));
  return (
    <Box flexDirection="column">
      <Text bold>{title}</Text>
      <Text dimColor>{`  ${head}`}</Text>
      {drill.tasks.length === 0 ? <Text dimColor>{`  no task of ${type}`}</Text> : null}
      {shown.map((l, i) => {
        const sel = first + i === at;
        return (
          <Text key={drill.tasks![first + i]!.id} inverse={sel}>
            {`${sel ? '›' : ' '} ${l}`}
          </Text>
        );
      })}
    </Box>
  );
}

/** A task and its timeline. */
export function TaskTimeline({ui, drill, width, rows}: {ui: UiState; drill: DrillData; width: number; rows: number}) {
  const title = fit(`task ${ui.drill.task ?? ''} (ax tasks show) · Esc back`, width);
  const lines = drill.detail === null ? [] : taskDetailLines(drill.detail, width, Math.max(3, rows - 1));
  return (
    <Box flexDirection="column">
      <Text bold>{title}</Text>
      {drill.detail === null ? <Text dimColor>{drill.error === null ? 'reading…' : `! ${fit(drill.error, width - 2)}`}</Text> : null}
      {lines.map((l, i) => (
        <Text key={i}>{l}</Text>
      ))}
    </Box>
  );
}

/** One line per worker (the registry as `ax workers` shows it). */
export function Workers({snapshot, width, rows}: {snapshot: TopSnapshot | null; width: number; rows: number}) {
  const list = snapshot?.workerList ?? [];
  const [head, ...lines] = workerLines(list, width);
  return (
    <Box flexDirection="column">
      <Text bold>{fit('workers (ax workers) · w or Esc back', width)}</Text>
      <Text dimColor>{`  ${head}`}</Text>
      {list.length === 0 ? <Text dimColor>{'  no worker seen in the last hour'}</Text> : null}
      {lines.slice(0, Math.max(1, rows - 2)).map((l, i) => (
        <Text key={list[i]!.id} color={list[i]!.status === 'live' ? undefined : 'yellow'}>{`  ${l}`}</Text>
      ))}
    </Box>
  );
}

/** The bottom lines: read failures, the notice or prompt of the moment, the keys. */
export function Footer({snapshot, ui, types, width}: Pick<TopViewProps, 'snapshot' | 'ui' | 'types' | 'width'>) {
  const current = selectedIn(types, ui.selected);
  let prompt: string | null = ui.message;
  if (ui.mode === 'filter') prompt = `filter: ${ui.draft}▏ (Enter apply, Esc cancel)`;
  const a = ui.pending;
  if (ui.mode === 'confirm' && a?.kind === 'replay' && current) prompt = `replay ${formatCount(current.dead)} dead tasks of ${a.type}? y/N`;
  if (ui.mode === 'confirm' && a?.kind === 'pause')
    prompt = a.paused
      ? `pause ${a.type}? workers stop claiming it; submits still accepted (audited, reason "ax top") y/N`
      : `resume ${a.type}? its parked tasks are released (audited, reason "ax top") y/N`;
  // A y/N question keeps its end in view: the "y/N" is what the operator must see.
  const shown = prompt === null ? null : prompt.length > width && prompt.endsWith('y/N') ? `${prompt.slice(0, width - 5)}… y/N` : prompt;
  const sorted = ui.sort.column !== DEFAULT_SORT.column || ui.sort.desc !== DEFAULT_SORT.desc;
  const status = `${ui.filter && ui.mode !== 'filter' ? `[${ui.filter}] ` : ''}${sorted ? `[sort ${sortLabel(ui.sort)}] ` : ''}`;
  return (
    <Box flexDirection="column">
      {(snapshot?.failures ?? []).slice(0, 2).map((f, i) => (
        <Text key={i} color="red">
          {`! ${fit(f, width - 13)} (retrying)`}
        </Text>
      ))}
      {shown === null ? null : <Text color="yellow">{fit(shown, width)}</Text>}
      <Text dimColor>{fit(status + KEYS_LINE, width)}</Text>
    </Box>
  );
}

/** The middle of the screen for the mode. */
function Body(p: TopViewProps & {rows: number}) {
  const current = selectedIn(p.types, p.ui.selected);
  switch (p.ui.mode) {
    case 'help':
      return <Help />;
    case 'errors':
      return <Errors snapshot={p.snapshot} type={current?.type} width={p.width} max={Math.max(3, p.rows - 1)} />;
    case 'workers':
      return <Workers snapshot={p.snapshot} width={p.width} rows={p.rows} />;
    case 'tasks':
      return <Tasks ui={p.ui} drill={p.drill ?? NO_DRILL} width={p.width} rows={p.rows} />;
    case 'task':
      return <TaskTimeline ui={p.ui} drill={p.drill ?? NO_DRILL} width={p.width} rows={p.rows} />;
    default:
      // Sparks 4 + 1, table head 1, blank 1, errors 4: what is left is the table's.
      return (
        <>
          <Sparks history={p.history} width={p.width} />
          <Text> </Text>
          <TypeTable types={p.types} ui={p.ui} width={p.width} rows={Math.max(3, p.rows - 11)} />
          <Text> </Text>
          <Errors snapshot={p.snapshot} type={current?.type} width={p.width} max={3} />
        </>
      );
  }
}

/** The whole screen for a state: too narrow, or header, the mode's body and the footer. */
export function TopView(p: TopViewProps) {
  if (p.width < MIN_WIDTH)
    return (
      <Text color="yellow">{`ax top needs at least ${MIN_WIDTH} columns; this terminal has ${p.width}. Widen it, or use ax top --once.`}</Text>
    );
  const height = Math.max(10, p.height - 1);
  const footer =
    Math.min(2, p.snapshot?.failures.length ?? 0) +
    (p.ui.message !== null || p.ui.mode === 'filter' || p.ui.mode === 'confirm' ? 1 : 0) +
    1;
  // Header 2 + blank 1, then the body, then the footer.
  const rows = Math.max(3, height - 3 - footer);
  return (
    <Box flexDirection="column" width={p.width} height={height}>
      <Header snapshot={p.snapshot} width={p.width} intervalMs={p.intervalMs} />
      <Text> </Text>
      <Box flexDirection="column" flexGrow={1} overflow="hidden">
        <Body {...p} rows={rows} />
      </Box>
      <Footer snapshot={p.snapshot} ui={p.ui} types={p.types} width={p.width} />
    </Box>
  );
}
