/**
 * Reading the documentation the way GitHub renders it, for the docs tests: the Markdown files of the
 * repository's docs tree, their fenced code blocks, their relative links, the anchors their
 * headings get, and the commands of a shell example.
 */
import {readdirSync, readFileSync} from 'node:fs';
import {ROOT} from './spawn.js';

/** README.md and every Markdown file under docs/, as paths relative to the repository root, sorted. */
export function docFiles(): string[] {
  const under = readdirSync(`${ROOT}docs`, {recursive: true, encoding: 'utf8'})
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f.split(/[\\/]/).join('/')}`);
  return ['README.md', ...under.sort()];
}

export const readDoc = (file: string): string => readFileSync(`${ROOT}${file}`, 'utf8');

/** The CLI pages `npm run docs` writes from the commands' help: generated, so their examples are the commands' own. */
export const isGeneratedCliPage = (file: string): boolean => file.startsWith('docs/reference/cli/');

/**
 * Pages whose examples are not run, and why; their blocks must still name a language, and their
 * `ax` commands are still checked against the CLI.
 */
export const NOT_RUN: ReadonlyMap<string, string> = new Map([
  ['docs/benchmarks.md', 'benchmark runs and their results, measured on purpose by hand'],
  [
    'docs/queries.md',
    'the hot queries with their placeholders, as the code sends them: test/integration/explain.test.ts checks their plans',
  ],
  ['docs/archive.md', 'jq and DuckDB over archive files: the formats are checked by the archive tests'],
]);

export interface CodeBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word ('' when the fence has none). */
  lang: string;
  code: string;
}

/** The fenced code blocks (``` only) of a Markdown text, in order. */
export function codeBlocks(file: string, text: string): CodeBlock[] {
  const out: CodeBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```\s*([\w-]*)/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    out.push({file, line: start + 1, lang: open[1] ?? '', code: body.join('\n')});
  }
  return out;
}

/** The text with fenced blocks and inline code blanked out (links and headings inside them do not count). */
function prose(text: string): string[] {
  let inFence = false;
  return text.split('\n').map((l) => {
    if (/^```/.test(l)) {
      inFence = !inFence;
      return '';
    }
    return inFence ? '' : l;
  });
}

/**
 * GitHub's anchor of a heading: lower-cased, markup and punctuation dropped (letters, digits, `_`,
 * `-` and spaces kept), spaces to `-`; the n-th repeat of a slug gets `-n`.
 */
export function slug(heading: string): string {
  return heading
    .replace(/<[^>]+>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown text's headings (ATX `#` and setext `===`/`---`), with GitHub's numbering of repeats. */
export function anchors(text: string): Set<string> {
  const lines = prose(text);
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const atx = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(l);
    const setext = !atx && l.trim() !== '' && !l.startsWith('|') && /^(=+|-+)\s*$/.test(lines[i + 1] ?? '') ? l : undefined;
    const heading = atx ? atx[1]! : setext;
    if (heading === undefined) continue;
    const s = slug(heading);
    const n = seen.get(s) ?? 0;
    seen.set(s, n + 1);
    out.add(n === 0 ? s : `${s}-${n}`);
  }
  return out;
}

export interface Link {
  file: string;
  line: number;
  target: string;
}

/** Relative links `[text](target)` of a Markdown text, outside code; absolute URLs and mailto: left out. */
export function relativeLinks(file: string, text: string): Link[] {
  const out: Link[] = [];
  prose(text).forEach((l, i) => {
    const line = l.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      out.push({file, line: i + 1, target});
    }
  });
  return out;
}

/** Repository paths named in inline code, such as `src/core/worker/worker.ts` (globs and placeholders left out). */
export function namedSourcePaths(text: string): string[] {
  const out = new Set<string>();
  for (const l of prose(text))
    for (const m of l.matchAll(/`((?:src|test|scripts|deploy|sidecar|bench|examples)\/[\w./-]+)`/g)) {
      const p = m[1]!;
      // A path without an extension outside src/ is more likely a branch name (`bench/no-admission`).
      if (/[*{}<>]/.test(p) || (!p.startsWith('src/') && !/\.\w+$/.test(p) && !p.endsWith('/'))) continue;
      out.add(p.replace(/\/$/, ''));
    }
  return [...out];
}

/**
 * Splits a shell example into commands, the way sh would see their words: quotes respected,
 * comments dropped, a line continued by `\`, and commands separated by `|`, `&&`, `||` and `;`.
 */
export function shellCommands(code: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word = '';
  let has = false;
  const endWord = (): void => {
    if (has) words.push(word);
    word = '';
    has = false;
  };
  const endCommand = (): void => {
    endWord();
    if (words.length > 0) commands.push(words);
    words = [];
  };
  const text = code.replace(/\\\n/g, ' ');
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1);
      if (close < 0) throw new Error(`unclosed ${c} in: ${code}`);
      word += text.slice(i + 1, close);
      has = true;
      i = close;
    } else if (c === '#' && !has) {
      while (i < text.length && text[i] !== '\n') i++;
      endCommand();
    } else if (c === '\n' || c === ';' || c === '|' || (c === '&' && text[i + 1] === '&')) {
      if ((c === '|' && text[i + 1] === '|') || c === '&') i++;
      endCommand();
    } else if (c === ' ' || c === '\t') endWord();
    else {
      word += c;
      has = true;
    }
  }
  endCommand();
  return commands;
}
