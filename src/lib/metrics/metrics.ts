/**
 * The metrics `klet sync` exposes on the local API's /metrics, named as the
 * kubelet names them (kubelet_*) where klet measures the same thing, so the
 * dashboards and alerts people have for the kubelet read klet's too; klet's
 * own additions are klet_*.
 *
 * Everything lives in a private prom-client Registry, never the global
 * default one: a process can then hold several (tests do), and nothing a
 * dependency registers globally leaks into klet's exposition.
 */
import { goCodeName } from '../cri/grpc-status.js';
import { createRequire } from 'node:module';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { CriError } from '../cri/errors.js';
import type { SyncLoopTrigger } from '../events/types.js';
import type { ProbeMetricLabels, ProbeMetricResult } from '../prober/manager.js';

/** Prometheus' and the kubelet's default buckets (metrics.DefBuckets), in seconds. */
export const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The kubelet's runtime operation buckets: ExponentialBuckets(.005, 2.5, 14), 5ms to ~12min. */
export const RUNTIME_OPERATION_BUCKETS = Array.from({ length: 14 }, (_, i) => Number((0.005 * 2.5 ** i).toPrecision(6)));

/** The kubelet's pod start buckets: image pulls make minutes normal. */
export const POD_START_BUCKETS = [
  0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
];

/** Values of kubelet_running_containers' container_state (the kubelet's lower-cased CRI states). */
export const CONTAINER_STATES = ['created', 'running', 'exited', 'unknown'] as const;
export type ContainerStateLabel = (typeof CONTAINER_STATES)[number];

/** kubelet_pod_worker_duration_seconds' operation: the kubelet's create/update/sync, plus klet's kill. */
export type PodWorkerOperation = 'create' | 'update' | 'sync' | 'kill';

/** The kubelet's container_type label values. */
export type ContainerTypeLabel = 'container' | 'init_container' | 'ephemeral_container';

/** The labels of the kubelet server's request metrics, as the kubelet names them. */
export type HttpRequestLabel = 'method' | 'path' | 'server_type' | 'long_running';

export interface KletMetricsOptions {
  /**
   * Also collect Node's process metrics (process_cpu_seconds_total,
   * process_resident_memory_bytes, nodejs_*) into the registry. Default true.
   * Turning it off avoids the event-loop delay monitor prom-client starts.
   * All of prom-client's default metrics but nodejs_gc_duration_seconds
   * (see PROCESS_METRICS).
   */
  defaultMetrics?: boolean;
}

/**
 * prom-client's default metrics (its collectDefaultMetrics' list, v15), each
 * registered by its own module, all but `gc`: nodejs_gc_duration_seconds
 * needs a PerformanceObserver on every garbage collection, and with one Node
 * builds and delivers an entry per collection, ~0.2 ms of CPU each under
 * klet's small young generation (bin/run.js): ~2.5 % of klet's CPU over a
 * 110-pod start through the API server (bench/README.md, api-start-110). The
 * kubelet's go_gc_duration_seconds has no Node counterpart to follow, and the
 * process_* figures people alert on stay.
 */
export const PROCESS_METRICS = [
  'processCpuTotal',
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
] as const;

