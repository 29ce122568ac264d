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
import { instanceSelector } from '../kuberuntime/labels.js';
import { listPodsWithStatus, type StatusContext } from '../status/pods.js';
import { log } from '../log.js';
import { instrumentCri } from '../metrics/instrument-cri.js';
import { KletMetrics } from '../metrics/metrics.js';
import { GenericPLEG } from '../pleg/generic.js';
import { localApiSocketPath } from '../server/client.js';
import { startLocalApi, type LocalApi, type LocalApiHandlers } from '../server/local-api.js';
import type { NodeStatus, RuntimeCondition } from '../server/node-status.js';
import { Kubelet } from './kubelet.js';

export interface SyncOptions {
  cri: CriClient;
  rootDir: string;
  nodeName: string;
  manifestDir?: string;
  manifestUrl?: string;
  manifestUrlHeaders?: Record<string, string>;
  fileCheckFrequencyMs?: number;
  httpCheckFrequencyMs?: number;
  plegRelistPeriodMs?: number;
  resyncIntervalMs?: number;
  backoff?: { initialMs: number; maxMs: number; resetAfterMs: number };
  concurrency?: number;
  /** Also serve the local API on loopback TCP, with this bearer token. */
  listen?: { host: string; port: number; token: string };
  /**
   * Cluster mode (--kubeconfig): register the node with this API server and
   * keep its Lease and status fresh while the sync loop runs.
   */
  cluster?: {
    options: import('../services/register-node.js').RegisterNodeOptions;
    api: import('../node/api.js').NodeApi & import('../node/api.js').PodApi & import('../volume/api-objects.js').ObjectApi;
    kletVersion: string;
  };
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
 * replaces an edited static pod.
 */
export function sameSandboxSpec(current: V1Pod, next: V1Pod): boolean {
  const rest = (p: V1Pod) => canonicalJson({ ...p.spec, containers: undefined });
  return rest(current) === rest(next);
}

export async function runSync(opts: SyncOptions, signal: AbortSignal): Promise<void> {
  const metrics = new KletMetrics();
  const cri = instrumentCri(opts.cri, metrics);
  const bus = new EventBus();
  const config = createPodConfig({
    nodeName: opts.nodeName,
    manifestDir: opts.manifestDir,
    manifestUrl: opts.manifestUrl,
    manifestUrlHeaders: opts.manifestUrlHeaders,
    fileCheckFrequencyMs: opts.fileCheckFrequencyMs,
    httpCheckFrequencyMs: opts.httpCheckFrequencyMs,
    rejectStaticApiReferences: opts.cluster !== undefined,
    // An API pod is its UID: only static pods keep their identity across edits.
    keepIdentity: (current, next) =>
      next.metadata?.annotations?.['kubernetes.io/config.source'] === 'api' ? current.metadata?.uid === next.metadata?.uid : sameSandboxSpec(current, next),
  });
  const apiSource = opts.cluster ? await apiPodSource(opts, opts.cluster) : undefined;
  if (apiSource) config.addSource(apiSource);
  // The PLEG sees only this klet's pods: housekeeping and adoption act on nothing else.
  const pleg = new GenericPLEG({ cri, relistPeriodMs: opts.plegRelistPeriodMs, labelSelector: instanceSelector(opts), metrics });
  const kubelet = new Kubelet({
    cri,
    rootDir: opts.rootDir,
    nodeName: opts.nodeName,
    config,
    pleg,
    bus,
    metrics,
    backoff: opts.backoff,
    resyncIntervalMs: opts.resyncIntervalMs,
    concurrency: opts.concurrency,
    objectApi: opts.cluster?.api,
  });
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

  let api: LocalApi | null = null;
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
            lastEventSeq: bus.lastSeq,
          };
        },
        events: bus,
        metrics,
    };
    api = await startLocalApi({ socketPath, listen: opts.listen, handlers });
    opts.onReady?.({ socketPath: api.address.socketPath, tcp: api.address.tcp, handlers });
    const registration = opts.cluster ? registerInBackground(opts, opts.cluster, kubelet.cache, apiSource, signal) : Promise.resolve();
    await Promise.all([kubelet.run(signal), registration]);
  } catch (err) {
    log.debug(`sync stopped: ${errorMessage(err)}`);
    throw err;
  } finally {
    clearInterval(sourceTimer);
    await api?.close();
  }
}

