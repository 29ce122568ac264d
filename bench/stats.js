// Statistics of the benchmark harness, pure (no runtime, no I/O), shared by
// bench/bench.js, bench/table.js and bench/carryover.js.
//
// A budget such as "startup-30 ≤ 1.10× the floor" is a claim about the
// median of the pair-by-pair ratios. On a 2-core machine one 10-pair series
// of the same build moved that median by ±0.06 (bench/results/HISTORY.md, sixth
// session), so the median alone cannot say whether a figure near the line
// meets it. `medianCI` gives the interval the median is known to: a
// percentile bootstrap over the pairs (resampled with replacement), with a
// fixed seed so the same results file always gives the same interval.

/** The median of a list of numbers (NaN for none). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A small seeded PRNG (mulberry32): uniform in [0, 1), the same sequence for the same seed. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The `level` (default 0.95) percentile-bootstrap interval of the median of
 * `xs`: [lo, hi], or null with fewer than 3 values (no interval worth the
 * name). `reps` resamples (default 4000), `seed` fixes them.
 */
export function medianCI(xs, { level = 0.95, reps = 4000, seed = 1 } = {}) {
  const v = xs.filter((x) => Number.isFinite(x));
  if (v.length < 3) return null;
  if (!(level > 0 && level < 1)) throw new Error(`medianCI: level must be between 0 and 1, got ${level}`);
  const rand = prng(seed);
  const meds = new Array(reps);
  const sample = new Array(v.length);
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < v.length; i++) sample[i] = v[Math.floor(rand() * v.length)];
    meds[r] = median(sample);
  }
  meds.sort((a, b) => a - b);
  const tail = (1 - level) / 2;
  return [meds[Math.floor(tail * (reps - 1))], meds[Math.ceil((1 - tail) * (reps - 1))]];
}

/**
 * An interval rounded outwards to `digits` decimals (the low end down, the
 * high end up), so the interval shown contains the one computed, and a
 * verdict taken from it is never kinder than the exact one (1.1004 is shown
 * as 1.101, not as 1.1 that would meet "<= 1.10"). null stays null.
 */
export function roundOut(ci, digits = 3) {
  if (!ci) return null;
  const f = 10 ** digits;
  // toFixed first: 1.1 * 1000 is 1100.0000000000002, whose ceiling is not 1100.
  const at = (x, dir) => Number((dir(Number((x * f).toFixed(6))) / f).toFixed(digits));
  return [at(ci[0], Math.floor), at(ci[1], Math.ceil)];
}

/**
 * Where a ratio stands against a budget "≤ limit", given its interval:
 * 'met' when the whole interval is at or under the limit, 'missed' when the
 * whole interval is over it, 'undecided' when the interval straddles it
 * (more pairs needed), null without an interval. With `atLeast` the budget
 * is "≥ limit" (a throughput): met when the whole interval is at or over it.
 */
export function verdict(ci, limit, { atLeast = false } = {}) {
  if (!ci) return null;
  if (atLeast ? ci[0] >= limit : ci[1] <= limit) return 'met';
  if (atLeast ? ci[1] < limit : ci[0] > limit) return 'missed';
  return 'undecided';
}
