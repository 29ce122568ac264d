/**
 * `klet sync` as a library function: wires the CRI client (instrumented),
 * the pod sources, the PLEG, the event bus, metrics, the sync loop and the
 * local API, and runs until the signal aborts. Pods keep running after it
 * returns, as with the kubelet.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import { canonicalJson } from '../util/json.js';
import { ApiSource, createPodConfig } from '../config/index.js';
import { errorMessage } from '../errors.js';
import { EventBus } from '../events/bus.js';
import type { PodEvent } from '../events/types.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { listPodsWithStatus, type StatusContext } from '../status/pods.js';
import { listPodRecordUids, listPodRecords, readSyncStateSync } from '../kuberuntime/poddir.js';
import { log } from '../log.js';
import { instrumentCri } from '../metrics/instrument-cri.js';
import { KletMetrics } from '../metrics/metrics.js';
import { GenericPLEG } from '../pleg/generic.js';
import { localApiSocketPath } from '../server/client.js';
import { startLocalApi, type LocalApi, type LocalApiHandlers } from '../server/local-api.js';
import { StatsProvider } from '../stats/provider.js';
import type { ClusterStatus, NodeStatus, RuntimeCondition } from '../server/node-status.js';
import { DEFAULT_IMAGE_GC_POLICY } from '../kuberuntime/image-gc.js';
import { GarbageCollector } from './gc.js';
import { ContainerLogManager } from '../logs/rotation.js';
import { runHealthzServer } from '../server/healthz-server.js';
import { type KubeletConfig, toKubeletConfiguration } from '../kubeletconfig/index.js';
import { Kubelet } from './kubelet.js';
import { EvictionManager } from '../eviction/manager.js';
import { pressureConditionStates } from '../node/node-status.js';
import type { DnsSettings } from '../pod/dns.js';

/** How often the stats provider samples the runtime (the base of CPU rates), as cAdvisor's housekeeping. */
const STATS_SAMPLE_MS = 10_000;

export interface SyncOptions {
  cri: CriClient;
  rootDir: string;
  nodeName: string;
  /** The node's configuration (lib/kubeletconfig): pod sources, intervals, the server's settings. */
  config: KubeletConfig;
  /** The sysctls pods may set (lib/node/sysctl.ts nodeSysctlAllowlist); without it, sysctls are not checked at admission. */
  sysctls?: import('../node/sysctl.js').SysctlAllowlist;
  /** The pods' DNS: --cluster-dns, --cluster-domain, --resolv-conf (the kubelet's defaults when unset). */
  dns?: DnsSettings;
  /**
   * Garbage collection (syncloop/gc.ts): the image GC policy (the kubelet's
   * --image-gc-high-threshold, --image-gc-low-threshold,
   * --minimum-image-gc-age; KubeletConfiguration imageGCHighThresholdPercent,
   * imageGCLowThresholdPercent, imageMinimumGCAge), the container GC policy
   * and the periods (the kubelet's 1m and 5m by default).
   */
  gc?: {
    imagePolicy?: import('../kuberuntime/image-gc.js').ImageGCPolicy;
    containerPolicy?: import('../kuberuntime/container-gc.js').ContainerGCPolicy;
    containerGCPeriodMs?: number;
    imageGCPeriodMs?: number;
  };
  /** Also serve the local API on loopback TCP, with this bearer token. */
  listen?: { host: string; port: number; token: string };
  /**
   * Cluster mode (--kubeconfig): register the node with this API server and
   * keep its Lease and status fresh while the sync loop runs.
   */
  cluster?: {
    options: import('../services/register-node.js').RegisterNodeOptions;
    api: import('../node/api.js').NodeApi &
      import('../node/api.js').PodApi &
      import('../volume/api-objects.js').ObjectApi &
      import('../node/service-lister.js').ServiceApi &
      import('../node/event-recorder.js').EventApi &
      Partial<import('../server/kubelet-auth.js').ReviewApi>;
    kletVersion: string;
  };
  /** Pod and QoS cgroups (--cgroups-per-qos): made before the loop starts. */
  cgroups?: import('../cm/settings.js').CgroupSettings;
  /** The kubelet server (HTTPS, port 10250): logs, exec, attach, port-forward for the API server. */
  kubeletServer?: import('../server/kubelet-server-config.js').LoadedKubeletServer;
  /** Called once the kubelet server listens, with its port. */
  onKubeletServer?: (info: { port: number; address: string }) => void;
  /**
   * Called once everything is up (tests, the CLI's one-line notice), with
   * the handlers the local API serves, so an in-process reader (`klet sync
   * --tui`) reads exactly what /node, /pods and /events serve.
   */
  onReady?: (info: { socketPath: string; tcp?: string; handlers: LocalApiHandlers }) => void;
}

/**
 * An edited manifest keeps its pod's UID (so only changed containers
 * restart) when nothing but the app containers changed; an edit to anything
 * the sandbox or the volumes depend on replaces the pod, as the kubelet
 * replaces an edited static pod. So does an edit of a container's resources:
 * they size the pod cgroup, and a static pod is never resized in place (the
 * kubelet's "In-place resize of static-pods is not supported").
 */
