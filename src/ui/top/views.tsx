/**
 * The views of `ax top`: pure components of the snapshot, the history and the UI state, drawn at a
 * given width (the app passes the terminal's). The text comes from layout.ts; these only arrange
 * and colour it.
 */
import {Box, Text} from 'ink';
import type {TopSample, TopSnapshot, TopTypeRow} from '../../core/inspect/top.js';
import {formatCount} from '../../cli/format.js';
import {type UiState, selectedIn} from './keymap.js';
import {errorLines, fit, headerLines, HELP_LINES, KEYS_LINE, MIN_WIDTH, sparkLines, typeTableLines} from './layout.js';

export interface TopViewProps {
  snapshot: TopSnapshot | null;
  history: readonly TopSample[];
  ui: UiState;
  /** The types shown (the snapshot's, filtered). */
  types: readonly TopTypeRow[];
  width: number;
  height: number;
  intervalMs: number;
}

const ALERT_COLOR = {ok: 'green', P2: 'yellow', P1: 'red'} as const;

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
  return (
    <Box flexDirection="column">
      {sparkLines(history, width).map((l) => (
        <Text key={l.slice(0, 9)} color="cyan">
          {l}
        </Text>
      ))}
    </Box>
  );
}

export function TypeTable({types, ui, width, rows}: Pick<TopViewProps, 'types' | 'ui' | 'width'> & {rows: number}) {
  const [head, ...lines] = typeTableLines(types, width);
  const current = selectedIn(types, ui.selected);
  const at = Math.max(0, current ? types.indexOf(current) : 0);
  // Scroll so the selection stays in view.
  const first = Math.max(0, Math.min(at - rows + 1, types.length - rows));
  const shown = lines.slice(first, first + rows);
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
  return (
    <Box flexDirection="column">
      {(snapshot?.failures ?? []).slice(0, 2).map((f, i) => (
        <Text key={i} color="red">
          {`! ${fit(f, width - 13)} (retrying)`}
        </Text>
      ))}
      {prompt === null ? null : <Text color="yellow">{prompt.slice(0, width)}</Text>}
      <Text dimColor>{(ui.filter && ui.mode !== 'filter' ? `[${ui.filter}] ` : '') + KEYS_LINE.slice(0, width)}</Text>
    </Box>
  );
}

/** The whole screen for a state: too narrow, help, errors, or the table view. */
export function TopView(p: TopViewProps) {
  if (p.width < MIN_WIDTH)
    return (
      <Text color="yellow">{`ax top needs at least ${MIN_WIDTH} columns; this terminal has ${p.width}. Widen it, or use ax top --once.`}</Text>
    );
  const current = selectedIn(p.types, p.ui.selected);
  // Header 2 + 1, sparks 3 + 1, table head 1, errors 4, footer 2-4.
  const tableRows = Math.max(3, p.height - 17);
  return (
    <Box flexDirection="column" width={p.width}>
      <Header snapshot={p.snapshot} width={p.width} intervalMs={p.intervalMs} />
      <Text> </Text>
      {p.ui.mode === 'help' ? (
        <Help />
      ) : p.ui.mode === 'errors' ? (
        <Errors snapshot={p.snapshot} type={current?.type} width={p.width} max={Math.max(3, p.height - 8)} />
      ) : (
        <>
          <Sparks history={p.history} width={p.width} />
          <Text> </Text>
          <TypeTable types={p.types} ui={p.ui} width={p.width} rows={tableRows} />
          <Text> </Text>
          <Errors snapshot={p.snapshot} type={current?.type} width={p.width} max={3} />
        </>
      )}
      <Footer snapshot={p.snapshot} ui={p.ui} types={p.types} width={p.width} />
    </Box>
  );
}
