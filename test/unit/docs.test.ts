/**
 * The documentation (README.md and docs/) stays true to the code and navigable:
 * - the generated parts are what the code says (the settings table; every command in the CLI
 *   reference — `npm run docs` regenerates both), and README stays a front page (≤ 300 lines);
 * - every relative link resolves, to a file and, for a Markdown file, to one of its headings'
 *   anchors (GitHub's rules), and every `src/…` path the docs name exists;
 * - every fenced code block says what it is, and every `ax …` command of a shell example names an
 *   existing command with flags it has, every `npm run` an existing script (the js, sql and json
 *   examples are run in test/e2e/docs-examples.test.ts);
 * - the table of what an SDK user installs lists exactly the package's dependencies, and names what
 *   the SDK's entry point really loads.
 */
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join, normalize} from 'node:path';
import {pathToFileURL} from 'node:url';
import {describe, expect, it} from 'vitest';
import {configTable} from '../../src/core/config/describe.js';
import {
  anchors,
  type CodeBlock,
  codeBlocks,
  docFiles,
  isGeneratedCliPage,
  namedSourcePaths,
  NOT_RUN,
  readDoc,
  relativeLinks,
  shellCommands,
} from '../helpers/markdown.js';
import {loadConfig} from '../../src/core/config/config.js';
import {ROOT} from '../helpers/spawn.js';

const files = docFiles();
const between = (text: string, start: string, stop: string): string =>
  text.slice(text.indexOf(start) + start.length, text.indexOf(stop)).trim();

/** Command ids (`tasks list`) from the files under src/commands. */
function commandIds(): string[] {
  return readdirSync(`${ROOT}src/commands`, {recursive: true, encoding: 'utf8'})
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.replace(/\.ts$/, '').split(/[\\/]/).join(' '))
    .sort();
}

