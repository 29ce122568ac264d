/**
 * What klet's engine reports about itself, as one discriminated union: the
 * sync loop, the pod sync it shares with the one-shot commands (whose
 * progress display reads the same events), and the one-shot waits.
 *
 * The kubelet spreads this over klog lines, the API server's Event objects
 * and its metrics; klet has no API server, so one typed stream carries it
 * all to `klet sync`'s output, the local API's /events and the dashboard.
 * Every event has a `seq` (1, 2, 3, … per process, no gaps) so a reader can
 * resume with `?since=SEQ` and notice what it missed.
 */

/** What woke the sync loop, the cases of the kubelet's syncLoopIteration select. */
export type SyncLoopTrigger = 'config' | 'pleg' | 'sync' | 'housekeeping' | 'probe';

/** The pod worker states of the kubelet's pod_workers.go, plus the final removal. */
export type PodLifecycleState = 'SyncPod' | 'TerminatingPod' | 'TerminatedPod' | 'Removed';

/** The two event types of core/v1 Event. */
export type PodEventType = 'Normal' | 'Warning';

/** Assigned by the bus, never by the emitter. */
export interface KletEventMeta {
  /** 1-based, strictly increasing, without gaps within one process. */
  seq: number;
  /** When the bus received the event: an RFC 3339 UTC timestamp (ISO 8601, millisecond precision). */
  time: string;
}

/** One pass of the sync loop: what woke it, how long it took, which pods it touched. */
export interface SyncLoopIterationEvent {
  kind: 'SyncLoopIteration';
  trigger: SyncLoopTrigger;
  durationMs: number;
  /** Pods handed to pod workers in this pass, as `namespace/name`. */
  pods: string[];
}

/** A pod lifecycle event from the PLEG (ContainerStarted, ContainerDied, ContainerRemoved, PodSync, …), as the sync loop reports it (the PLEG's own is pleg/types.ts PlegEvent). */
export interface PlegKletEvent {
  kind: 'PLEG';
  type: string;
  podUid: string;
  /** `namespace/name` when the PLEG could tell which pod the UID belongs to. */
  pod?: string;
  containerId: string;
}

/** A pod worker changed state. */
export interface PodLifecycleEvent {
  kind: 'PodLifecycle';
  /** `namespace/name`. */
  pod: string;
  uid: string;
  state: PodLifecycleState;
  reason?: string;
}

/**
 * What the kubelet would record as a core/v1 Event on the pod, with the
 * kubelet's reasons (Pulling, Pulled, Created, Started, Killing, BackOff,
 * Failed, SandboxChanged, Unhealthy, …) so output reads like `kubectl describe`.
 */
export interface PodEvent {
  kind: 'Event';
  /** `namespace/name`. */
  pod: string;
  uid: string;
  type: PodEventType;
  reason: string;
  message: string;
  /** The container the event is about (the kubelet's involvedObject fieldPath), when it is about one. */
  container?: string;
  /** With reason Created, Started, Killing, FailedPreStopHook (and Failed): the container is an init container. */
  init?: boolean;
  /** With reason Started: the container's restart count (0 on its first run). */
  restartCount?: number;
  /** With Failed for CreateContainerError or RunContainerError: the runtime's gRPC status code (2, Unknown, when the runtime gave none). */
  grpcCode?: number;
  containerId?: string;
  /** With SandboxCreated, SandboxStopped and FailedCreatePodSandBox. */
  sandboxId?: string;
  /** With SandboxCreated: the pod's IP. */
  ip?: string;
  /** With Pulled: the image, and whether it was pulled now (false: already present). */
  image?: string;
  pulled?: boolean;
  /** With Failed and BackOff: the container's waiting reason (ErrImagePull, CrashLoopBackOff, …). */
  containerReason?: string;
  /** With Killing: why the container is stopped. */
  killReason?: string;
  /**
   * With BackOff (crash loop, image pull back-off): when the sync loop next
   * tries to start the container, as an RFC 3339 UTC timestamp. The
   * dashboard's countdown reads it; the kubelet only puts the delay in the
   * message ("back-off 20s restarting failed container=…").
   */
  retryAt?: string;
}

/**
 * A one-shot operation (run-pod, runonce) started waiting for a pod to reach
 * its goal, with the containers it will start, so a progress display can
 * draw them before the first sync.
 */
export interface PodWaitStartedEvent {
  kind: 'PodWaitStarted';
  /** `namespace/name`. */
  pod: string;
  uid: string;
  goal: string;
  initContainers: string[];
  containers: string[];
}

