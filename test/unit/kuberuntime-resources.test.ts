import { describe, expect, it } from 'vitest';
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import {
  linuxContainerResources,
  milliCPUToQuota,
  milliCPUToShares,
  oomScoreAdj,
  qosClass,
} from '../../src/lib/kuberuntime/resources.js';

const GiB = 1024 ** 3;

function c(name: string, resources?: V1ResourceRequirements): V1Container {
  return { name, image: 'busybox', resources };
}
function pod(containers: V1Container[], initContainers?: V1Container[]): V1Pod {
  return { metadata: { name: 'p' }, spec: { containers, initContainers } };
}

describe('milliCPUToShares', () => {
  it.each([
    [0, 2],
    [1, 2],
    [2, 2],
    [100, 102],
    [250, 256],
    [1000, 1024],
    [1500, 1536],
    [256_000, 262144],
    [10_000_000, 262144],
  ])('%i mCPU → %i shares', (m, want) => {
    expect(milliCPUToShares(m)).toBe(want);
  });
});

describe('milliCPUToQuota', () => {
  it.each([
    [0, 0],
    [250, 25_000],
    [1000, 100_000],
    [1500, 150_000],
    [5, 1000],
    [10, 1000],
    [11, 1100],
  ])('%i mCPU at period 100000 → quota %i', (m, want) => {
    expect(milliCPUToQuota(m, 100_000)).toBe(want);
  });
  it('scales with the period', () => {
    expect(milliCPUToQuota(500, 50_000)).toBe(25_000);
  });
});

describe('qosClass', () => {
  const g = { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '500m', memory: '128Mi' } };
  it.each([
    { name: 'no resources', p: pod([c('a')]), want: 'BestEffort' },
    { name: 'zero requests', p: pod([c('a', { requests: { cpu: '0', memory: '0' } })]), want: 'BestEffort' },
    { name: 'only extended resources', p: pod([c('a', { limits: { 'example.com/gpu': '1' } })]), want: 'BestEffort' },
    { name: 'requests equal limits', p: pod([c('a', g)]), want: 'Guaranteed' },
    { name: 'limits only (requests default to limits)', p: pod([c('a', { limits: { cpu: '1', memory: '1Gi' } })]), want: 'Guaranteed' },
    { name: 'equal quantities written differently', p: pod([c('a', { requests: { cpu: '0.5', memory: '1Gi' }, limits: { cpu: '500m', memory: '1024Mi' } })]), want: 'Guaranteed' },
    { name: 'requests only', p: pod([c('a', { requests: { cpu: '100m' } })]), want: 'Burstable' },
    { name: 'requests below limits', p: pod([c('a', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '64Mi' } })]), want: 'Burstable' },
    { name: 'cpu limit only', p: pod([c('a', { limits: { cpu: '1' } })]), want: 'Burstable' },
    { name: 'one guaranteed, one best-effort container', p: pod([c('a', g), c('b')]), want: 'Burstable' },
    { name: 'guaranteed app, best-effort init container', p: pod([c('a', g)], [c('init')]), want: 'Burstable' },
    { name: 'guaranteed app and init containers', p: pod([c('a', g)], [c('init', g)]), want: 'Guaranteed' },
    { name: 'zero limits do not make it Guaranteed', p: pod([c('a', { limits: { cpu: '0', memory: '0' } }), c('b', { requests: { cpu: '1' } })]), want: 'Burstable' },
  ])('$name → $want', ({ p, want }) => {
    expect(qosClass(p)).toBe(want);
  });
});

describe('oomScoreAdj', () => {
  const capacity = 10 * GiB;
  it('is -997 for Guaranteed and 1000 for BestEffort', () => {
    const gc = c('a', { limits: { cpu: '1', memory: '1Gi' } });
    expect(oomScoreAdj(pod([gc]), gc, capacity)).toBe(-997);
    const be = c('a');
    expect(oomScoreAdj(pod([be]), be, capacity)).toBe(1000);
  });

  it.each([
    { name: '10% of memory', memory: '1Gi', want: 900 },
    { name: '50% of memory', memory: '5Gi', want: 500 },
    { name: 'a tiny request still beats BestEffort', memory: '1', want: 999 },
    { name: 'no memory request', memory: undefined, want: 999 },
    { name: 'all the memory: clamped to 3', memory: '10Gi', want: 3 },
    { name: 'more than the node has: clamped to 3', memory: '20Gi', want: 3 },
    { name: '99.9%: clamped to 3', memory: String(Math.floor(capacity * 0.999)), want: 3 },
  ])('Burstable, $name → $want', ({ memory, want }) => {
    const bc = c('a', { requests: { cpu: '100m', ...(memory ? { memory } : {}) } });
    expect(oomScoreAdj(pod([bc]), bc, capacity)).toBe(want);
  });
});

describe('linuxContainerResources', () => {
  const capacity = 8 * GiB;
  it('converts requests and limits', () => {
    const a = c('a', { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '128Mi' } });
    expect(linuxContainerResources(pod([a]), a, capacity)).toEqual({
      cpuShares: 256n,
      cpuQuota: 50_000n,
      cpuPeriod: 100_000n,
      memoryLimitInBytes: 134_217_728n,
      oomScoreAdj: BigInt(1000 - Math.floor((1000 * 64 * 1024 ** 2) / capacity)),
    });
  });

  it('takes shares from the limit when the request is unset; a request of 0 gives the minimum (calculateLinuxResources)', () => {
    for (const requests of [undefined, { memory: '1Mi' }]) {
      const a = c('a', { requests, limits: { cpu: '2' } });
      expect(linuxContainerResources(pod([a]), a, capacity).cpuShares).toBe(2048n);
    }
    const zero = c('a', { requests: { cpu: '0' }, limits: { cpu: '2' } });
    expect(linuxContainerResources(pod([zero]), zero, capacity).cpuShares).toBe(2n);
  });

  it('pod-level resources: a container without a limit of its own gets the pod-level one (getCPULimit, getMemoryLimit)', () => {
    // The docs' pod-level-resources.yaml: ctr-1 has its own resources, ctr-2 none.
    const one = c('pod-resources-demo-ctr-1', { limits: { cpu: '500m', memory: '100Mi' }, requests: { cpu: '500m', memory: '50Mi' } });
    const two = c('pod-resources-demo-ctr-2');
    const p = pod([one, two]);
    p.spec!.resources = { limits: { cpu: '1', memory: '200Mi' }, requests: { cpu: '1', memory: '100Mi' } };
    expect(linuxContainerResources(p, one, capacity)).toMatchObject({ cpuShares: 512n, cpuQuota: 50_000n, memoryLimitInBytes: 100n * 1024n ** 2n });
    expect(linuxContainerResources(p, two, capacity)).toMatchObject({ cpuShares: 1024n, cpuQuota: 100_000n, cpuPeriod: 100_000n, memoryLimitInBytes: 200n * 1024n ** 2n });
    // A pod-level request alone: the container keeps the minimum and no limit.
    const three = c('c');
    const q = pod([three]);
    q.spec!.resources = { requests: { memory: '100Mi' } };
    expect(linuxContainerResources(q, three, capacity)).toMatchObject({ cpuShares: 2n, cpuQuota: 0n, memoryLimitInBytes: 0n });
  });

  it('sets minimal shares and no quota or memory limit without resources', () => {
    const a = c('a');
    expect(linuxContainerResources(pod([a]), a, capacity)).toMatchObject({
      cpuShares: 2n,
      cpuQuota: 0n,
      memoryLimitInBytes: 0n,
      oomScoreAdj: 1000n,
    });
  });
});
