/** A program under a real terminal (tmux), driven with send-keys and read with capture-pane. */
import {execFileSync} from 'node:child_process';
import {eventually} from './env.js';

/** A tmux session of `cols` × `rows` running `command` (a shell line), read with capture-pane. */
export function tmux(session: string, cols: number, rows: number, command: string) {
  execFileSync('tmux', ['new-session', '-d', '-s', session, '-x', String(cols), '-y', String(rows), command]);
  const pane = (): string => execFileSync('tmux', ['capture-pane', '-p', '-t', session]).toString();
  const alive = (): boolean => {
    try {
      execFileSync('tmux', ['has-session', '-t', session], {stdio: 'ignore'});
      return true;
    } catch {
      return false;
    }
  };
  return {
    pane,
    /** Polls the pane until it matches (or the deadline passes): never a blind sleep. */
    // One capture, tested and returned: a second one could be a later frame (a redraw in between).
    shows: (re: RegExp, what: string) =>
      eventually(
        async () => {
          const p = pane();
          return re.test(p) ? p : null;
        },
        20_000,
        what,
      ),
    keys: (...keys: string[]) => execFileSync('tmux', ['send-keys', '-t', session, ...keys]),
    /** Several keys written at once (one read for the program): `send-keys -l`. */
    burst: (text: string) => execFileSync('tmux', ['send-keys', '-t', session, '-l', text]),
    resize: (w: number, h: number) => execFileSync('tmux', ['resize-window', '-t', session, '-x', String(w), '-y', String(h)]),
    /** Resolves once the session ended (the program in it exited). */
    ended: () => eventually(async () => !alive(), 10_000, `${session} to end`),
    kill: () => {
      if (alive()) execFileSync('tmux', ['kill-session', '-t', session], {stdio: 'ignore'});
    },
  };
}
