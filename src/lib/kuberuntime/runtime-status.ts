/**
 * The runtime's view of pods (the kubelet's kubecontainer.PodStatus): every
 * sandbox and container CRI has for a pod UID, newest first, read back
 * through the kubelet's labels and annotations.
 */
import { open } from 'node:fs/promises';
import type { CriClient } from '../cri/client.js';
import { ContainerState, PodSandboxState, type Container, type ContainerStatus, type PodSandbox, type PodSandboxStatus } from '../cri/gen/api.js';
import { CriNotFoundError } from '../cri/errors.js';
import { errorMessage } from '../errors.js';
import { readContainerLog } from '../logs/reader.js';
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

/** A container as the CRI list shows it, without the status-only fields (exit code, start and finish times). */
function fromListEntry(c: Container): RuntimeContainerStatus {
  const info = readContainerLabels(c.labels, c.annotations);
  return {
    id: c.id,
    name: c.metadata?.name ?? info.containerName,
    sandboxId: c.podSandboxId,
    state: containerState(c.state),
    createdAt: nsToMs(c.createdAt),
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    reason: '',
    message: '',
    image: c.image?.userSpecifiedImage || c.image?.image || '',
    imageRef: c.imageRef,
    hash: info.hash,
    restartCount: info.restartCount,
    type: info.type,
    logPath: '',
  };
}

function sandboxFromListEntry(sb: PodSandbox): RuntimeSandboxStatus {
  return {
    id: sb.id,
    ready: sb.state === PodSandboxState.SANDBOX_READY,
    attempt: sb.metadata?.attempt ?? 0,
    createdAt: nsToMs(sb.createdAt),
    ip: '',
    additionalIps: [],
    hostNetwork: false,
  };
}

/** The kubelet's caps: the message file's last 4 KiB; from the logs, the last 80 lines, at most 2 KiB. */
export const MAX_TERMINATION_MESSAGE_BYTES = 4096;
export const MAX_TERMINATION_MESSAGE_LOG_BYTES = 2048;
export const MAX_TERMINATION_MESSAGE_LOG_LINES = 80;

/** The last `max` bytes of a file. */
async function readAtMost(file: string, max: number): Promise<string> {
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    const len = Math.min(size, max);
    const buf = Buffer.alloc(len);
    await fh.read(buf, 0, len, size - len);
    return buf.toString('utf8');
  } finally {
    await fh.close();
  }
}

/**
 * An exited container's termination message, as the kubelet reads it
 * (kuberuntime_container.go getTerminationMessage): the file mounted at its
 * terminationMessagePath (read on the host through the container's mounts),
 * or, under FallbackToLogsOnError with a non-zero exit and no message, the
 * tail of its log.
 */
export async function terminationMessage(s: ContainerStatus): Promise<string> {
  const info = readContainerLabels(s.labels, s.annotations);
  const fallback = info.terminationMessagePolicy === 'FallbackToLogsOnError' && s.exitCode !== 0;
  let checkLogs = fallback;
  let msg = '';
  const mount = info.terminationMessagePath === '' ? undefined : s.mounts.find((m) => m.containerPath === info.terminationMessagePath);
  if (mount !== undefined) {
    try {
      msg = await readAtMost(mount.hostPath, MAX_TERMINATION_MESSAGE_BYTES);
      checkLogs = fallback && msg.length === 0;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return `Error on reading termination log ${mount.hostPath}: ${errorMessage(err)}`;
    }
  }
  if (!checkLogs || s.logPath === '') return msg;
  const parts: string[] = [];
  try {
    for await (const chunk of readContainerLog(s.logPath, { tail: MAX_TERMINATION_MESSAGE_LOG_LINES, limitBytes: MAX_TERMINATION_MESSAGE_LOG_BYTES, unfinishedNewline: false })) {
      parts.push(chunk);
    }
  } catch (err) {
    return `Error on reading termination message from logs: ${errorMessage(err)}`;
  }
  return parts.join('');
}

async function orNull<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof CriNotFoundError) return null; // removed meanwhile
    throw err;
  }
}

/**
 * Build a pod's runtime status from its CRI list entries. Status RPCs go
 * only where the lists lack what the kubelet's logic needs: the newest
 * sandbox (its IP and namespaces) and the two newest instances of each
 * container name (state and last state: exit codes, times). Older
 * instances keep their list entry, enough to stop and remove them.
 */
