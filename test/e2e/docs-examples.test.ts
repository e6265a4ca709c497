/**
 * The examples of the docs run (README.md and docs/, except the generated CLI pages, whose examples
 * are the commands' own, and the pages of test/helpers/markdown.ts NOT_RUN, which say why):
 * - every `js` block runs with Node.js against the real MariaDB and RabbitMQ, importing the built
 *   package as `ax-executor`: a module (first line `// name.js`) is loaded and must export
 *   defineHandlers(...); any other block runs as a script and must exit 0 (a block that uses the
 *   client `ax` without connecting gets one, as the text around it says);
 * - every `sql` block runs on a database with ax's outbox table;
 * - the getting-started walk-through runs as written: its worker and scheduler, its submit script,
 *   and its `ax` commands, until the task it submitted has succeeded.
 * The json blocks are loaded as configuration and the `ax` lines of every shell block checked
 * against the CLI in test/unit/docs.test.ts.
 */
import {spawn} from 'node:child_process';
import {mkdirSync, rmSync, writeFileSync} from 'node:fs';
import {randomBytes} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {OUTBOX_DDL} from '../../src/core/outbox/schema.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {codeBlocks, docFiles, isGeneratedCliPage, NOT_RUN, readDoc, shellCommands, type CodeBlock} from '../helpers/markdown.js';
import {ROOT, runCli, spawnAx, type Spawned} from '../helpers/spawn.js';

const blocks = docFiles()
  .filter((f) => !isGeneratedCliPage(f) && !NOT_RUN.has(f))
  .flatMap((f) => codeBlocks(f, readDoc(f)));
const moduleName = (b: CodeBlock): string | undefined => /^\/\/ ([\w.-]+\.js)\s*$/m.exec(b.code.split('\n')[0]!)?.[1];

// Inside the repository, so that `import … from 'ax-executor'` resolves to this package (dist/).
const DIR = `${ROOT}.docs-examples-${randomBytes(4).toString('hex')}/`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runNode(file: string, env: Record<string, string>, timeoutMs = 60_000): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [file], {
      cwd: DIR,
      env: {...process.env, ...env, AX_CONFIG: ''},
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({code, stdout, stderr});
    });
  });
}