export function sameSandboxSpec(current: V1Pod, next: V1Pod): boolean {
  const rest = (p: V1Pod) => canonicalJson({ ...p.spec, containers: Object.fromEntries((p.spec?.containers ?? []).map((c) => [c.name, c.resources])) });
  return rest(current) === rest(next);
}

/** What cluster mode learns as it goes, for /node's `cluster` (written by registerInBackground). */
interface ClusterTracker {
  registered: boolean;
  nodeUid: string | null;
  renewTime: string | null;
  lastError: { message: string; at: string } | null;
  events: import('../node/event-recorder.js').EventRecorderStats | null;
}

function clusterStatus(cluster: NonNullable<SyncOptions['cluster']>, t: ClusterTracker, nodeName: string, apiSource: ApiSource | undefined): ClusterStatus {
  const e = t.events;
  return {
    server: cluster.api.server,
    nodeName,
    registered: t.registered,
    nodeUid: t.nodeUid,
    lease: { renewTime: t.renewTime, ageSeconds: t.renewTime === null ? null : Math.max(0, Math.round((Date.now() - Date.parse(t.renewTime)) / 1000)) },
    lastError: t.lastError,
    watch: { state: apiSource?.watchState ?? 'connecting', pods: apiSource?.latest?.length ?? 0, error: apiSource?.watchError ?? null },
    events: { sent: e?.sent ?? 0, created: e?.created ?? 0, patched: e?.patched ?? 0, filtered: e?.filtered ?? 0, dropped: e?.dropped ?? 0, queued: e?.queued ?? 0 },
    requests: { ...cluster.api.requests },
  };
}

/** A stop that takes longer than this names what it still waits for (one warning). */
export const SLOW_STOP_WARNING_MS = 5_000;

/**
 * The parts of the sync that a stop waits for, by name: when the stop takes
 * longer than SLOW_STOP_WARNING_MS, one warning names those still running
 * (a request or a wait that missed the signal shows up in the log).
 */
export function stopWatch(signal: AbortSignal): { track<T>(name: string, p: Promise<T>): Promise<T>; dispose(): void } {
  const running = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    timer = setTimeout(() => {
      if (running.size > 0) log.warn(`sync: still stopping after ${SLOW_STOP_WARNING_MS / 1000} s; waiting for: ${[...running].join(', ')}`);
    }, SLOW_STOP_WARNING_MS);
    timer.unref();
  };
  if (signal.aborted) arm();
  else signal.addEventListener('abort', arm, { once: true });
  return {
    track: (name, p) => {
      running.add(name);
      return p.finally(() => running.delete(name));
    },
    dispose: () => {
      signal.removeEventListener('abort', arm);
      clearTimeout(timer);
    },
  };
}

