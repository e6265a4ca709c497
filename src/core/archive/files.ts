/**
 * The directory archive target: `<root>/<cell>/<YYYY-MM-DD>/<part>.ndjson.gz` with
 * `<part>.manifest.json` beside it (format in docs/archive.md), and an empty marker
 * `<root>/<cell>/pending/<day>_<part>` while a part is pending, so the recovery reads only those. The only module of the archive that
 * touches node:fs and node:zlib. Every file is written to `<name>.tmp`, fsynced, renamed, and the
 * directory fsynced, so a crash never leaves a half-written file under its final name.
 */
import {createHash} from 'node:crypto';
import {constants} from 'node:fs';
import {access, mkdir, open, readdir, readFile, rename, rm, stat} from 'node:fs/promises';
import {join, resolve} from 'node:path';
import {gunzipSync, gzipSync} from 'node:zlib';
import {AxError, invalid} from '../errors.js';
import {ARCHIVE_FORMAT, type ArchiveTarget, type PartManifest, type WritePartParams} from './target.js';

const DATA = '.ndjson.gz';
const MANIFEST = '.manifest.json';
const TMP = '.tmp';
const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

async function writeAtomic(dir: string, name: string, bytes: Uint8Array): Promise<void> {
  const tmp = join(dir, name + TMP);
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(bytes);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, join(dir, name));
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