/** A script block as it runs: the client `ax` supplied when the block uses it without connecting; exits once it is done. */
function script(b: CodeBlock): string {
  const needsClient = /\bax\./.test(b.code) && !/=\s*await connect\(/.test(b.code);
  const head = needsClient ? "import {connect} from 'ax-executor';\nconst ax = await connect();\n" : '';
  const tail = needsClient ? '\nawait ax.close();' : '';
  // Hoist the block's imports above the supplied client.
  const imports = b.code.split('\n').filter((l) => /^import\s/.test(l));
  const body = b.code.split('\n').filter((l) => !/^import\s/.test(l));
  return `${imports.join('\n')}\n${head}${body.join('\n')}${tail}\nprocess.exit(0);\n`;
}

describe('the examples of the docs', () => {
  let env: TestEnv;
  let vars: Record<string, string>;
  const procs: Spawned[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    // The business database of the outbox examples: the test database, with the table of their UPDATE.
    await env.sql(OUTBOX_DDL);
    await env.sql("CREATE TABLE orders (id BIGINT PRIMARY KEY, state VARCHAR(20) NOT NULL DEFAULT 'new')");
    await env.sql('INSERT INTO orders (id) VALUES (42)');
    vars = {...env.env, SHOP_DATABASE_URL: env.env.AX_MYSQL_URL!};
    mkdirSync(DIR, {recursive: true});
  });
  afterAll(async () => {
    // The walk-through's worker and scheduler: a graceful stop, as their supervisor would.
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => p.exited));
    rmSync(DIR, {recursive: true, force: true});
    await env?.dispose();
  });

  it('every js module example exports its handlers', {timeout: 60_000}, async () => {
    const modules = blocks.filter((b) => b.lang === 'js' && moduleName(b));
    expect(modules.length).toBeGreaterThanOrEqual(2);
    for (const [i, b] of modules.entries()) {
      const file = `${DIR}m${i}-${moduleName(b)}`;
      writeFileSync(file, b.code);
      const check = `${DIR}check-m${i}.mjs`;
      writeFileSync(
        check,
        `const m = await import(${JSON.stringify(file)});\nconst h = m.default ?? m.handlers;\nif (h?.__axHandlers !== true) throw new Error('no defineHandlers export');\nconsole.log(JSON.stringify([...h.byType.keys()]));\n`,
      );
      const r = await runNode(check, vars);
      expect({where: `${b.file}:${b.line}`, code: r.code, stderr: r.stderr}).toEqual({where: `${b.file}:${b.line}`, code: 0, stderr: ''});
      const types = JSON.parse(r.stdout) as string[];
      expect(types.length, `${b.file}:${b.line}`).toBeGreaterThan(0);
      for (const t of types) expect(b.code, t).toContain(`${t}:`);
    }
  });

  it('every js script example runs to its end against the real servers', {timeout: 120_000}, async () => {
    const scripts = blocks.filter((b) => b.lang === 'js' && !moduleName(b));
    expect(scripts.length).toBeGreaterThanOrEqual(4);
    for (const [i, b] of scripts.entries()) {
      const file = `${DIR}s${i}.mjs`;
      writeFileSync(file, script(b));
      const r = await runNode(file, vars);
      expect({where: `${b.file}:${b.line}`, code: r.code, stderr: r.stderr}).toEqual({where: `${b.file}:${b.line}`, code: 0, stderr: ''});
    }
    // What the SDK page's examples did, as their comments say.
    const credit = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE dedup_key = 'signup-credit:7' AND priority = 'high'");
    expect(Number(credit[0]!.n)).toBe(1);
    const schedule = await env.sql<{paused: number}>("SELECT paused FROM cron_schedules WHERE name = 'report-daily'");
    expect(schedule.map((s) => Number(s.paused))).toEqual([1]);
    const outbox = await env.sql<{type: string}>("SELECT type FROM task_outbox WHERE type = 'order_notify'");
    expect(outbox.length).toBeGreaterThanOrEqual(1);
    const order = await env.sql<{state: string}>('SELECT state FROM orders WHERE id = 42');
    expect(order[0]!.state).toBe('paid');
  });

  it('every sql example runs on the outbox table', async () => {
    const sql = blocks.filter((b) => b.lang === 'sql');
    expect(sql.length).toBeGreaterThanOrEqual(1);
    const before = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_outbox');
    let statements = 0;
    for (const b of sql)
      for (const s of b.code.split(/;\s*$/m).filter((x) => x.trim() !== '')) {
        await env.sql(s);
        statements++;
      }
    const after = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_outbox');
    expect(Number(after[0]!.n) - Number(before[0]!.n)).toBe(statements);
  });

  it('the getting-started walk-through runs as written, until its task succeeded', {timeout: 120_000}, async () => {
    const page = blocks.filter((b) => b.file === 'docs/getting-started.md');
    const handlers = page.find((b) => b.lang === 'js' && moduleName(b) === 'handlers.js')!;
    const submit = page.find((b) => b.lang === 'js' && /\.submit\(/.test(b.code))!;
    expect(handlers).toBeDefined();
    expect(submit).toBeDefined();
    writeFileSync(`${DIR}handlers.js`, handlers.code);
    const commands = page.filter((b) => b.lang === 'sh').flatMap((b) => shellCommands(b.code).filter((w) => w[0] === 'ax'));
    // The daemons it starts, then the rest in order (`ax top` needs a terminal: its --once form instead).
    const daemon = (w: string[]): boolean => w[1] === 'worker' || w[1] === 'scheduler';
    expect(commands.filter(daemon).map((w) => w[1])).toEqual(['worker', 'scheduler']);
    for (const w of commands.filter(daemon)) {
      const args = w.slice(1).map((a) => (a === './handlers.js' ? `${DIR}handlers.js` : a));
      procs.push(spawnAx(args, vars));
    }
    writeFileSync(`${DIR}first.mjs`, script(submit));
    const r = await runNode(`${DIR}first.mjs`, vars);
    expect({code: r.code, stderr: r.stderr}).toEqual({code: 0, stderr: ''});
    const id = r.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await eventually(
      async () => (await env.sql<{state: string}>('SELECT state FROM tasks WHERE id = ?', [id]))[0]?.state === 'succeeded',
      60_000,
      `task ${id} succeeded`,
    );
    for (const w of commands.filter((x) => !daemon(x))) {
      const args = w.slice(1).map((a) => (a === '<id>' ? id : a));
      if (args[0] === 'top') args.push('--once', '--json');
      const out = await runCli(args, {env: vars, cwd: DIR});
      expect({command: w.join(' '), code: out.code, stderr: out.stderr}).toEqual({command: w.join(' '), code: 0, stderr: ''});
      if (args[0] === 'tasks' && args[1] === 'show') expect(out.stdout).toContain('succeeded');
    }
  });
});
