/**
 * The console's static files (the Vite build of ui/ in dist-web/), read into memory at start:
 * a handful of files, served with their type; hashed assets cached for a year, index.html never.
 * Without a build the console answers with a page saying how to build it; the API works regardless.
 */
import {existsSync, readdirSync, readFileSync, statSync} from 'node:fs';
import {extname, join, relative, sep} from 'node:path';

export interface Asset {
  body: Buffer;
  type: string;
  immutable: boolean;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/** Every file under `dir` by URL path (`/index.html`, `/assets/app-1a2b.js`); empty when `dir` does not exist. */
export function loadAssets(dir: string): Map<string, Asset> {
  const out = new Map<string, Asset>();
  if (!existsSync(dir)) return out;
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      if (name.startsWith('.')) continue; // the build's stamp and the like: not the console's
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else {
        const url = '/' + relative(dir, p).split(sep).join('/');
        out.set(url, {body: readFileSync(p), type: TYPES[extname(p)] ?? 'application/octet-stream', immutable: url.startsWith('/assets/')});
      }
    }
  };
  walk(dir);
  return out;
}

/** What `/` answers when the UI was not built. Plain text: nothing to render. */
export const NOT_BUILT =
  'The console UI is not built here: run `npm run build` (it builds ui/ into dist-web/). The HTTP API under /api/v1 works without it.\n';
