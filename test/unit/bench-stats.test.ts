import { describe, expect, it } from 'vitest';
// @ts-expect-error -- plain JS module of the benchmark harness, no types
import { median, medianCI, prng, roundOut, verdict } from '../../bench/stats.js';

const med = median as (xs: number[]) => number;
const ci = medianCI as (xs: number[], o?: { level?: number; reps?: number; seed?: number }) => [number, number] | null;
const judge = verdict as (ci: [number, number] | null, limit: number, o?: { atLeast?: boolean }) => string | null;

describe('bench statistics', () => {
  it('median of odd, even and empty lists', () => {
    expect(med([3, 1, 2])).toBe(2);
    expect(med([4, 1, 3, 2])).toBe(2.5);
    expect(med([])).toBeNaN();
  });

  it('the seeded generator repeats its sequence and stays in [0, 1)', () => {
    const a = prng(7);
    const b = prng(7);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(Array.from({ length: 1000 }, () => b())).toEqual(xs);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    expect(prng(8)()).not.toBe(prng(7)());
  });

  it('the interval holds the median, is the same for the same input, and narrows with more pairs', () => {
    const r = prng(3);
    const pairs = (n: number) => Array.from({ length: n }, () => 1.1 + (r() - 0.5) * 0.4);
    const small = pairs(10);
    const big = pairs(200);
    const a = ci(small)!;
    expect(a[0]).toBeLessThanOrEqual(med(small));
    expect(a[1]).toBeGreaterThanOrEqual(med(small));
    expect(ci(small)).toEqual(a);
    const b = ci(big)!;
    expect(b[1] - b[0]).toBeLessThan((a[1] - a[0]) / 2);
    expect(b[0]).toBeLessThan(1.1);
    expect(b[1]).toBeGreaterThan(1.1);
  });

  it('no interval from fewer than 3 values; one value repeated gives a point', () => {
    expect(ci([1.2, 1.3])).toBeNull();
    expect(ci([1.2, 1.2, 1.2])).toEqual([1.2, 1.2]);
    expect(() => ci([1, 2, 3], { level: 1 })).toThrow(/level/);
  });

  it('verdicts: met when the whole interval is at or under the limit, missed when all over, else undecided', () => {
    expect(judge([1.02, 1.1], 1.1)).toBe('met');
    expect(judge([1.11, 1.2], 1.1)).toBe('missed');
    expect(judge([1.09, 1.2], 1.1)).toBe('undecided');
    expect(judge(null, 1.1)).toBeNull();
  });

  it('a budget "at least" (a throughput): met when the whole interval is at or over the limit, missed when all under', () => {
    expect(judge([0.9, 1.2], 0.9, { atLeast: true })).toBe('met');
    expect(judge([0.7, 0.89], 0.9, { atLeast: true })).toBe('missed');
    expect(judge([0.85, 1.0], 0.9, { atLeast: true })).toBe('undecided');
    expect(judge(null, 0.9, { atLeast: true })).toBeNull();
  });

  it('intervals are rounded outwards, so a verdict from the interval shown is never kinder than the exact one', () => {
    const out = roundOut as (ci: [number, number] | null, digits?: number) => [number, number] | null;
    expect(out([1.08153, 1.10041])).toEqual([1.081, 1.101]);
    expect(judge(out([1.08153, 1.10041]), 1.1)).toBe('undecided');
    expect(out([1.1, 1.2])).toEqual([1.1, 1.2]);
    expect(out([0.9999, 1.0001], 2)).toEqual([0.99, 1.01]);
    expect(out(null)).toBeNull();
  });
});
