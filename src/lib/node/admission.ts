/**
 * Pod admission, as the kubelet admits an API pod before running it
 * (pkg/kubelet/lifecycle/predicate.go): the node's allocatable resources
 * (OutOfcpu, OutOfmemory, OutOfpods), nodeSelector / required node affinity /
 * the OS label (NodeAffinity), and NoExecute taints the pod does not tolerate
 * (TaintToleration), and before them the pod's sysctls (SysctlForbidden,
 * lib/node/sysctl.ts), as the kubelet's handlers run. Pure. Pods are admitted in the order given (the kubelet
 * sorts by creation time); an admitted pod counts against what follows.
 */
import type { V1NodeSelectorRequirement, V1Pod, V1Toleration } from '@kubernetes/client-node';
import { parseQuantity } from '../pod/quantity.js';
import type { Taint } from './config.js';
import { admitSysctls, type SysctlAllowlist } from './sysctl.js';

export interface AdmissionNode {
  /** Allocatable: cpu in millicores, memory in bytes, pods. */
  allocatable: { cpuMilli: number; memoryBytes: number; pods: number };
  labels: Record<string, string>;
  taints: Taint[];
  /** The sysctls pods may set (safe and allowed unsafe ones); without it, sysctls are not checked. */
  sysctls?: SysctlAllowlist;
}

export interface Rejection {
  reason: string;
  /** The pod status message ("Pod was rejected: ..."). */
  message: string;
}

function quantity(v: unknown, milli: boolean): number {
  if (v === undefined || v === null) return 0;
  try {
    const q = parseQuantity(String(v));
    return milli ? q.milliValue() : q.value();
  } catch {
    return 0;
  }
}

/** The pod's effective requests: max(sum of containers, each init container), or the pod-level ones, plus overhead (resourcehelper.PodRequests). */
export function podRequests(pod: V1Pod): { cpuMilli: number; memoryBytes: number } {
  const req = (c: { resources?: { requests?: Record<string, unknown> } }) => ({
    cpuMilli: quantity(c.resources?.requests?.cpu, true),
    memoryBytes: quantity(c.resources?.requests?.memory, false),
  });
  const sum = { cpuMilli: 0, memoryBytes: 0 };
  for (const c of pod.spec?.containers ?? []) {
    const r = req(c);
    sum.cpuMilli += r.cpuMilli;
    sum.memoryBytes += r.memoryBytes;
  }
  // Init containers run one at a time, each beside the sidecars (restartPolicy Always) started before it;
  // sidecars keep running beside the app containers.
  const sidecars = { cpuMilli: 0, memoryBytes: 0 };
  const initPeak = { cpuMilli: 0, memoryBytes: 0 };
  for (const c of pod.spec?.initContainers ?? []) {
    const r = req(c);
    if (c.restartPolicy === 'Always') {
      sidecars.cpuMilli += r.cpuMilli;
      sidecars.memoryBytes += r.memoryBytes;
      initPeak.cpuMilli = Math.max(initPeak.cpuMilli, sidecars.cpuMilli);
      initPeak.memoryBytes = Math.max(initPeak.memoryBytes, sidecars.memoryBytes);
    } else {
      initPeak.cpuMilli = Math.max(initPeak.cpuMilli, sidecars.cpuMilli + r.cpuMilli);
      initPeak.memoryBytes = Math.max(initPeak.memoryBytes, sidecars.memoryBytes + r.memoryBytes);
    }
  }
  sum.cpuMilli = Math.max(sum.cpuMilli + sidecars.cpuMilli, initPeak.cpuMilli);
  sum.memoryBytes = Math.max(sum.memoryBytes + sidecars.memoryBytes, initPeak.memoryBytes);
  // Pod-level requests (PodLevelResources, on by default since 1.34) stand for the containers' (resourcehelper.PodRequests).
  const podLevel = pod.spec?.resources?.requests ?? {};
  if (podLevel.cpu !== undefined) sum.cpuMilli = quantity(podLevel.cpu, true);
  if (podLevel.memory !== undefined) sum.memoryBytes = quantity(podLevel.memory, false);
  const overhead = pod.spec?.overhead ?? {};
  sum.cpuMilli += quantity(overhead.cpu, true);
  sum.memoryBytes += quantity(overhead.memory, false);
  return sum;
}

