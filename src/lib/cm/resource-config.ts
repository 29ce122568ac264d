/**
 * The cgroup settings of pods, QoS classes and node allocatable, computed as
 * the kubelet's container manager computes them (pkg/kubelet/cm:
 * helpers_linux.go ResourceConfigForPod, qos_container_manager_linux.go
 * setCPUCgroupConfig, node_container_manager_linux.go getCgroupConfig), with
 * the pod's requests and limits as component-helpers' PodRequests/PodLimits
 * sum them (init containers, sidecars, pod-level resources, overhead).
 * Pure: no file is read or written here.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { parseQuantity } from '../pod/quantity.js';
import { MIN_SHARES, QUOTA_PERIOD, milliCPUToQuota, milliCPUToShares, qosClass } from '../kuberuntime/resources.js';

/** What one cgroup gets; an unset field is left as the kernel has it. */
export interface ResourceConfig {
  cpuShares?: number;
  /** CFS quota in µs; -1 for none. */
  cpuQuota?: number;
  cpuPeriod?: number;
  /** Memory limit in bytes. */
  memory?: number;
  /** Max processes; -1 for none. */
  pidsLimit?: number;
}

/** The compute resources of a pod the cgroups are made from: cpu in milli-CPUs, memory in bytes. */
export interface PodResources {
  cpu?: number;
  memory?: number;
}

type ResourceList = Record<string, string | number | undefined> | undefined;

/** CPU and memory of a resource list (others are not pod-level resources). */
function computeResources(list: ResourceList): PodResources {
  const out: PodResources = {};
  const cpu = list?.cpu;
  const memory = list?.memory;
  if (cpu !== undefined) out.cpu = parseQuantity(String(cpu)).milliValue();
  if (memory !== undefined) out.memory = parseQuantity(String(memory)).value();
  return out;
}

function add(into: PodResources, r: PodResources): void {
  if (r.cpu !== undefined) into.cpu = (into.cpu ?? 0) + r.cpu;
  if (r.memory !== undefined) into.memory = (into.memory ?? 0) + r.memory;
}

function max(into: PodResources, r: PodResources): void {
  if (r.cpu !== undefined) into.cpu = Math.max(into.cpu ?? 0, r.cpu);
  if (r.memory !== undefined) into.memory = Math.max(into.memory ?? 0, r.memory);
}

function isSidecar(c: V1Container): boolean {
  return (c as V1Container & { restartPolicy?: string }).restartPolicy === 'Always';
}

/**
 * A container's requests as the API server defaults them: a request that is
 * not given is its limit.
 */
function containerRequests(c: V1Container): PodResources {
  return { ...computeResources(c.resources?.limits), ...computeResources(c.resources?.requests) };
}

/**
 * AggregateContainerRequests/Limits: the containers summed; each init
 * container counts with the sidecars started before it, and the largest such
 * init step wins where it is larger than the sum.
 */
function aggregate(pod: V1Pod, of: (c: V1Container) => PodResources, onContainer?: (r: PodResources) => void): PodResources {
  const sum: PodResources = {};
  for (const c of pod.spec?.containers ?? []) {
    const r = of(c);
    onContainer?.(r);
    add(sum, r);
  }
  const sidecars: PodResources = {};
  const inits: PodResources = {};
  for (const c of pod.spec?.initContainers ?? []) {
    let r = of(c);
    if (isSidecar(c)) {
      add(sum, r);
      add(sidecars, r);
      r = { ...sidecars };
    } else {
      const tmp: PodResources = {};
      add(tmp, r);
      add(tmp, sidecars);
      r = tmp;
    }
    onContainer?.(r);
    max(inits, r);
  }
  max(sum, inits);
  return sum;
}

function podLevel(pod: V1Pod): { requests: PodResources; limits: PodResources } {
  const res = (pod.spec as { resources?: { requests?: ResourceList; limits?: ResourceList } } | undefined)?.resources;
  const limits = computeResources(res?.limits);
  // Pod-level requests default to the pod-level limits, as the API server defaults them.
  return { requests: { ...limits, ...computeResources(res?.requests) }, limits };
}

function isSet(r: PodResources): boolean {
  return r.cpu !== undefined || r.memory !== undefined;
}

/** The pod's `resources` (PodLevelResources) for cpu or memory, if any. */
export function hasPodLevelResources(pod: V1Pod): boolean {
  const { requests, limits } = podLevel(pod);
  return isSet(requests) || isSet(limits);
}

function overhead(pod: V1Pod): PodResources {
  return computeResources(pod.spec?.overhead as ResourceList);
}

