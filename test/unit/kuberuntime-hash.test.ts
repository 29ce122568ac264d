import { describe, expect, it } from 'vitest';
import type { V1Container } from '@kubernetes/client-node';
import { containerHash, fnv1a32 } from '../../src/lib/kuberuntime/hash.js';
import { canonicalJson } from '../../src/lib/util/json.js';

describe('canonicalJson', () => {
  it('does not depend on key order, at any depth', () => {
    const a = { b: 1, a: { y: [1, { q: 2, p: 1 }], x: 'x' } };
    const b = { a: { x: 'x', y: [1, { p: 1, q: 2 }] }, b: 1 };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe('{"a":{"x":"x","y":[1,{"p":1,"q":2}]},"b":1}');
  });

  it('drops undefined properties and keeps array positions', () => {
    expect(canonicalJson({ a: undefined, b: null, c: [undefined, 1] })).toBe('{"b":null,"c":[null,1]}');
    expect(canonicalJson({ a: undefined })).toBe(canonicalJson({}));
  });

  it('keeps array order significant', () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });

  it('prints scalars and dates as JSON', () => {
    expect(canonicalJson('a"b')).toBe('"a\\"b"');
    expect(canonicalJson(3)).toBe('3');
    expect(canonicalJson(true)).toBe('true');
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson(new Date('2024-01-02T03:04:05Z'))).toBe('"2024-01-02T03:04:05.000Z"');
  });
});

describe('fnv1a32', () => {
  it.each([
    ['', 0x811c9dc5],
    ['a', 0xe40c292c],
    ['foobar', 0xbf9cf968],
  ])('%j', (s, want) => {
    expect(fnv1a32(s)).toBe(want);
  });
});

describe('containerHash', () => {
  const c: V1Container = { name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80 }], env: [{ name: 'A', value: '1' }] };

  it('is lowercase hex without padding', () => {
    expect(containerHash(c)).toMatch(/^[0-9a-f]{1,8}$/);
  });

  it('is the same for the same spec written in another key order', () => {
    const reordered: V1Container = { env: [{ value: '1', name: 'A' }], ports: [{ containerPort: 80 }], image: 'nginx:1.27', name: 'web' };
    expect(containerHash(reordered)).toBe(containerHash(c));
    expect(containerHash({ ...c, command: undefined })).toBe(containerHash(c));
  });

  it.each([
    ['image', { image: 'nginx:1.28' }],
    ['env', { env: [{ name: 'A', value: '2' }] }],
    ['command', { command: ['nginx'] }],
    ['ports', { ports: [{ containerPort: 8080 }] }],
  ] as [string, Partial<V1Container>][])('changes when %s changes', (_what, change) => {
    expect(containerHash({ ...c, ...change })).not.toBe(containerHash(c));
  });

  it('leaves resources out, as the kubelet does: an in-place resize does not restart the container', () => {
    expect(containerHash({ ...c, resources: { limits: { cpu: '500m' } } })).toBe(containerHash(c));
    expect(containerHash({ ...c, resources: { requests: { memory: '64Mi' } } })).toBe(containerHash({ ...c, resources: { requests: { memory: '128Mi' } } }));
  });
});