function matchRequirement(r: V1NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const v = labels[r.key];
  switch (r.operator) {
    case 'In':
      return v !== undefined && (r.values ?? []).includes(v);
    case 'NotIn':
      return v === undefined || !(r.values ?? []).includes(v);
    case 'Exists':
      return v !== undefined;
    case 'DoesNotExist':
      return v === undefined;
    case 'Gt':
    case 'Lt': {
      if (v === undefined || !/^-?\d+$/.test(v) || !/^-?\d+$/.test(r.values?.[0] ?? '')) return false;
      return r.operator === 'Gt' ? Number(v) > Number(r.values![0]) : Number(v) < Number(r.values![0]);
    }
    default:
      return false;
  }
}

/** nodeSelector and required node affinity (terms ORed, expressions ANDed; matchFields on metadata.name). */
export function matchesNode(pod: V1Pod, node: AdmissionNode, nodeName: string): boolean {
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) if (node.labels[k] !== v) return false;
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms === undefined) return true;
  return terms.some(
    (t) =>
      (t.matchExpressions ?? []).every((r) => matchRequirement(r, node.labels)) &&
      (t.matchFields ?? []).every((r) => r.key === 'metadata.name' && matchRequirement({ ...r, key: 'name' }, { name: nodeName })),
  );
}

function tolerates(tolerations: V1Toleration[], taint: Taint): boolean {
  return tolerations.some((t) => {
    if (t.effect && t.effect !== taint.effect) return false;
    if (t.operator === 'Exists') return !t.key || t.key === taint.key;
    return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
  });
}

/** The OS this node runs (Go's runtime.GOOS spelling: linux). */
const NODE_OS = process.platform === 'win32' ? 'windows' : process.platform;

/** Admit `candidates` in order on a node already running `running` (counted against its resources). */
export function admitPods(
  candidates: V1Pod[],
  running: V1Pod[],
  node: AdmissionNode,
  nodeName: string,
): { admitted: V1Pod[]; rejected: Array<{ pod: V1Pod } & Rejection> } {
  const used = { cpuMilli: 0, memoryBytes: 0, pods: running.length };
  for (const p of running) {
    const r = podRequests(p);
    used.cpuMilli += r.cpuMilli;
    used.memoryBytes += r.memoryBytes;
  }
  const admitted: V1Pod[] = [];
  const rejected: Array<{ pod: V1Pod } & Rejection> = [];
  const reject = (pod: V1Pod, reason: string, detail: string) => rejected.push({ pod, reason, message: `Pod was rejected: ${detail}` });
  for (const pod of candidates) {
    // The sysctl handler comes before the predicates (NewMainKubelet's order of admit handlers).
    const sysctl = node.sysctls === undefined ? null : admitSysctls(pod, node.sysctls);
    if (sysctl !== null) {
      reject(pod, sysctl.reason, sysctl.message);
      continue;
    }
    // The kubelet's OS checks come first (predicate.go): the pod's kubernetes.io/os label against the node's
    // (taken as this OS whatever it says), then spec.os against this OS; its messages stand without "Predicate … failed".
    const podOsLabel = pod.metadata?.labels?.['kubernetes.io/os'];
    if (podOsLabel !== undefined && podOsLabel !== NODE_OS) {
      reject(pod, 'PodOSSelectorNodeLabelDoesNotMatch', "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label");
      continue;
    }
    if (pod.spec?.os?.name !== undefined && pod.spec.os.name !== NODE_OS) {
      reject(pod, 'PodOSNotSupported', "Failed to admit pod as the OS field doesn't match node OS");
      continue;
    }
    if (!matchesNode(pod, node, nodeName)) {
      reject(pod, 'NodeAffinity', "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector");
      continue;
    }
    const untolerated = node.taints.find((t) => t.effect === 'NoExecute' && !tolerates(pod.spec?.tolerations ?? [], t));
    if (untolerated) {
      reject(pod, 'TaintToleration', `Predicate TaintToleration failed: node(s) had untolerated taint {${untolerated.key}: ${untolerated.value ?? ''}}`);
      continue;
    }
    const r = podRequests(pod);
    const short = (name: string, requested: number, usedNow: number, capacity: number) =>
      `Node didn't have enough resource: ${name}, requested: ${requested}, used: ${usedNow}, capacity: ${capacity}`;
    if (used.pods + 1 > node.allocatable.pods) {
      reject(pod, 'OutOfpods', short('pods', 1, used.pods, node.allocatable.pods));
      continue;
    }
    if (r.cpuMilli > 0 && used.cpuMilli + r.cpuMilli > node.allocatable.cpuMilli) {
      reject(pod, 'OutOfcpu', short('cpu', r.cpuMilli, used.cpuMilli, node.allocatable.cpuMilli));
      continue;
    }
    if (r.memoryBytes > 0 && used.memoryBytes + r.memoryBytes > node.allocatable.memoryBytes) {
      reject(pod, 'OutOfmemory', short('memory', r.memoryBytes, used.memoryBytes, node.allocatable.memoryBytes));
      continue;
    }
    used.pods++;
    used.cpuMilli += r.cpuMilli;
    used.memoryBytes += r.memoryBytes;
    admitted.push(pod);
  }
  return { admitted, rejected };
}