export async function runSync(opts: SyncOptions, signal: AbortSignal): Promise<void> {
  // kubepods and the QoS cgroups before any pod (the kubelet's container manager Start).
  const cgroups = opts.cgroups ? await (await import('../cm/manager.js')).openCgroups(opts.cgroups, opts.rootDir) : undefined;
  const allocatable = await nodeAllocatable(opts);
  const stop = stopWatch(signal);
  const metrics = new KletMetrics();
  const cri = instrumentCri(opts.cri, metrics);
  const bus = new EventBus();
  const config = createPodConfig({
    nodeName: opts.nodeName,
    manifestDir: opts.config.staticPodPath,
    manifestUrl: opts.config.staticPodURL,
    // One request header per name: several values joined as HTTP joins them.
    manifestUrlHeaders: Object.fromEntries(Object.entries(opts.config.staticPodURLHeader).map(([k, v]) => [k, v.join(', ')])),
    fileCheckFrequencyMs: opts.config.fileCheckFrequency,
    httpCheckFrequencyMs: opts.config.httpCheckFrequency,
    rejectStaticApiReferences: opts.cluster !== undefined,
    // An API pod is its UID: only static pods keep their identity across edits.
    keepIdentity: (current, next) =>
      next.metadata?.annotations?.['kubernetes.io/config.source'] === 'api' ? current.metadata?.uid === next.metadata?.uid : sameSandboxSpec(current, next),
  });
  // The eviction manager (made once the stats provider is): its admission and conditions, read through this.
  const pressure: PressureHooks = { admit: () => null, conditions: () => [] };
  const apiPods = opts.cluster
    ? await apiPodSource(opts, opts.cluster, () => config.pods().filter((p) => p.metadata?.annotations?.['kubernetes.io/config.source'] !== 'api'), (pod) => pressure.admit(pod))
    : undefined;
  const apiSource = apiPods?.source;
  if (apiSource) config.addSource(apiSource);
  const tracker: ClusterTracker = { registered: false, nodeUid: null, renewTime: null, lastError: null, events: null };
  const podSynced: PodSyncedHooks = { fn: () => undefined, status: () => undefined, busy: () => false };
  // The PLEG sees only this klet's pods: housekeeping and adoption act on nothing else.
  const pleg = new GenericPLEG({ cri, relistPeriodMs: opts.config.flags.plegRelistPeriod, labelSelector: instanceSelector(opts), metrics });
  const kubelet = new Kubelet({
    cri,
    rootDir: opts.rootDir,
    nodeName: opts.nodeName,
    config,
    pleg,
    bus,
    metrics,
    backoff: { initialMs: opts.config.flags.crashLoopBackOff.initial, maxMs: opts.config.flags.crashLoopBackOff.max, resetAfterMs: opts.config.flags.crashLoopBackOff.reset },
    resyncIntervalMs: opts.config.syncFrequency,
    concurrency: opts.config.flags.maxParallelSyncs,
    ...(opts.sysctls ? { sysctls: opts.sysctls } : {}),
    dns: opts.dns,
    objectApi: opts.cluster?.api,
    serviceApi: opts.cluster?.api,
    ...(cgroups ? { cgroups } : {}),
    // API pods are resized in place (InPlacePodVerticalScaling), admitted against the node's allocatable.
    ...(apiPods ? { resize: { allocatable: { cpuMilli: apiPods.allocatable.cpuMilli, memoryBytes: apiPods.allocatable.memoryBytes } } } : {}),
    allocatable,
    onPodSynced: (uid) => podSynced.fn(uid),
    onPodStatus: (pod) => podSynced.status(pod),
    // The runtime's own client: these are not CRI operations to count.
    exits: opts.cri,
    logRoot: opts.config.podLogsDir,
    seccompDefault: opts.config.seccompDefault,
    onContainerDied: (uid, id, containers) => gc.containerDied(uid, id, containers),
  });
  const gc = new GarbageCollector({
    cri,
    rootDir: opts.rootDir,
    nodeName: opts.nodeName,
    ...opts.gc,
    podRemoved: (uid) => !kubelet.podKnown(uid),
    allSourcesReady: () => config.sourcesReady(),
    onNodeEvent: (e) => bus.emit({ kind: 'NodeEvent', ...e }),
    metrics,
  });
  apiSource?.onChange(() => kubelet.apiRejections(apiSource.rejected.values()));
  if (opts.cluster?.options.nodeIP) kubelet.cache.nodeIP = opts.cluster.options.nodeIP;
  let lastSourceErrors = '';
  const reportSourceErrors = () => {
    const text = [...config.errors().entries()].flatMap(([source, errs]) => errs.map((e) => `${source}: ${e.toString()}`)).join('\n');
    if (text !== lastSourceErrors) {
      lastSourceErrors = text;
      // PodConfig logs each problem once already: here they only become events.
      for (const line of text.split('\n').filter(Boolean)) {
        bus.emit({ kind: 'SourceError', source: line.split(':')[0] ?? '', message: line });
      }
    }
  };
  const sourceTimer = setInterval(reportSourceErrors, 1000);

  /** CRI Version and Status for /node, asked at most every 2 s however many readers poll. */
  let runtimeInfo: { at: number; value: Promise<NodeStatus['runtime']> } | null = null;
  const runtime = (): Promise<NodeStatus['runtime']> => {
    if (runtimeInfo === null || Date.now() - runtimeInfo.at >= 2000) {
      runtimeInfo = {
        at: Date.now(),
        value: (async () => {
          try {
            const [v, st] = await Promise.all([cri.version({}, { signal }), cri.status({}, { signal })]);
            const conditions: RuntimeCondition[] = (st.status?.conditions ?? []).map((c) => ({
              type: c.type,
              status: c.status,
              reason: c.reason,
              message: c.message,
            }));
            return { name: v.runtimeName, version: v.runtimeVersion, conditions, error: null };
          } catch (err) {
            return { name: '', version: '', conditions: [], error: errorMessage(err) };
          }
        })(),
      };
    }
    return runtimeInfo.value;
  };
  const iso = (ms: number | null): string | null => (ms === null || ms === 0 ? null : new Date(ms).toISOString());

  // The Summary API's figures; CPU rates over the last 10 s sample, as cAdvisor's housekeeping gives the kubelet.
  const stats = new StatsProvider({
    cri,
    owner: instanceSelector(opts),
    nodeName: opts.nodeName,
    rootDir: opts.rootDir,
    logRoot: opts.config.podLogsDir,
    startTime: new Date(kubelet.startedAt),
    ...(cgroups ? { podsCgroup: cgroups.kubepodsStatsDirs() } : {}),
  });
  const sampleStats = (): void => {
    stats.sample(signal).catch((err: unknown) => {
      if (!signal.aborted) log.debug(`stats: ${errorMessage(err)}`);
    });
  };
  sampleStats();
  const statsTimer = setInterval(sampleStats, STATS_SAMPLE_MS);
  statsTimer.unref();
  const eviction = evictionManager(opts, { cri, kubelet, gc, bus, stats });
  const logRotation = new ContainerLogManager({
    cri,
    owner: instanceSelector(opts),
    logRoot: opts.config.podLogsDir,
    policy: { maxSize: opts.config.containerLogMaxSizeBytes, maxFiles: opts.config.containerLogMaxFiles },
    monitorInterval: opts.config.containerLogMonitorInterval,
    maxWorkers: opts.config.containerLogMaxWorkers,
  });
  const transitions = new Map<string, string>();
  pressure.admit = (pod) => eviction.admit(pod);
  pressure.conditions = () => {
    const states = pressureConditionStates(eviction.conditions());
    return states.map((c) => {
      const key = `${c.type}=${c.status}`;
      const since = transitions.get(c.type);
      const at = since !== undefined && since.startsWith(`${key}@`) ? since.slice(key.length + 1) : new Date().toISOString();
      transitions.set(c.type, `${key}@${at}`);
      return { ...c, lastTransitionTime: at };
    });
  };
  pressure.conditions();
  let api: LocalApi | null = null;
  let kubeletServer: import('../server/kubelet-server.js').KubeletServer | null = null;
  let servingRotation: Promise<void> = Promise.resolve();
  const socketPath = localApiSocketPath(opts.rootDir);
  try {
    const handlers: LocalApiHandlers = {
        healthz: () => {
          const p = pleg.healthy();
          const relist = pleg.lastRelist;
          return {
            ok: p.ok,
            checks: {
              pleg: p,
              runtime: { ok: relist.error === null, message: relist.error ?? 'ok' },
              syncloop: { ok: true, message: `pod workers ${JSON.stringify(kubelet.workerCounts())}` },
            },
          };
        },
        pods: async () => ({
          apiVersion: 'v1',
          kind: 'PodList',
          metadata: {},
          items: await listPodsWithStatus({ cri, rootDir: opts.rootDir, nodeName: opts.nodeName, cache: kubelet.cache }),
        }),
        node: async (): Promise<NodeStatus> => {
          const health = pleg.healthy();
          const relist = pleg.lastRelist;
          return {
            kind: 'KletNodeStatus',
            nodeName: opts.nodeName,
            startedAt: new Date(kubelet.startedAt).toISOString(),
            runtime: await runtime(),
            sources: config.sourceStatus().map((s) => ({ name: s.name, lastReadAt: iso(s.lastReadAt), errors: s.errors })),
            pleg: {
              healthy: health.ok,
              message: health.message,
              lastRelistAt: iso(relist.at),
              lastRelistDurationMs: Number(relist.durationMs.toFixed(3)),
              error: relist.error,
            },
            podWorkers: { counts: kubelet.workerCounts(), ...kubelet.workerQueue() },
            conditions: pressure.conditions(),
            lastEventSeq: bus.lastSeq,
            ...(opts.cluster ? { cluster: clusterStatus(opts.cluster, tracker, opts.nodeName, apiSource) } : {}),
          };
        },
        plans: () => kubelet.lastPodSyncs(),
        events: bus,
        metrics,
        summary: (o) => stats.summary({ signal, onlyCpuAndMemory: o.onlyCpuAndMemory }),
    };
    api = await startLocalApi({ socketPath, listen: opts.listen, handlers });
    let cluster = opts.cluster;
    if (opts.kubeletServer && opts.kubeletServer.settings.port !== 0) {
      const statusContext = { cri, rootDir: opts.rootDir, nodeName: opts.nodeName, cache: kubelet.cache };
      kubeletServer = await startNodeServer(opts, opts.kubeletServer, {
        cri: opts.cri,
        owner: instanceSelector(opts),
        podByName: async (namespace, name) => {
          const named = (p: V1Pod) => p.metadata?.name === name && (p.metadata?.namespace ?? 'default') === namespace;
          // Running pods, then the records of finished ones (an API pod that Succeeded leaves the desired set).
          const desired = config.pod(namespace, name);
          if (desired) return desired;
          const records = (await listPodRecords(opts.rootDir, opts.nodeName)).map((r) => r.pod).filter(named);
          return records.sort((a, b) => Date.parse(String(b.metadata?.creationTimestamp ?? 0)) - Date.parse(String(a.metadata?.creationTimestamp ?? 0)))[0];
        },
        relisted: (uid) => pleg.podRecords().get(uid),
        podStatus: async (pod, s) => (await listPodsWithStatus({ ...statusContext, signal: s }, new Set([pod.metadata?.uid ?? ''])))[0]?.status,
        pods: async (s) => listPodsWithStatus({ ...statusContext, signal: s }),
        healthz: handlers.healthz,
        metrics,
        configz: () => configz(opts),
        summary: (o) => stats.summary(o),
      });
      // The Node says where its kubelet listens (the port actually bound, when 0 picked one).
      if (cluster) cluster = { ...cluster, options: { ...cluster.options, kubeletPort: kubeletServer.port } };
      opts.onKubeletServer?.({ port: kubeletServer.port, address: opts.kubeletServer.settings.address });
      if (opts.kubeletServer.settings.serverTLSBootstrap && cluster) servingRotation = rotateServingCertificate(opts, cluster.options, opts.kubeletServer, kubeletServer, signal);
    }
    opts.onReady?.({ socketPath: api.address.socketPath, tcp: api.address.tcp, handlers });
    podSynced.busy = (uid) => kubelet.podBusy(uid);
    const registration = cluster ? registerInBackground(opts, cluster, kubelet.cache, apiSource, bus, podSynced, tracker, signal, stop.track, () => eviction.conditions()) : Promise.resolve();
    await Promise.all([
      stop.track('sync loop (pod sources, PLEG)', kubelet.run(signal)),
      stop.track('garbage collection', gc.run(signal)),
      stop.track('eviction manager', eviction.run(signal)),
      stop.track('container log rotation', logRotation.run(signal)),
      ...(opts.config.healthzPort !== 0
        ? [stop.track('healthz server', runHealthzServer({ address: opts.config.healthzBindAddress, port: opts.config.healthzPort, signal }))]
        : []),
      registration,
    ]);
  } catch (err) {
    log.debug(`sync stopped: ${errorMessage(err)}`);
    throw err;
  } finally {
    clearInterval(sourceTimer);
    clearInterval(statsTimer);
    await stop.track('serving certificate rotation', servingRotation);
    await stop.track('kubelet server', kubeletServer?.close() ?? Promise.resolve());
    await stop.track('local API', api?.close() ?? Promise.resolve());
    stop.dispose();
  }
}

