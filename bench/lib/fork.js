// A consumer (lib/consumers.js) in a child process (bench/child.js), driven over IPC: the handle
// has the methods of HANDLE_METHODS, each an RPC that resolves with the child's answer or rejects
// with its error (or when the child has exited). Used by bench/run.js and the benches that run alone.
import {fork} from 'node:child_process';
import {fileURLToPath} from 'node:url';
import {HANDLE_METHODS} from './consumers.js';
import {stopChild, trackChild, within} from './guard.js';

const CHILD = fileURLToPath(new URL('../child.js', import.meta.url));

/**
 * Forks bench/child.js in `mode` with options `o` and resolves once it is ready with
 * {pid, inproc: false, label, ...RPCs, dispose()}; `dispose()` asks the consumer to stop (8 s at
 * most), then ends the child (SIGTERM, SIGKILL after 3 s). Rejects when the child exits first.
 */
export async function forkConsumer(mode, o, label, {execArgv = []} = {}) {
  const child = trackChild(fork(CHILD, [mode, JSON.stringify(o)], {stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv}));
  const pending = new Map();
  let seq = 0;
  let exited = false;
  await new Promise((resolve, reject) => {
    child.on('message', (m) => {
      if (m?.ev === 'ready') resolve();
      else if (m?.id !== undefined && pending.has(m.id)) {
        const p = pending.get(m.id);
        pending.delete(m.id);
        if (m.ok) p.resolve(m.result);
        else p.reject(new Error(m.error));
      }
    });
    child.on('exit', (code, signal) => {
      exited = true;
      for (const p of pending.values()) p.reject(new Error(`${label} exited (${code ?? signal})`));
      pending.clear();
      reject(new Error(`${label} exited before it was ready (${code ?? signal})`));
    });
  });
  const call = (cmd, ...args) =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error(`${label} has exited`));
      const id = ++seq;
      pending.set(id, {resolve, reject});
      child.send({id, cmd, args});
    });
  const h = {pid: child.pid, inproc: false, label};
  for (const m of HANDLE_METHODS) h[m] = (...a) => call(m, ...a);
  h.dispose = async () => {
    if (exited) return;
    await within(
      h.stop().catch(() => undefined),
      8000,
    );
    await stopChild(child, {signal: 'SIGTERM', graceMs: 3000});
  };
  return h;
}
