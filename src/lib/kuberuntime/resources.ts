/**
 * Resources → Linux resources and QoS class, as the kubelet computes them
 * (pkg/kubelet/kuberuntime/kuberuntime_container_linux.go, pkg/apis/core/v1/helper/qos).
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { parseQuantity } from '../pod/quantity.js';
import { CONFIG_MIRROR_ANNOTATION, isStaticPod } from '../pod/static-pod.js';

export const MIN_SHARES = 2;
export const MAX_SHARES = 262144;
export const SHARES_PER_CPU = 1024;
export const QUOTA_PERIOD = 100_000;
export const MIN_QUOTA_PERIOD = 1000;

export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

function milli(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  return parseQuantity(String(q)).milliValue();
}
function bytes(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  return parseQuantity(String(q)).value();
}

/** milliCPU → cgroup v1 cpu.shares. */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU === 0) return MIN_SHARES;
  const shares = Math.floor((milliCPU * SHARES_PER_CPU) / 1000);
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, shares));
}

/** milliCPU limit → CFS quota for the given period. */
export function milliCPUToQuota(milliCPU: number, period: number): number {
  if (milliCPU === 0) return 0;
  const quota = Math.floor((milliCPU * period) / 1000);
  return Math.max(MIN_QUOTA_PERIOD, quota);
}

/** The pod's `resources` (PodLevelResources), as the API gives it. */
function podLevelResources(pod: V1Pod): { requests?: Record<string, string | number>; limits?: Record<string, string | number> } | undefined {
  return (pod.spec as { resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> } } | undefined)?.resources;
}

/**
 * ComputePodQOS. With pod-level resources (the PodLevelResources feature,
 * on by default since v1.34) the pod's own requests and limits decide.
 */