/** Start the kubelet server with authentication and authorization from its settings (the cluster's review APIs). */
async function startNodeServer(
  opts: SyncOptions,
  loaded: NonNullable<SyncOptions['kubeletServer']>,
  host: import('../server/kubelet-server.js').KubeletServerHost,
): Promise<import('../server/kubelet-server.js').KubeletServer> {
  const { KubeletAuth } = await import('../server/kubelet-auth.js');
  const { startKubeletServer } = await import('../server/kubelet-server.js');
  const s = loaded.settings;
  const api = opts.cluster?.api;
  const review = api?.reviewToken && api.reviewNodeAccess ? { reviewToken: api.reviewToken, reviewNodeAccess: api.reviewNodeAccess } : undefined;
  const auth = new KubeletAuth({
    nodeName: opts.nodeName,
    anonymous: s.anonymousAuth,
    ...(s.authenticationTokenWebhook && review ? { tokenReview: { api: review, cacheTtlMs: s.tokenCacheTtlMs } } : {}),
    authorization:
      s.authorizationMode === 'Webhook' && review
        ? { mode: 'Webhook', api: review, allowedTtlMs: s.allowedCacheTtlMs, deniedTtlMs: s.deniedCacheTtlMs }
        : { mode: 'AlwaysAllow' },
  });
  return startKubeletServer({ address: s.address, port: s.port, tls: loaded.tls, auth, host, nodeLogs: opts.config.enableSystemLogHandler });
}

