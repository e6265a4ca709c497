/**
 * Validation of a type's settings as operators give them (`ax types set`, client.types.set): each
 * value checked and converted before anything is stored; a bad one is invalid_input naming it.
 */
import {invalid} from '../errors.js';
import {parseDuration} from '../duration.js';
import {BREAKER_DEFAULTS, MAX_WINDOW_MS, probeSpanMs, type BreakerSettings} from './breaker.js';

/** What an operator may set, as text (CLI flags) or values (SDK). Absent: unchanged. */
export interface BreakerInput {
  enabled?: boolean;
  threshold?: number | string;
  minVolume?: number | string;
  window?: number | string;
  cooldown?: number | string;
  maxCooldown?: number | string;
  probes?: number | string;
  closeAfter?: number | string;
}

const int = (name: string, v: number | string, min: number): number => {
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isInteger(n) || n < min) throw invalid(`${name} must be a whole number >= ${min}, got "${v}"`);
  return n;
};
const ms = (name: string, v: number | string, min: number, max: number): number => {
  const n = typeof v === 'number' ? v : parseDuration(v, name);
  if (!(n >= min && n <= max)) throw invalid(`${name} must be between ${min / 1000} s and ${max / 1000} s, got "${v}"`);
  return n;
};

/**
 * The breaker overrides after applying `input` to `current` (the stored ones). Throws
 * invalid_input for a malformed value, a threshold outside (0, 1), or a cool-down above its cap.
 */
export function mergeBreaker(current: Partial<BreakerSettings>, input: BreakerInput): Partial<BreakerSettings> {
  const out: Partial<BreakerSettings> = {...current};
  if (input.enabled !== undefined) out.enabled = input.enabled;
  if (input.threshold !== undefined) {
    const t = typeof input.threshold === 'number' ? input.threshold : Number(input.threshold);
    if (!(t > 0 && t < 1))
      throw invalid(`breaker threshold must be a failure ratio between 0 and 1 (exclusive), e.g. 0.5, got "${input.threshold}"`);
    out.threshold = t;
  }
  if (input.minVolume !== undefined) out.minVolume = int('breaker min volume', input.minVolume, 1);
  if (input.window !== undefined) out.windowMs = ms('breaker window', input.window, 1000, MAX_WINDOW_MS);
  if (input.cooldown !== undefined) out.cooldownMs = ms('breaker cool-down', input.cooldown, 1000, 86_400_000);
  if (input.maxCooldown !== undefined) out.maxCooldownMs = ms('breaker max cool-down', input.maxCooldown, 1000, 86_400_000);
  if (input.probes !== undefined) out.probes = int('breaker probes', input.probes, 1);
  if (input.closeAfter !== undefined) out.closeAfter = int('breaker close-after', input.closeAfter, 1);
  const cool = out.cooldownMs ?? BREAKER_DEFAULTS.cooldownMs;
  const cap = out.maxCooldownMs ?? BREAKER_DEFAULTS.maxCooldownMs;
  if (cool > cap) throw invalid(`breaker cool-down (${cool / 1000} s) is above its cap, the max cool-down (${cap / 1000} s)`);
  const probes = out.probes ?? BREAKER_DEFAULTS.probes;
  const closeAfter = out.closeAfter ?? BREAKER_DEFAULTS.closeAfter;
  if (probeSpanMs({probes, closeAfter, cooldownMs: cool}) > MAX_WINDOW_MS)
    throw invalid(
      `breaker close-after ${closeAfter} at ${probes} probe(s) per ${cool / 1000} s cool-down takes more than ${MAX_WINDOW_MS / 60_000} min of probes to close: raise the probes or lower the close-after or the cool-down`,
    );
  return out;
}
