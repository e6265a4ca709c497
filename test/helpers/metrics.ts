/** Reading Prometheus text from a running ax process, and `promtool check metrics` on it. */
import {spawn} from 'node:child_process';

/** GET /metrics on `base` (http://host:port): the status, content type and text. */
export async function scrape(base: string): Promise<{status: number; type: string; text: string}> {
  const res = await fetch(`${base}/metrics`, {signal: AbortSignal.timeout(5000)});
  return {status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text()};
}

/**
 * The value of the sample `name` whose labels include `labels` (summed when several match; undefined
 * when none does). Parses the text format's sample lines `name{a="b",…} value`.
 */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

/** Pipes `text` through `promtool check metrics` (the Debian prometheus package): exit code and output. */
export function promtoolCheckMetrics(text: string): Promise<{code: number | null; out: string}> {
  return new Promise((resolve, reject) => {
    const p = spawn('promtool', ['check', 'metrics'], {stdio: ['pipe', 'pipe', 'pipe']});
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({code, out}));
    p.stdin.end(text);
  });
}
