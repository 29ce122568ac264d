/**
 * The long-running kubelet: the syncLoop (kubelet.go syncLoopIteration)
 * selecting over pod config updates, PLEG events, a 1 s sync ticker (pods
 * whose work is due) and a 2 s housekeeping ticker, handing pods to the pod
 * workers. On start it rebuilds its state from the pod dirs and CRI (so a
 * restart of klet, even after SIGKILL, adopts the running pods), and it
 * kills pods no source wants only once every source has answered.
 */
import type { PodCgroups } from '../cm/manager.js';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import type { PodConfig, PodUpdate } from '../config/config.js';
import { identityKey } from '../config/config.js';
import { API_SOURCE, type ApiRejection } from '../config/api.js';
import { errorMessage } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import type { SyncLoopTrigger } from '../events/types.js';
import { restartPolicy } from '../kuberuntime/actions.js';
import { ContainerConfigError, type LocalObjects } from '../kuberuntime/env.js';
import { batchAdmissionKeys } from '../kuberuntime/admission.js';
import { admitPod, markTerminating, removePod, removePodLogDir } from '../kuberuntime/lifecycle.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { listPodRecordUids, listPodRecords, readDebugContainers, readPodRecord, recordOfOtherNode, readSyncState, removePodDir, writeSyncState, withDebugContainers, type PodRecord } from '../kuberuntime/poddir.js';
import { getRuntimePodStatus, type RuntimePodStatus } from '../kuberuntime/runtime-status.js';
import { killPod, NodeCache, syncPod, type SyncContext } from '../kuberuntime/sync-pod.js';
import { podKey as key } from '../pod/key.js';
import { CONFIG_SOURCE_ANNOTATION } from '../pod/static-pod.js';
import { DEFAULT_DNS_SETTINGS, readResolvConf, ResolvConfError, resolvConfLimitWarning, type DnsSettings } from '../pod/dns.js';
import { podWithStatus } from '../status/pods.js';
import { LastSyncs, killPodSyncEvent, podSyncEvent, rejectedSyncEvent, type LastSync } from './last-syncs.js';
import { log } from '../log.js';
import { grpcCodeLabel, type KletMetrics } from '../metrics/metrics.js';
import { relistOnContainerExit, type ExitSource } from '../pleg/exit-trigger.js';
import type { GenericPLEG } from '../pleg/generic.js';
import { hostIPs } from '../node/addresses.js';
import { ProberManager, type ProbeUpdate } from '../prober/manager.js';
import { type ServiceApi, ServiceLister } from '../node/service-lister.js';
import { Channel } from '../util/channel.js';
import { ApiObjectManager, type ObjectApi } from '../volume/api-objects.js';
import type { GcContainer } from '../kuberuntime/container-gc.js';
import { localObjectSource } from '../volume/plugins.js';
import { VolumeManager } from '../volume/manager.js';
import { PodWorkers, type SyncOutcome, type UpdateType, type WorkerState } from './pod-workers.js';
import { settleMakingCalls, type SettledCalls } from './settled-calls.js';


/** How long an API pod's sync waits for the first list of Services (then its containers fail CreateContainerConfigError and retry). */
const SERVICES_SYNC_WAIT_MS = 10_000;

/** How long a stopping loop waits for the sandboxes and containers the runtime is making for it (settled-calls.ts). */
const SETTLE_ON_STOP_MS = 30_000;

/** The reason the loop's idle wait ends with (an abort's reason; never thrown). */
const LOOP_WOKE = Object.freeze(new Error('sync loop woke'));

export interface KubeletOptions {
  cri: CriClient;
  rootDir: string;
  nodeName: string;
  config: PodConfig;
  pleg: GenericPLEG;
  bus: EventBus;
  metrics?: KletMetrics;
  backoff?: { initialMs: number; maxMs: number; resetAfterMs: number };
  /** How often pods whose work is due are synced (the kubelet's 1 s). */
  syncTickMs?: number;
  /** Housekeeping period (the kubelet's 2 s). */
  housekeepingMs?: number;
  /** Resync of healthy pods (the kubelet's --sync-frequency, 1 m). */
  resyncIntervalMs?: number;
  /** Pods syncing at once. */
  concurrency?: number;
  logRoot?: string;
  /** seccompDefault (the node's configuration). */
  seccompDefault?: boolean;
  /** How often disk emptyDirs are checked against their sizeLimit (the eviction manager's 10 s). */
  evictionIntervalMs?: number;
  /** The volume manager (default: one over the sources' ConfigMaps and Secrets, resynced every resyncIntervalMs). */
  volumes?: VolumeManager;
  /** The sysctls pods may set; a static pod setting another is rejected (SysctlForbidden) as API pods are at the source. */
  sysctls?: import('../node/sysctl.js').SysctlAllowlist;
  /** Cluster mode: the Services, for the service environment variables of every pod. */
  serviceApi?: ServiceApi;
  /** Cluster mode: API pods' ConfigMaps, Secrets and service account tokens come from this API server. */
  objectApi?: ObjectApi;
  /** Pod and QoS cgroups (--cgroups-per-qos). */
  cgroups?: PodCgroups;
  /** In-place resize of API pods: the node's allocatable a resize is admitted against (cluster mode). */
  resize?: SyncContext['resize'];
  /** The node's allocatable: static pods are admitted against it (critical pods: UnexpectedAdmissionError). */
  allocatable?: import('../node/admission.js').AdmissionNode['allocatable'];
  /** After each pod sync, termination and removal: the pod's status may have changed (the kubelet's statusManager.SetPodStatus). */
  onPodSynced?: (uid: string) => void;
  /**
   * At the start of a pod's first sync (its worker's create): the pod with
   * the status of that moment, before anything is started (the kubelet's
   * syncPod generates the API status and hands it to the status manager
   * before acting), so the server shows the pod Pending while it starts.
   */
  onPodStatus?: (pod: V1Pod) => void;
  /** Container exits as the runtime reports them (containerd): each asks the PLEG for a relist at once. */
  exits?: ExitSource;
  /** The pods' DNS settings (the kubelet's defaults when unset). */
  dns?: DnsSettings;
  /**
   * A container of this klet died (PLEG ContainerDied), with the pod's
   * containers as the PLEG last listed them: the kubelet's
   * cleanUpContainersInPod (the pod container deletor, syncloop/gc.ts).
   */
  onContainerDied?: (podUid: string, containerId: string, containers: GcContainer[]) => void;
}

