/** Starts the `ax top` app on the terminal; resolves when the operator quits (q or Ctrl-C). */
import {render} from 'ink';
import type {TopSource} from '../../cli/top.js';
import {TopApp} from './app.js';

export async function runTop(o: {source: TopSource; intervalMs: number; filter?: string}): Promise<void> {
  const app = render(
    <TopApp
      source={o.source}
      intervalMs={o.intervalMs}
      {...(o.filter === undefined ? {} : {filter: o.filter})}
      interactive={process.stdin.isTTY === true}
    />,
    {
      exitOnCtrlC: false,
    },
  );
  await app.waitUntilExit();
}
