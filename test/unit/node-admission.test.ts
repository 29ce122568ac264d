import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { type AdmissionNode, admitCriticalResources, admitPods, isCriticalPod, matchesNode, podRequests } from '../../src/lib/node/admission.js';

const node: AdmissionNode = {
  allocatable: { cpuMilli: 2000, memoryBytes: 1024 ** 3, pods: 3 },
  labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': 'node1', zone: 'a', gen: '5' },
  taints: [{ key: 'dedicated', value: 'edge', effect: 'NoExecute' }, { key: 'soft', effect: 'NoSchedule' }],
};
const tolerate = [{ key: 'dedicated', operator: 'Equal', value: 'edge', effect: 'NoExecute' }];
const pod = (name: string, cpu?: string, extra: Partial<V1Pod['spec']> = {}): V1Pod => ({
  metadata: { name, uid: name },
  spec: { containers: [{ name: 'c', image: 'i', ...(cpu ? { resources: { requests: { cpu } } } : {}) }], tolerations: tolerate, ...extra },
});

describe('admission (lifecycle/predicate.go)', () => {
  it('requests: max of the app containers sum and each init container, sidecars added, plus overhead', () => {
    const p: V1Pod = {
      spec: {
        initContainers: [
          { name: 'i', resources: { requests: { cpu: '1500m', memory: '64Mi' } } },
          { name: 'side', restartPolicy: 'Always', resources: { requests: { cpu: '100m' } } },
        ],
        containers: [
          { name: 'a', resources: { requests: { cpu: '500m', memory: '128Mi' } } },
          { name: 'b', resources: { requests: { cpu: '250m' } } },
        ],
        overhead: { cpu: '10m' },
      },
    };
    expect(podRequests(p)).toEqual({ cpuMilli: 1510, memoryBytes: 128 * 1024 * 1024 });
  });

  it('requests: pod-level resources stand for the containers\' (PodLevelResources, on in 1.34), overhead added', () => {
    const p: V1Pod = {
      spec: {
        resources: { requests: { cpu: '1', memory: '100Mi' } },
        containers: [{ name: 'a', resources: { requests: { cpu: '500m', memory: '50Mi' } } }, { name: 'b' }],
        overhead: { memory: '1Mi' },
      },
    };
    expect(podRequests(p)).toEqual({ cpuMilli: 1000, memoryBytes: 101 * 1024 * 1024 });
  });

  it('a static (critical) pod over the node: UnexpectedAdmissionError with what preemption could not free, as the kubelet says it', () => {
    const big: V1Pod = { metadata: { name: 'memory-demo-3' }, spec: { containers: [{ name: 'c', resources: { requests: { memory: '1000Gi' } } }] } };
    const held: V1Pod = { metadata: { name: 'memory-demo-2' }, spec: { containers: [{ name: 'c', resources: { requests: { memory: '50Mi', cpu: '300m' } } }] } };
    const r = admitCriticalResources(big, [{ pod: held, critical: true }], node.allocatable);
    const q = 1000 * 1024 ** 3 - (1024 ** 3 - 50 * 1024 ** 2);
    expect(r).toEqual({
      reason: 'UnexpectedAdmissionError',
      message: `Pod was rejected: Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: memory, q: ${q}), ]`,
    });
    // cpu in millicores; what non-critical pods hold counts as reclaimable.
    const cpu = admitCriticalResources(pod('x', '2500m'), [{ pod: held, critical: false }], node.allocatable);
    expect(cpu).toMatchObject({ reason: 'UnexpectedAdmissionError', message: expect.stringMatching(/resources: \[\(res: cpu, q: 500\), \]$/) });
  });

  it('a static pod that fits is admitted; one that fits once non-critical pods went is admitted too (the kubelet preempts them, klet does not)', () => {
    expect(admitCriticalResources(pod('x', '1'), [{ pod: pod('y', '500m'), critical: true }], node.allocatable)).toBeNull();
    expect(admitCriticalResources(pod('x', '1800m'), [{ pod: pod('y', '500m'), critical: false }], node.allocatable)).toEqual({ preempt: [{ resource: 'cpu', quantity: 300 }] });
    expect(isCriticalPod(pod('api'), false)).toBe(false);
    expect(isCriticalPod({ spec: { containers: [], priority: 2_000_001_000 } }, false)).toBe(true);
    expect(isCriticalPod(pod('static'), true)).toBe(true);
  });

  it('admits in order and rejects what does not fit with the kubelet reasons and messages', () => {
    const { admitted, rejected } = admitPods([pod('a', '1500m'), pod('b', '600m'), pod('c', '500m'), pod('d')], [], node, 'node1');
    expect(admitted.map((p) => p.metadata?.name)).toEqual(['a', 'c', 'd']);
    expect(rejected).toEqual([
      { pod: expect.anything(), reason: 'OutOfcpu', message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000" },
    ]);
    const more = admitPods([pod('e')], admitted, node, 'node1');
    expect(more.rejected[0]).toMatchObject({ reason: 'OutOfpods', message: "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" });
  });

  it('OutOfmemory', () => {
    const p = pod('m', undefined, { containers: [{ name: 'c', resources: { requests: { memory: '2Gi' } } }] });
    expect(admitPods([p], [], node, 'node1').rejected[0]?.reason).toBe('OutOfmemory');
  });

  it("the OS checks before the predicates, with the kubelet's reasons", () => {
    const windows = admitPods([pod('w', undefined, { os: { name: 'windows' } })], [], node, 'node1').rejected[0];
    expect(windows).toMatchObject({ reason: 'PodOSNotSupported', message: "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS" });
    const labelled = { ...pod('l'), metadata: { name: 'l', uid: 'l', labels: { 'kubernetes.io/os': 'windows' } } };
    expect(admitPods([labelled], [], node, 'node1').rejected[0]).toMatchObject({
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Pod was rejected: Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    });
    expect(admitPods([pod('x', undefined, { os: { name: 'linux' } })], [], node, 'node1').admitted).toHaveLength(1);
  });

  it('node selector and required node affinity', () => {
    expect(matchesNode(pod('x', undefined, { nodeSelector: { zone: 'a' } }), node, 'node1')).toBe(true);
    expect(matchesNode(pod('x', undefined, { nodeSelector: { zone: 'b' } }), node, 'node1')).toBe(false);
    const aff = (expr: object[], fields: object[] = []) =>
      pod('x', undefined, { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: expr as never, matchFields: fields as never }] } } } });
    expect(matchesNode(aff([{ key: 'gen', operator: 'Gt', values: ['4'] }, { key: 'zone', operator: 'In', values: ['a', 'b'] }]), node, 'node1')).toBe(true);
    expect(matchesNode(aff([{ key: 'gpu', operator: 'Exists' }]), node, 'node1')).toBe(false);
    expect(matchesNode(aff([], [{ key: 'metadata.name', operator: 'In', values: ['node1'] }]), node, 'node1')).toBe(true);
    expect(matchesNode(aff([], [{ key: 'metadata.name', operator: 'In', values: ['node2'] }]), node, 'node1')).toBe(false);
    const r = admitPods([pod('x', undefined, { nodeSelector: { zone: 'b' } })], [], node, 'node1').rejected[0];
    expect(r).toMatchObject({ reason: 'NodeAffinity', message: "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" });
  });

  it('NoExecute taints must be tolerated; NoSchedule ones are the scheduler\'s', () => {
    const r = admitPods([pod('t', undefined, { tolerations: [] })], [], node, 'node1').rejected[0];
    expect(r).toMatchObject({ reason: 'TaintToleration', message: 'Pod was rejected: Predicate TaintToleration failed: node(s) had untolerated taint {dedicated: edge}' });
    expect(admitPods([pod('t', undefined, { tolerations: [{ operator: 'Exists' }] })], [], node, 'node1').admitted).toHaveLength(1);
  });
});
