/**
 * Starts the `ax top` app on the terminal; resolves when the operator quits (q or Ctrl-C). It
 * draws on the terminal's alternate screen (the shell's screen comes back on exit), and clears it
 * on every resize before the next frame: a terminal that re-wraps the old frame's lines to the new
 * width would otherwise leave pieces of it that the next frame does not overwrite.
 */
import {render} from 'ink';
import type {TopSource} from '../../cli/top.js';
import type {TopSort} from '../../core/inspect/top-sort.js';
import {TopApp} from './app.js';

/** Alternate screen on, cursor home / alternate screen off. */
const ENTER = '\u001B[?1049h\u001B[H';
const LEAVE = '\u001B[?1049l';
/** Erase the whole screen, cursor home. */
const CLEAR = '\u001B[2J\u001B[H';

export async function runTop(o: {source: TopSource; intervalMs: number; filter?: string; sort?: TopSort}): Promise<void> {
  const out = process.stdout;
  const clear = (): void => void out.write(CLEAR);
  out.write(ENTER);
  // Before Ink's own resize handler, so the frame it draws lands on a clean screen.
  out.prependListener('resize', clear);
  try {
    const app = render(
      <TopApp
        source={o.source}
        intervalMs={o.intervalMs}
        {...(o.filter === undefined ? {} : {filter: o.filter})}
        {...(o.sort === undefined ? {} : {sort: o.sort})}
        interactive={process.stdin.isTTY === true}
      />,
      {exitOnCtrlC: false},
    );
    await app.waitUntilExit();
  } finally {
    out.off('resize', clear);
    out.write(LEAVE);
  }
}
