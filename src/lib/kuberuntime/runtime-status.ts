/**
 * The runtime's view of pods (the kubelet's kubecontainer.PodStatus): every
 * sandbox and container CRI has for a pod UID, newest first, read back
 * through the kubelet's labels and annotations.
 */
import type { CriClient } from '../cri/client.js';
import { ContainerState, PodSandboxState, type ContainerStatus, type PodSandboxStatus } from '../cri/gen/api.js';
import { CriNotFoundError } from '../cri/errors.js';
import { POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL, type ContainerType, readContainerLabels } from './labels.js';

export type RuntimeContainerState = 'created' | 'running' | 'exited' | 'unknown';

export interface RuntimeContainerStatus {
  id: string;
  name: string;
  sandboxId: string;
  state: RuntimeContainerState;
  /** Milliseconds since the epoch; 0 when not reached. */
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  /** The image as the pod asked for it. */
  image: string;
  /** The image ID (sha256:...) the container runs. */
  imageRef: string;
  hash: string;
  restartCount: number;
  type: ContainerType;
  logPath: string;
}

export interface RuntimeSandboxStatus {
  id: string;
  ready: boolean;
  attempt: number;
  createdAt: number;
  ip: string;
  additionalIps: string[];
  hostNetwork: boolean;
}

export interface RuntimePodStatus {
  uid: string;
  name: string;
  namespace: string;
  /** Newest first. */
  sandboxes: RuntimeSandboxStatus[];
  /** Newest first. */
  containers: RuntimeContainerStatus[];
}

/** Nanoseconds (bigint, as CRI sends them) to milliseconds. */
export function nsToMs(ns: bigint): number {
  return Number(ns / 1_000_000n);
}

/** CRI's container state as a string union (shared with the PLEG's snapshots). */
export function containerState(s: ContainerState): RuntimeContainerState {
  switch (s) {
    case ContainerState.CONTAINER_CREATED:
      return 'created';
    case ContainerState.CONTAINER_RUNNING:
      return 'running';
    case ContainerState.CONTAINER_EXITED:
      return 'exited';
    default:
      return 'unknown';
  }
}

export function toRuntimeContainerStatus(s: ContainerStatus, sandboxId: string): RuntimeContainerStatus {
  const info = readContainerLabels(s.labels, s.annotations);
  return {
    id: s.id,
    name: s.metadata?.name ?? info.containerName,
    sandboxId,
    state: containerState(s.state),
    createdAt: nsToMs(s.createdAt),
    startedAt: nsToMs(s.startedAt),
    finishedAt: nsToMs(s.finishedAt),
    exitCode: s.exitCode,
    reason: s.reason,
    message: s.message,
    image: s.image?.userSpecifiedImage || s.image?.image || '',
    imageRef: s.imageRef,
    hash: info.hash,
    restartCount: info.restartCount,
    type: info.type,
    logPath: s.logPath,
  };
}

export function toRuntimeSandboxStatus(s: PodSandboxStatus): RuntimeSandboxStatus {
  return {
    id: s.id,
    ready: s.state === PodSandboxState.SANDBOX_READY,
    attempt: s.metadata?.attempt ?? 0,
    createdAt: nsToMs(s.createdAt),
    ip: s.network?.ip ?? '',
    additionalIps: (s.network?.additionalIps ?? []).map((p) => p.ip),
    hostNetwork: s.linux?.namespaces?.options?.network === 2,
  };
}

const byCreatedDesc = <T extends { createdAt: number }>(a: T, b: T) => b.createdAt - a.createdAt;

/**
 * Everything the runtime has for one pod UID. Costs one ListPodSandbox, one
 * ListContainers, one PodSandboxStatus per sandbox and one ContainerStatus
 * per container (CRI lists carry no exit codes or timestamps).
 */
export async function getRuntimePodStatus(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  opts: { signal?: AbortSignal } = {},
): Promise<RuntimePodStatus> {
  const selector = { [POD_UID_LABEL]: pod.uid };
  const [sbs, ctrs] = await Promise.all([
    cri.listPodSandbox({ filter: { labelSelector: selector } }, opts),
    cri.listContainers({ filter: { labelSelector: selector } }, opts),
  ]);
  const sandboxes = await Promise.all(
    sbs.items.map(async (sb) => {
      try {
        const { status } = await cri.podSandboxStatus({ podSandboxId: sb.id }, opts);
        return status ? toRuntimeSandboxStatus(status) : null;
      } catch (err) {
        if (err instanceof CriNotFoundError) return null; // removed meanwhile
        throw err;
      }
    }),
  );
  const containers = await Promise.all(
    ctrs.containers.map(async (c) => {
      try {
        const { status } = await cri.containerStatus({ containerId: c.id }, opts);
        return status ? toRuntimeContainerStatus(status, c.podSandboxId) : null;
      } catch (err) {
        if (err instanceof CriNotFoundError) return null;
        throw err;
      }
    }),
  );
  return {
    uid: pod.uid,
    name: pod.name,
    namespace: pod.namespace,
    sandboxes: sandboxes.filter((s): s is RuntimeSandboxStatus => s !== null).sort(byCreatedDesc),
    containers: containers.filter((c): c is RuntimeContainerStatus => c !== null).sort(byCreatedDesc),
  };
}

/** Pods the runtime knows about (from sandbox labels): uid → name/namespace. */
export async function listRuntimePods(
  cri: CriClient,
  opts: { signal?: AbortSignal } = {},
): Promise<{ uid: string; name: string; namespace: string }[]> {
  const { items } = await cri.listPodSandbox({}, opts);
  const seen = new Map<string, { uid: string; name: string; namespace: string }>();
  for (const sb of items) {
    const uid = sb.labels[POD_UID_LABEL] ?? sb.metadata?.uid;
    if (!uid || seen.has(uid)) continue;
    seen.set(uid, {
      uid,
      name: sb.labels[POD_NAME_LABEL] ?? sb.metadata?.name ?? '',
      namespace: sb.labels[POD_NAMESPACE_LABEL] ?? sb.metadata?.namespace ?? '',
    });
  }
  return [...seen.values()];
}

/** The newest status of a container by name (the kubelet's FindContainerStatusByName). */
export function findContainerStatus(status: RuntimePodStatus, name: string): RuntimeContainerStatus | undefined {
  return status.containers.find((c) => c.name === name);
}

/** Is a container of this name in this pod running now? (logs -f stops following when not.) */
export async function listContainersRunning(cri: CriClient, podUid: string, containerName: string): Promise<boolean> {
  const { containers } = await cri.listContainers({
    filter: {
      labelSelector: { [POD_UID_LABEL]: podUid, 'io.kubernetes.container.name': containerName },
      state: { state: ContainerState.CONTAINER_RUNNING },
    },
  });
  return containers.length > 0;
}