export async function assembleRuntimePodStatus(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  sandboxList: PodSandbox[],
  containerList: Container[],
  opts: { signal?: AbortSignal } = {},
): Promise<RuntimePodStatus> {
  const sbs = [...sandboxList].sort((a, b) => (b.createdAt > a.createdAt ? 1 : b.createdAt < a.createdAt ? -1 : 0));
  const sandboxes = await Promise.all(
    sbs.map(async (sb, i) => {
      if (i > 0) return sandboxFromListEntry(sb);
      const res = await orNull(cri.podSandboxStatus({ podSandboxId: sb.id }, opts));
      return res?.status ? toRuntimeSandboxStatus(res.status) : null;
    }),
  );
  const ctrs = [...containerList].sort((a, b) => (b.createdAt > a.createdAt ? 1 : b.createdAt < a.createdAt ? -1 : 0));
  const seen = new Map<string, number>();
  const containers = await Promise.all(
    ctrs.map(async (c) => {
      const name = c.metadata?.name ?? '';
      const n = seen.get(name) ?? 0;
      seen.set(name, n + 1);
      if (n >= 2) return fromListEntry(c);
      return readContainerStatus(cri, c.id, c.podSandboxId, opts);
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

/** One container's status (ContainerStatus, and the termination message of one that exited); null when it is gone. */
async function readContainerStatus(cri: CriClient, containerId: string, sandboxId: string, opts: { signal?: AbortSignal }): Promise<RuntimeContainerStatus | null> {
  const res = await orNull(cri.containerStatus({ containerId }, opts));
  if (!res?.status) return null;
  const st = toRuntimeContainerStatus(res.status, sandboxId);
  if (st.state === 'exited') {
    const msg = await terminationMessage(res.status);
    if (msg !== '') st.message = st.message !== '' ? `${st.message}: ${msg}` : msg;
  }
  return st;
}

/** What a sync that found nothing of a pod in the runtime made of it: its one sandbox and the containers it started. */
export interface CreatedPodObjects {
  /** The new sandbox's status, as PodSandboxStatus answered after RunPodSandbox. */
  sandbox: PodSandboxStatus;
  /** The containers the sync created and started, all in that sandbox. */
  containerIds: string[];
}

/**
 * The runtime status of a pod right after a sync that created all it has
 * (`CreatedPodObjects`): the same as getRuntimePodStatus would assemble,
 * without the two lists and the second PodSandboxStatus, whose answers the
 * sync already holds. Only the containers are read again, for their state.
 */
export async function createdPodStatus(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  created: CreatedPodObjects,
  opts: { signal?: AbortSignal } = {},
): Promise<RuntimePodStatus> {
  const sandboxId = created.sandbox.id;
  const containers = await Promise.all(created.containerIds.map((id) => readContainerStatus(cri, id, sandboxId, opts)));
  return {
    uid: pod.uid,
    name: pod.name,
    namespace: pod.namespace,
    sandboxes: [toRuntimeSandboxStatus(created.sandbox)],
    containers: containers.filter((c): c is RuntimeContainerStatus => c !== null).sort(byCreatedDesc),
  };
}

/**
 * Which runtime objects are this klet's: a CRI label selector (instanceSelector
 * in labels.ts) ANDed into every list, so nothing of another klet root dir
 * or of the kubelet is ever seen, let alone stopped or removed.
 */
export interface OwnerFilter {
  signal?: AbortSignal;
  owner: Record<string, string>;
}

/** Everything the runtime has for one pod UID (one filtered list of each kind, then assembleRuntimePodStatus). */
export async function getRuntimePodStatus(
  cri: CriClient,
  pod: { uid: string; name: string; namespace: string },
  opts: OwnerFilter,
): Promise<RuntimePodStatus> {
  const selector = { ...opts.owner, [POD_UID_LABEL]: pod.uid };
  const call = { signal: opts.signal };
  const [sbs, ctrs] = await Promise.all([
    cri.listPodSandbox({ filter: { labelSelector: selector } }, call),
    cri.listContainers({ filter: { labelSelector: selector } }, call),
  ]);
  return assembleRuntimePodStatus(cri, pod, sbs.items, ctrs.containers, call);
}

/** Runtime status of many pods from ONE list of each kind (status, /pods). */
export async function getRuntimePodStatuses(
  cri: CriClient,
  pods: { uid: string; name: string; namespace: string }[],
  opts: OwnerFilter,
): Promise<Map<string, RuntimePodStatus>> {
  const filter = { labelSelector: opts.owner };
  const call = { signal: opts.signal };
  const [sbs, ctrs] = await Promise.all([cri.listPodSandbox({ filter }, call), cri.listContainers({ filter }, call)]);
  const byUid = <T extends { labels: Record<string, string> }>(items: T[]) => {
    const m = new Map<string, T[]>();
    for (const it of items) {
      const uid = it.labels[POD_UID_LABEL];
      if (uid === undefined) continue;
      const list = m.get(uid) ?? [];
      list.push(it);
      m.set(uid, list);
    }
    return m;
  };
  const sbByUid = byUid(sbs.items);
  const cByUid = byUid(ctrs.containers);
  const out = new Map<string, RuntimePodStatus>();
  await Promise.all(
    pods.map(async (p) => {
      out.set(p.uid, await assembleRuntimePodStatus(cri, p, sbByUid.get(p.uid) ?? [], cByUid.get(p.uid) ?? [], call));
    }),
  );
  return out;
}

/** This klet's pods the runtime runs (from sandbox labels): uid → name/namespace. */
export async function listRuntimePods(
  cri: CriClient,
  opts: OwnerFilter,
): Promise<{ uid: string; name: string; namespace: string }[]> {
  const { items } = await cri.listPodSandbox({ filter: { labelSelector: opts.owner } }, { signal: opts.signal });
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