/** Node registration and heartbeats beside the sync loop; never rejects. */
async function registerInBackground(
  opts: SyncOptions,
  cluster: NonNullable<SyncOptions['cluster']>,
  cache: StatusContext['cache'],
  apiSource: ApiSource | undefined,
  signal: AbortSignal,
): Promise<void> {
  const { keepRegistered, logRegisterNodeEvent } = await import('../services/register-node.js');
  const { PodStatusManager } = await import('../node/status-manager.js');
  let nodeUid: string | undefined;
  const mirrors = new PodStatusManager({
    api: cluster.api,
    nodeName: opts.nodeName,
    nodeUid: () => nodeUid,
    localPods: (s) => listPodsWithStatus({ cri: opts.cri, rootDir: opts.rootDir, nodeName: opts.nodeName, cache, signal: s }),
    rejections: () => apiSource?.rejected.values() ?? [],
    onEvent: (e) => {
      switch (e.kind) {
        case 'MirrorPodError':
          log.warn(`mirror pod${e.pod ? ` ${e.pod}` : 's'}: ${e.message}`);
          break;
        case 'PodStatusError':
          log.warn(`pod ${e.pod} status: ${e.message}`);
          break;
        case 'MirrorPodCreated':
          log.info(`mirror pod ${e.pod} created${e.reason === 'stale' ? ' (the old one was stale)' : ''}`);
          break;
        case 'MirrorPodDeleted':
          log.info(`mirror pod ${e.pod} deleted`);
          break;
        case 'PodRejected':
          log.info(`pod ${e.pod} rejected: ${e.reason}: ${e.message}`);
          break;
        case 'PodDeleted':
          log.info(`pod ${e.pod} deleted from the API server (terminated)`);
          break;
        case 'MirrorPodStatusPatched':
        case 'PodStatusPatched':
          log.debug(`pod ${e.pod} status patched (${e.phase})`);
          break;
      }
    },
  });
  const mirrorsDone = mirrors.run(signal);
  await keepRegistered(cluster.options, {
    cri: opts.cri,
    rootDir: opts.rootDir,
    nodeName: opts.nodeName,
    kletVersion: cluster.kletVersion,
    signal,
    api: cluster.api,
    onEvent: (e) => {
      if (e.kind === 'NodeRegistered') nodeUid = e.uid;
      logRegisterNodeEvent(e, opts.nodeName, log);
    },
    onError: (m) => log.warn(m),
  }).catch((err: unknown) => log.error(`node registration stopped: ${errorMessage(err)}`));
  await mirrorsDone;
}

/**
 * The API server as a pod source, with the kubelet's admission against this
 * node: allocatable from the machine and the registration's reservations,
 * the labels and taints it registers with.
 */
async function apiPodSource(opts: SyncOptions, cluster: NonNullable<SyncOptions['cluster']>): Promise<ApiSource> {
  const { readMachineFacts } = await import('../node/machine.js');
  const { allocatableAmounts, defaultLabels } = await import('../node/node-status.js');
  const { admitPods } = await import('../node/admission.js');
  const m = await readMachineFacts(opts.rootDir);
  const o = cluster.options;
  const node = {
    allocatable: allocatableAmounts(m, o.maxPods, o.reserved),
    labels: { ...o.labels, ...defaultLabels(opts.nodeName, m) },
    taints: o.taints,
  };
  return new ApiSource({
    server: cluster.api.server,
    watch: (on, s) => cluster.api.watchNodePods(opts.nodeName, on, s),
    admit: (candidates, running) => admitPods(candidates, running, node, opts.nodeName),
  });
}
