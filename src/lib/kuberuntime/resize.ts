/**
 * In-place pod resize (InPlacePodVerticalScaling, on by default in 1.34), the
 * pure parts: the allocated resources a pod runs with (the kubelet's
 * allocation manager: allocationFromPod, UpdatePodFromAllocation), whether a
 * resize of an API pod is admitted, deferred or infeasible
 * (handlePodResourcesResize / canResizePod), and the order in which the pod
 * cgroup and the containers are changed (doPodResizeAction). The executor is
 * in sync-pod.ts; the per-container plan (update in place or restart, per
 * resizePolicy) is computePodResizeAction in actions.ts.
 */
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { podRequests } from '../node/admission.js';
import { parseQuantity } from '../pod/quantity.js';
import { isStaticPod } from '../pod/static-pod.js';
import type { ResourceConfig } from '../cm/resource-config.js';

/** The resources allocated to a pod's resizable containers (containers and sidecars), by container name. */
export type PodAllocation = Record<string, V1ResourceRequirements>;

/** A container's compute resources as the kubelet compares them (containerResourcesFromRequirements): milli-CPUs and bytes. */
export interface ContainerResources {
  cpuRequest: number;
  cpuLimit: number;
  memoryRequest: number;
  memoryLimit: number;
}

function quantityOf(v: unknown, milli: boolean): number {
  if (v === undefined || v === null) return 0;
  const q = parseQuantity(String(v));
  return milli ? q.milliValue() : q.value();
}

export function containerResources(r: V1ResourceRequirements | undefined): ContainerResources {
  return {
    cpuRequest: quantityOf(r?.requests?.cpu, true),
    cpuLimit: quantityOf(r?.limits?.cpu, true),
    memoryRequest: quantityOf(r?.requests?.memory, false),
    memoryLimit: quantityOf(r?.limits?.memory, false),
  };
}

/** Two resource lists are the same (apiequality.Semantic: quantities compared by value, "1" equals "1000m"). */
function sameList(a: Record<string, unknown> | undefined, b: Record<string, unknown> | undefined): boolean {
  const ka = Object.keys(a ?? {}).sort();
  const kb = Object.keys(b ?? {}).sort();
  if (ka.join(',') !== kb.join(',')) return false;
  return ka.every((k) => {
    const x = a?.[k];
    const y = b?.[k];
    try {
      return parseQuantity(String(x)).cmp(parseQuantity(String(y))) === 0;
    } catch {
      return String(x) === String(y);
    }
  });
}

export function sameResources(a: V1ResourceRequirements | undefined, b: V1ResourceRequirements | undefined): boolean {
  return sameList(a?.requests, b?.requests) && sameList(a?.limits, b?.limits);
}

/** A container's requests and limits (limits first, as Go marshals ResourceRequirements). */
function resourcesOf(c: V1Container): V1ResourceRequirements {
  const r: V1ResourceRequirements = {};
  if (c.resources?.limits !== undefined) r.limits = { ...c.resources.limits };
  if (c.resources?.requests !== undefined) r.requests = { ...c.resources.requests };
  return r;
}

/** The kubelet's allocationFromPod: every container's resources, and the sidecars' (restartPolicy Always init containers). */
export function allocationFromPod(pod: V1Pod): PodAllocation {
  const out: PodAllocation = {};
  for (const c of pod.spec?.containers ?? []) out[c.name] = resourcesOf(c);
  for (const c of pod.spec?.initContainers ?? []) if (c.restartPolicy === 'Always') out[c.name] = resourcesOf(c);
  return out;
}

/**
 * The kubelet's UpdatePodFromAllocation: the pod with each container's
 * resources replaced by its allocated ones where they differ; `changed` when
 * any did (the spec asks for a resize not yet allocated).
 */