interface DesiredPod {
  pod: V1Pod;
  source: string;
  /** Its place in admission order, given when its config update arrived (admissionKey). */
  admitted?: string;
}


export class Kubelet {
  private readonly desired = new Map<string, DesiredPod>();
  private readonly due = new Map<string, number>();
  /** When klet removed a pod (its last remains), so a PLEG snapshot taken before that is not read as an orphan. */
  private readonly removedAt = new Map<string, number>();
  /** The last clean-up failure warned of, per pod UID: housekeeping retries every pass, the warning is not repeated. */
  private readonly cleanupWarned = new Map<string, string>();
  /** Pod dirs under the root dir that are another node name's (recordOfOtherNode): left alone, and not read again. */
  private readonly otherNodeUids = new Set<string>();
  /** API pods whose resize is Deferred: synced again when a pod goes or a resize completes (RetryPendingResizes). */
  private readonly deferredResizes = new Set<string>();
  /** Pods whose start kubelet_pod_start_duration_seconds has counted (or that were running already). */
  private readonly podStartObserved = new Set<string>();
  private readonly workers: PodWorkers;
  /** The runtime as the pod syncs use it: a sandbox or container being made is waited for when the loop stops (settled-calls.ts). */
  private readonly runtime: SettledCalls<CriClient>;
  /** Each pod's last sync: what it planned and how it went (/plans). */
  private readonly lastSyncs = new LastSyncs();
  /** The API pods admission rejected, as recorded in lastSyncs. */
  private rejectedApiPods = new Set<string>();
  private readonly abort = new AbortController();
  /** Facts about the node cached for this kubelet's lifetime (resolv.conf, the runtime's name). */
  readonly cache = new NodeCache();
  private readonly started = Date.now();
  private lastHousekeeping = 0;
  private lastEvictionCheck = 0;
  /** Liveness, readiness and startup probes of the pods being synced. */
  readonly prober: ProberManager;
  /** Probe results that changed (the kubelet's liveness/readiness/startup update channels). */
  private readonly probeUpdates = new Channel<ProbeUpdate>();
  readonly volumes: VolumeManager;
  /** API pods' ConfigMaps, Secrets and tokens (cluster mode). */
  readonly apiObjects: ApiObjectManager | undefined;
  /** The cluster's Services (cluster mode), for the service environment variables. */
  readonly services: ServiceLister | undefined;

  constructor(private readonly opts: KubeletOptions) {
    this.runtime = settleMakingCalls(opts.cri);
    this.services = opts.serviceApi === undefined ? undefined : new ServiceLister({ api: opts.serviceApi, onWarning: (m) => log.warn(m) });
    this.apiObjects =
      opts.objectApi === undefined
        ? undefined
        : new ApiObjectManager({
            api: opts.objectApi,
            signal: this.abort.signal,
            onChange: () => this.apiObjectsChanged(),
            onWarning: (m) => log.warn(m),
            // The kubelet's maxIdleTime: 5 × its resync interval (--sync-frequency).
            maxIdleMs: 5 * (opts.resyncIntervalMs ?? 60_000),
          });
    this.prober = new ProberManager({
      cri: opts.cri,
      hostIPs,
      rootDir: opts.rootDir,
      onEvent: (e) => opts.bus.emit(e),
      onUpdate: (u) => this.probeUpdates.push(u),
      metrics: opts.metrics,
      jitterAtStart: true,
      signal: this.abort.signal,
    });
    this.volumes =
      opts.volumes ??
      new VolumeManager({
        rootDir: opts.rootDir,
        nodeName: opts.nodeName,
        objects: (pod) => {
          const source = this.sourceOf(pod);
          return source === API_SOURCE && this.apiObjects ? this.apiObjects.source(pod, this.abort.signal) : localObjectSource(opts.config.objects(source));
        },
        onEvent: (e) => opts.bus.emit(e),
        resyncMs: opts.resyncIntervalMs ?? 60_000,
      });
    this.workers = new PodWorkers({
      concurrency: opts.concurrency ?? 8,
      resyncIntervalMs: opts.resyncIntervalMs ?? 60_000,
      signal: this.abort.signal,
      handlers: {
        syncPod: (pod, type, signal) => this.handleSyncPod(pod, type, signal),
        syncTerminatingPod: (pod, grace) => this.handleTerminating(pod, grace),
        syncTerminatedPod: (pod, _signal, restart) => this.handleTerminated(pod, restart),
        requeue: (uid, afterMs) => this.due.set(uid, Date.now() + Math.max(0, afterMs)),
        onState: (pod, state, reason) => this.onWorkerState(pod, state, reason),
        onDuration: (type, ms) => {
          // Killing a pod is its worker's terminating step ('kill' updates lead there).
          const operation = type === 'terminating' ? 'kill' : type;
          if (operation === 'create' || operation === 'update' || operation === 'sync' || operation === 'kill') this.opts.metrics?.observePodWorker(operation, ms);
        },
      },
    });
  }