async function dirs(path: string): Promise<string[]> {
  try {
    return (await readdir(path, {withFileTypes: true})).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

async function files(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

export class DirectoryArchiveTarget implements ArchiveTarget {
  readonly location: string;

  constructor(root: string) {
    this.location = resolve(root);
  }

  async checkWritable(): Promise<void> {
    try {
      await mkdir(this.location, {recursive: true});
      await access(this.location, constants.W_OK | constants.R_OK | constants.X_OK);
      if (!(await stat(this.location)).isDirectory()) throw Object.assign(new Error('not a directory'), {code: 'ENOTDIR'});
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? '';
      throw invalid(`archive directory ${this.location} (AX_ARCHIVE_DIR) cannot be used: ${code || (e as Error).message}`, {
        location: this.location,
        code,
      });
    }
  }

  private dayDir(cell: string, day: string): string {
    return join(this.location, cell, day);
  }

  async writePart(p: WritePartParams): Promise<PartManifest> {
    const data = gzipSync(Buffer.from(p.lines.map((l) => `${l}\n`).join(''), 'utf8'));
    const sha256 = createHash('sha256').update(data).digest('hex');
    const part = `part-${p.meta.minId}-${sha256.slice(0, 12)}`;
    const dir = this.dayDir(p.cell, p.day);
    const m: PartManifest = {
      format: ARCHIVE_FORMAT,
      cell: p.cell,
      day: p.day,
      part,
      ...p.meta,
      bytes: data.length,
      sha256,
      status: 'pending',
      excludedIds: [],
    };
    try {
      await mkdir(dir, {recursive: true});
      await mkdir(this.pendingDir(p.cell), {recursive: true});
      // The marker first: a manifest that exists while pending always has one.
      await writeAtomic(this.pendingDir(p.cell), `${p.day}_${part}`, new Uint8Array(0));
      await writeAtomic(dir, part + DATA, data);
      await writeAtomic(dir, part + MANIFEST, Buffer.from(`${JSON.stringify(m, null, 2)}\n`));
    } catch (e) {
      throw this.fsError(e, dir);
    }
    return m;
  }

  async readPart(m: PartManifest): Promise<string[]> {
    const file = join(this.dayDir(m.cell, m.day), m.part + DATA);
    let data: Buffer;
    try {
      data = await readFile(file);
    } catch (e) {
      throw corrupt(file, `cannot be read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    if (data.length !== m.bytes) throw corrupt(file, `has ${data.length} bytes, its manifest says ${m.bytes}`);
    if (createHash('sha256').update(data).digest('hex') !== m.sha256) throw corrupt(file, 'does not match the checksum in its manifest');
    let text: string;
    try {
      text = gunzipSync(data).toString('utf8');
    } catch (e) {
      throw corrupt(file, `is not a readable gzip stream: ${(e as Error).message}`);
    }
    const lines = text.split('\n');
    if (lines.pop() !== '') throw corrupt(file, 'does not end with a newline');
    if (lines.length !== m.tasks) throw corrupt(file, `has ${lines.length} lines, its manifest says ${m.tasks}`);
    return lines;
  }

  async listParts(p: {cell: string; day?: string}): Promise<PartManifest[]> {
    const cellDir = join(this.location, p.cell);
    const days = p.day === undefined ? (await dirs(cellDir)).filter((d) => DAY_RE.test(d)).sort() : [p.day];
    const out: PartManifest[] = [];
    for (const day of days) {
      for (const name of (await files(join(cellDir, day))).filter((f) => f.endsWith(MANIFEST)).sort()) {
        const file = join(cellDir, day, name);
        let m: PartManifest;
        try {
          m = JSON.parse(await readFile(file, 'utf8')) as PartManifest;
        } catch (e) {
          throw corrupt(file, `is not a readable manifest: ${(e as Error).message}`);
        }
        if (m.format !== ARCHIVE_FORMAT) throw corrupt(file, `has format ${String(m.format)}, expected ${ARCHIVE_FORMAT}`);
        out.push(m);
      }
    }
    return out;
  }

  async saveManifest(m: PartManifest): Promise<void> {
    const dir = this.dayDir(m.cell, m.day);
    try {
      await writeAtomic(dir, m.part + MANIFEST, Buffer.from(`${JSON.stringify(m, null, 2)}\n`));
      if (m.status === 'complete') await rm(this.marker(m), {force: true});
    } catch (e) {
      throw this.fsError(e, dir);
    }
  }

  async removePart(m: PartManifest): Promise<void> {
    const dir = this.dayDir(m.cell, m.day);
    await rm(join(dir, m.part + MANIFEST), {force: true});
    await rm(join(dir, m.part + DATA), {force: true});
    await rm(this.marker(m), {force: true});
  }

  async listPending(cell: string): Promise<PartManifest[]> {
    const out: PartManifest[] = [];
    for (const name of (await files(this.pendingDir(cell))).filter((f) => !f.endsWith(TMP)).sort()) {
      const day = name.slice(0, 10);
      const part = name.slice(11);
      const m = (await this.listParts({cell, day})).find((x) => x.part === part);
      if (m?.status === 'pending') out.push(m);
      else await rm(join(this.pendingDir(cell), name), {force: true}); // never committed, or already complete
    }
    return out;
  }

  private pendingDir(cell: string): string {
    return join(this.location, cell, 'pending');
  }

  private marker(m: PartManifest): string {
    return join(this.pendingDir(m.cell), `${m.day}_${m.part}`);
  }

  async cleanup(cell: string): Promise<number> {
    let n = 0;
    const cellDir = join(this.location, cell);
    for (const day of (await dirs(cellDir)).filter((d) => DAY_RE.test(d) || d === 'pending')) {
      const names = await files(join(cellDir, day));
      const committed = new Set(names.filter((f) => f.endsWith(MANIFEST)).map((f) => f.slice(0, -MANIFEST.length)));
      for (const f of names) {
        const orphan = f.endsWith(DATA) && !committed.has(f.slice(0, -DATA.length));
        if (f.endsWith(TMP) || orphan) {
          await rm(join(cellDir, day, f), {force: true});
          n++;
        }
      }
    }
    return n;
  }

  private fsError(e: unknown, dir: string): AxError {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    const why = code === 'ENOSPC' ? 'the disk is full' : code || (e as Error).message;
    return invalid(`cannot write to the archive directory ${dir}: ${why}; nothing was deleted from MySQL`, {location: dir, code});
  }
}

function corrupt(file: string, why: string): AxError {
  return new AxError('conflict', `archive file ${file} ${why}: refusing to use it`, {details: {file}});
}