export function podWithAllocation(pod: V1Pod, allocation: PodAllocation | undefined): { pod: V1Pod; changed: boolean } {
  if (allocation === undefined) return { pod, changed: false };
  let changed = false;
  const apply = (list: V1Container[] | undefined) =>
    list?.map((c) => {
      const a = allocation[c.name];
      if (a === undefined || sameResources(c.resources, a)) return c;
      changed = true;
      return { ...c, resources: a };
    });
  if (pod.spec === undefined) return { pod, changed: false };
  const containers = apply(pod.spec.containers) ?? [];
  const initContainers = apply(pod.spec.initContainers);
  if (!changed) return { pod, changed: false };
  return { pod: { ...pod, spec: { ...pod.spec, containers, ...(initContainers ? { initContainers } : {}) } }, changed: true };
}

export type ResizeDecision =
  /** The spec asks for nothing new. */
  | { kind: 'none' }
  /** Admitted: the spec's resources become the allocated ones. */
  | { kind: 'allocate' }
  /** Not now (Deferred, retried) or never as asked (Infeasible): the PodResizePending condition's reason and message. */
  | { kind: 'pending'; reason: 'Deferred' | 'Infeasible'; message: string };

export interface ResizeInputs {
  /** The pod as its source has it now (the resources asked for). */
  pod: V1Pod;
  /** What is allocated to it. */
  allocation: PodAllocation | undefined;
  /** The node's allocatable CPU (millicores) and memory (bytes): GetNodeAllocatableAbsolute. */
  allocatable: { cpuMilli: number; memoryBytes: number };
  /** The node's other active pods, with their allocated resources. */
  others: readonly V1Pod[];
}

/**
 * handlePodResourcesResize and canResizePod: a resize of a static pod is
 * infeasible; one asking more than the node's allocatable is infeasible
 * ("Node didn't have enough capacity: …"); one that does not fit beside the
 * other pods' allocated requests is deferred with the admission predicate's
 * message ("Node didn't have enough resource: …"); otherwise it is
 * allocated. klet has no CPU or memory manager policies and no swap, so the
 * kubelet's checks for those never apply.
 */
export function decideResize(i: ResizeInputs): ResizeDecision {
  if (!podWithAllocation(i.pod, i.allocation).changed) return { kind: 'none' };
  if (isStaticPod(i.pod)) return { kind: 'pending', reason: 'Infeasible', message: 'In-place resize of static-pods is not supported' };
  const want = podRequests(i.pod);
  const { cpuMilli, memoryBytes } = i.allocatable;
  if (want.cpuMilli > cpuMilli || want.memoryBytes > memoryBytes) {
    const msg =
      want.memoryBytes > memoryBytes
        ? `memory, requested: ${want.memoryBytes}, capacity: ${memoryBytes}`
        : `cpu, requested: ${want.cpuMilli}, capacity: ${cpuMilli}`;
    return { kind: 'pending', reason: 'Infeasible', message: `Node didn't have enough capacity: ${msg}` };
  }
  const uid = i.pod.metadata?.uid;
  const used = { cpuMilli: 0, memoryBytes: 0 };
  for (const p of i.others) {
    if (p.metadata?.uid === uid) continue;
    const r = podRequests(p);
    used.cpuMilli += r.cpuMilli;
    used.memoryBytes += r.memoryBytes;
  }
  const short = (name: string, requested: number, u: number, capacity: number) =>
    `Node didn't have enough resource: ${name}, requested: ${requested}, used: ${u}, capacity: ${capacity}`;
  if (want.cpuMilli > 0 && used.cpuMilli + want.cpuMilli > cpuMilli) {
    return { kind: 'pending', reason: 'Deferred', message: short('cpu', want.cpuMilli, used.cpuMilli, cpuMilli) };
  }
  if (want.memoryBytes > 0 && used.memoryBytes + want.memoryBytes > memoryBytes) {
    return { kind: 'pending', reason: 'Deferred', message: short('memory', want.memoryBytes, used.memoryBytes, memoryBytes) };
  }
  return { kind: 'allocate' };
}

/** One container's in-place update for one resource: what it runs with now and what it gets. */
export interface ContainerUpdate {
  name: string;
  id: string;
  current: ContainerResources;
  desired: ContainerResources;
}

