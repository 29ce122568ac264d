/**
 * The pure half of a relist: group CRI lists into per-pod records, and diff
 * two sets of records into pod lifecycle events with the kubelet's state
 * machine (pkg/kubelet/pleg/generic.go: convertState, generateEvents,
 * computeEvents, getContainersFromPods).
 */
import { ContainerState, PodSandboxState, type Container, type PodSandbox } from '../cri/gen/api.js';
import { containerState } from '../kuberuntime/runtime-status.js';
import {
  CONTAINER_HASH_ANNOTATION,
  CONTAINER_NAME_LABEL,
  CONTAINER_RESTART_COUNT_ANNOTATION,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
} from '../kuberuntime/labels.js';
import type {
  ContainerSnapshot,
  ContainerSnapshotState,
  PlegContainerState,
  PlegEvent,
  PodRecordSnapshot,
  SandboxSnapshot,
} from './types.js';

const snapshotState: (s: ContainerState) => ContainerSnapshotState = containerState;

/** A container's state as the state machine sees it: the kubelet does not use "created" and folds it into "unknown". */
export function containerPlegState(state: ContainerSnapshotState): PlegContainerState {
  switch (state) {
    case 'running':
      return 'running';
    case 'exited':
      return 'exited';
    default:
      return 'unknown';
  }
}

/** A sandbox as a container (the kubelet tracks sandboxes as containers): ready → running, not ready → exited. */
export function sandboxPlegState(state: SandboxSnapshot['state']): PlegContainerState {
  return state === 'ready' ? 'running' : 'exited';
}

interface MutableRecord {
  uid: string;
  name: string;
  namespace: string;
  sandboxes: SandboxSnapshot[];
  containers: ContainerSnapshot[];
}

const newestFirst = (a: { createdAt: bigint; id: string }, b: { createdAt: bigint; id: string }): number =>
  a.createdAt === b.createdAt ? (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : a.createdAt > b.createdAt ? -1 : 1;

/**
 * Groups one ListPodSandbox and one ListContainers answer by the
 * io.kubernetes.pod.uid label. Objects without that label are not the
 * kubelet's and are left out. A pod appears when it has at least one
 * sandbox or container (a container whose sandbox is gone still counts).
 */
export function buildPodRecords(
  sandboxes: readonly PodSandbox[],
  containers: readonly Container[],
): Map<string, PodRecordSnapshot> {
  const records = new Map<string, MutableRecord>();
  const recordFor = (uid: string, labels: Record<string, string>): MutableRecord => {
    let r = records.get(uid);
    if (r === undefined) {
      r = {
        uid,
        name: labels[POD_NAME_LABEL] ?? '',
        namespace: labels[POD_NAMESPACE_LABEL] ?? '',
        sandboxes: [],
        containers: [],
      };
      records.set(uid, r);
    }
    return r;
  };
  for (const sb of sandboxes) {
    const uid = sb.labels[POD_UID_LABEL];
    if (!uid) continue;
    recordFor(uid, sb.labels).sandboxes.push({
      id: sb.id,
      state: sb.state === PodSandboxState.SANDBOX_READY ? 'ready' : 'notready',
      createdAt: sb.createdAt,
      attempt: sb.metadata?.attempt ?? 0,
    });
  }
  for (const c of containers) {
    const uid = c.labels[POD_UID_LABEL];
    if (!uid) continue;
    const restart = c.annotations[CONTAINER_RESTART_COUNT_ANNOTATION];
    recordFor(uid, c.labels).containers.push({
      id: c.id,
      name: c.labels[CONTAINER_NAME_LABEL] ?? c.metadata?.name ?? '',
      state: snapshotState(c.state),
      createdAt: c.createdAt,
      sandboxId: c.podSandboxId,
      attempt: c.metadata?.attempt ?? 0,
      restartCount: restart === undefined ? 0 : Number.parseInt(restart, 10) || 0,
      hash: c.annotations[CONTAINER_HASH_ANNOTATION] ?? '',
      imageRef: c.imageRef,
    });
  }
  for (const r of records.values()) {
    if (r.sandboxes.length > 1) r.sandboxes.sort(newestFirst);
    if (r.containers.length > 1) r.containers.sort(newestFirst);
  }
  return records;
}

/**
 * The kubelet's generateEvents: the events for one id going from `oldState`
 * to `newState` (none when they are equal).
 */
export function generateEvents(
  podUid: string,
  containerId: string,
  oldState: PlegContainerState,
  newState: PlegContainerState,
  at: number,
): PlegEvent[] {
  if (oldState === newState) return [];
  switch (newState) {
    case 'running':
      return [{ type: 'ContainerStarted', podUid, containerId, at }];
    case 'exited':
      return [{ type: 'ContainerDied', podUid, containerId, at }];
    case 'unknown':
      return [{ type: 'ContainerChanged', podUid, containerId, at }];
    case 'non-existent':
      // Exited was already reported as ContainerDied; anything else (running,
      // created, unknown) vanished without being seen to die.
      return oldState === 'exited'
        ? [{ type: 'ContainerRemoved', podUid, containerId, at }]
        : [
            { type: 'ContainerDied', podUid, containerId, at },
            { type: 'ContainerRemoved', podUid, containerId, at },
          ];
  }
}

/** id → state of every container then every sandbox of a pod (getContainersFromPods' order). */
function statesOf(pod: PodRecordSnapshot | undefined): Map<string, PlegContainerState> {
  const states = new Map<string, PlegContainerState>();
  if (pod === undefined) return states;
  for (const c of pod.containers) if (!states.has(c.id)) states.set(c.id, containerPlegState(c.state));
  for (const s of pod.sandboxes) if (!states.has(s.id)) states.set(s.id, sandboxPlegState(s.state));
  return states;
}

function diffPod(
  uid: string,
  oldPod: PodRecordSnapshot | undefined,
  newPod: PodRecordSnapshot | undefined,
  at: number,
  out: PlegEvent[],
): void {
  if (oldPod === newPod) return; // kept by keepUnchanged: nothing happened to it
  const next = statesOf(newPod);
  for (const [id, oldState] of statesOf(oldPod)) {
    const newState = next.get(id) ?? 'non-existent';
    next.delete(id);
    if (newState !== oldState) out.push(...generateEvents(uid, id, oldState, newState, at));
  }
  // What is left did not exist before.
  for (const [id, newState] of next) out.push(...generateEvents(uid, id, 'non-existent', newState, at));
}

function sameSandbox(a: SandboxSnapshot, b: SandboxSnapshot): boolean {
  return a.id === b.id && a.state === b.state && a.createdAt === b.createdAt && a.attempt === b.attempt;
}

function sameContainer(a: ContainerSnapshot, b: ContainerSnapshot): boolean {
  return (
    a.id === b.id &&
    a.name === b.name &&
    a.state === b.state &&
    a.createdAt === b.createdAt &&
    a.sandboxId === b.sandboxId &&
    a.attempt === b.attempt &&
    a.restartCount === b.restartCount &&
    a.hash === b.hash &&
    a.imageRef === b.imageRef
  );
}

function sameList<T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!same(a[i] as T, b[i] as T)) return false;
  return true;
}

