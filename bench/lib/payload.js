// Payloads of an exact JSON size for the benchmarks (--payload-bytes): an order-like object, not
// filler, so zlib compresses it about as much as real JSON (roughly 3×, not 100×). Deterministic:
// the same (bytes, n) always gives the same text.

const WORDS = ['order', 'customer', 'shipping', 'express', 'invoice', 'paid', 'pending', 'warehouse', 'north', 'south', 'gift', 'note'];

/** A small deterministic generator (LCG), so two runs and both sides of --compare send the same bytes. */
function lcg(seed) {
  let s = (seed >>> 0) + 1;
  return () => (s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0) / 2 ** 32;
}

/**
 * A payload whose JSON text is exactly `bytes` long (ASCII), carrying `n`. Throws RangeError below
 * the size of `{"n":…,"pad":""}`.
 */
export function makePayload(bytes, n) {
  const rnd = lcg(n);
  const least = JSON.stringify({n, pad: ''}).length;
  if (!(bytes >= least)) throw new RangeError(`payload of ${bytes} bytes: at least ${least} are needed`);
  const payload = {n, items: [], pad: ''};
  let size = JSON.stringify(payload).length;
  if (bytes < size) return {n, pad: ''.padEnd(bytes - least, 'x')};
  for (;;) {
    const item = {
      sku: `SKU-${Math.floor(rnd() * 1e6)
        .toString(36)
        .toUpperCase()}`,
      qty: 1 + Math.floor(rnd() * 9),
      price: Math.round(rnd() * 100_000) / 100,
      note: Array.from({length: 1 + Math.floor(rnd() * 5)}, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(' '),
    };
    const add = JSON.stringify(item).length + (payload.items.length > 0 ? 1 : 0);
    if (size + add > bytes) break;
    payload.items.push(item);
    size += add;
  }
  payload.pad = ''.padEnd(bytes - size, 'x');
  return payload;
}
