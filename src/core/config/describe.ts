import {formatDuration} from '../duration.js';
import {SETTINGS} from './config.js';

/** How a setting's default reads in the docs: durations as `1s`, bytes as `64 KiB`, 0 = computed. */
export function formatDefault(s: {kind: string; default: unknown; env: string}): string {
  const v = s.default;
  if (s.kind === 'duration') return `\`${formatDuration(v as number)}\``;
  if (s.kind === 'bytes') return `\`${(v as number) / 1024} KiB\``;
  if (typeof v === 'object') return `\`${JSON.stringify(v)}\``;
  if (v === 0 && (s.env === 'AX_IO_CONCURRENCY' || s.env === 'AX_CPU_THREADS')) return '`0` (computed)';
  return `\`${String(v)}\``;
}

/** The configuration table of docs/reference/configuration.md (Markdown), one row per setting. */
export function configTable(): string {
  const rows = ['| setting (ax.config.json) | environment | default | meaning |', '| --- | --- | --- | --- |'];
  for (const [key, s] of Object.entries(SETTINGS)) {
    rows.push(`| \`${key}\` | \`${s.env}\` | ${formatDefault(s)} | ${s.doc}${s.secret ? ' (secret: env or file only)' : ''} |`);
  }
  return rows.join('\n');
}
