import { describe, expect, it } from 'vitest';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  allocationFromPod,
  containerResources,
  decideResize,
  mixResources,
  podWithAllocation,
  resizeCompletedMessage,
  resizeSteps,
  type ContainerUpdate,
} from '../../src/lib/kuberuntime/resize.js';

const res = (cpu: string, mem?: string) => ({ limits: { cpu, ...(mem ? { memory: mem } : {}) }, requests: { cpu, ...(mem ? { memory: mem } : {}) } });
function pod(uid: string, containers: V1Container[], source = 'api'): V1Pod {
  return { metadata: { name: uid, namespace: 'default', uid, annotations: { 'kubernetes.io/config.source': source } }, spec: { containers } };
}
const GiB = 1024 ** 3;
const node = { cpuMilli: 2000, memoryBytes: 4 * GiB };

describe('allocation', () => {
  it('records containers and sidecars, not regular init containers', () => {
    const p = pod('u', [{ name: 'a', resources: res('500m') }]);
    p.spec!.initContainers = [{ name: 'sc', restartPolicy: 'Always', resources: res('100m') }, { name: 'init', resources: res('1') }];
    expect(allocationFromPod(p)).toEqual({ a: res('500m'), sc: res('100m') });
  });

  it('podWithAllocation gives the allocated resources where the spec asks for others', () => {
    const p = pod('u', [{ name: 'a', image: 'x', resources: res('1') }, { name: 'b', resources: res('200m') }]);
    const { pod: got, changed } = podWithAllocation(p, { a: res('500m'), b: res('200m') });
    expect(changed).toBe(true);
    expect(got.spec?.containers.map((c) => c.resources)).toEqual([res('500m'), res('200m')]);
    expect(got.spec?.containers[0]?.image).toBe('x');
    expect(p.spec?.containers[0]?.resources).toEqual(res('1'));
    // Quantities compare by value.
    expect(podWithAllocation(pod('u', [{ name: 'a', resources: res('1') }]), { a: res('1000m') }).changed).toBe(false);
    expect(podWithAllocation(p, undefined).changed).toBe(false);
  });
});

describe('decideResize (handlePodResourcesResize, canResizePod)', () => {
  const other = pod('other', [{ name: 'o', resources: res('1', '1Gi') }]);
  type Row = [string, { want: V1Container['resources']; source?: string; others?: V1Pod[] }, ReturnType<typeof decideResize>];
  const rows: Row[] = [
    ['the spec asks for what is allocated', { want: res('500m') }, { kind: 'none' }],
    ['fits: allocated', { want: res('1') }, { kind: 'allocate' }],
    ['fits beside the others: allocated', { want: res('1'), others: [other] }, { kind: 'allocate' }],
    [
      'more CPU than the node has: Infeasible',
      { want: res('3') },
      { kind: 'pending', reason: 'Infeasible', message: "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000" },
    ],
    [
      'more memory than the node has: Infeasible, memory named first',
      { want: res('3', '8Gi') },
      { kind: 'pending', reason: 'Infeasible', message: `Node didn't have enough capacity: memory, requested: ${8 * GiB}, capacity: ${4 * GiB}` },
    ],
    [
      'not beside the other pods: Deferred with the predicate message',
      { want: res('1500m'), others: [other] },
      { kind: 'pending', reason: 'Deferred', message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000" },
    ],
    [
      'memory not beside the other pods: Deferred',
      { want: res('500m', '3584Mi'), others: [other] },
      { kind: 'pending', reason: 'Deferred', message: `Node didn't have enough resource: memory, requested: ${3.5 * GiB}, used: ${GiB}, capacity: ${4 * GiB}` },
    ],
    ['a static pod: Infeasible', { want: res('1'), source: 'file' }, { kind: 'pending', reason: 'Infeasible', message: 'In-place resize of static-pods is not supported' }],
  ];
  it.each(rows)('%s', (_n, i, want) => {
    const p = pod('self', [{ name: 'a', resources: i.want }], i.source);
    expect(decideResize({ pod: p, allocation: { a: res('500m') }, allocatable: node, others: [p, ...(i.others ?? [])] })).toEqual(want);
  });
});

describe('resizeSteps (doPodResizeAction order)', () => {
  const u = (name: string): ContainerUpdate => ({ name, id: name, current: containerResources(undefined), desired: containerResources(undefined) });
  const kinds = (steps: ReturnType<typeof resizeSteps>) => steps.map((s) => (s.kind === 'pod' ? `pod ${s.resource} ${s.limit ? 'limit' : 'request'}` : `containers ${s.resource}`));
  it.each([
    ['CPU limit up: the pod cgroup first', { cpuQuota: 50000, cpuShares: 512 }, { cpuQuota: 100000, cpuShares: 512 }, ['pod cpu limit', 'containers cpu']],
    ['CPU limit down: the containers first', { cpuQuota: 100000, cpuShares: 512 }, { cpuQuota: 50000, cpuShares: 512 }, ['containers cpu', 'pod cpu limit']],
    ['CPU request up, limit down', { cpuQuota: 100000, cpuShares: 512 }, { cpuQuota: 50000, cpuShares: 1024 }, ['pod cpu request', 'containers cpu', 'pod cpu limit']],
    ['CPU request down', { cpuQuota: -1, cpuShares: 1024 }, { cpuQuota: -1, cpuShares: 512 }, ['containers cpu', 'pod cpu request']],
  ] as const)('%s', (_n, cur, want, steps) => {
    expect(kinds(resizeSteps(cur, want, { cpu: [u('a')], memory: [] }, false))).toEqual(steps);
  });

  it('memory before CPU; a memory limit going up is set on the pod first, going down last', () => {
    expect(kinds(resizeSteps({ memory: 64, cpuQuota: 100, cpuShares: 2 }, { memory: 128, cpuQuota: 50, cpuShares: 2 }, { cpu: [u('a')], memory: [u('a')] }, false))).toEqual([
      'pod memory limit',
      'containers memory',
      'containers cpu',
      'pod cpu limit',
    ]);
    expect(kinds(resizeSteps({ memory: 128 }, { memory: 64 }, { cpu: [], memory: [u('a')] }, false))).toEqual(['containers memory', 'pod memory limit']);
  });

  it('a restart for a resize resizes the pod cgroup with no container updated in place', () => {
    expect(kinds(resizeSteps({ memory: 64, cpuQuota: 100, cpuShares: 2 }, { memory: 128, cpuQuota: 100, cpuShares: 2 }, { cpu: [], memory: [] }, true))).toEqual(['pod memory limit']);
    expect(resizeSteps({ memory: 64 }, { memory: 128 }, { cpu: [], memory: [] }, false)).toEqual([]);
  });
});

describe('mixResources and the completion message', () => {
  it('takes one resource from the desired resources and keeps the other', () => {
    expect(mixResources(res('500m', '64Mi'), res('1', '128Mi'), 'cpu')).toEqual({ limits: { memory: '64Mi', cpu: '1' }, requests: { memory: '64Mi', cpu: '1' } });
    expect(mixResources(undefined, { limits: { memory: '1Gi' } }, 'memory')).toEqual({ limits: { memory: '1Gi' } });
  });

  it('says what is allocated as the kubelet does', () => {
    expect(resizeCompletedMessage(pod('u', [{ name: 'c', resources: { requests: { cpu: '100m' }, limits: { cpu: '1' } } }, { name: 'd' }]))).toBe(
      'Pod resize completed: {"containers":[{"name":"c","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"100m"}}},{"name":"d","resources":{}}]}',
    );
  });
});
