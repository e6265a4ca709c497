/**
 * A mistyped command on a terminal: ax asks whether the nearest command was meant, runs it on yes,
 * and exits 127 on no (off a terminal it only names it: cli-polish.test.ts). Under tmux, with the
 * built CLI (`node scripts/build.mjs` first).
 */
import {afterEach, expect, test} from 'vitest';
import {ROOT} from '../helpers/spawn.js';
import {tmux} from '../helpers/tmux.js';

const sessions: Array<ReturnType<typeof tmux>> = [];
afterEach(() => {
  for (const s of sessions.splice(0)) s.kill();
});

/** Runs `ax <args>` in a terminal, then prints its exit code and waits, so the pane can be read. */
function axInTerminal(name: string, args: string): ReturnType<typeof tmux> {
  const t = tmux(`axnf_${process.pid}_${name}`, 120, 12, `cd '${ROOT}' && node bin/run.js ${args}; echo "EXIT=$?"; sleep 60`);
  sessions.push(t);
  return t;
}

test('yes runs the command that was meant', async () => {
  const t = axInTerminal('yes', 'versoin');
  await t.shows(/versoin is not an ax command\. Did you mean `ax version`\? \[y\/N\]/, 'the question');
  t.keys('y', 'Enter');
  const pane = await t.shows(/EXIT=\d+/, 'the exit code');
  expect(pane).toMatch(/ax-executor\/\d+\.\d+\.\d+/);
  expect(pane).toMatch(/EXIT=0/);
});

test('no (or just Enter) runs nothing and exits 127', async () => {
  const t = axInTerminal('no', 'versoin');
  await t.shows(/Did you mean `ax version`\? \[y\/N\]/, 'the question');
  t.keys('Enter');
  const pane = await t.shows(/EXIT=\d+/, 'the exit code');
  expect(pane).toMatch(/Run `ax help` for the list of commands/);
  expect(pane).not.toMatch(/ax-executor\/\d/);
  expect(pane).toMatch(/EXIT=127/);
});
