/**
 * The PLEG's vocabulary (pkg/kubelet/pleg/pleg.go): pod lifecycle events,
 * and the snapshot of what the runtime had for each pod at the last relist.
 */

/**
 * - ContainerStarted: a container (or sandbox) is now running.
 * - ContainerDied: a container (or sandbox) is now exited, or vanished without
 *   having been seen exited.
 * - ContainerRemoved: a container (or sandbox) no longer exists.
 * - ContainerChanged: a container is now in the CRI "created" or "unknown"
 *   state. The kubelet does not deliver these on its channel; see
 *   GenericPLEGOptions.emitContainerChanged.
 * - PodSync: "sync this pod; no single event above says why". The relisting
 *   PLEG never generates it (nor does the kubelet's generic PLEG); it exists
 *   for other producers on the same channel type.
 */
export type PlegEventType = 'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved' | 'ContainerChanged' | 'PodSync';

export interface PlegEvent {
  type: PlegEventType;
  podUid: string;
  /** The container's CRI id, or the sandbox's for events about a sandbox. */
  containerId: string;
  /** When the relist that saw the change started (ms since the epoch, from the PLEG's clock). */
  at: number;
}

/**
 * The state machine's states (the kubelet's plegContainerState): the CRI
 * container states folded as the kubelet folds them ("created" counts as
 * "unknown"), sandboxes READY → running and NOTREADY → exited, plus
 * "non-existent" for an id absent from a relist.
 */
export type PlegContainerState = 'running' | 'exited' | 'unknown' | 'non-existent';

/** A container's CRI state as ListContainers reports it. */
export type ContainerSnapshotState = 'created' | 'running' | 'exited' | 'unknown';

export interface SandboxSnapshot {
  readonly id: string;
  readonly state: 'ready' | 'notready';
  /** Nanoseconds since the epoch, as CRI sends it. */
  readonly createdAt: bigint;
  readonly attempt: number;
}

export interface ContainerSnapshot {
  readonly id: string;
  /** io.kubernetes.container.name (else the CRI metadata name). */
  readonly name: string;
  readonly state: ContainerSnapshotState;
  /** Nanoseconds since the epoch, as CRI sends it. */
  readonly createdAt: bigint;
  readonly sandboxId: string;
  /** CRI metadata attempt. */
  readonly attempt: number;
  /** io.kubernetes.container.restartCount (0 when absent or not a number). */
  readonly restartCount: number;
  /** io.kubernetes.container.hash ('' when absent). */
  readonly hash: string;
  /** The image ref (image id) the runtime reports. */
  readonly imageRef: string;
}

/** Everything the runtime had for one pod UID at the last successful relist. */
export interface PodRecordSnapshot {
  readonly uid: string;
  /** io.kubernetes.pod.name / namespace from the first labelled object seen ('' if absent). */
  readonly name: string;
  readonly namespace: string;
  /** Newest first. */
  readonly sandboxes: readonly SandboxSnapshot[];
  /** Newest first. */
  readonly containers: readonly ContainerSnapshot[];
}

export interface LastRelist {
  /** When it started (ms since the epoch, PLEG clock); 0 before the first relist. */
  readonly at: number;
  readonly durationMs: number;
  /** The runtime error's message when the relist failed, else null. */
  readonly error: string | null;
}

export interface PlegHealth {
  ok: boolean;
  message: string;
}