/**
 * serverTLSBootstrap: keep the kubelet server's certificate issued and
 * renewed through kubelet-serving CSRs for the node's addresses (as its
 * Node status gives them), each new one served to new connections at once.
 */
async function rotateServingCertificate(
  opts: SyncOptions,
  registration: import('../services/register-node.js').RegisterNodeOptions,
  loaded: NonNullable<SyncOptions['kubeletServer']>,
  server: import('../server/kubelet-server.js').KubeletServer,
  signal: AbortSignal,
): Promise<void> {
  const { runCertificateRotation, servingCertificate } = await import('../kube/cert-rotation.js');
  const { hostIPs, nodeAddresses, nodeHostname } = await import('../node/addresses.js');
  const { givenPair } = await import('../server/kubelet-server-config.js');
  const fallback = givenPair(loaded.settings);
  await runCertificateRotation(
    {
      kubeconfig: registration.kubeconfig,
      certDir: loaded.certDir,
      certificate: servingCertificate(opts.nodeName, () => nodeAddresses(registration.nodeIP, hostIPs(), nodeHostname()), fallback),
      onRotated: (r) => {
        server.setServingCertificate({ cert: r.pair.certPem, key: r.pair.keyPem });
        log.info(`serving certificate issued: ${r.pairFile} (${r.csrName}), valid until ${r.notAfter.toISOString()}`);
      },
      onWaiting: (line) => log.info(`serving certificate: ${line}`),
      onError: (message) => log.warn(message),
      // As the kubelet's GetCertificate once Current() is nil: no handshake rather than an expired certificate.
      onExpired: (notAfter) => {
        server.clearServingCertificate();
        log.warn(`serving certificate expired at ${notAfter.toISOString()} and no new one was issued: the kubelet server completes no TLS handshake until one is`);
      },
    },
    signal,
  );
}

/**
 * GET /configz: the settings this node runs with, in the KubeletConfiguration's shape (no secret is among
 * them), with the image GC settings, which are flags of klet sync and not yet fields of its configuration.
 */
function configz(opts: SyncOptions): Record<string, unknown> {
  const policy = { ...DEFAULT_IMAGE_GC_POLICY, ...opts.gc?.imagePolicy };
  return {
    ...toKubeletConfiguration(opts.config),
    imageGCHighThresholdPercent: policy.highThresholdPercent,
    imageGCLowThresholdPercent: policy.lowThresholdPercent,
    imageMinimumGCAge: `${policy.minAgeMs / 1000}s`,
  };
}