export type ResizeStep =
  | { kind: 'pod'; resource: 'cpu' | 'memory'; limit: boolean }
  | { kind: 'containers'; resource: 'cpu' | 'memory'; containers: ContainerUpdate[] };

/**
 * The order doPodResizeAction changes things in, memory first, then CPU: a
 * pod cgroup limit (CFS quota, memory limit) or request (cpu.shares) that
 * grows is written before the containers change, one that shrinks after, so
 * the pod cgroup always holds its containers. `updatePod` (a container
 * restarted for its resize) changes the pod cgroup even with no container
 * updated in place.
 */
export function resizeSteps(
  current: ResourceConfig,
  desired: ResourceConfig,
  updates: { cpu: ContainerUpdate[]; memory: ContainerUpdate[] },
  updatePod: boolean,
): ResizeStep[] {
  const steps: ResizeStep[] = [];
  const resize = (resource: 'cpu' | 'memory', curLim: number, newLim: number, curReq: number, newReq: number) => {
    if (newLim > curLim) steps.push({ kind: 'pod', resource, limit: true });
    if (newReq > curReq) steps.push({ kind: 'pod', resource, limit: false });
    if (updates[resource].length > 0) steps.push({ kind: 'containers', resource, containers: updates[resource] });
    if (newReq < curReq) steps.push({ kind: 'pod', resource, limit: false });
    if (newLim < curLim) steps.push({ kind: 'pod', resource, limit: true });
  };
  if (updates.memory.length > 0 || updatePod) {
    resize('memory', current.memory ?? 0, desired.memory ?? current.memory ?? 0, 0, 0);
  }
  if (updates.cpu.length > 0 || updatePod) {
    const curQuota = current.cpuQuota ?? -1;
    resize('cpu', curQuota, desired.cpuQuota ?? curQuota, current.cpuShares ?? 0, desired.cpuShares ?? 0);
  }
  return steps;
}

/** The pod cgroup settings a step writes (setPodCgroupConfig): quota and period, shares, or the memory limit. */
export function podStepConfig(step: { resource: 'cpu' | 'memory'; limit: boolean }, desired: ResourceConfig): ResourceConfig | null {
  if (step.resource === 'memory') return step.limit && desired.memory !== undefined ? { memory: desired.memory } : null;
  if (step.limit) return { ...(desired.cpuPeriod !== undefined ? { cpuPeriod: desired.cpuPeriod } : {}), ...(desired.cpuQuota !== undefined ? { cpuQuota: desired.cpuQuota } : {}) };
  return desired.cpuShares !== undefined ? { cpuShares: desired.cpuShares } : null;
}

/**
 * A container's resources with one resource (cpu or memory) taken from
 * `desired` and the other from `current`: what updatePodContainerResources
 * sends for that resource's pass.
 */
export function mixResources(current: V1ResourceRequirements | undefined, desired: V1ResourceRequirements | undefined, resource: 'cpu' | 'memory'): V1ResourceRequirements {
  const pick = (kind: 'requests' | 'limits') => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(current?.[kind] ?? {})) if (k !== resource) out[k] = v;
    const d = desired?.[kind]?.[resource];
    if (d !== undefined) out[resource] = d;
    return out;
  };
  const requests = pick('requests');
  const limits = pick('limits');
  return { ...(Object.keys(requests).length > 0 ? { requests } : {}), ...(Object.keys(limits).length > 0 ? { limits } : {}) };
}

/** The ResizeCompleted event's message (podResizeCompletionMsg): the allocated resources as JSON. */
export function resizeCompletedMessage(pod: V1Pod): string {
  const entry = (c: V1Container) => ({ name: c.name, resources: resourcesOf(c) });
  const inits = (pod.spec?.initContainers ?? []).map(entry);
  const containers = (pod.spec?.containers ?? []).map(entry);
  const summary = { ...(inits.length > 0 ? { initContainers: inits } : {}), ...(containers.length > 0 ? { containers } : {}) };
  return `Pod resize completed: ${JSON.stringify(summary)}`;
}