export function qosClass(pod: V1Pod): QOSClass {
  const pl = podLevelResources(pod);
  if (pl !== undefined && (Object.keys(pl.requests ?? {}).length > 0 || Object.keys(pl.limits ?? {}).length > 0)) return podLevelQOS(pl);
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  let anySet = false;
  let guaranteed = true;
  for (const c of all) {
    const req = c.resources?.requests ?? {};
    const lim = c.resources?.limits ?? {};
    for (const r of ['cpu', 'memory']) {
      const rq = req[r];
      const lm = lim[r];
      if ((rq !== undefined && !parseQuantity(String(rq)).isZero) || (lm !== undefined && !parseQuantity(String(lm)).isZero)) {
        anySet = true;
      }
      // Only a positive limit counts toward Guaranteed.
      if (lm === undefined || parseQuantity(String(lm)).isZero) {
        guaranteed = false;
        continue;
      }
      // Requests default to limits; a request that differs makes it Burstable.
      if (rq !== undefined && parseQuantity(String(rq)).cmp(parseQuantity(String(lm))) !== 0) guaranteed = false;
    }
  }
  if (!anySet) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function podLevelQOS(pl: { requests?: Record<string, string | number>; limits?: Record<string, string | number> }): QOSClass {
  const positive = (list: Record<string, string | number> | undefined) =>
    new Map(
      Object.entries(list ?? {})
        .filter(([k, v]) => (k === 'cpu' || k === 'memory') && parseQuantity(String(v)).sign() > 0)
        .map(([k, v]) => [k, parseQuantity(String(v))] as const),
    );
  const limits = positive(pl.limits);
  // Requests default to the limits (the API server's defaulting).
  const requests = new Map([...limits, ...positive(pl.requests)]);
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (!limits.has('cpu') || !limits.has('memory')) return 'Burstable';
  for (const [k, q] of requests) if (limits.get(k)?.cmp(q) !== 0) return 'Burstable';
  return requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** The kubelet's GetContainerOOMScoreAdjust (runtime clamps it where the host forbids). */
export function oomScoreAdj(pod: V1Pod, container: V1Container, memoryCapacity: number): number {
  // Only a node-critical pod is the last to be killed, whatever its QoS class.
  if (isNodeCriticalPod(pod)) return -997;
  const qos = qosClass(pod);
  if (qos === 'Guaranteed') return -997;
  if (qos === 'BestEffort') return 1000;
  const memReq = (c: V1Container) => bytes(c.resources?.requests?.memory ?? c.resources?.limits?.memory) ?? 0;
  const scoreOf = (req: number) => 1000 - Math.trunc((1000 * req) / Math.max(memoryCapacity, 1));
  // A pod-level memory request: what the containers do not request is shared among them (remainingPodMemReqPerContainer).
  let remaining = 0;
  const podReq = bytes(podLevelResources(pod)?.requests?.memory ?? podLevelResources(pod)?.limits?.memory);
  if (podReq !== undefined && podReq > 0) {
    const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
    remaining = Math.trunc((podReq - all.reduce((n, c) => n + memReq(c), 0)) / Math.max(all.length, 1));
  }
  let adj = scoreOf(memReq(container) + remaining);
  // A sidecar is killed no later than the regular container with the smallest memory request.
  const sidecar = (container as V1Container & { restartPolicy?: string }).restartPolicy === 'Always' && (pod.spec?.initContainers ?? []).some((c) => c.name === container.name);
  const regular = pod.spec?.containers ?? [];
  if (sidecar && regular.length > 0) adj = Math.min(adj, scoreOf(Math.min(...regular.map(memReq)) + remaining));
  if (adj < 3) adj = 3;
  if (adj >= 1000) adj = 999;
  return adj;
}

/**
 * IsNodeCriticalPod: priorityClassName system-node-critical on a static or
 * mirror pod, or with a system-critical priority (which the API gives that class).
 */
export function isNodeCriticalPod(pod: V1Pod): boolean {
  if (pod.spec?.priorityClassName !== 'system-node-critical') return false;
  return isStaticPod(pod) || pod.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined || (pod.spec?.priority ?? 0) >= 2_000_000_000;
}

export interface LinuxResources {
  cpuShares: bigint;
  cpuQuota: bigint;
  cpuPeriod: bigint;
  memoryLimitInBytes: bigint;
  oomScoreAdj: bigint;
}

/** IsPodLevelResourcesSet: the pod sets a pod-level cpu or memory request or limit. */
function podLevelSet(pod: V1Pod): boolean {
  const pl = podLevelResources(pod);
  return [...Object.keys(pl?.requests ?? {}), ...Object.keys(pl?.limits ?? {})].some((r) => r === 'cpu' || r === 'memory');
}

export function linuxContainerResources(pod: V1Pod, container: V1Container, memoryCapacity: number): LinuxResources {
  const requests = container.resources?.requests ?? {};
  // With pod-level resources, a container without a limit of its own gets the pod's (getCPULimit, getMemoryLimit).
  const podLimits = podLevelSet(pod) ? (podLevelResources(pod)?.limits ?? {}) : {};
  const cpuLim = milli(container.resources?.limits?.cpu) || milli(podLimits.cpu);
  const memLim = bytes(container.resources?.limits?.memory) || bytes(podLimits.memory);
  // Shares from the request when one is given (even 0), else from the limit (calculateLinuxResources).
  const sharesFrom = 'cpu' in requests ? (milli(requests.cpu) ?? 0) : (cpuLim ?? 0);
  const res: LinuxResources = {
    cpuShares: BigInt(milliCPUToShares(sharesFrom)),
    cpuQuota: 0n,
    cpuPeriod: 0n,
    memoryLimitInBytes: BigInt(memLim ?? 0),
    oomScoreAdj: BigInt(oomScoreAdj(pod, container, memoryCapacity)),
  };
  if (cpuLim !== undefined && cpuLim > 0) {
    res.cpuPeriod = BigInt(QUOTA_PERIOD);
    res.cpuQuota = BigInt(milliCPUToQuota(cpuLim, QUOTA_PERIOD));
  }
  return res;
}
