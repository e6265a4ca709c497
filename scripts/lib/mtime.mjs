// When sources last changed, for the builds' --if-stale (scripts/build.mjs, scripts/build-ui.mjs).
import {existsSync, readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';

/** The newest modification time (ms) among `paths` and everything under them; 0 when none exists. */
export function newestMtime(paths) {
  let newest = 0;
  const visit = (p) => {
    if (!existsSync(p)) return;
    const s = statSync(p);
    newest = Math.max(newest, s.mtimeMs);
    if (s.isDirectory()) for (const e of readdirSync(p)) visit(join(p, e));
  };
  for (const p of paths) visit(p);
  return newest;
}
