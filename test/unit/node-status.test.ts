import { describe, expect, it } from 'vitest';
import { NO_RESERVATION } from '../../src/lib/node/config.js';
import type { MachineFacts } from '../../src/lib/node/machine.js';
import { osImageFrom } from '../../src/lib/node/machine.js';
import {
  capacityAndAllocatable,
  initialNode,
  nodeConditions,
  nodeImages,
  nodeStatus,
  nodeStatusChanged,
  reconcileMetadata,
  type NodeFacts,
  type NodeSpecInput,
} from '../../src/lib/node/node-status.js';

const GiB = 1024 ** 3;
const machine: MachineFacts = {
  cpus: 2,
  hugepages: { 'hugepages-1Gi': 0, 'hugepages-2Mi': 0 },
  memoryBytes: 8 * GiB,
  memoryAvailableBytes: 6 * GiB,
  fsCapacityBytes: 100 * GiB,
  fsAvailableBytes: 60 * GiB,
  machineID: 'm1',
  systemUUID: 'u1',
  bootID: 'b1',
  kernelVersion: '6.1.0',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  operatingSystem: 'linux',
  architecture: 'amd64',
  hostname: 'host1',
};
const t0 = new Date('2026-01-01T00:00:00Z');
const facts = (over: Partial<NodeFacts> = {}): NodeFacts => ({
  machine,
  runtime: { containerRuntimeVersion: 'containerd://1.6.20', runtimeReady: true, networkReady: true, images: [] },
  hostIPs: ['10.0.0.5'],
  now: t0,
  ...over,
});
const spec: NodeSpecInput = { nodeName: 'node1', labels: { a: 'b' }, taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }], maxPods: 110, reserved: NO_RESERVATION, kletVersion: 'v0.1.0+klet' };