/** PodRequests: containers aggregated, pod-level requests in their place, plus the RuntimeClass overhead. */
export function podRequests(pod: V1Pod): PodResources {
  const reqs = aggregate(pod, containerRequests);
  const pl = podLevel(pod).requests;
  if (pl.cpu !== undefined) reqs.cpu = pl.cpu;
  if (pl.memory !== undefined) reqs.memory = pl.memory;
  add(reqs, overhead(pod));
  return reqs;
}

/**
 * PodLimits, and whether every container (or the pod) declares a cpu and a
 * memory limit (ResourceConfigForPod's cpuLimitsDeclared/memoryLimitsDeclared).
 */
export function podLimits(pod: V1Pod): { limits: PodResources; cpuDeclared: boolean; memoryDeclared: boolean } {
  let cpuDeclared = true;
  let memoryDeclared = true;
  const limits = aggregate(
    pod,
    (c) => computeResources(c.resources?.limits),
    (r) => {
      if (!r.cpu) cpuDeclared = false;
      if (!r.memory) memoryDeclared = false;
    },
  );
  const pl = podLevel(pod).limits;
  if (pl.cpu !== undefined) limits.cpu = pl.cpu;
  if (pl.memory !== undefined) limits.memory = pl.memory;
  if (pl.cpu) cpuDeclared = true;
  if (pl.memory) memoryDeclared = true;
  // The overhead is added to limits that are set (and not zero).
  const oh = overhead(pod);
  if (limits.cpu && oh.cpu !== undefined) limits.cpu += oh.cpu;
  if (limits.memory && oh.memory !== undefined) limits.memory += oh.memory;
  return { limits, cpuDeclared, memoryDeclared };
}

export interface PodCgroupOptions {
  /** --cpu-cfs-quota: false leaves the pod's CPU unthrottled (quota -1). Default true. */
  enforceCPULimits?: boolean;
  /** --cpu-cfs-quota-period in µs. Default 100000. */
  cpuPeriod?: number;
}

/** ResourceConfigForPod: the pod cgroup's settings. */
export function resourceConfigForPod(pod: V1Pod, opts: PodCgroupOptions = {}): ResourceConfig {
  const period = opts.cpuPeriod ?? QUOTA_PERIOD;
  const reqs = podRequests(pod);
  const { limits, cpuDeclared, memoryDeclared } = podLimits(pod);
  const cpuShares = milliCPUToShares(reqs.cpu ?? 0);
  const cpuQuota = opts.enforceCPULimits === false ? -1 : milliCPUToQuota(limits.cpu ?? 0, period);
  const memory = limits.memory ?? 0;
  switch (qosClass(pod)) {
    case 'Guaranteed':
      return { cpuShares, cpuQuota, cpuPeriod: period, memory };
    case 'Burstable':
      return {
        cpuShares,
        ...(cpuDeclared ? { cpuQuota, cpuPeriod: period } : {}),
        ...(memoryDeclared ? { memory } : {}),
      };
    default:
      return { cpuShares: MIN_SHARES };
  }
}

/**
 * The QoS cgroups' settings (setCPUCgroupConfig): besteffort always 2
 * shares; burstable the shares of the cpu requests of all Burstable pods.
 */
export function qosCgroupConfigs(activePods: readonly V1Pod[]): { burstable: ResourceConfig; besteffort: ResourceConfig } {
  let burstableMilli = 0;
  for (const pod of activePods) {
    if (qosClass(pod) !== 'Burstable') continue;
    burstableMilli += podRequests(pod).cpu ?? 0;
  }
  return { burstable: { cpuShares: milliCPUToShares(burstableMilli) }, besteffort: { cpuShares: MIN_SHARES } };
}

export interface NodeResources {
  cpuMilli: number;
  memoryBytes: number;
  /** 0: not limited. */
  pid: number;
}

/**
 * The settings of the node allocatable cgroup (`kubepods`): the node's
 * capacity, less --kube-reserved and --system-reserved when
 * --enforce-node-allocatable has `pods` (getNodeAllocatableInternalAbsolute,
 * getCgroupConfig). No CPU quota: only shares.
 */
export function nodeAllocatableConfig(capacity: NodeResources, reserved: readonly NodeResources[], enforcePods: boolean): ResourceConfig {
  const alloc = { ...capacity };
  if (enforcePods) {
    for (const r of reserved) {
      alloc.cpuMilli = Math.max(0, alloc.cpuMilli - r.cpuMilli);
      alloc.memoryBytes = Math.max(0, alloc.memoryBytes - r.memoryBytes);
      if (alloc.pid > 0) alloc.pid = Math.max(0, alloc.pid - r.pid);
    }
  }
  const rc: ResourceConfig = { cpuShares: milliCPUToShares(alloc.cpuMilli), memory: alloc.memoryBytes };
  if (alloc.pid > 0) rc.pidsLimit = alloc.pid;
  return rc;
}
