/**
 * scripts/build.mjs (npm run build, and scripts/setup.sh for npm test / demo / bench): the output
 * directory never loses a module while a build runs, a failed compile leaves it as it was, files
 * of deleted sources are removed, and --if-stale skips a build when nothing changed. Driven on a
 * small project of its own in a temporary directory (a real tsc, a second or two).
 */
import {spawn} from 'node:child_process';
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {ROOT} from '../helpers/spawn.js';

let dir: string;
const out = (): string => join(dir, 'dist');

/** Runs the build script on the small project; `during` is called on every turn of the event loop while it runs. */
function build(args: string[] = [], during?: () => void): Promise<{code: number | null; stderr: string}> {
  const child = spawn(
    process.execPath,
    [join(ROOT, 'scripts/build.mjs'), '--project', join(dir, 'tsconfig.json'), '--out', out(), ...args],
    {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let running = true;
  const exited = new Promise<number | null>((done) => child.on('close', (code) => ((running = false), done(code))));
  if (during) {
    const poll = (): void => {
      if (!running) return;
      during();
      setTimeout(poll, 1);
    };
    poll();
  }
  return exited.then((code) => ({code, stderr}));
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ax-build-'));
  mkdirSync(join(dir, 'src', 'sub'), {recursive: true});
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        rootDir: 'src',
        outDir: 'dist',
        types: [],
        strict: true,
      },
      include: ['src/**/*.ts'],
    }),
  );
  writeFileSync(join(dir, 'src', 'a.ts'), "export const a: string = 'one';\n");
  writeFileSync(join(dir, 'src', 'sub', 'b.ts'), 'export const b = 2;\n');
  writeFileSync(join(dir, 'src', 'gone.ts'), 'export const gone = true;\n');
});

afterAll(() => {
  if (dir) rmSync(dir, {recursive: true, force: true});
});

describe('scripts/build.mjs', () => {
  test('a rebuild never takes a module away; files of deleted sources are removed afterwards', async () => {
    expect((await build()).code).toBe(0);
    expect(readFileSync(join(out(), 'a.js'), 'utf8')).toContain("'one'");
    expect(existsSync(join(out(), 'gone.js'))).toBe(true);

    writeFileSync(join(dir, 'src', 'a.ts'), "export const a: string = 'two';\n");
    rmSync(join(dir, 'src', 'gone.ts'));
    let checks = 0;
    let missing = 0;
    const r = await build([], () => {
      checks++;
      if (!existsSync(join(out(), 'a.js')) || !existsSync(join(out(), 'sub', 'b.js'))) missing++;
    });
    expect(r.code, r.stderr).toBe(0);
    expect(checks).toBeGreaterThan(20); // the output was watched all through the build
    expect(missing).toBe(0);
    expect(readFileSync(join(out(), 'a.js'), 'utf8')).toContain("'two'");
    expect(existsSync(join(out(), 'gone.js'))).toBe(false);
    expect(existsSync(join(out(), 'sub', 'b.js'))).toBe(true);
  });

  test('a failed compile leaves the output as it was (and no unfinished build behind)', async () => {
    const before = readFileSync(join(out(), 'a.js'), 'utf8');
    writeFileSync(join(dir, 'src', 'a.ts'), 'export const a: string = 3;\n');
    const r = await build();
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/is left as it was/);
    expect(readFileSync(join(out(), 'a.js'), 'utf8')).toBe(before);
    writeFileSync(join(dir, 'src', 'a.ts'), "export const a: string = 'three';\n");
    expect((await build()).code).toBe(0);
    expect(readFileSync(join(out(), 'a.js'), 'utf8')).toContain("'three'");
    const leftovers = (await import('node:fs')).readdirSync(out()).filter((e) => e.startsWith('.next-'));
    expect(leftovers).toEqual([]);
  });

  test('--if-stale skips a build when no source changed since the last one, and builds when one did', async () => {
    const stamp = statSync(join(out(), '.build-stamp')).mtimeMs;
    const skipped = await build(['--if-stale']);
    expect(skipped.code).toBe(0);
    expect(skipped.stderr).toMatch(/is current/);
    expect(statSync(join(out(), '.build-stamp')).mtimeMs).toBe(stamp);
    writeFileSync(join(dir, 'src', 'sub', 'b.ts'), 'export const b = 4;\n');
    const built = await build(['--if-stale']);
    expect(built.code, built.stderr).toBe(0);
    expect(built.stderr).not.toMatch(/is current/);
    expect(readFileSync(join(out(), 'sub', 'b.js'), 'utf8')).toContain('b = 4');
  });

  test('npm run build and scripts/setup.sh use it (no rm -rf dist)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {scripts: Record<string, string>};
    expect(pkg.scripts.build).toBe('node scripts/build.mjs');
    const setup = readFileSync(join(ROOT, 'scripts/setup.sh'), 'utf8');
    expect(setup).toMatch(/^node scripts\/build\.mjs --if-stale$/m);
    expect(setup).not.toMatch(/rm -rf dist/);
  });
});
