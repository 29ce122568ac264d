import { describe, expect, it } from 'vitest';
import { InputError, NotFoundError } from '../../src/lib/errors.js';
import { PodNotFoundError, isUidPrefix, resolvePodRef, similarPods } from '../../src/lib/pod/ref.js';
import { describeFailure } from '../../src/cli/failure.js';

const pods = [
  { namespace: 'default', name: 'web', uid: 'ab12cd34-0000-4000-8000-000000000001' },
  { namespace: 'default', name: 'web-2', uid: 'ab12ef56-0000-4000-8000-000000000002' },
  { namespace: 'default', name: 'cafe', uid: '99999999-0000-4000-8000-000000000003' },
  { namespace: 'kube-system', name: 'etcd-node1', uid: 'c0ffee00-0000-4000-8000-000000000004' },
  { namespace: 'kube-system', name: 'kube-apiserver-node1', uid: 'deadbeef-0000-4000-8000-000000000005' },
  { namespace: 'team-a', name: 'web', uid: 'f00dface-0000-4000-8000-000000000006' },
];

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe('resolvePodRef', () => {
  it('resolves namespace/name', () => {
    expect(resolvePodRef('team-a/web', pods)).toBe(pods[5]);
    expect(resolvePodRef('kube-system/etcd-node1', pods)).toBe(pods[3]);
  });

  it('resolves a bare name in namespace default only', () => {
    expect(resolvePodRef('web', pods)).toBe(pods[0]);
    const err = thrown(() => resolvePodRef('etcd-node1', pods));
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as PodNotFoundError).message).toBe('pod "etcd-node1" not found');
    expect((err as PodNotFoundError).candidates[0]).toBe('kube-system/etcd-node1');
  });

  it('resolves a unique UID prefix, with or without dashes, any case', () => {
    expect(resolvePodRef('c0ff', pods)).toBe(pods[3]);
    expect(resolvePodRef('DEADBEEF', pods)).toBe(pods[4]);
    expect(resolvePodRef('ab12cd34-0000', pods)).toBe(pods[0]);
    expect(resolvePodRef('ab12cd340000', pods)).toBe(pods[0]);
    expect(resolvePodRef(pods[5]?.uid ?? '', pods)).toBe(pods[5]);
  });

  it('prefers a name over a UID prefix', () => {
    // "cafe" is hex, but a pod is named so in default.
    expect(resolvePodRef('cafe', pods)).toBe(pods[2]);
  });

  it('reports an ambiguous UID prefix with longer prefixes', () => {
    const err = thrown(() => resolvePodRef('ab12', pods));
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).message).toBe(
      'pod "ab12" is ambiguous: matches default/web (ab12cd34...), default/web-2 (ab12ef56...)',
    );
    expect((err as InputError).exitCode).toBe(2);
  });

  it('does not read short hex as a UID prefix', () => {
    expect(isUidPrefix('abc')).toBe(false);
    expect(isUidPrefix('a-b-c')).toBe(false);
    expect(isUidPrefix('ab12')).toBe(true);
    expect(isUidPrefix('web1')).toBe(false);
    expect(() => resolvePodRef('c0f', pods)).toThrow(NotFoundError);
  });

  it('suggests similar pods when nothing matches', () => {
    const err = thrown(() => resolvePodRef('etcd', pods)) as PodNotFoundError;
    expect(err).toBeInstanceOf(PodNotFoundError);
    expect(err.message).toBe('pod "etcd" not found');
    expect(err.candidates).toEqual(['kube-system/etcd-node1']);
    expect(err.suggestions).toEqual(['did you mean kube-system/etcd-node1?']);

    const typo = thrown(() => resolvePodRef('wbe', pods)) as PodNotFoundError;
    expect(typo.candidates).toEqual(['default/web', 'team-a/web']);

    const wrongNs = thrown(() => resolvePodRef('prod/web', pods)) as PodNotFoundError;
    expect(wrongNs.message).toBe('pod "prod/web" not found');
    expect(wrongNs.candidates.slice(0, 3)).toEqual(['default/web', 'team-a/web', 'default/web-2']);

    const nothing = thrown(() => resolvePodRef('zzzzzzzz', pods)) as PodNotFoundError;
    expect(nothing.candidates).toEqual([]);
    expect(nothing.suggestions).toEqual([]);
    expect((thrown(() => resolvePodRef('web', [])) as PodNotFoundError).suggestions).toEqual(['there are no pods on this node']);
  });

  it('lists at most ten candidates, best first', () => {
    const many = Array.from({ length: 15 }, (_, i) => ({ namespace: 'default', name: `api-${i}`, uid: `${i}` }));
    const err = thrown(() => resolvePodRef('api', many)) as PodNotFoundError;
    expect(err.candidates).toHaveLength(10);
    expect(err.candidates[0]).toBe('default/api-0');
  });

  it('rejects malformed references', () => {
    for (const ref of ['', '  ', '/web', 'ns/', 'a/b/c']) {
      expect(() => resolvePodRef(ref, pods)).toThrow(InputError);
    }
  });

  it('returns the caller\'s own objects', () => {
    const rich = pods.map((p) => ({ ...p, pod: { metadata: { name: p.name } } }));
    expect(resolvePodRef('team-a/web', rich).pod).toBe(rich[5]?.pod);
  });
});

describe('similarPods', () => {
  it('ranks same name, prefix, substring, then typos', () => {
    expect(similarPods({ namespace: 'default', name: 'kube-apiserver' }, pods)).toEqual(['kube-system/kube-apiserver-node1']);
    expect(similarPods({ namespace: 'default', name: 'node1' }, pods)).toEqual([
      'kube-system/etcd-node1',
      'kube-system/kube-apiserver-node1',
    ]);
  });
});

describe('PodNotFoundError for a pod of another node name', () => {
  const err = new PodNotFoundError('pc-nodec', [], 0, { node: 'nodec', thisNode: 'noded' });
  const ctx = (hasNodeName: boolean) => ({ output: 'table' as const, interruptedBy: undefined, hasFlag: (n: string) => hasNodeName && n === 'node-name' });

  it('says whose pod it is instead of "no pods on this node"', () => {
    expect(err.message).toBe('pod "pc-nodec" not found for node "noded"');
    expect(err.suggestions).toEqual(['it was run for node "nodec" under this root dir, not "noded"']);
    expect(err.otherNode).toBe('nodec');
  });

  it('the command layer names the flag that reaches it, when the command has it', () => {
    expect(describeFailure(err, ctx(true)).suggestions).toEqual([
      'it was run for node "nodec" under this root dir, not "noded"',
      'pass --node-name nodec to act on it',
    ]);
    expect(describeFailure(err, ctx(false)).suggestions).toEqual(['it was run for node "nodec" under this root dir, not "noded"']);
    expect(describeFailure(new PodNotFoundError('x', [], 0), ctx(true)).suggestions).toEqual(['there are no pods on this node']);
  });
});