describe('capacity and allocatable', () => {
  it('subtracts reservations and the hard eviction thresholds (memory 100Mi, nodefs 10%)', () => {
    const { capacity, allocatable } = capacityAndAllocatable(machine, 110, { cpuMilli: 300, memoryBytes: GiB, ephemeralStorageBytes: GiB, pid: 0 });
    expect(capacity).toEqual({ cpu: '2', memory: '8Gi', pods: '110', 'ephemeral-storage': '100Gi', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' });
    expect(allocatable.cpu).toBe('1700m');
    expect(allocatable.memory).toBe(`${7 * 1024 - 100}Mi`);
    // 10 % as the kubelet takes it: a float32 percentage, int64(capacity × 0.1f) = 100Gi / 10 + 160 bytes.
    expect(allocatable['ephemeral-storage']).toBe(String(99 * GiB - (10 * GiB + 160)));
    expect(allocatable.pods).toBe('110');
  });
  it('holds back the configured hard thresholds of memory.available and nodefs.available, not the defaults', () => {
    const { allocatable } = capacityAndAllocatable(machine, 110, NO_RESERVATION, { 'memory.available': '1Gi', 'imagefs.available': '50%' });
    expect(allocatable.memory).toBe('7Gi');
    expect(allocatable['ephemeral-storage']).toBe('100Gi');
  });
  it('subtracts pre-allocated huge pages from allocatable memory and never goes negative', () => {
    const { allocatable } = capacityAndAllocatable({ ...machine, hugepages: { 'hugepages-2Mi': GiB } }, 10, { ...NO_RESERVATION, cpuMilli: 5000 });
    expect(allocatable.memory).toBe(`${7 * 1024 - 100}Mi`);
    expect(allocatable['hugepages-2Mi']).toBe('1Gi');
    expect(allocatable.cpu).toBe('0');
  });
});

describe('conditions', () => {
  it("use the kubelet's reasons and messages, in the kubelet's order", () => {
    const c = nodeConditions(facts());
    expect(c.map((x) => [x.type, x.status, x.reason, x.message])).toEqual([
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
      ['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'],
    ]);
  });
  it('Ready is False with the runtime network reason when CNI is not ready', () => {
    const c = nodeConditions(facts({ runtime: { containerRuntimeVersion: 'x', runtimeReady: true, networkReady: false, networkReason: 'reason:NetworkPluginNotReady message:cni plugin not initialized', images: [] } }));
    const ready = c.find((x) => x.type === 'Ready')!;
    expect([ready.status, ready.reason, ready.message]).toEqual([
      'False',
      'KubeletNotReady',
      'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized',
    ]);
  });
  it('reports memory and disk pressure below the hard eviction thresholds', () => {
    const c = nodeConditions(facts({ machine: { ...machine, memoryAvailableBytes: 50 * 1024 * 1024, fsAvailableBytes: 5 * GiB } }));
    expect(c.find((x) => x.type === 'MemoryPressure')?.reason).toBe('KubeletHasInsufficientMemory');
    expect(c.find((x) => x.type === 'DiskPressure')?.reason).toBe('KubeletHasDiskPressure');
  });
  it("with the eviction manager's conditions (klet sync), reports exactly those, with the kubelet's reasons and messages", () => {
    const c = nodeConditions(facts({ machine: { ...machine, fsAvailableBytes: 5 * GiB }, pressure: ['PIDPressure'] }));
    expect(c.slice(0, 3).map((x) => [x.type, x.status, x.reason, x.message])).toEqual([
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
      ['PIDPressure', 'True', 'KubeletHasInsufficientPID', 'kubelet has insufficient PID available'],
    ]);
  });
  it('keep lastTransitionTime while the status stays, and move it when it changes', () => {
    const first = nodeConditions(facts());
    const t1 = new Date(t0.getTime() + 10_000);
    const again = nodeConditions(facts({ now: t1 }), first);
    expect(again[3]!.lastTransitionTime).toEqual(t0);
    expect(again[3]!.lastHeartbeatTime).toEqual(t1);
    const down = nodeConditions(facts({ now: t1, runtime: { containerRuntimeVersion: 'x', runtimeReady: false, networkReady: true, images: [] } }), first);
    expect(down[3]!.lastTransitionTime).toEqual(t1);
  });
});

describe('node object', () => {
  it('has the standard labels, the attach/detach annotation, taints, addresses and node info', () => {
    const n = initialNode({ ...spec, nodeIP: '192.168.1.9' }, facts());
    expect(n.metadata?.labels).toEqual({
      a: 'b',
      'beta.kubernetes.io/arch': 'amd64',
      'beta.kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/hostname': 'node1',
      'kubernetes.io/os': 'linux',
    });
    expect(n.metadata?.annotations).toEqual({ 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' });
    expect(n.spec?.taints).toEqual([{ key: 'k', value: 'v', effect: 'NoSchedule' }]);
    expect(n.status?.addresses).toEqual([
      { type: 'InternalIP', address: '192.168.1.9' },
      { type: 'Hostname', address: 'host1' },
    ]);
    expect(n.status?.nodeInfo).toMatchObject({ containerRuntimeVersion: 'containerd://1.6.20', kubeletVersion: 'v0.1.0+klet', bootID: 'b1', osImage: 'Debian GNU/Linux 12 (bookworm)' });
  });
  it('lists the largest 50 images with at most 5 names, skipping nameless ones', () => {
    const images = Array.from({ length: 60 }, (_, i) => ({ names: Array.from({ length: 7 }, (_, j) => `img${i}:${j}`), sizeBytes: i }));
    const out = nodeImages([...images, { names: [], sizeBytes: 1e12 }]);
    expect(out).toHaveLength(50);
    expect(out[0]).toEqual({ names: ['img59:0', 'img59:1', 'img59:2', 'img59:3', 'img59:4'], sizeBytes: 59 });
  });
  it('reconciles only the default labels and the annotation of an existing node', () => {
    const existing = initialNode(spec, facts());
    expect(reconcileMetadata(existing, 'node1', machine)).toBeNull();
    existing.metadata!.labels!['kubernetes.io/arch'] = 'arm64';
    delete existing.metadata!.annotations;
    expect(reconcileMetadata(existing, 'node1', machine)).toEqual({
      labels: { 'kubernetes.io/arch': 'amd64' },
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    });
  });
  it('a status differing only in heartbeat times is unchanged', () => {
    const a = nodeStatus(spec, facts());
    const b = nodeStatus(spec, facts({ now: new Date(t0.getTime() + 10_000) }), a.conditions);
    expect(nodeStatusChanged(a, b)).toBe(false);
    const c = nodeStatus(spec, facts({ machine: { ...machine, memoryBytes: 4 * GiB } }), a.conditions);
    expect(nodeStatusChanged(a, c)).toBe(true);
  });
  it('osImage is PRETTY_NAME', () => {
    expect(osImageFrom('NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')).toBe('Debian GNU/Linux 12 (bookworm)');
  });
});