/**
 * Where the Kubelet reports that a pod's status may have changed, and asks
 * whether its worker is busy: filled in by the status manager once the node
 * is registered (cluster mode); no-ops until then and without a cluster.
 */
interface PodSyncedHooks {
  fn: (uid: string) => void;
  status: (pod: V1Pod) => void;
  busy: (uid: string) => boolean;
}

/** Node registration and heartbeats beside the sync loop; never rejects. */
async function registerInBackground(
  opts: SyncOptions,
  cluster: NonNullable<SyncOptions['cluster']>,
  cache: StatusContext['cache'],
  apiSource: ApiSource | undefined,
  bus: EventBus,
  podSynced: PodSyncedHooks,
  tracker: ClusterTracker,
  signal: AbortSignal,
  track: <T>(name: string, p: Promise<T>) => Promise<T>,
  pressureConditions: () => readonly string[],
): Promise<void> {
  const failed = (message: string) => {
    tracker.lastError = { message, at: new Date().toISOString() };
  };
  // Every pod event from now on goes to the API server too (taken before the awaits below).
  const fromSeq = bus.lastSeq;
  const { keepRegistered, logRegisterNodeEvent } = await import('../services/register-node.js');
  const { PodStatusManager } = await import('../node/status-manager.js');
  const { EventRecorder } = await import('../node/event-recorder.js');
  const { nodeConditionEvents, nodeEventToRecorded, podEventToRecorded, startingEvent } = await import('../node/kubelet-events.js');
  let lastEventError = '';
  const recorder = new EventRecorder({
    api: cluster.api,
    nodeName: opts.nodeName,
    signal,
    // Once per distinct failure, not once per event: an outage is one line.
    onError: (m) => {
      failed(m);
      if (m !== lastEventError) log.warn(`events: ${m}`);
      lastEventError = m;
    },
  });
  const recorderDone = track('event sender', recorder.done);
  tracker.events = recorder.stats;
  recorder.record(startingEvent(opts.nodeName));
  let nodeUid: string | undefined;
  // Each failure is logged once per pod until it changes or the pod succeeds: an outage is not a flood.
  const lastFailure = new Map<string, string>();
  const repeated = (what: string, message: string): boolean => {
    if (lastFailure.get(what) === message) return true;
    lastFailure.set(what, message);
    return false;
  };
  const mirrors = new PodStatusManager({
    api: cluster.api,
    nodeName: opts.nodeName,
    nodeUid: () => nodeUid,
    localPods: (s, only) => listPodsWithStatus({ cri: opts.cri, rootDir: opts.rootDir, nodeName: opts.nodeName, cache, signal: s }, only),
    localUids: () => listPodRecordUids(opts.rootDir),
    busy: (uid) => podSynced.busy(uid),
    rejections: () => apiSource?.rejected.values() ?? [],
    // The watch's view while it is current; while it fails, passes LIST.
    remotePods: () => (apiSource?.watchState === 'watching' ? apiSource.latest : undefined),
    onEvent: (e) => {
      switch (e.kind) {
        case 'MirrorPodError':
          failed(e.message);
          if (repeated(`mirror ${e.pod}`, e.message)) break;
          log.warn(`mirror pod${e.pod ? ` ${e.pod}` : 's'}: ${e.message}`);
          break;
        case 'PodStatusError':
          failed(e.message);
          if (repeated(`status ${e.pod}`, e.message)) break;
          log.warn(`pod ${e.pod} status: ${e.message}`);
          break;
        case 'MirrorPodCreated':
          log.info(`mirror pod ${e.pod} created${e.reason === 'stale' ? ' (the old one was stale)' : ''}`);
          break;
        case 'MirrorPodDeleted':
          log.info(`mirror pod ${e.pod} deleted`);
          break;
        case 'PodRejected': {
          log.info(`pod ${e.pod} rejected: ${e.reason}: ${e.message}`);
          const [namespace, name] = e.pod.split('/') as [string, string];
          // rejectPod: the event has the admission's message, the status "Pod was rejected: " before it.
          recorder.record({ object: { kind: 'Pod', apiVersion: 'v1', namespace, name, uid: e.uid }, type: 'Warning', reason: e.reason, message: e.message.replace(/^Pod was rejected: /, '') });
          break;
        }
        case 'PodDeleted':
          log.info(`pod ${e.pod} deleted from the API server (terminated)`);
          break;
        case 'MirrorPodStatusPatched':
        case 'PodStatusPatched':
          lastFailure.delete(`status ${e.pod}`);
          lastFailure.delete(`mirror ${e.pod}`);
          lastFailure.delete('mirror ');
          log.debug(`pod ${e.pod} status patched (${e.phase})`);
          break;
      }
    },
  });
  const heartbeatFailures = { lease: 0, status: 0 };
  const mirrorsDone = track('pod status manager', mirrors.run(signal));
  // Event-driven status: a pass after each pod sync (reading that pod's status) and each change the watch delivers;
  // the status of a pod's first sync, before it acts, is handed over (Pending while it starts).
  podSynced.fn = (uid) => mirrors.kick(uid);
  podSynced.status = (pod) => mirrors.setPodStatus(pod);
  apiSource?.onChange(() => mirrors.kick());
  // A static pod's events are about its mirror pod (what `kubectl describe` finds): those that come
  // before klet has made the mirror pod wait for it, up to a minute, then go about the static pod's UID.
  const parked: Array<{ e: PodEvent; at: number }> = [];
  const forward = (e: PodEvent, force: boolean): boolean => {
    const mirror = mirrors.mirrorUidOf(e.uid);
    if (!mirror && !force && !apiSource?.isAdmitted(e.uid)) return false;
    const r = podEventToRecorded(e, () => mirror);
    if (r) recorder.record(r);
    return true;
  };
  const unpark = setInterval(() => {
    const now = Date.now();
    for (let i = 0; i < parked.length; ) {
      if (forward(parked[i]!.e, now - parked[i]!.at > 60_000)) parked.splice(i, 1);
      else i++;
    }
  }, 500);
  const forwarded = track('event forwarding', (async () => {
    try {
      for await (const m of bus.subscribe(signal, { since: fromSeq, queueSize: 1024 })) {
        // The kubelet's events about its Node (MissingClusterDNS, CheckLimitsForResolvConf, garbage collection's failures).
        if (m.kind === 'NodeEvent') recorder.record(nodeEventToRecorded(m, opts.nodeName));
        if (m.kind !== 'Event') continue;
        if (parked.length > 0 || !forward(m, false)) {
          if (parked.length >= 1000) parked.shift();
          parked.push({ e: m, at: Date.now() });
        }
      }
    } finally {
      clearInterval(unpark);
    }
  })());
  let conditions: import('@kubernetes/client-node').V1NodeCondition[] | undefined;
  const nodeEvents = (current: import('@kubernetes/client-node').V1NodeCondition[]) => {
    for (const r of nodeConditionEvents(opts.nodeName, conditions, current)) recorder.record(r);
    conditions = current;
  };
  await track('node registration, lease and node status', keepRegistered(cluster.options, {
    cri: opts.cri,
    intervals: { statusMs: opts.config.nodeStatusUpdateFrequency, reportMs: opts.config.nodeStatusReportFrequency },
    rootDir: opts.rootDir,
    nodeName: opts.nodeName,
    kletVersion: cluster.kletVersion,
    pressure: pressureConditions,
    signal,
    api: cluster.api,
    onEvent: (e) => {
      if (e.kind === 'NodeRegistered') {
        nodeUid = e.uid;
        tracker.registered = true;
        tracker.nodeUid = e.uid;
      }
      if (e.kind === 'LeaseRenewed') tracker.renewTime = e.renewTime;
      if (e.kind === 'NodeRegistered' || e.kind === 'NodeStatusUpdated') nodeEvents(e.conditions);
      if (e.kind === 'HeartbeatError') {
        failed(e.message);
        heartbeatFailures[e.what]++;
        // Retried with back-off: each distinct failure is logged once, and the recovery.
        if (repeated(`heartbeat ${e.what}`, e.message)) return;
      }
      const recovered = e.kind === 'LeaseRenewed' ? 'lease' : e.kind === 'NodeStatusUpdated' ? 'status' : undefined;
      if (recovered && heartbeatFailures[recovered] > 0) {
        log.info(`${recovered} heartbeat works again (after ${heartbeatFailures[recovered]} failed attempt${heartbeatFailures[recovered] === 1 ? '' : 's'})`);
        heartbeatFailures[recovered] = 0;
        lastFailure.delete(`heartbeat ${recovered}`);
      }
      logRegisterNodeEvent(e, opts.nodeName, log);
    },
    onError: (m) => {
      failed(m);
      if (!repeated('register', m)) log.warn(m);
    },
  }).catch((err: unknown) => log.error(`node registration stopped: ${errorMessage(err)}`)));
  await Promise.all([mirrorsDone, forwarded, recorderDone]);
}

