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
