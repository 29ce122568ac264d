import type { V1ContainerPort, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admissionKey, admissionOrder, admittedKey, admitHostPorts, batchAdmissionKeys, podHostPorts, portsConflict } from '../../src/lib/kuberuntime/admission.js';

function pod(name: string, ports: V1ContainerPort[], init: V1ContainerPort[] = []): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: {
      initContainers: init.length > 0 ? [{ name: 'i', ports: init }] : undefined,
      containers: [{ name: 'c', ports }],
    },
  };
}

describe('hostPort admission (NodePorts)', () => {
  it('collects host ports of init and app containers, skipping container-only ports', () => {
    expect(podHostPorts(pod('a', [{ containerPort: 80, hostPort: 8080 }, { containerPort: 81 }], [{ containerPort: 53, hostPort: 53, protocol: 'UDP' }]))).toEqual([
      { hostIP: '', protocol: 'UDP', port: 53 },
      { hostIP: '', protocol: 'TCP', port: 8080 },
    ]);
  });

  it.each([
    { a: { hostIP: '', protocol: 'TCP', port: 80 }, b: { hostIP: '', protocol: 'TCP', port: 80 }, conflict: true },
    { a: { hostIP: '127.0.0.1', protocol: 'TCP', port: 80 }, b: { hostIP: '0.0.0.0', protocol: 'TCP', port: 80 }, conflict: true },
    { a: { hostIP: '127.0.0.1', protocol: 'TCP', port: 80 }, b: { hostIP: '127.0.0.2', protocol: 'TCP', port: 80 }, conflict: false },
    { a: { hostIP: '', protocol: 'TCP', port: 80 }, b: { hostIP: '', protocol: 'UDP', port: 80 }, conflict: false },
    { a: { hostIP: '', protocol: 'TCP', port: 80 }, b: { hostIP: '', protocol: 'TCP', port: 81 }, conflict: false },
  ])('$a.hostIP:$a.port/$a.protocol vs $b.hostIP:$b.port/$b.protocol → $conflict', ({ a, b, conflict }) => {
    expect(portsConflict(a, b)).toBe(conflict);
    expect(portsConflict(b, a)).toBe(conflict);
  });

  it('rejects the second pod with the kubelet reason and a message naming the port and the holder', () => {
    const first = pod('first', [{ containerPort: 80, hostPort: 8080 }]);
    const second = pod('second', [{ containerPort: 90, hostPort: 8080 }]);
    expect(admitHostPorts(second, [first])).toEqual({
      reason: 'NodePorts',
      message:
        "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports (hostPort 8080/TCP is held by pod default/first)",
    });
    expect(admitHostPorts(second, [second])).toBeNull();
    expect(admitHostPorts(second, [pod('other', [{ containerPort: 80, hostPort: 8081 }])])).toBeNull();
    expect(admitHostPorts(pod('none', [{ containerPort: 80 }]), [first])).toBeNull();
  });
});

describe('admission order (HandlePodAdditions: by creation time, then source order)', () => {
  const pod = (name: string, creationTimestamp?: string): V1Pod => ({
    metadata: { name, uid: `uid-${name}`, ...(creationTimestamp ? { creationTimestamp: new Date(creationTimestamp) } : {}) },
  });
  const cases: [string, V1Pod[], string[]][] = [
    ['no creation times: source order', [pod('b'), pod('a'), pod('c')], ['b', 'a', 'c']],
    ['older first', [pod('new', '2024-02-01T00:00:00Z'), pod('old', '2024-01-01T00:00:00Z')], ['old', 'new']],
    ['none (the zero time) before any', [pod('dated', '2024-01-01T00:00:00Z'), pod('undated')], ['undated', 'dated']],
    ['equal times keep source order', [pod('x', '2024-01-01T00:00:00Z'), pod('y', '2024-01-01T00:00:00Z'), pod('w', '2023-01-01T00:00:00Z')], ['w', 'x', 'y']],
  ];
  it.each(cases)('%s', (_name, pods, want) => {
    expect(admissionOrder(pods, (p) => p).map((p) => p.metadata?.name)).toEqual(want);
  });

  it('keys compare as the order: a later batch after every pod of an earlier one, a record without a key by its firstSeen', () => {
    const t = new Date('2026-11-27T10:00:00.000Z');
    const keys = batchAdmissionKeys([pod('new', '2024-02-01T00:00:00Z'), pod('old', '2024-01-01T00:00:00Z')], t);
    expect(keys).toEqual(new Map([['uid-old', admissionKey(t, 0)], ['uid-new', admissionKey(t, 1)]]));
    expect(keys.get('uid-old')! < keys.get('uid-new')!).toBe(true);
    const later = admissionKey(new Date(t.getTime() + 1), 0);
    expect(keys.get('uid-new')! < later).toBe(true);
    const legacy = admittedKey({ firstSeen: '2026-11-27T09:59:59.999Z' });
    expect(legacy < keys.get('uid-old')!).toBe(true);
    expect(admittedKey({ firstSeen: 'x', admitted: keys.get('uid-new')! })).toBe(keys.get('uid-new'));
  });
});
