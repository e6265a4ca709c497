/**
 * The test kit as a package entry: the examples of docs/testing-handlers.md run in-process here
 * (fast tier; test/e2e/docs-examples.test.ts runs them again through the built package), its
 * import graph reaches no database or broker driver, and package.json exports it.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import {describe, expect, it} from 'vitest';
import {codeBlocks, readDoc} from '../helpers/markdown.js';
import {ROOT} from '../helpers/spawn.js';

const PAGE = 'docs/testing-handlers.md';
const SRC = path.join(ROOT, 'src');

/** A script block as the body of an async function: its imports read from `__m` (specifier → module). */
function asFunctionBody(code: string): {body: string; specifiers: string[]} {
  const specifiers: string[] = [];
  const body = code
    .split('\n')
    .map((line) => {
      const m = /^import\s+(.+?)\s+from\s+'([^']+)';\s*$/.exec(line);
      if (!m) {
        if (/^import\s/.test(line)) throw new Error(`unsupported import in ${PAGE}: ${line}`);
        return line;
      }
      const [, clause, spec] = m as unknown as [string, string, string];
      specifiers.push(spec);
      const from = `__m[${JSON.stringify(spec)}]`;
      if (clause.startsWith('{')) return `const ${clause.replace(/\s+as\s+/g, ': ')} = ${from};`;
      return `const ${clause} = ${from}.default;`;
    })
    .join('\n');
  return {body, specifiers};
}

/**
 * The modules the examples import: the package's entries as their sources; `ax-executor` as the
 * module its handler names come from (loading the whole SDK entry here would cost seconds).
 */
const MODULES: Record<string, () => Promise<unknown>> = {
  'ax-executor/testing': () => import('../../src/testing.js'),
  'ax-executor': () => import('../../src/core/worker/handlers.js'),
  'node:assert/strict': () => import('node:assert/strict'),
};

/** Specifiers a file loads at run time: imports and re-exports that are not type-only. */
function valueImports(file: string): string[] {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
  const out: string[] = [];
  for (const s of sf.statements) {
    if (ts.isImportDeclaration(s) && ts.isStringLiteral(s.moduleSpecifier)) {
      const c = s.importClause;
      const typeOnly =
        c?.isTypeOnly === true ||
        (c !== undefined &&
          c.name === undefined &&
          c.namedBindings !== undefined &&
          ts.isNamedImports(c.namedBindings) &&
          c.namedBindings.elements.length > 0 &&
          c.namedBindings.elements.every((e) => e.isTypeOnly));
      if (!typeOnly) out.push(s.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(s) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)) {
      const named = s.exportClause && ts.isNamedExports(s.exportClause) ? s.exportClause.elements : undefined;
      if (!s.isTypeOnly && !(named && named.length > 0 && named.every((e) => e.isTypeOnly))) out.push(s.moduleSpecifier.text);
    }
  }
  return out;
}

/** The source files and the packages `entry` loads, following relative value imports. */
function loadedBy(entry: string): {files: Set<string>; packages: Set<string>} {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of valueImports(file)) {
      if (!spec.startsWith('.')) {
        if (!spec.startsWith('node:')) packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
        continue;
      }
      const base = path.resolve(path.dirname(file), spec).replace(/\.js$/, '');
      const hit = ['.ts', '.tsx', '/index.ts'].map((ext) => base + ext).find((f) => fs.existsSync(f));
      if (hit) visit(hit);
    }
  };
  visit(entry);
  return {files, packages};
}

describe('ax-executor/testing', () => {
  const blocks = codeBlocks(PAGE, readDoc(PAGE)).filter((b) => b.lang === 'js');

  it('runs every example of docs/testing-handlers.md to its end', {timeout: 30_000}, async () => {
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const AsyncFunction = (async () => undefined).constructor as new (...args: string[]) => (m: Record<string, unknown>) => Promise<void>;
    for (const b of blocks) {
      const {body, specifiers} = asFunctionBody(b.code);
      const m: Record<string, unknown> = {};
      for (const spec of specifiers) {
        const load = MODULES[spec];
        expect(load, `${b.file}:${b.line} imports ${spec}`).toBeDefined();
        m[spec] = await load!();
      }
      await expect(new AsyncFunction('__m', body)(m), `${b.file}:${b.line}`).resolves.toBeUndefined();
    }
  });

  it('an example that is wrong fails (the check can fail)', async () => {
    const {body} = asFunctionBody("import assert from 'node:assert/strict';\nassert.equal(1, 2);");
    const AsyncFunction = (async () => undefined).constructor as new (...args: string[]) => (m: Record<string, unknown>) => Promise<void>;
    await expect(new AsyncFunction('__m', body)({'node:assert/strict': await import('node:assert/strict')})).rejects.toThrow(
      /1 !== 2|Expected/,
    );
  });

  it('loads no database or broker driver', () => {
    const {files, packages} = loadedBy(path.join(SRC, 'testing.ts'));
    // It does load the worker's own rules: the check follows the real graph.
    expect(files).toContain(path.join(SRC, 'core/worker/handlers.ts'));
    expect(files).toContain(path.join(SRC, 'core/task/validate.ts'));
    for (const driver of ['mysql2', 'amqplib', 'pino', 'prom-client', 'p-limit']) expect([...packages], driver).not.toContain(driver);
    // And the check sees a driver where there is one.
    expect(loadedBy(path.join(SRC, 'core/store/mysql/outcomes.ts')).packages).toContain('mysql2');
  });

  it('is exported by package.json as its built module', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      exports: Record<string, {types: string; import: string}>;
    };
    expect(pkg.exports['./testing']).toEqual({types: './dist/testing.d.ts', import: './dist/testing.js'});
    expect(fs.existsSync(path.join(SRC, 'testing.ts'))).toBe(true);
  });
});