/** The kubelet's SystemCriticalPriority: a pod at or above it is critical (kubetypes.IsCriticalPodBasedOnPriority). */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** Critical pods (kubetypes.IsCriticalPod): static pods, and pods at system-critical priority. */
export function isCriticalPod(pod: V1Pod, isStatic: boolean): boolean {
  return isStatic || (pod.spec?.priority ?? Number.NEGATIVE_INFINITY) >= SYSTEM_CRITICAL_PRIORITY;
}

/** A resource a pod lacks, and by how much (the kubelet's InsufficientResourceError.GetInsufficientAmount: millicores for cpu). */
export interface Insufficient {
  resource: 'pods' | 'cpu' | 'memory';
  quantity: number;
}

/** One pod's request of a resource, as the kubelet's resource.GetResourceRequest (pods: 1). */
function requestOf(pod: V1Pod, resource: Insufficient['resource']): number {
  if (resource === 'pods') return 1;
  const r = podRequests(pod);
  return resource === 'cpu' ? r.cpuMilli : r.memoryBytes;
}

/** What `pod` lacks on a node whose `active` pods hold their requests, in the order the fit predicate reports it. */
export function insufficientResources(pod: V1Pod, active: V1Pod[], allocatable: AdmissionNode['allocatable']): Insufficient[] {
  const used = { pods: active.length, cpu: 0, memory: 0 };
  for (const p of active) {
    const r = podRequests(p);
    used.cpu += r.cpuMilli;
    used.memory += r.memoryBytes;
  }
  const r = podRequests(pod);
  const out: Insufficient[] = [];
  if (used.pods + 1 > allocatable.pods) out.push({ resource: 'pods', quantity: 1 - (allocatable.pods - used.pods) });
  if (r.cpuMilli > 0 && r.cpuMilli > allocatable.cpuMilli - used.cpu) out.push({ resource: 'cpu', quantity: r.cpuMilli - (allocatable.cpuMilli - used.cpu) });
  if (r.memoryBytes > 0 && r.memoryBytes > allocatable.memoryBytes - used.memory) out.push({ resource: 'memory', quantity: r.memoryBytes - (allocatable.memoryBytes - used.memory) });
  return out;
}

/**
 * Resource admission of a critical pod (a static pod), as the kubelet's
 * CriticalPodAdmissionHandler: a critical pod is not rejected for lack of
 * resources while evicting the non-critical pods could free them; when even
 * all of them could not, it is rejected with UnexpectedAdmissionError and
 * what would still be missing. null: admitted. klet does not preempt: where
 * the kubelet would evict pods to make room, the pod is admitted as it is
 * (`preempt` lists what the kubelet would have evicted from).
 */
export function admitCriticalResources(
  pod: V1Pod,
  active: Array<{ pod: V1Pod; critical: boolean }>,
  allocatable: AdmissionNode['allocatable'],
): (Rejection & { preempt?: undefined }) | { preempt: Insufficient[] } | null {
  const lacking = insufficientResources(
    pod,
    active.map((a) => a.pod),
    allocatable,
  );
  if (lacking.length === 0) return null;
  const preemptable = active.filter((a) => !a.critical).map((a) => a.pod);
  const remaining = lacking
    .map((l) => {
      let q = l.quantity;
      for (const p of preemptable) {
        q -= requestOf(p, l.resource);
        if (q <= 0) break;
      }
      return { resource: l.resource, quantity: q };
    })
    .filter((l) => l.quantity > 0);
  if (remaining.length === 0) return { preempt: lacking };
  const list = `[${remaining.map((l) => `(res: ${l.resource}, q: ${l.quantity}), `).join('')}]`;
  return {
    reason: 'UnexpectedAdmissionError',
    message: `Pod was rejected: Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: ${list}`,
  };
}
