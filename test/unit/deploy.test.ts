/**
 * deploy/: the image's health check against real HTTP endpoints, and the consistency of the
 * Dockerfile and manifests that no parser here checks (no YAML parser is a dependency: the
 * manifests were checked with `kubectl kustomize deploy/k8s`; these tests keep the ports and copied
 * paths agreeing).
 */
import {spawn} from 'node:child_process';
import {readFileSync} from 'node:fs';
import {createServer, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';

const ROOT = new URL('../..', import.meta.url);
const read = (p: string): string => readFileSync(new URL(p, ROOT), 'utf8');
const CHECK = new URL('deploy/healthcheck.js', ROOT).pathname;

/** Runs the health check with exactly `env` (asynchronously: the endpoint is served by this process); resolves with its exit code. */
function check(env: Record<string, string>, path = '/healthz'): Promise<number | null> {
  const child = spawn(process.execPath, [CHECK, path], {env: {PATH: process.env.PATH ?? '', ...env}, stdio: 'ignore'});
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

describe('deploy/healthcheck.js', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((req, res) => res.writeHead(req.url === '/healthz' ? 200 : 503).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const nobody = {AX_HEALTHCHECK_PID: '999999999'}; // no such process: no command line to read

  it('asks the port of the main process: its --health-port, 200 → 0, anything else → 1', async () => {
    const main = spawn(
      process.execPath,
      ['-e', 'setInterval(() => {}, 1000)', 'worker', '--health-port', String(port), '--health-host=0.0.0.0'],
      {stdio: 'ignore'},
    );
    try {
      await new Promise((r) => main.once('spawn', r));
      expect(await check({AX_HEALTHCHECK_PID: String(main.pid)})).toBe(0);
      expect(await check({AX_HEALTHCHECK_PID: String(main.pid)}, '/readyz')).toBe(1);
    } finally {
      main.kill();
    }
  });

  it('falls back to AX_METRICS_PORT, and passes when no port is configured (one-shot commands)', async () => {
    expect(await check({...nobody, AX_METRICS_PORT: String(port)})).toBe(0);
    expect(await check({...nobody, AX_METRICS_PORT: String(port)}, '/readyz')).toBe(1);
    expect(await check(nobody)).toBe(0);
    expect(await check({...nobody, AX_METRICS_PORT: '0'})).toBe(0);
  });

  it('fails when nothing answers', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const free = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect(await check({...nobody, AX_METRICS_PORT: String(free)})).toBe(1);
  });
});

describe('deploy/ consistency', () => {
  it('each Deployment serves its probes and metrics on the port its prometheus.io/port annotation names', () => {
    for (const file of ['worker.yaml', 'scheduler.yaml', 'relay.yaml']) {
      const y = read(`deploy/k8s/${file}`);
      const annotated = /prometheus\.io\/port: '(\d+)'/.exec(y)?.[1];
      const served = /--health-port, '(\d+)'/.exec(y)?.[1] ?? /name: AX_RELAY_HEALTH_PORT\n\s+value: '(\d+)'/.exec(y)?.[1];
      const container = /containerPort: (\d+)/.exec(y)?.[1];
      expect(annotated, file).toBeDefined();
      expect([served, container], file).toEqual([annotated, annotated]);
      expect(y, file).toMatch(/path: \/healthz, port: health/);
      expect(y, file).toMatch(/path: \/readyz, port: health/);
      expect(y, file).toMatch(/runAsNonRoot: true/);
    }
  });

  for (const file of ['deploy/Dockerfile', 'sidecar/Dockerfile'])
    it(`${file} installs the packed package, runs as non-root, and its .dockerignore lets in everything it copies`, () => {
      const docker = read(file);
      expect(docker).toMatch(/RUN npm pack --pack-destination/);
      expect(docker).toMatch(/npm ci --omit=dev/);
      // The runtime stage copies the installed package, never the sources.
      const runtime = docker.slice(docker.lastIndexOf('\nFROM '));
      expect(runtime).not.toMatch(/COPY (--from=\w+ )?\/?(src|dist)\b/);
      expect(runtime).toMatch(/COPY --from=install \/app/);
      expect(runtime).toMatch(/USER 1000:1000/);
      const allowed = read(`${file}.dockerignore`)
        .split('\n')
        .filter((l) => l.startsWith('!'))
        .map((l) => l.slice(1).replace(/\/\*\*$/, ''));
      const copied = [...docker.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(' '));
      expect(copied.length).toBeGreaterThan(5);
      for (const c of copied) expect(allowed, c).toContain(c);
    });
});