/** A one-shot operation stopped waiting for a pod: it reached its goal, or not (summary says why). */
export interface PodWaitDoneEvent {
  kind: 'PodWaitDone';
  /** `namespace/name`. */
  pod: string;
  uid: string;
  ok: boolean;
  summary: string;
}

/**
 * A probe's result for a container changed (the kubelet's prober results
 * managers): readiness drives the container's `ready`, a liveness or
 * startup Failure gets the container restarted. Every failed run is also
 * an Event (reason Unhealthy) with the kubelet's message.
 */
export interface ProbeResultEvent {
  kind: 'ProbeResult';
  /** `namespace/name`. */
  pod: string;
  uid: string;
  container: string;
  containerId: string;
  probe: 'Liveness' | 'Readiness' | 'Startup';
  result: 'Success' | 'Failure' | 'Unknown';
  /** The output of the run that set the result (a failure's message), up to 1 KiB. */
  message?: string;
}

/** A pod source (manifest directory, URL) could not be read or parsed. */
export interface SourceErrorEvent {
  kind: 'SourceError';
  /** Which source: a file, directory or URL. */
  source: string;
  message: string;
}

/**
 * What the kubelet records as a core/v1 Event about its Node (not about a
 * pod), with its reason and message: MissingClusterDNS,
 * CheckLimitsForResolvConf; garbage collection's ContainerGCFailed,
 * ImageGCFailed, FreeDiskSpaceFailed, InvalidDiskCapacity.
 */
export interface NodeEvent {
  kind: 'NodeEvent';
  type: PodEventType;
  reason: string;
  message: string;
}

/** What the volume manager did to one volume of one pod. */
export interface VolumeEvent {
  kind: 'Volume';
  /** `namespace/name`. */
  pod: string;
  uid: string;
  volume: string;
  /** The kubelet's plugin dir name, e.g. `kubernetes.io~configmap`. */
  plugin: string;
  /** SetUp: mounted or created; Updated: new content published (`..data` swapped); TearDown: unmounted and removed. */
  op: 'SetUp' | 'Updated' | 'TearDown';
  hostPath: string;
}

/**
 * What one sync of a pod decided (computePodActions' plan, by container
 * name) and how it went: emitted when it differs from the pod's previous
 * sync, and kept per pod for the local API's /plans (`klet explain`).
 */
export interface PodSyncEvent {
  kind: 'PodSync';
  /** `namespace/name`. */
  pod: string;
  uid: string;
  plan: PodSyncPlan;
  /** Why the sync did not carry the plan out, when it did not: Rejected (admission), DeadlineExceeded, Evicted, FailedMount, CreatePodSandboxError. */
  blocked?: { reason: string; message: string };
  /** Per container: what failed in this sync (CrashLoopBackOff, ErrImageNeverPull, CreateContainerConfigError, …). */
  failures: { container: string; reason: string; message: string; retryAt?: string }[];
  /** When the sync loop syncs the pod again at the latest (a back-off's end, a deadline), RFC 3339. */
  nextSyncAt?: string;
}

/** computePodActions' plan, with containers by name (kuberuntime/actions.ts PodActions). */
export interface PodSyncPlan {
  killPod: boolean;
  createSandbox: boolean;
  /** The new sandbox's attempt number, when one is created. */
  sandboxAttempt?: number;
  initContainersToStart: string[];
  containersToStart: string[];
  ephemeralContainersToStart: string[];
  containersToKill: { name: string; message: string }[];
}

/** An event as emitters write it: the bus adds `seq` and `time`. */
export type KletEventBody =
  | SyncLoopIterationEvent
  | PlegKletEvent
  | PodLifecycleEvent
  | PodEvent
  | PodSyncEvent
  | ProbeResultEvent
  | SourceErrorEvent
  | NodeEvent
  | PodWaitStartedEvent
  | PodWaitDoneEvent
  | VolumeEvent;

/** An event as readers see it. */
export type KletEvent = KletEventMeta & KletEventBody;

/** The `kind`s of KletEvent. */
export type KletEventKind = KletEventBody['kind'];

/**
 * In a subscription, in place of events that were discarded because the
 * subscriber fell behind. Not an event: it has no `seq` of its own and never
 * enters the ring. `firstSeq`..`lastSeq` are the discarded events, so a
 * reader can fetch them with `recent(firstSeq - 1)` (or `/events?since=`)
 * while the ring still holds them.
 */
export interface DroppedMarker {
  kind: 'Dropped';
  count: number;
  firstSeq: number;
  lastSeq: number;
  /** When the marker was delivered. */
  time: string;
}

/** What a subscription yields. */
export type BusMessage = KletEvent | DroppedMarker;