  /** Pods the loop wants, with their sources (for /pods and status). */
  desiredPods(): { pod: V1Pod; source: string; state: WorkerState | undefined }[] {
    return [...this.desired.values()].map((d) => ({ ...d, state: this.workers.state(d.pod.metadata?.uid ?? '') }));
  }

  /** Each pod's last sync (the local API's /plans). */
  lastPodSyncs(): LastSync[] {
    return this.lastSyncs.list();
  }

  /**
   * The API pods admission rejects now (OutOfcpu, NodeAffinity, …): they
   * never reach a pod worker, but /plans tells them as a sync that stopped
   * at admission; the ones that left the API server are forgotten.
   */
  apiRejections(rejections: Iterable<ApiRejection>): void {
    const now = new Date();
    const current = new Set<string>();
    for (const r of rejections) {
      current.add(r.uid);
      this.lastSyncs.record(rejectedSyncEvent(r), now, (e) => this.opts.bus.emit(e));
    }
    for (const uid of this.rejectedApiPods) if (!current.has(uid)) this.lastSyncs.forget(uid);
    this.rejectedApiPods = current;
  }

  workerCounts(): Record<WorkerState, number> {
    return this.workers.counts();
  }

  /** Pod workers with an update waiting, and running now. */
  workerQueue(): { pending: number; running: number } {
    return this.workers.queueDepth();
  }

  /** When this sync loop started, ms since the epoch. */
  get startedAt(): number {
    return this.started;
  }