describe('the generated reference', () => {
  it('documents every setting with its env variable and default (npm run docs regenerates it)', () => {
    const page = readDoc('docs/reference/configuration.md');
    expect(between(page, '<!-- config -->', '<!-- configstop -->')).toBe(configTable());
  });

  it('has every command in its topic page of the CLI reference, and every topic in the index (npm run docs)', () => {
    const ids = commandIds();
    expect(ids.length).toBeGreaterThan(15);
    const index = between(readDoc('docs/reference/cli.md'), '<!-- commands -->', '<!-- commandsstop -->');
    for (const id of ids) {
      const topic = id.split(' ')[0]!;
      const page = `docs/reference/cli/${topic}.md`;
      expect(existsSync(`${ROOT}${page}`), page).toBe(true);
      expect(readDoc(page), id).toContain(`## \`ax ${id}`);
      expect(index, topic).toContain(`](cli/${topic}.md)`);
    }
  });

  it('names every command topic in the hand-written "Commands at a glance" of docs/reference/cli.md', () => {
    const page = readDoc('docs/reference/cli.md');
    const glance = between(page, '## Commands at a glance', '## Examples');
    const topics = new Set(commandIds().map((id) => id.split(' ')[0]!));
    for (const topic of topics) expect(glance, topic).toContain(`| \`ax ${topic}`);
  });

  it('lists exactly the read-only commands (static readOnly) in docs/reference/cli.md', () => {
    const page = readDoc('docs/reference/cli.md');
    const para = page.slice(page.indexOf('Read-only commands never create a database'));
    const spans = [...para.slice(0, para.indexOf(';')).matchAll(/`ax ([a-z]+(?:[ -][a-z]+)*?)(?: ([a-z|]+))?`/g)];
    const listed = spans.flatMap((m) => (m[2] ? m[2].split('|').map((sub) => `${m[1]} ${sub}`) : [m[1]!])).filter((c) => c !== 'migrate');
    const readOnly = commandIds().filter((id) =>
      /static (?:override )?readOnly = true/.test(readFileSync(`${ROOT}src/commands/${id.split(' ').join('/')}.ts`, 'utf8')),
    );
    expect(listed.sort()).toEqual(readOnly);
  });

  it('README is a front page: at most 300 lines, the quick start and its two commands, no generated reference', () => {
    const readme = readDoc('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    expect(readme).toContain('## Quick start');
    expect(readme).toContain('npm run demo');
    expect(readme).toContain('npm test');
    expect(readme).not.toContain('<!-- commands -->');
    expect(readme).not.toContain('<!-- config -->');
  });
});

describe('links', () => {
  const anchorsOf = new Map<string, Set<string>>();
  const anchorsIn = (file: string): Set<string> => {
    let a = anchorsOf.get(file);
    if (!a) anchorsOf.set(file, (a = anchors(readFileSync(`${ROOT}${file}`, 'utf8'))));
    return a;
  };

  it('every relative link in README.md, docs/ and the other READMEs resolves, to the heading when it names one', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of [...files, 'deploy/README.md', 'sidecar/README.md']) {
      for (const link of relativeLinks(file, readDoc(file))) {
        checked++;
        const [path, anchor] = link.target.split('#') as [string, string | undefined];
        const target = path === '' ? file : normalize(join(dirname(file), decodeURI(path)));
        const where = `${link.file}:${link.line} → ${link.target}`;
        if (!existsSync(`${ROOT}${target}`)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!target.endsWith('.md') || statSync(`${ROOT}${target}`).isDirectory())
          broken.push(`${where} (an anchor into a non-Markdown file)`);
        else if (!anchorsIn(target).has(anchor)) broken.push(`${where} (no such heading)`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });

  it('every repository path the docs name in code (`src/…`, `test/…`, …) exists', () => {
    const missing: string[] = [];
    for (const file of files)
      for (const p of namedSourcePaths(readDoc(file))) if (!existsSync(`${ROOT}${p}`)) missing.push(`${file}: ${p}`);
    expect(missing).toEqual([]);
  });

  it('every AX_ variable the docs name is read by the code (src/, sidecar/, bench/, scripts/; test/ for the knobs of the testing page)', () => {
    const read = (dirs: string[]): string =>
      dirs
        .flatMap((dir) =>
          readdirSync(`${ROOT}${dir}`, {recursive: true, encoding: 'utf8'})
            .filter((f) => /\.(ts|tsx|js|mjs|sh)$/.test(f) && !f.startsWith('results'))
            .map((f) => readFileSync(`${ROOT}${dir}/${f}`, 'utf8')),
        )
        .join('\n');
    const code = read(['src', 'sidecar', 'bench', 'scripts']);
    // The test knobs (AX_MODEL_RUNS, AX_TEST_*, AX_FAULTS_FULL) are read by the tests, and named on the testing and faults pages only.
    const withTests = `${code}\n${read(['test'])}`;
    const unknown: string[] = [];
    for (const file of [...files, 'deploy/README.md', 'sidecar/README.md'])
      for (const m of readDoc(file).matchAll(/\bAX_[A-Z][A-Z0-9_]*[A-Z0-9]\b/g))
        if (!(file === 'docs/testing.md' || file === 'docs/faults.md' ? withTests : code).includes(m[0])) unknown.push(`${file}: ${m[0]}`);
    expect([...new Set(unknown)]).toEqual([]);
  });

  it('the anchors are computed the way GitHub computes them', () => {
    const a = anchors(
      '# ax — Async eXecutor\n## The live view (`ax top`)\n## Archive and payloads — 1 Dec 2026 (issue 13)\n## Ax\n## Ax\n`ax version`\n====\n',
    );
    expect([...a]).toEqual([
      'ax--async-executor',
      'the-live-view-ax-top',
      'archive-and-payloads--1-dec-2026-issue-13',
      'ax',
      'ax-1',
      'ax-version',
    ]);
  });
});

describe('code examples', () => {
  const blocks = files.filter((f) => !isGeneratedCliPage(f)).flatMap((f) => codeBlocks(f, readDoc(f)));
  const LANGS = ['sh', 'js', 'json', 'sql', 'text'];

  it(`every fenced block names its language (${LANGS.join(', ')}; text: output and diagrams)`, () => {
    expect(blocks.length).toBeGreaterThan(20);
    const bad = blocks.filter((b) => !LANGS.includes(b.lang)).map((b) => `${b.file}:${b.line} \`\`\`${b.lang}`);
    expect(bad).toEqual([]);
  });

  it('every ax command of a shell example exists, with flags it has; every npm script exists', async () => {
    const ids = commandIds();
    const flagsOf = new Map<string, Set<string>>();
    for (const id of ids) {
      const mod = (await import(/* @vite-ignore */ pathToFileURL(`${ROOT}src/commands/${id.split(' ').join('/')}.ts`).href)) as {
        default: {flags?: Record<string, {char?: string}>; baseFlags?: Record<string, {char?: string}>; enableJsonFlag?: boolean};
      };
      const C = mod.default;
      const all = {...C.baseFlags, ...C.flags};
      const names = new Set(['--help', '-h', ...(C.enableJsonFlag ? ['--json'] : [])]);
      for (const [name, f] of Object.entries(all)) {
        names.add(`--${name}`);
        names.add(`--no-${name}`);
        if (f.char) names.add(`-${f.char}`);
      }
      flagsOf.set(id, names);
    }
    const scripts = Object.keys((JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {scripts: Record<string, string>}).scripts);
    const wrong: string[] = [];
    let axCommands = 0;
    // The shell blocks, and the commands quoted inline in the prose (`ax tasks show <id>`).
    const inline: CodeBlock[] = files
      .filter((f) => !isGeneratedCliPage(f))
      .flatMap((f) => {
        const text = readDoc(f).replace(/^```[^]*?^```/gm, (fence) => fence.replace(/[^\n]/g, ' '));
        return [...text.matchAll(/`((?:npx )?ax [^`]+)`/g)].map((m) => ({
          file: f,
          line: text.slice(0, m.index).split('\n').length,
          lang: 'sh',
          code: m[1]!.replace(/\n/g, ' '),
        }));
      });
    for (const b of [...blocks.filter((x) => x.lang === 'sh'), ...inline]) {
      for (let words of shellCommands(b.code)) {
        const where = `${b.file}:${b.line}: ${words.join(' ')}`;
        words = words.filter((w, i) => !(i === 0 && w === '$'));
        while (words.length > 0 && /^[A-Z_]+=/.test(words[0]!)) words = words.slice(1);
        if (words[0] === 'npx' && words[1] === 'ax') words = words.slice(1);
        if (words[0] === 'npm') {
          const script = words[1] === 'run' ? words[2] : words[1];
          if (!['ci', 'link', 'pack', 'install'].includes(script!) && !scripts.includes(script!))
            wrong.push(`${where} (no npm script ${script})`);
          continue;
        }
        if (words[0] !== 'ax') continue;
        axCommands++;
        const args = words.slice(1);
        // A topic alone, oclif's own commands, a placeholder, and the mistyped commands of the suggestion's examples.
        if (args.length === 0 || /^[<…]/.test(args[0]!)) continue;
        if (['-h', '--help', '-v', 'version', 'help', 'autocomplete'].includes(args[0]!)) continue;
        if (args.length === 1 && ids.some((x) => x.startsWith(`${args[0]} `))) continue;
        if (['submti', 'dlq replya'].includes(args.slice(0, args[0] === 'dlq' ? 2 : 1).join(' '))) continue;
        let id = '';
        for (let n = Math.min(2, args.length); n > 0 && id === ''; n--) {
          const candidate = args.slice(0, n).join(' ');
          if (ids.includes(candidate)) id = candidate;
        }
        if (id === '') {
          wrong.push(`${where} (no such command)`);
          continue;
        }
        for (const w of args.slice(id.split(' ').length)) {
          if (!w.startsWith('-') || w === '-') continue;
          const flag = w.split('=')[0]!;
          if (!flagsOf.get(id)!.has(flag)) wrong.push(`${where} (ax ${id} has no ${flag})`);
        }
      }
    }
    expect(axCommands).toBeGreaterThan(15);
    expect(wrong).toEqual([]);
  });

  it('every json example is a configuration ax loads (ax.config.json)', () => {
    const json = blocks.filter((b) => b.lang === 'json' && !NOT_RUN.has(b.file));
    expect(json.length).toBeGreaterThanOrEqual(2);
    const dir = mkdtempSync(join(tmpdir(), 'ax-docs-'));
    try {
      for (const b of json) {
        writeFileSync(join(dir, 'ax.config.json'), b.code);
        const config = loadConfig({env: {}, cwd: dir});
        for (const key of Object.keys(JSON.parse(b.code) as object)) expect(config, `${b.file}:${b.line} ${key}`).toHaveProperty(key);
      }
    } finally {
      rmSync(dir, {recursive: true, force: true});
    }
  });
});

describe('what an SDK user installs (docs/getting-started.md)', () => {
  const page = readDoc('docs/getting-started.md');
  const section = page.slice(
    page.indexOf('## What an SDK user installs'),
    page.indexOf('\n## ', page.indexOf('## What an SDK user installs') + 5),
  );
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {dependencies: Record<string, string>};

  it('lists exactly the runtime dependencies of package.json', () => {
    const table = section.split('\n').filter((l) => l.startsWith('| `'));
    const listed = table.flatMap((l) => [...l.split('|')[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)).sort();
    expect(listed).toEqual(Object.keys(pkg.dependencies).sort());
  });

  it('names what `import … from "ax-executor"` loads: the packages src/index.ts imports, statically', () => {
    const loaded = new Set<string>();
    const seen = new Set<string>();
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const src = readFileSync(file, 'utf8');
      for (const m of src.matchAll(/^(?:import|export)(?!\s+type\s)[^;]*?\sfrom\s+'([^']+)'|^import\s+'([^']+)'/gms)) {
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith('.')) walk(join(dirname(file), spec.replace(/\.js$/, '.ts')));
        else if (!spec.startsWith('node:')) loaded.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      }
    };
    walk(`${ROOT}src/index.ts`);
    expect(loaded.size).toBeGreaterThan(0);
    const sentence = /A service that only submits tasks[^]*?loads ([^;]+);/.exec(section)?.[1] ?? '';
    const named = [...sentence.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).sort();
    expect(named).toEqual([...loaded].sort());
  });
});