/** The node's allocatable (capacity less the reservations and hard eviction thresholds), as the kubelet admits pods against it. */
async function nodeAllocatable(opts: SyncOptions): Promise<import('../node/admission.js').AdmissionNode['allocatable']> {
  const { readMachineFacts } = await import('../node/machine.js');
  const { allocatableAmounts } = await import('../node/node-status.js');
  await (await import('node:fs/promises')).mkdir(opts.rootDir, { recursive: true });
  return allocatableAmounts(await readMachineFacts(opts.rootDir), opts.config.maxPods, opts.config.flags.reserved, opts.config.evictionHard);
}

/**
 * The API server as a pod source, with the kubelet's admission against this
 * node: allocatable from the machine and the registration's reservations,
 * the labels and taints it registers with; what is in use counts the static
 * pods (all of them: a finished static pod still holds its place until its
 * manifest goes, which is stricter than the kubelet's active pods) and the
 * API pods already admitted, with their allocated resources.
 */
async function apiPodSource(
  opts: SyncOptions,
  cluster: NonNullable<SyncOptions['cluster']>,
  staticPods: () => V1Pod[],
  pressureAdmit: (pod: V1Pod) => { reason: string; message: string } | null,
): Promise<{ source: ApiSource; allocatable: { cpuMilli: number; memoryBytes: number } }> {
  const { readMachineFacts } = await import('../node/machine.js');
  const { allocatableAmounts, defaultLabels } = await import('../node/node-status.js');
  const { admitPods } = await import('../node/admission.js');
  const { podWithAllocation } = await import('../kuberuntime/resize.js');
  // The kubelet creates its root dir on start; its filesystem is the node's ephemeral storage.
  await (await import('node:fs/promises')).mkdir(opts.rootDir, { recursive: true });
  const m = await readMachineFacts(opts.rootDir);
  const o = cluster.options;
  const node = {
    allocatable: allocatableAmounts(m, o.maxPods, o.reserved, o.evictionHard),
    labels: { ...o.labels, ...defaultLabels(opts.nodeName, m) },
    taints: o.taints,
    ...(opts.sysctls ? { sysctls: opts.sysctls } : {}),
  };
  const source = new ApiSource({
    server: cluster.api.server,
    watch: (on, s) => cluster.api.watchNodePods(opts.nodeName, on, s),
    // The kubelet counts every active pod, static pods too (their mirror pods are not what it counts).
    // The eviction manager's admission comes first (the kubelet's first admit handler): a pod it refuses counts for nothing.
    admit: (candidates, running) => {
      const refused: Array<{ pod: V1Pod; reason: string; message: string }> = [];
      const rest = candidates.filter((pod) => {
        const r = pressureAdmit(pod);
        if (r !== null) refused.push({ pod, reason: r.reason, message: `Pod was rejected: ${r.message}` });
        return r === null;
      });
      // An admitted API pod counts with its allocated resources, not a resize its spec asks for (getAllocatedPods):
      // a pending resize, Infeasible or Deferred, holds nothing yet. A pod at generation 1 has had no spec
      // change, so no resize: its spec is its allocation, and its sync state is not read (110 reads per admission otherwise).
      const allocated = running.map((p) =>
        (p.metadata?.generation ?? 1) <= 1 ? p : podWithAllocation(p, readSyncStateSync(opts.rootDir, p.metadata?.uid ?? '').allocated).pod,
      );
      const admitted = admitPods(rest, [...staticPods(), ...allocated], node, opts.nodeName);
      return { admitted: admitted.admitted, rejected: [...refused, ...admitted.rejected] };
    },
  });
  return { source, allocatable: node.allocatable };
}