  /**
   * The source of a pod: the one it is desired from, or, for a pod no longer
   * desired (being killed, its volumes still resynced), the one its config
   * annotation names — an API pod keeps its API objects and tokens to the end.
   */
  private sourceOf(pod: V1Pod): string {
    return this.desired.get(pod.metadata?.uid ?? '')?.source ?? pod.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] ?? 'file';
  }

  /** The sync context for one pod: its events carry that pod's UID (a pod being killed is no longer in `desired`). */
  private ctx(source: string, forPod: V1Pod, onStarted?: (container: string) => void): SyncContext {
    const api = source === API_SOURCE ? this.apiObjects : undefined;
    const objects: LocalObjects = api ? api.objects(forPod) : this.opts.config.objects(source);
    return {
      cri: this.runtime.client,
      rootDir: this.opts.rootDir,
      nodeName: this.opts.nodeName,
      objects,
      ...(api
        ? { readObjects: (c: V1Container) => api.readForContainer(forPod, c, this.abort.signal, (m) => new ContainerConfigError(m)) }
        : {}),
      logRoot: this.opts.logRoot,
      ...(this.opts.seccompDefault ? { seccompDefault: true } : {}),
      signal: this.abort.signal,
      backoff: this.opts.backoff,
      cache: this.cache,
      dns: this.opts.dns,
      probes: this.prober,
      volumes: this.volumes,
      ...(this.services ? { services: this.services } : {}),
      ...(this.opts.sysctls ? { sysctls: this.opts.sysctls } : {}),
      ...(this.opts.cgroups ? { cgroups: this.opts.cgroups } : {}),
      ...(this.opts.resize ? { resize: this.opts.resize } : {}),
      ...(this.opts.allocatable ? { allocatable: this.opts.allocatable } : {}),
      onResizePending: (reason) => {
        const uid = forPod.metadata?.uid ?? '';
        if (reason === 'Deferred') this.deferredResizes.add(uid);
        else this.deferredResizes.delete(uid);
      },
      onEvent: (e) => {
        // Events carry the UID of the pod being synced (a pod being killed is no longer in `desired`).
        this.opts.bus.emit(e.kind === 'Event' ? { ...e, uid: forPod.metadata?.uid ?? e.uid } : e);
        if (e.kind !== 'Event') return;
        // A resize done may have freed room (TriggerReasonPodResized).
        if (e.reason === 'ResizeCompleted') this.retryDeferredResizes();
        const containerType = e.init === true ? 'init_container' : 'container';
        if (e.reason === 'Started') {
          this.opts.metrics?.containerStarted(containerType);
          if ((e.restartCount ?? 0) > 0) this.opts.metrics?.containerRestarted();
          if (e.init !== true && e.container !== undefined) onStarted?.(e.container);
        }
        // As the kubelet counts them: CreateContainer and StartContainer failures
        // (each also an attempt), not back-offs or image pull failures.
        if (e.containerReason === 'CreateContainerError' || e.containerReason === 'RunContainerError') {
          this.opts.metrics?.containerStartFailed(containerType, grpcCodeLabel(e.grpcCode ?? 2));
        }
      },
    };
  }

  private async handleSyncPod(sourcePod: V1Pod, type: UpdateType, _signal: AbortSignal): Promise<SyncOutcome> {
    const uid = sourcePod.metadata?.uid ?? '';
    const d = this.desired.get(uid);
    // The debug containers `klet debug` added to a pod of a file or URL (an API pod's come with its spec).
    const pod = d?.source === API_SOURCE ? sourcePod : withDebugContainers(sourcePod, await readDebugContainers(this.opts.rootDir, uid));
    // Admission (the pod's record) happens in its worker, so it never races
    // the removal of a previous instance of the same UID (also in its worker).
    let rec = await readPodRecord(this.opts.rootDir, uid);
    const fresh = rec === null;
    const debugAdded = (rec?.pod.spec?.ephemeralContainers?.length ?? 0) !== (pod.spec?.ephemeralContainers?.length ?? 0);
    if (type === 'create' || type === 'update' || rec === null || debugAdded) rec = await admitPod({ rootDir: this.opts.rootDir }, pod, d?.source ?? 'file', rec, d?.admitted);
    if (type === 'create' && this.opts.onPodStatus) await this.reportStatusBeforeSync(rec, fresh);
    const firstSeen = rec ? Date.parse(rec.firstSeen) : undefined;
    const started = new Set<string>();
    // The objects its environment and volumes read have been listed once (the watch-based managers' HasSynced).
    if (d?.source === API_SOURCE) await this.apiObjects?.ready(pod, this.abort.signal);
    // And the Services have been listed once (an API pod's containers need them, the kubelet's serviceHasSynced).
    if (d?.source === API_SOURCE) await this.services?.waitSynced(SERVICES_SYNC_WAIT_MS, this.abort.signal);
    const res = await syncPod(this.ctx(this.sourceOf(pod), pod, (c) => started.add(c)), pod, { startTime: firstSeen });
    // The kubelet's SyncPod ensures the pod cgroup exists on every sync (pcm.Exists, EnsureExists): one the runtime
    // made again without klet's record or settings (a `klet delete` raced this pod's re-creation) is klet's again now.
    // Not for a pod resized in place: its cgroup follows what its containers run with, written by its own syncs.
    if (!(this.opts.resize !== undefined && d?.source === API_SOURCE)) await this.opts.cgroups?.reclaimPod?.(pod);
    const now = new Date();
    this.lastSyncs.record(podSyncEvent(pod, res, now.getTime()), now, (e) => this.opts.bus.emit(e));
    this.trackPodStart(pod, firstSeen, res.status, res.actions.containersToKill, started);
    // The prober works from the runtime status each sync reads (its status provider).
    this.prober.addPod(pod);
    this.prober.updatePodStatus(uid, res.status);
    this.opts.onPodSynced?.(uid);
    const a = res.actions;
    // A pod whose containers all finished under Never/OnFailure (or that hit
    // its deadline) is done: the worker terminates it and keeps its status.
    const terminal =
      res.deadlineExceeded === true ||
      res.rejected === true ||
      (a.killPod && !a.createSandbox && restartPolicy(pod) !== 'Always' && res.status.containers.length > 0);
    return { terminal, requeueAfterMs: res.requeueAfterMs };
  }

  /**
   * The pod's status before its first sync acts (onPodStatus). A pod klet
   * has just admitted has nothing in the runtime yet: no runtime call is
   * needed; one adopted after a restart is read from the runtime.
   */
  private async reportStatusBeforeSync(rec: PodRecord, fresh: boolean): Promise<void> {
    const md = rec.pod.metadata ?? {};
    const ctx = { cri: this.opts.cri, rootDir: this.opts.rootDir, nodeName: this.opts.nodeName, cache: this.cache, signal: this.abort.signal };
    const runtime: RuntimePodStatus | undefined = fresh ? { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? 'default', sandboxes: [], containers: [] } : undefined;
    try {
      this.opts.onPodStatus?.(await podWithStatus(ctx, rec, runtime));
    } catch (err) {
      // The status after the sync is reported all the same.
      if (!this.abort.signal.aborted) log.debug(`status of ${key(rec.pod)} before its first sync: ${errorMessage(err)}`);
    }
  }

  /**
   * Whether klet still has the pod: a source wants it or its worker has not
   * forgotten it (the kubelet's pod workers' ShouldPodContentBeRemoved, negated).
   */
  podKnown(uid: string): boolean {
    return this.desired.has(uid) || this.workers.state(uid) !== undefined;
  }

  /** Is the pod's worker syncing it, or has it an update waiting? */
  podBusy(uid: string): boolean {
    return this.workers.isBusy(uid);
  }

  /**
   * kubelet_pod_start_duration_seconds: from first seeing the pod (its
   * record's firstSeen) to the sync that had every app container running,
   * once per pod UID. A pod already running when this klet first synced it
   * (adopted after a restart) is not a start klet saw: not observed.
   */
  private trackPodStart(
    pod: V1Pod,
    firstSeenMs: number | undefined,
    before: RuntimePodStatus,
    killed: readonly { name: string }[],
    started: ReadonlySet<string>,
  ): void {
    const uid = pod.metadata?.uid ?? '';
    if (this.podStartObserved.has(uid) || firstSeenMs === undefined) return;
    const gone = new Set(killed.map((k) => k.name));
    const running = new Set(before.containers.filter((c) => c.state === 'running' && !gone.has(c.name)).map((c) => c.name));
    for (const c of started) running.add(c);
    const names = (pod.spec?.containers ?? []).map((c) => c.name);
    if (names.length === 0 || !names.every((n) => running.has(n))) return;
    this.podStartObserved.add(uid);
    if (started.size > 0) this.opts.metrics?.observePodStart(Date.now() - firstSeenMs);
  }

  private async handleTerminating(pod: V1Pod, grace: number | undefined): Promise<void> {
    const md = pod.metadata ?? {};
    this.prober.stopLivenessAndStartup(md.uid ?? '');
    const status = await getRuntimePodStatus(
      this.opts.cri,
      { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? 'default' },
      { owner: instanceSelector(this.opts), signal: this.abort.signal },
    );
    // A pod no source wants any more is being deleted (one that finished by itself is not).
    if (!this.desired.has(md.uid ?? '')) {
      await markTerminating(this.opts, pod, grace ?? pod.spec?.terminationGracePeriodSeconds ?? 30).catch(() => undefined);
    }
    // Its plan, when there is something to stop (a rejected pod, or one the sync already stopped, has none).
    if (status.containers.some((c) => c.state === 'running') || status.sandboxes.some((sb) => sb.ready)) {
      const why = this.desired.has(md.uid ?? '') ? 'Pod has finished' : 'Pod is being deleted';
      this.lastSyncs.record(killPodSyncEvent(pod, status, why), new Date(), (e) => this.opts.bus.emit(e));
    }
    await killPod(this.ctx(this.sourceOf(pod), pod), pod, status, { gracePeriodSeconds: grace });
    this.opts.onPodSynced?.(md.uid ?? '');
    // A deleted pod stopped holds nothing now (TriggerReasonPodsRemoved, once it is really gone from the node).
    if (!this.desired.has(md.uid ?? '')) this.retryDeferredResizes();
  }

  /**
   * RetryPendingResizes: each pod whose resize was deferred is synced now,
   * its resize admitted again against what the other pods hold. (The
   * kubelet also retries every 3 minutes; klet at each pod's periodic sync.)
   */
  private retryDeferredResizes(): void {
    for (const uid of this.deferredResizes) {
      const d = this.desired.get(uid);
      if (d === undefined) {
        this.deferredResizes.delete(uid);
        continue;
      }
      if (this.workers.state(uid) === 'SyncPod') this.workers.updatePod({ pod: d.pod, type: 'sync' });
    }
  }

  /**
   * A terminated pod no source wants any more is removed: containers,
   * sandboxes, pod dir, logs; so is one about to start over (`restart`).
   */
  private async handleTerminated(pod: V1Pod, restart: boolean): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    if (!restart && this.desired.has(uid)) return; // finished by itself: keep it and its status
    await this.removePod(pod);
    // Forgotten once this step is over, unless it was wanted again meanwhile.
    if (!this.desired.has(uid)) this.workers.forget(uid);
  }

  private async removePod(pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.prober.removePod(uid);
    await removePod(this.ctx(this.sourceOf(pod), pod), pod);
    this.cleanupWarned.delete(uid);
    this.removedAt.set(uid, Date.now());
    this.podStartObserved.delete(uid);
    this.lastSyncs.forget(uid);
    this.opts.bus.emit({ kind: 'PodLifecycle', pod: key(pod), uid, state: 'Removed' });
    this.opts.onPodSynced?.(uid);
  }

  private onWorkerState(pod: V1Pod, state: WorkerState | 'Forgotten', reason?: string): void {
    if (state === 'Forgotten') return;
    this.opts.bus.emit({ kind: 'PodLifecycle', pod: key(pod), uid: pod.metadata?.uid ?? '', state, reason });
  }

  /**
   * Hand each pod of a config update to its worker. Nothing here touches the
   * pod's files: the worker admits (records) a pod in its first sync, after
   * the termination and clean-up of a previous instance of the same UID (a
   * finished pod whose manifest changed, or one removed from its source and
   * put back before its clean-up was done, runs again from scratch).
   */
  private handleConfig(u: PodUpdate): string[] {
    const touched: string[] = [];
    // The kubelet admits an update's additions in order (HandlePodAdditions);
    // here each pod's worker admits it, so the order goes with the pod.
    const admission = u.op === 'ADD' ? batchAdmissionKeys(u.pods) : undefined;
    for (const pod of u.pods) {
      try {
        touched.push(...this.handleConfigPod(u, pod, admission?.get(pod.metadata?.uid ?? '')));
      } catch (err) {
        // One pod's failure never holds up the others of the same update.
        log.error(`pod config ${u.op} of ${key(pod)}: ${errorMessage(err)}`);
      }
    }
    return touched;
  }

  private handleConfigPod(u: PodUpdate, pod: V1Pod, admitted?: string): string[] {
    const uid = pod.metadata?.uid ?? '';
    switch (u.op) {
      case 'ADD':
      case 'UPDATE': {
        this.desired.set(uid, { pod, source: u.source, admitted: admitted ?? this.desired.get(uid)?.admitted });
        if (u.source === API_SOURCE) this.apiObjects?.registerPod(pod);
        this.workers.updatePod({ pod, type: u.op === 'ADD' ? 'create' : 'update' });
        // Labels and annotations reach downwardAPI files without a restart.
        if (u.op === 'UPDATE') this.volumes.podUpdated(pod);
        break;
      }
      case 'REMOVE':
        this.desired.delete(uid);
        this.apiObjects?.unregisterPod(uid);
        this.due.delete(uid);
        this.deferredResizes.delete(uid);
        this.workers.updatePod({ pod, type: 'kill', reason: 'removed from its source' });
        this.retryDeferredResizes();
        break;
      case 'RECONCILE':
        this.desired.set(uid, { pod, source: u.source });
        if (u.source === API_SOURCE) this.apiObjects?.registerPod(pod);
        break;
    }
    return [key(pod)];
  }

  /**
   * A ConfigMap or Secret an API pod references changed, appeared or went:
   * re-project the volumes, and sync now the pods whose mount failed (one
   * waiting for a missing ConfigMap starts as soon as it exists).
   */
  private apiObjectsChanged(): void {
    this.volumes.objectsChanged();
    for (const uid of this.desired.keys()) if (this.volumes.retryInMs(uid) !== undefined) this.due.set(uid, Date.now());
  }

  /** cleanUpContainersInPod: the deletor gets the pod's containers as the PLEG last listed them. */
  private containerDied(podUid: string, containerId: string): void {
    const rec = this.opts.pleg.podRecords().get(podUid);
    if (rec === undefined || this.opts.onContainerDied === undefined) return;
    const containers = rec.containers.map(
      (c): GcContainer => ({ id: c.id, podUid, name: c.name, state: c.state, createdAt: Number(c.createdAt / 1_000_000n), sandboxId: c.sandboxId }),
    );
    this.opts.onContainerDied(podUid, containerId, containers);
  }

  private handlePleg(podUid: string): string[] {
    const d = this.desired.get(podUid);
    if (!d) return []; // an orphan: housekeeping deals with it once sources are ready
    if (this.workers.state(podUid) !== 'SyncPod') return [];
    this.workers.updatePod({ pod: d.pod, type: 'sync' });
    return [key(d.pod)];
  }

  /**
   * A probe result changed: a failed liveness or startup probe gets the pod
   * synced now, which kills and restarts the container (handleProbeSync).
   * Readiness needs no sync: status is computed from the written results.
   */
  /**
   * A probe result changed (the kubelet's liveness, readiness and startup
   * manager updates, handleProbeSync): the pod's worker syncs it, so its
   * status follows a readiness or startup change at once and a liveness
   * failure restarts the container. A liveness success needs nothing.
   */
  private handleProbeUpdate(u: ProbeUpdate): string[] {
    if (u.type === 'Liveness' && u.result !== 'Failure') return [];
    const d = this.desired.get(u.podUid);
    if (!d || this.workers.state(u.podUid) !== 'SyncPod') return [];
    this.workers.updatePod({ pod: d.pod, type: 'sync' });
    return [key(d.pod)];
  }

  private handleSyncTick(): string[] {
    const now = Date.now();
    const touched: string[] = [];
    for (const [uid, at] of this.due) {
      if (at > now) continue;
      this.due.delete(uid);
      const d = this.desired.get(uid);
      if (!d || this.workers.state(uid) !== 'SyncPod') continue;
      this.workers.updatePod({ pod: d.pod, type: 'sync' });
      touched.push(key(d.pod));
    }
    return touched;
  }

  /**
   * Housekeeping: kill pods the runtime runs that no source wants (only once
   * every source has answered, so a restart never kills what a slow source
   * still wants), remove terminated pods' leftovers, and drop records of pods
   * neither wanted nor running.
   */
  private async housekeeping(): Promise<string[]> {
    const touched: string[] = [];
    const running = this.opts.pleg.podRecords();
    const counts = { created: 0, running: 0, exited: 0, unknown: 0 };
    let runningPods = 0;
    for (const rec of running.values()) {
      if (rec.sandboxes.some((s) => s.state === 'ready')) runningPods++;
      for (const c of rec.containers) counts[c.state]++;
    }
    this.opts.metrics?.setRunningPods(runningPods);
    this.opts.metrics?.setRunningContainers(counts);
    await this.evictionCheck(touched);
    if (!this.opts.config.sourcesReady()) return touched;

    // Only the pod dir names are read every pass; a record itself only for a pod being removed.
    const recordUids = await listPodRecordUids(this.opts.rootDir);
    for (const uid of this.otherNodeUids) if (!recordUids.has(uid)) this.otherNodeUids.delete(uid);
    const relistAt = this.opts.pleg.lastRelist.at;
    for (const [uid, at] of this.removedAt) if (at < relistAt - 60_000) this.removedAt.delete(uid);
    for (const [uid, rec] of running) {
      if (this.desired.has(uid) || this.workers.state(uid) !== undefined) continue;
      // Removed by klet after the PLEG's last relist started: that snapshot is stale for it.
      if ((this.removedAt.get(uid) ?? -Infinity) >= relistAt) continue;
      const active = rec.sandboxes.some((s) => s.state === 'ready') || rec.containers.some((c) => c.state === 'running');
      const recorded = recordUids.has(uid) ? await readPodRecord(this.opts.rootDir, uid) : null;
      const pod: V1Pod = recorded?.pod ?? { metadata: { uid, name: rec.name, namespace: rec.namespace } };
      if (active) {
        // Killed through a worker: graceful, with the recorded spec's grace period when known.
        this.workers.updatePod({ pod, type: 'kill', reason: 'no pod source wants it' });
      } else {
        await this.removePod(pod).catch((err) => this.cleanupFailed(uid, `removing orphaned pod ${key(pod)}: ${errorMessage(err)}`));
      }
      touched.push(key(pod));
    }
    // Terminated workers whose clean-up failed: of pods no longer wanted
    // (removed here), and of pods wanted again (the kubelet's
    // restartRequested: their worker retries the clean-up, then starts them
    // over). A pod that finished by itself and is still wanted as it was
    // keeps its worker and its status.
    for (const uid of this.workers.uids()) {
      if (this.workers.state(uid) !== 'TerminatedPod' || this.workers.isBusy(uid)) continue;
      const wanted = this.desired.get(uid);
      if (wanted !== undefined) {
        if (this.workers.restartRequested(uid) || !this.workers.finished(uid)) {
          this.workers.updatePod({ pod: wanted.pod, type: 'create' });
          touched.push(key(wanted.pod));
        }
        continue;
      }
      const pod = this.workers.pod(uid);
      if (!pod) continue;
      try {
        await this.removePod(pod);
        this.workers.forget(uid);
      } catch (err) {
        this.cleanupFailed(uid, `removing pod ${key(pod)}: ${errorMessage(err)}`);
        continue;
      }
      touched.push(key(pod));
    }
    // Records of pods nobody wants and the runtime does not have.
    for (const uid of recordUids) {
      if (this.desired.has(uid) || running.has(uid) || this.workers.state(uid) !== undefined || this.otherNodeUids.has(uid)) continue;
      const rec = await readPodRecord(this.opts.rootDir, uid);
      // Another node name's pod under the same root dir: its runtime objects
      // are invisible here (owner label), not gone. Not ours to clean up.
      if (rec && recordOfOtherNode(rec, this.opts.nodeName)) {
        this.otherNodeUids.add(uid);
        continue;
      }
      // The log dir first: the record, which names it, is kept until it is gone (retried next pass).
      if (rec) {
        try {
          await removePodLogDir(this.opts, rec.pod);
        } catch (err) {
          this.cleanupFailed(uid, `removing log dir of ${key(rec.pod)}: ${errorMessage(err)}`);
          continue;
        }
      }
      try {
        await this.opts.cgroups?.removePod(uid);
        await removePodDir(this.opts.rootDir, uid);
        this.cleanupWarned.delete(uid);
      } catch (err) {
        this.cleanupFailed(uid, `removing pod dir ${uid}: ${errorMessage(err)}`);
      }
      this.volumes.forget(uid);
    }
    return touched;
  }

  /** A clean-up that failed (retried next pass): warned once per pod and message, repeats at debug level. */
  private cleanupFailed(uid: string, message: string): void {
    if (this.cleanupWarned.get(uid) === message) {
      log.debug(message);
      return;
    }
    this.cleanupWarned.set(uid, message);
    log.warn(message);
  }

  /**
   * The eviction manager's local-storage check, every 10 s (its monitoring
   * period): a pod whose disk emptyDir exceeds its sizeLimit is evicted —
   * killed, Failed with reason Evicted and the kubelet's message naming the volume.
   */
  private async evictionCheck(touched: string[]): Promise<void> {
    const now = Date.now();
    if (now - this.lastEvictionCheck < (this.opts.evictionIntervalMs ?? 10_000)) return;
    this.lastEvictionCheck = now;
    for (const over of await this.volumes.emptyDirsOverLimit()) {
      const d = this.desired.get(over.uid);
      if (d === undefined || this.workers.state(over.uid) !== 'SyncPod') continue;
      const state = await readSyncState(this.opts.rootDir, over.uid);
      if (state.reason === 'Evicted') continue;
      state.reason = 'Evicted';
      state.message = over.message;
      await writeSyncState(this.opts.rootDir, over.uid, state);
      this.opts.bus.emit({ kind: 'Event', pod: over.pod, uid: over.uid, type: 'Warning', reason: 'Evicted', message: over.message });
      this.workers.updatePod({ pod: d.pod, type: 'sync' });
      touched.push(over.pod);
    }
  }

  /** The pods running now, not yet evicted or finished (the eviction manager's active pods). */
  activePods(): V1Pod[] {
    return [...this.desired.entries()].filter(([uid]) => this.workers.state(uid) === 'SyncPod').map(([, d]) => d.pod);
  }

  /**
   * Evict a pod (the eviction manager's killPodFunc): Failed with reason
   * Evicted and this message, the DisruptionTarget condition, the Evicted
   * event, and its worker kills it with this grace period.
   */
  async evictPod(pod: V1Pod, message: string, gracePeriodSeconds: number): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const d = this.desired.get(uid);
    if (d === undefined || this.workers.state(uid) !== 'SyncPod') return;
    const state = await readSyncState(this.opts.rootDir, uid);
    state.reason = 'Evicted';
    state.message = message;
    state.evictionGracePeriodSeconds = gracePeriodSeconds;
    state.disruptionTargetAt = new Date().toISOString();
    await writeSyncState(this.opts.rootDir, uid, state);
    this.opts.bus.emit({ kind: 'Event', pod: key(pod), uid, type: 'Warning', reason: 'Evicted', message });
    this.workers.updatePod({ pod: d.pod, type: 'sync' });
  }

  /** The evicted pod's worker has stopped it (or forgotten it). */
  podStopped(uid: string): boolean {
    const state = this.workers.state(uid);
    return state === undefined || state === 'TerminatedPod';
  }

  /** Seed pod identities from the records, so an edited manifest keeps the UID of the pod already running. */
  private async seedIdentities(): Promise<void> {
    const ids = new Map<string, string>();
    for (const rec of await listPodRecords(this.opts.rootDir, this.opts.nodeName)) {
      const md = rec.pod.metadata ?? {};
      const source = md.annotations?.['kubernetes.io/config.source'] ?? 'file';
      // An API pod's UID is the server's: a pod recreated under the same name is another pod.
      if (source === 'api') continue;
      if (md.uid && md.name) ids.set(identityKey(source, md.namespace ?? 'default', md.name), md.uid);
    }
    this.opts.config.seedIdentities(ids);
  }

  private record(trigger: SyncLoopTrigger, t0: number, pods: string[]): void {
    const durationMs = performance.now() - t0;
    this.opts.metrics?.observeSyncLoopIteration(trigger, durationMs);
    this.opts.bus.emit({ kind: 'SyncLoopIteration', trigger, durationMs: Number(durationMs.toFixed(3)), pods: [...new Set(pods)] });
  }

  /**
   * The kubelet's CheckLimitsForResolvConf, once as the loop starts: a
   * resolver file that cannot be read, or whose search line cannot fit in
   * pods, is a Warning event about the Node (and a log line).
   */
  private async checkResolvConf(): Promise<void> {
    const { resolvConf, clusterDomain } = this.opts.dns ?? DEFAULT_DNS_SETTINGS;
    if (resolvConf === '') return;
    const message = await readResolvConf(resolvConf).then(
      (host) => resolvConfLimitWarning(resolvConf, host, clusterDomain),
      (err: unknown) => (err instanceof ResolvConfError ? err.detail : errorMessage(err)),
    );
    if (message === null) return;
    log.warn(`resolv.conf: ${message}`);
    this.opts.bus.emit({ kind: 'NodeEvent', type: 'Warning', reason: 'CheckLimitsForResolvConf', message });
  }

  /** Run until the signal aborts. Pods keep running afterwards, as with the kubelet. */
  async run(signal: AbortSignal): Promise<void> {
    const onAbort = () => this.abort.abort(signal.reason);
    // An already-aborted signal fires no 'abort' event: the loop would never stop.
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const { config, pleg } = this.opts;
    const services = this.services?.run(this.abort.signal);
    await this.seedIdentities();
    await this.checkResolvConf();
    await this.volumes.start(this.abort.signal);
    const unwatch = config.watchObjects(() => this.volumes.objectsChanged());
    config.start(this.abort.signal);
    pleg.start();
    const exits = this.opts.exits ? relistOnContainerExit(this.opts.exits, pleg, this.abort.signal) : undefined;
    const syncTick = this.opts.syncTickMs ?? 1000;
    const hkTick = this.opts.housekeepingMs ?? 2000;
    let nextSync = Date.now() + syncTick;
    this.lastHousekeeping = Date.now();
    try {
      while (!this.abort.signal.aborted) {
        const u = config.updates.tryTake();
        if (u !== undefined) {
          const t0 = performance.now();
          const pods = this.handleConfig(u);
          this.record('config', t0, pods);
          continue;
        }
        const e = pleg.events.tryTake();
        if (e !== undefined) {
          const t0 = performance.now();
          const d = this.desired.get(e.podUid);
          this.opts.bus.emit({ kind: 'PLEG', type: e.type, podUid: e.podUid, pod: d ? key(d.pod) : undefined, containerId: e.containerId });
          if (e.type === 'ContainerDied') this.containerDied(e.podUid, e.containerId);
          this.record('pleg', t0, this.handlePleg(e.podUid));
          continue;
        }
        const pu = this.probeUpdates.tryTake();
        if (pu !== undefined) {
          const t0 = performance.now();
          this.record('probe', t0, this.handleProbeUpdate(pu));
          continue;
        }
        const now = Date.now();
        // Pods whose retry (back-off expiry) is due are synced at once, not at the next tick.
        let earliestDue = Infinity;
        for (const at of this.due.values()) if (at < earliestDue) earliestDue = at;
        if (now >= nextSync || now >= earliestDue) {
          const t0 = performance.now();
          nextSync = now + syncTick;
          const pods = this.handleSyncTick();
          if (pods.length > 0) this.record('sync', t0, pods);
          continue;
        }
        if (now - this.lastHousekeeping >= hkTick) {
          const t0 = performance.now();
          this.lastHousekeeping = now;
          const pods = await this.housekeeping().catch((err) => {
            log.warn(`housekeeping: ${errorMessage(err)}`);
            return [];
          });
          this.record('housekeeping', t0, pods);
          continue;
        }
        // Nothing to do: wait for an update, a PLEG event or the next tick.
        const wait = new AbortController();
        const stop = () => wait.abort();
        this.abort.signal.addEventListener('abort', stop, { once: true });
        const until = Math.max(0, Math.min(nextSync, earliestDue, this.lastHousekeeping + hkTick) - Date.now());
        await Promise.race([
          config.updates.ready(wait.signal),
          pleg.events.ready(wait.signal),
          this.probeUpdates.ready(wait.signal),
          new Promise<void>((r) => {
            const t = setTimeout(r, until);
            wait.signal.addEventListener('abort', () => clearTimeout(t), { once: true });
          }),
        ]).catch(() => undefined);
        // With a reason: abort() without one builds a DOMException, stack
        // trace and all, on every turn of the loop.
        wait.abort(LOOP_WOKE);
        this.abort.signal.removeEventListener('abort', stop);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.prober.stop();
      await this.prober.flush();
      unwatch();
      this.abort.abort();
      // A sandbox or container the runtime is making for a pod sync is made before the loop says it
      // stopped (settled-calls.ts); the syncs' next calls, cancelled, make nothing more.
      const unsettled = await this.runtime.drain(SETTLE_ON_STOP_MS);
      if (unsettled.length > 0) log.warn(`sync loop stopped with the runtime still answering ${unsettled.join(', ')} after ${SETTLE_ON_STOP_MS / 1000} s: cancelled`);
      await exits;
      await services;
      await pleg.stop();
      await config.stop();
    }
  }

  uptimeMs(): number {
    return Date.now() - this.started;
  }
}
