/**
 * The pod events the sync engine emits, with the kubelet's reasons and
 * messages (pkg/kubelet/events/event.go, kuberuntime_container.go), built in
 * one place so `klet sync`'s /events, the one-shot commands' progress and the
 * dashboard read the same objects.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podKey } from '../pod/key.js';
import type { PodEvent } from './types.js';

function base(pod: V1Pod): { kind: 'Event'; pod: string; uid: string } {
  return { kind: 'Event', pod: podKey(pod), uid: pod.metadata?.uid ?? '' };
}

/**
 * Whether `container` is one of the pod's init containers (a sidecar is
 * one): its events' fieldPath is spec.initContainers{name}, as the kubelet's
 * container reference has it. Container names are unique within a pod.
 */
function isInit(pod: V1Pod, container: string): boolean {
  return (pod.spec?.initContainers ?? []).some((c) => c.name === container);
}

export const podEvents = {
  sandboxCreated(pod: V1Pod, sandboxId: string, ip: string): PodEvent {
    const message = `Pod sandbox ${sandboxId.slice(0, 13)} created${ip ? ` with IP ${ip}` : ''}`;
    return { ...base(pod), type: 'Normal', reason: 'SandboxCreated', message, sandboxId, ip };
  },
  sandboxStopped(pod: V1Pod, sandboxId: string): PodEvent {
    return { ...base(pod), type: 'Normal', reason: 'SandboxStopped', message: `Pod sandbox ${sandboxId.slice(0, 13)} stopped`, sandboxId };
  },
  /** The kubelet's FailedCreatePodSandBox: the runtime refused the pod's sandbox. */
  sandboxFailed(pod: V1Pod, message: string): PodEvent {
    return { ...base(pod), type: 'Warning', reason: 'FailedCreatePodSandBox', message };
  },
  /** An in-place resize is done: the allocation manager's ResizeCompleted, with the allocated resources. */
  resizeCompleted(pod: V1Pod, message: string): PodEvent {
    return { ...base(pod), type: 'Normal', reason: 'ResizeCompleted', message };
  },
  /** Rejected at admission (the kubelet's event carries the admission's reason, e.g. NodePorts). */
  rejected(pod: V1Pod, reason: string, message: string): PodEvent {
    // The kubelet's rejectPod: the status message says "Pod was rejected: …", the event only what follows.
    return { ...base(pod), type: 'Warning', reason, message: message.replace(/^Pod was rejected: /, '') };
  },
  pulled(pod: V1Pod, container: string, image: string, pulled: boolean): PodEvent {
    const message = pulled ? `Successfully pulled image "${image}"` : `Container image "${image}" already present on machine`;
    return { ...base(pod), type: 'Normal', reason: 'Pulled', message, container, image, pulled };
  },
  /** The kubelet's Created, after CreateContainer (before StartContainer). */
  created(pod: V1Pod, container: string, containerId: string, init: boolean): PodEvent {
    return { ...base(pod), type: 'Normal', reason: 'Created', message: `Created container: ${container}`, container, containerId, init };
  },
  started(pod: V1Pod, container: string, containerId: string, init: boolean, restartCount = 0): PodEvent {
    return { ...base(pod), type: 'Normal', reason: 'Started', message: `Started container ${container}`, container, containerId, init, restartCount };
  },
  killing(pod: V1Pod, container: string, containerId: string, killReason: string): PodEvent {
    // The kubelet's message is the reason itself ("Stopping container c",
    // "Container c failed liveness probe, will be restarted").
    return { ...base(pod), type: 'Normal', reason: 'Killing', message: killReason, container, containerId, killReason, init: isInit(pod, container) };
  },
  /**
   * The kubelet's FailedPreStopHook. Its message is fixed ("PreStopHook
   * failed"): the kubelet keeps the hook's output out of the event so that
   * secrets cannot leak through it.
   */
  failedPreStopHook(pod: V1Pod, container: string, containerId: string): PodEvent {
    return { ...base(pod), type: 'Warning', reason: 'FailedPreStopHook', message: 'PreStopHook failed', container, containerId, init: isInit(pod, container) };
  },
  /** The kubelet's FailedMount: a volume could not be set up (per volume), or the pod's volumes are not ready (per pod). */
  failedMount(pod: V1Pod, message: string): PodEvent {
    return { ...base(pod), type: 'Warning', reason: 'FailedMount', message };
  },
  /** The kubelet's DNS configurer warnings about a pod: DNSConfigForming (limits cut its config), MissingClusterDNS. */
  dnsWarning(pod: V1Pod, reason: string, message: string): PodEvent {
    return { ...base(pod), type: 'Warning', reason, message };
  },
  /** The eviction manager's Evicted (an emptyDir over its sizeLimit). */
  evicted(pod: V1Pod, message: string): PodEvent {
    return { ...base(pod), type: 'Warning', reason: 'Evicted', message };
  },
  /**
   * A container could not be started (or its hook failed): BackOff while
   * backing off, Failed otherwise. `extra`: whether it is an init container,
   * and the runtime's gRPC code when CreateContainer or StartContainer failed.
   */
  failed(pod: V1Pod, container: string, containerReason: string, message: string, extra: { init?: boolean; grpcCode?: number; retryAt?: string } = {}): PodEvent {
    const reason = containerReason === 'CrashLoopBackOff' || containerReason === 'ImagePullBackOff' ? 'BackOff' : 'Failed';
    return { ...base(pod), type: 'Warning', reason, message, container, containerReason, ...extra };
  },
};