/** The eviction manager's admission and conditions, filled in once it exists. */
interface PressureHooks {
  admit: (pod: V1Pod) => { reason: string; message: string } | null;
  conditions: () => NonNullable<NodeStatus['conditions']>;
}

/**
 * The eviction manager over this sync's parts: the stats provider's
 * Summary, the volume manager's emptyDir usage, the pod workers (active
 * pods, eviction), garbage collection (node-level reclaim).
 */
function evictionManager(
  opts: SyncOptions,
  parts: { cri: CriClient; kubelet: Kubelet; gc: GarbageCollector; bus: EventBus; stats: StatsProvider },
): EvictionManager {
  const { cri, kubelet, gc, bus, stats } = parts;
  return new EvictionManager({
    thresholds: opts.config.evictionThresholds,
    pressureTransitionPeriodMs: opts.config.evictionPressureTransitionPeriod,
    maxPodGracePeriodSeconds: opts.config.evictionMaxPodGracePeriod,
    summary: (s) => stats.summary({ signal: s }),
    nodeSummary: (s) => stats.nodeSummary(s),
    quickSummary: (s) => stats.quickNodeSummary(s),
    volumeUsage: () => kubelet.volumes.localVolumeUsage(),
    dedicatedImageFs: async (s) => {
      // HasDedicatedImageFs: the image filesystem is another device than the root dir's.
      const { default: fsp } = await import('node:fs/promises');
      const mount = (await cri.imageFsInfo({}, { signal: s })).imageFilesystems[0]?.fsId?.mountpoint;
      if (!mount) return false;
      const [a, b] = await Promise.all([fsp.stat(opts.rootDir), fsp.stat(mount)]);
      return a.dev !== b.dev;
    },
    activePods: () => kubelet.activePods(),
    podCleanedUp: (p) => kubelet.podStopped(p.metadata?.uid ?? ''),
    reclaim: { containers: (s) => gc.collectContainers(s), images: (s) => gc.deleteUnusedImages(s) },
    evict: (pod, message, grace) => kubelet.evictPod(pod, message, grace),
    onNodeEvent: (e) => bus.emit({ kind: 'NodeEvent', ...e }),
    onConditions: (c) => log.info(`Eviction manager: node conditions: [${c.join(' ')}]`),
  });
}
