/**
 * Pod admission: the kubelet's NodePorts predicate (the scheduler's
 * nodeports plugin, run again by the kubelet's lifecycle admit handler). A
 * pod asking for a host port another active pod on the node already holds
 * is rejected: phase Failed, reason NodePorts, and no sandbox is made.
 */
import type { V1Pod } from '@kubernetes/client-node';

export interface HostPort {
  hostIP: string;
  protocol: string;
  port: number;
}

export interface Rejection {
  reason: string;
  message: string;
}

/** The kubelet's reason and the predicate's text (nodeports.ErrReason). */
export const NODE_PORTS_REASON = 'NodePorts';
const NODE_PORTS_ERR = "node(s) didn't have free ports for the requested pod ports";

/** Host ports a pod asks for (init containers included), as the nodeports plugin collects them. */
export function podHostPorts(pod: V1Pod): HostPort[] {
  const out: HostPort[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      out.push({ hostIP: p.hostIP ?? '', protocol: p.protocol ?? 'TCP', port: p.hostPort });
    }
  }
  return out;
}

function wildcard(ip: string): boolean {
  return ip === '' || ip === '0.0.0.0' || ip === '::';
}

/** Same protocol and port, on the same IP or either on all IPs. */
export function portsConflict(a: HostPort, b: HostPort): boolean {
  return a.protocol === b.protocol && a.port === b.port && (a.hostIP === b.hostIP || wildcard(a.hostIP) || wildcard(b.hostIP));
}

/**
 * Pods in the order the kubelet admits one config update's additions
 * (HandlePodAdditions: sort.Sort(PodsByCreationTime)): by creationTimestamp,
 * a pod without one first (Go's zero time), and in source order among equal
 * times (for the file source, file name order, then document order). Stable.
 */
export function admissionOrder<T>(items: readonly T[], podOf: (item: T) => V1Pod): T[] {
  const created = (t: T): number => {
    const ts = podOf(t).metadata?.creationTimestamp;
    const ms = ts === undefined ? Number.NaN : new Date(ts).getTime();
    return Number.isNaN(ms) ? Number.NEGATIVE_INFINITY : ms;
  };
  return items
    .map((item, i) => ({ item, i, at: created(item) }))
    .sort((a, b) => (a.at === b.at ? a.i - b.i : a.at < b.at ? -1 : 1))
    .map((x) => x.item);
}

/**
 * A pod's place in admission order, comparable as a string: when its batch
 * (one runonce, one config update) arrived, then its index in admissionOrder.
 * A record without one compares by its firstSeen, as a batch of one.
 */
export function admissionKey(batchAt: Date, index: number): string {
  return `${batchAt.toISOString()}#${String(index).padStart(5, '0')}`;
}

/** The admission key of a pod record (one without: its firstSeen, as a batch of one). */
export function admittedKey(rec: { admitted?: string; firstSeen: string }): string {
  return rec.admitted ?? `${rec.firstSeen}#${'0'.repeat(5)}`;
}

/** Each pod's admission key for a batch arriving now, by UID. */
export function batchAdmissionKeys(pods: readonly V1Pod[], batchAt = new Date()): Map<string, string> {
  return new Map(admissionOrder(pods, (p) => p).map((p, i) => [p.metadata?.uid ?? '', admissionKey(batchAt, i)]));
}

function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
}

/**
 * Admit `pod` against the node's other active pods, or say why not. The
 * message is the kubelet's ("Pod was rejected: Predicate NodePorts failed:
 * ...") followed by the port and the pod holding it, which the kubelet does
 * not name but a user of a one-node tool needs.
 */
export function admitHostPorts(pod: V1Pod, active: V1Pod[]): Rejection | null {
  const wanted = podHostPorts(pod);
  if (wanted.length === 0) return null;
  for (const other of active) {
    if (other.metadata?.uid === pod.metadata?.uid) continue;
    for (const held of podHostPorts(other)) {
      const hit = wanted.find((w) => portsConflict(w, held));
      if (hit === undefined) continue;
      const ip = hit.hostIP === '' ? '' : `${hit.hostIP}:`;
      return {
        reason: NODE_PORTS_REASON,
        message: `Pod was rejected: Predicate NodePorts failed: ${NODE_PORTS_ERR} (hostPort ${ip}${hit.port}/${hit.protocol} is held by pod ${podKey(other)})`,
      };
    }
  }
  return null;
}