type DefaultMetric = (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void;

function collectProcessMetrics(registry: Registry): void {
  const require = createRequire(import.meta.url);
  for (const name of PROCESS_METRICS) {
    // process.getActiveResourcesInfo backs processResources; collectDefaultMetrics leaves it out without it too.
    if (name === 'processResources' && typeof process.getActiveResourcesInfo !== 'function') continue;
    (require(`prom-client/lib/metrics/${name}.js`) as DefaultMetric)(registry, { eventLoopMonitoringPrecision: 1000 });
  }
}

const ms = (durationMs: number): number => Math.max(0, durationMs) / 1000;

/** The `code` label for a gRPC status code, as Go spells it ("DeadlineExceeded"). */
export function grpcCodeLabel(code: number): string {
  return goCodeName(code);
}

/** The `code` label for a failed container start: the gRPC code of a CRI error, else "Unknown". */
export function errorCodeLabel(err: unknown): string {
  return err instanceof CriError ? goCodeName(err.grpcCode) : 'Unknown';
}

/** All of klet's metrics, in their own registry, with typed helpers for the sync loop. */
export class KletMetrics {
  readonly registry = new Registry();

  readonly plegRelistDuration: Histogram<never>;
  readonly plegRelistInterval: Histogram<never>;
  readonly syncLoopIterationDuration: Histogram<'trigger'>;
  readonly runningPods: Gauge<never>;
  readonly runningContainers: Gauge<'container_state'>;
  readonly podWorkerDuration: Histogram<'operation'>;
  readonly startedContainers: Counter<'container_type'>;
  readonly startedContainersErrors: Counter<'container_type' | 'code'>;
  readonly containerRestarts: Counter<never>;
  readonly imagesGarbageCollected: Counter<'reason'>;
  readonly runtimeOperations: Counter<'operation_type'>;
  readonly runtimeOperationsDuration: Histogram<'operation_type'>;
  readonly runtimeOperationsErrors: Counter<'operation_type'>;
  readonly podStartDuration: Histogram<never>;
  readonly proberProbeTotal: Counter<'probe_type' | 'result' | 'container' | 'pod' | 'namespace' | 'pod_uid'>;
  readonly proberProbeDuration: Histogram<'probe_type' | 'container' | 'pod' | 'namespace'>;
  readonly proberLateness: Histogram<never>;
  /** The kubelet server's requests (kubelet_http_requests_total, kubelet_http_inflight_requests). */
  readonly httpRequests: Counter<HttpRequestLabel>;
  readonly httpInflightRequests: Gauge<HttpRequestLabel>;

  /** Start of the last successful PLEG relist (performance.now() ms), for the interval. */
  private lastRelistStart: number | undefined;

  constructor(opts: KletMetricsOptions = {}) {
    const registers = [this.registry];
    this.plegRelistDuration = new Histogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: 'Duration in seconds for relisting pods in PLEG.',
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.plegRelistInterval = new Histogram({
      name: 'kubelet_pleg_relist_interval_seconds',
      help: 'Interval in seconds between relisting in PLEG.',
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.syncLoopIterationDuration = new Histogram({
      name: 'klet_sync_loop_iteration_duration_seconds',
      help: 'Duration in seconds of one sync loop iteration, by what triggered it.',
      labelNames: ['trigger'],
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.runningPods = new Gauge({
      name: 'kubelet_running_pods',
      help: 'Number of pods that have a running pod sandbox',
      registers,
    });
    this.runningContainers = new Gauge({
      name: 'kubelet_running_containers',
      help: 'Number of containers currently running',
      labelNames: ['container_state'],
      registers,
    });
    this.podWorkerDuration = new Histogram({
      name: 'kubelet_pod_worker_duration_seconds',
      help: 'Duration in seconds to sync a single pod. Broken down by operation type: create, update, sync or kill.',
      labelNames: ['operation'],
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.startedContainers = new Counter({
      name: 'kubelet_started_containers_total',
      help: 'Cumulative number of containers started',
      labelNames: ['container_type'],
      registers,
    });
    this.startedContainersErrors = new Counter({
      name: 'kubelet_started_containers_errors_total',
      help: 'Cumulative number of errors when starting containers',
      labelNames: ['container_type', 'code'],
      registers,
    });
    this.containerRestarts = new Counter({
      name: 'klet_container_restarts_total',
      help: 'Cumulative number of containers klet restarted (a new attempt of a container that had run before).',
      registers,
    });
    this.imagesGarbageCollected = new Counter({
      name: 'kubelet_image_garbage_collected_total',
      help: 'Total number of images garbage collected by the kubelet, whether through disk usage or image age.',
      labelNames: ['reason'],
      registers,
    });
    this.runtimeOperations = new Counter({
      name: 'kubelet_runtime_operations_total',
      help: 'Cumulative number of runtime operations by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsDuration = new Histogram({
      name: 'kubelet_runtime_operations_duration_seconds',
      help: 'Duration in seconds of runtime operations. Broken down by operation type.',
      labelNames: ['operation_type'],
      buckets: RUNTIME_OPERATION_BUCKETS,
      registers,
    });
    this.runtimeOperationsErrors = new Counter({
      name: 'kubelet_runtime_operations_errors_total',
      help: 'Cumulative number of runtime operation errors by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.podStartDuration = new Histogram({
      name: 'kubelet_pod_start_duration_seconds',
      help: 'Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
      buckets: POD_START_BUCKETS,
      registers,
    });
    // The kubelet's prober metrics (pkg/kubelet/prober): counted per run,
    // durations of the runs that gave a result.
    this.proberProbeTotal = new Counter({
      name: 'prober_probe_total',
      help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
      labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
      registers,
    });
    this.proberProbeDuration = new Histogram({
      name: 'prober_probe_duration_seconds',
      help: 'Duration in seconds for a probe response.',
      labelNames: ['probe_type', 'container', 'pod', 'namespace'],
      buckets: DEFAULT_BUCKETS,
      registers,
    });
    this.httpRequests = new Counter({
      name: 'kubelet_http_requests_total',
      help: 'Number of the http requests received since the server started',
      labelNames: ['long_running', 'method', 'path', 'server_type'],
      registers,
    });
    this.httpInflightRequests = new Gauge({
      name: 'kubelet_http_inflight_requests',
      help: 'Number of the inflight http requests',
      labelNames: ['long_running', 'method', 'path', 'server_type'],
      registers,
    });
    this.proberLateness = new Histogram({
      name: 'klet_prober_probe_lateness_seconds',
      help: "How long after its period's tick a probe run started (klet's scheduling delay, not the handler's time).",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    // Zero series from the start, so a scrape shows the gauge before the first relist.
    this.setRunningContainers({});
    this.runningPods.set(0);
    // The event-loop lag monitor samples at 1 s, not prom-client's 10 ms: a
    // node agent must not wake 100 times a second to measure itself.
    if (opts.defaultMetrics ?? true) collectProcessMetrics(this.registry);
  }

  /** The Content-Type of `text()`. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of everything. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * One PLEG relist took `durationMs`; it started at `startedAt`
   * (performance.now()); `ok` is false when it failed. As the kubelet does,
   * every relist's duration is observed, and the interval from the start of
   * the last successful relist to this one's start, so a slow relist or a
   * run of failed ones shows in the interval.
   */
  observePlegRelist(durationMs: number, startedAt: number = performance.now() - durationMs, ok = true): void {
    this.plegRelistDuration.observe(ms(durationMs));
    if (this.lastRelistStart !== undefined) this.plegRelistInterval.observe(ms(startedAt - this.lastRelistStart));
    if (ok) this.lastRelistStart = startedAt;
  }

  observeSyncLoopIteration(trigger: SyncLoopTrigger, durationMs: number): void {
    this.syncLoopIterationDuration.observe({ trigger }, ms(durationMs));
  }

  setRunningPods(count: number): void {
    this.runningPods.set(count);
  }

  /** Sets every state; states not given are 0, so a state that emptied does not keep its last count. */
  setRunningContainers(counts: Partial<Record<ContainerStateLabel, number>>): void {
    for (const state of CONTAINER_STATES) this.runningContainers.set({ container_state: state }, counts[state] ?? 0);
  }

  observePodWorker(operation: PodWorkerOperation, durationMs: number): void {
    this.podWorkerDuration.observe({ operation }, ms(durationMs));
  }

  containerStarted(containerType: ContainerTypeLabel): void {
    this.startedContainers.inc({ container_type: containerType });
  }

  /**
   * A container failed to start. The kubelet counts these in both counters
   * (started_containers_total counts attempts); so does klet. `error` is the
   * failure (its gRPC code becomes `code`) or a code string.
   */
  containerStartFailed(containerType: ContainerTypeLabel, error: unknown): void {
    const code = typeof error === 'string' ? error : errorCodeLabel(error);
    this.startedContainers.inc({ container_type: containerType });
    this.startedContainersErrors.inc({ container_type: containerType, code });
  }

  containerRestarted(): void {
    this.containerRestarts.inc();
  }

  /** Image GC removed an image: `space` (over the high threshold; klet has no maximum age, so never `age`). */
  imageGarbageCollected(reason: 'space' | 'age'): void {
    this.imagesGarbageCollected.inc({ reason });
  }

  /** One CRI call; `operationType` as the kubelet names it ("list_containers", "run_podsandbox"). */
  observeRuntimeOperation(operationType: string, durationMs: number, failed = false): void {
    const labels = { operation_type: operationType };
    this.runtimeOperations.inc(labels);
    this.runtimeOperationsDuration.observe(labels, ms(durationMs));
    if (failed) this.runtimeOperationsErrors.inc(labels);
  }

  /** From first seeing the pod to all its containers running (the kubelet's pod startup latency). */
  /** One probe run (the prober manager's ProberMetrics). */
  observeProbe(l: ProbeMetricLabels, result: ProbeMetricResult, seconds: number): void {
    this.proberProbeTotal.inc({ probe_type: l.probeType, result, container: l.container, pod: l.pod, namespace: l.namespace, pod_uid: l.podUid });
    if (result !== 'unknown') {
      this.proberProbeDuration.observe({ probe_type: l.probeType, container: l.container, pod: l.pod, namespace: l.namespace }, seconds);
    }
  }

  observeProbeLateness(seconds: number): void {
    this.proberLateness.observe(seconds);
  }

  /** A stopped worker's series go with it, as the kubelet's worker deletes its labels. */
  forgetProbe(l: ProbeMetricLabels): void {
    const base = { probe_type: l.probeType, container: l.container, pod: l.pod, namespace: l.namespace };
    for (const result of ['successful', 'failed', 'unknown']) this.proberProbeTotal.remove({ ...base, result, pod_uid: l.podUid });
    this.proberProbeDuration.remove(base);
  }

  observePodStart(durationMs: number): void {
    this.podStartDuration.observe(ms(durationMs));
  }
}
