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

/** The pod's effective requests: max(sum of containers, each init container) plus overhead (resourcehelper.PodRequests). */
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
