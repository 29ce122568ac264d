/** lib/util/json.ts jsonEqual: the same answer as comparing canonicalJson strings, for whatever the pod config compares. */
import { expect, it } from 'vitest';
import { V1Pod } from '@kubernetes/client-node';
import { canonicalJson, jsonEqual } from '../../src/lib/util/json.js';

const same = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);

it('agrees with canonicalJson on key order, undefined members, arrays, Dates, class instances and primitives', () => {
  const cases: Array<[unknown, unknown]> = [
    [{ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }],
    [{ a: 1, b: undefined }, { a: 1 }],
    [{ a: 1 }, { a: 1, b: 2 }],
    [{ a: 1, b: 2 }, { a: 1, c: 2 }],
    [[1, undefined], [1, null]],
    [[1, 2], [2, 1]],
    [[1], { 0: 1 }],
    [{}, []],
    [new Date('2026-01-01T00:00:00Z'), '2026-01-01T00:00:00.000Z'],
    [new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:00:01Z')],
    [{ t: new Date(5) }, { t: new Date(5) }],
    [null, undefined],
    [null, {}],
    ['1', 1],
    [Number.NaN, null],
    [0, -0],
    [Object.assign(new V1Pod(), { spec: { containers: [{ name: 'c', image: 'i' }] } }), { spec: { containers: [{ image: 'i', name: 'c' }] } }],
    [Object.assign(new V1Pod(), { spec: { containers: [{ name: 'c', image: 'i' }] } }), { spec: { containers: [{ image: 'j', name: 'c' }] } }],
    [{ a: { b: { c: 'x' } } }, { a: { b: { c: 'y' } } }],
    [{ a: [] }, { a: [undefined] }],
  ];
  for (const [a, b] of cases) {
    expect(jsonEqual(a, b), `${canonicalJson(a)} vs ${canonicalJson(b)}`).toBe(same(a, b));
    expect(jsonEqual(b, a)).toBe(same(b, a));
  }
});

it('agrees with canonicalJson on random nested values', () => {
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const gen = (d: number): unknown => {
    const r = rnd();
    if (d > 3 || r < 0.3) return [1, 'a', null, undefined, true][Math.floor(rnd() * 5)];
    if (r < 0.6) return Array.from({ length: Math.floor(rnd() * 3) }, () => gen(d + 1));
    const o: Record<string, unknown> = {};
    for (const k of ['x', 'y', 'z']) if (rnd() < 0.6) o[k] = gen(d + 1);
    return o;
  };
  let equalSeen = 0;
  for (let i = 0; i < 3000; i++) {
    const a = gen(0);
    const b = rnd() < 0.5 ? structuredClone(a) : gen(0);
    if (same(a, b)) equalSeen++;
    expect(jsonEqual(a, b)).toBe(same(a, b));
  }
  expect(equalSeen).toBeGreaterThan(100);
});