/** Every field of the two records is the same. */
export function sameRecord(a: PodRecordSnapshot, b: PodRecordSnapshot): boolean {
  return (
    a.uid === b.uid &&
    a.name === b.name &&
    a.namespace === b.namespace &&
    sameList(a.sandboxes, b.sandboxes, sameSandbox) &&
    sameList(a.containers, b.containers, sameContainer)
  );
}

/**
 * Puts into `next` the record of `prev` for every pod whose record did not
 * change, in place of the equal new one. In a steady node that is every
 * pod: the records a relist built are garbage at once instead of living
 * until the next relist (the garbage collector then copies and promotes
 * them), and diffPodRecords skips the pods at a glance.
 */
export function keepUnchanged(prev: ReadonlyMap<string, PodRecordSnapshot>, next: Map<string, PodRecordSnapshot>): void {
  next.forEach((rec, uid) => {
    const old = prev.get(uid);
    if (old !== undefined && old !== rec && sameRecord(old, rec)) next.set(uid, old);
  });
}

/**
 * The events that take `prev` to `next`: pods of `prev` first (in its
 * order), then pods new in `next`; within a pod, containers before
 * sandboxes, ids of the old record before new ones.
 */
export function diffPodRecords(
  prev: ReadonlyMap<string, PodRecordSnapshot>,
  next: ReadonlyMap<string, PodRecordSnapshot>,
  at: number,
): PlegEvent[] {
  const out: PlegEvent[] = [];
  // forEach, not for-of: no [key, value] array per pod and relist.
  prev.forEach((oldPod, uid) => diffPod(uid, oldPod, next.get(uid), at, out));
  next.forEach((newPod, uid) => {
    if (!prev.has(uid)) diffPod(uid, undefined, newPod, at, out);
  });
  return out;
}
