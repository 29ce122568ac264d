/**
 * Which of klet's events the kubelet would record in the API server, and
 * about which object (pure mapping; lib/node/event-recorder.ts sends them).
 *
 * Pod events are about the pod (a static pod's about its mirror pod, the
 * object the API server knows), with the container's fieldPath
 * (`spec.containers{name}`) as the kubelet's container references have.
 * klet's own SandboxCreated/SandboxStopped are not the kubelet's and stay
 * local. Node events are about the Node, whose reference the kubelet makes
 * with the node name as UID (kubelet.go nodeRef).
 */
import type { V1NodeCondition, V1ObjectReference } from '@kubernetes/client-node';
import type { NodeEvent, PodEvent } from '../events/types.js';
import type { RecordedEvent } from './event-recorder.js';

/** klet's event reasons that the kubelet does not record. */
const LOCAL_ONLY_REASONS = new Set(['SandboxCreated', 'SandboxStopped']);

/** The waiting reasons whose Failed event the kubelet words "Error: %v". */
const ERROR_PREFIXED = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);

export function podEventToRecorded(e: PodEvent, mirrorUid: (uid: string) => string | undefined): RecordedEvent | null {
  if (LOCAL_ONLY_REASONS.has(e.reason)) return null;
  const slash = e.pod.indexOf('/');
  const namespace = slash >= 0 ? e.pod.slice(0, slash) : 'default';
  const name = slash >= 0 ? e.pod.slice(slash + 1) : e.pod;
  const object: V1ObjectReference = { kind: 'Pod', namespace, name, uid: mirrorUid(e.uid) ?? e.uid, apiVersion: 'v1' };
  if (e.container) object.fieldPath = `${e.init ? 'spec.initContainers' : 'spec.containers'}{${e.container}}`;
  // The kubelet's crash-loop event says less than the container status's "back-off 20s restarting failed container=…"
  // (kuberuntime_manager.go doBackOff): one message for every back-off, so they all count on one object.
  // A container that could not be created or started: the kubelet's event says "Error: <the status message>"
  // (kuberuntime_container.go startContainer), where klet's event carries the status message alone.
  const message =
    e.reason === 'BackOff' && e.containerReason === 'CrashLoopBackOff' && e.container
      ? `Back-off restarting failed container ${e.container} in pod ${name}_${namespace}(${e.uid})`
      : e.reason === 'Failed' && e.containerReason !== undefined && ERROR_PREFIXED.has(e.containerReason)
        ? `Error: ${e.message}`
        : e.message;
  // An image not present with pull policy Never: the kubelet's image manager records it under its own reason.
  const reason = e.reason === 'Failed' && e.containerReason === 'ErrImageNeverPull' ? 'ErrImageNeverPull' : e.reason;
  return { object, type: e.type, reason, message };
}

export function nodeRef(nodeName: string): V1ObjectReference {
  return { kind: 'Node', name: nodeName, uid: nodeName };
}

/** A node event (garbage collection's) as the kubelet records it: about the Node. */
export function nodeEventToRecorded(e: NodeEvent, nodeName: string): RecordedEvent {
  return { object: nodeRef(nodeName), type: e.type, reason: e.reason, message: e.message };
}

/** The kubelet's "Starting" event when it starts (kubelet.go). */
export function startingEvent(nodeName: string): RecordedEvent {
  return { object: nodeRef(nodeName), type: 'Normal', reason: 'Starting', message: 'Starting kubelet.' };
}

/** The node status event reasons (pkg/kubelet/nodestatus/setters.go recordEventFunc), by condition type and status. */
const CONDITION_REASONS: Record<string, { True: string; other: string }> = {
  MemoryPressure: { True: 'NodeHasInsufficientMemory', other: 'NodeHasSufficientMemory' },
  DiskPressure: { True: 'NodeHasDiskPressure', other: 'NodeHasNoDiskPressure' },
  PIDPressure: { True: 'NodeHasInsufficientPID', other: 'NodeHasSufficientPID' },
  Ready: { True: 'NodeReady', other: 'NodeNotReady' },
};

/**
 * The events for conditions whose status changed since `previous` (all of
 * them the first time, as the kubelet records them on start):
 * "Node <name> status is now: NodeReady".
 */
export function nodeConditionEvents(nodeName: string, previous: V1NodeCondition[] | undefined, current: V1NodeCondition[]): RecordedEvent[] {
  const out: RecordedEvent[] = [];
  for (const c of current) {
    const reasons = CONDITION_REASONS[c.type];
    if (!reasons) continue;
    const before = previous?.find((p) => p.type === c.type);
    if (before && before.status === c.status) continue;
    const reason = c.status === 'True' ? reasons.True : reasons.other;
    out.push({ object: nodeRef(nodeName), type: 'Normal', reason, message: `Node ${nodeName} status is now: ${reason}` });
  }
  return out;
}
