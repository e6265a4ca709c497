// Browsers on the console, for P1 with the console open (bench/run.js --console N): `ax web` as its
// own process on the benchmark's database (no tokens: loopback), and N clients each polling what
// the overview page polls (GET /api/v1/overview every 2 s), started at staggered times.
import {spawn} from 'node:child_process';
import {fileURLToPath} from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Starts `ax web --port 0` with `env`; resolves with its URL and stop(). Rejects when it exits first. */
export async function startConsoleProcess(env) {
  const child = spawn(process.execPath, ['bin/run.js', 'web', '--port', '0'], {
    cwd: ROOT,
    env: {...process.env, ...env},
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise((resolve, reject) => {
    let text = '';
    child.stderr.on('data', (d) => {
      text += d;
      const m = /the console is at (\S+?)\/? /.exec(text);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`ax web exited (${code}) before listening: ${text.slice(-500)}`)));
  });
  child.stderr.resume();
  return {
    url,
    pid: child.pid,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/**
 * N pollers of `url`'s overview every `everyMs`; settled() resolves once each has been answered and
 * the console's sampler has its charts (the overview's `sampledAt` and a series); stop() ends them
 * and returns how many requests were answered.
 */
export function startPollers(url, n, everyMs = 2000) {
  let running = true;
  let answered = 0;
  let failed = 0;
  let sampled = false;
  const loops = Array.from({length: n}, async (_, i) => {
    await new Promise((r) => setTimeout(r, (i * everyMs) / n));
    while (running) {
      try {
        const res = await fetch(`${url}/api/v1/overview`);
        const body = await res.json().catch(() => null);
        if (res.ok) answered++;
        else failed++;
        if (body?.sampledAt && Array.isArray(body.series) && body.series.length > 0) sampled = true;
      } catch {
        failed++;
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  });
  return {
    async settled(timeoutMs = 30_000) {
      const t0 = Date.now();
      while (!(answered >= n && sampled)) {
        if (Date.now() - t0 > timeoutMs)
          throw new Error(`the console did not settle within ${timeoutMs} ms (${answered} answered, ${failed} failed)`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      running = false;
      await Promise.all(loops);
      return {answered, failed};
    },
  };
}
