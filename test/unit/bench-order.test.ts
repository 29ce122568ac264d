import { describe, expect, it } from 'vitest';
// @ts-expect-error -- plain JS module of the benchmark harness, no types
import { williamsRow } from '../../bench/order.js';

const row = williamsRow as (n: number, r: number) => number[];

describe('bench round order (Williams design)', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('%i variants: every round a permutation; over a cycle each variant follows each other one, and holds each position, equally often', (n) => {
    const cycle = n % 2 === 0 ? n : 2 * n;
    const follows = new Map<string, number>();
    const positions = new Map<string, number>();
    for (let r = 0; r < cycle; r++) {
      const order = row(n, r);
      expect([...order].sort((a, b) => a - b)).toEqual([...Array(n).keys()]);
      order.forEach((v, i) => {
        positions.set(`${v}@${i}`, (positions.get(`${v}@${i}`) ?? 0) + 1);
        if (i > 0) follows.set(`${order[i - 1]}>${v}`, (follows.get(`${order[i - 1]}>${v}`) ?? 0) + 1);
      });
    }
    expect(follows.size).toBe(n * (n - 1));
    expect(new Set(follows.values()).size).toBeLessThanOrEqual(1);
    expect(positions.size).toBe(n * n);
    expect(new Set(positions.values())).toEqual(new Set([cycle / n]));
  });

  it('cycles through its rows and refuses a bad size', () => {
    expect(row(7, 14)).toEqual(row(7, 0));
    expect(row(4, 5)).toEqual(row(4, 1));
    expect(row(3, 0)).not.toEqual(row(3, 1));
    expect(() => row(0, 0)).toThrow(/positive integer/);
  });
});
