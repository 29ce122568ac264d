import type { V1ContainerPort, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admitHostPorts, podHostPorts, portsConflict } from '../../src/lib/kuberuntime/admission.js';

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
