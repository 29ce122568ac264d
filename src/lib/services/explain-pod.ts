/**
 * `klet explain POD`: gathers what klet knows of one pod (its record, sync
 * state and probe results under the root dir, the runtime's containers, the
 * status klet reports, its events, the last lines of its logs and, while a
 * `klet sync` runs on the root dir, that sync's last plan for it from the
 * local API's /plans), then explains it (status/explain.ts).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { NotFoundError } from '../errors.js';
import { PodNotFoundError, resolvePodRef } from '../pod/ref.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { readPodRecord, readSyncState } from '../kuberuntime/poddir.js';
import { getRuntimePodStatus } from '../kuberuntime/runtime-status.js';
import { containerLogDir, latestLogFile, podLogDir } from '../logs/paths.js';
import { readContainerLog } from '../logs/reader.js';
import { readProbeResults } from '../prober/results.js';
import { LocalApiUnavailableError, localApiRequest, localApiSocketPath } from '../server/client.js';
import { explainPod, type ExplainFacts, type Explanation } from '../status/explain.js';
import { podWithStatus } from '../status/pods.js';
import { listEvents } from './events.js';
import { syncContext, type ServiceDeps } from './deps.js';
import { findPods, type KnownPod } from './lookup.js';

export interface ExplainOptions {
  /** The pod as the user named it: ns/name, name (namespace default), or a UID prefix. */
  pod: string;
  /** Log lines to show per container. Default 5. */
  logLines?: number;
}

/** The last `n` lines of one log file. */
async function tailOf(file: string | null, n: number, signal: AbortSignal): Promise<string[]> {
  if (file === null) return [];
  let text = '';
  for await (const chunk of readContainerLog(file, { tail: n, signal })) text += chunk;
  return text.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
}

/**
 * The last `n` lines of the container's newest log; of the previous one
 * when the newest is still empty (a crash-looping container just started
 * again: what the last run wrote is what explains it).
 */
async function logTail(dir: string, container: string, n: number, signal: AbortSignal): Promise<string[]> {
  if (n <= 0) return [];
  const cdir = containerLogDir(dir, container);
  const newest = await tailOf(await latestLogFile(cdir), n, signal);
  return newest.length > 0 ? newest : tailOf(await latestLogFile(cdir, { previous: true }), n, signal);
}

type LastSync = NonNullable<ExplainFacts['lastSync']>;

/** The running sync's last syncs (/plans); [] when no sync runs (or it is older than /plans). */
async function lastSyncs(deps: ServiceDeps): Promise<LastSync[]> {
  let res;
  try {
    res = await localApiRequest(localApiSocketPath(deps.rootDir), '/plans', { signal: deps.signal });
  } catch (err) {
    if (err instanceof LocalApiUnavailableError) return [];
    throw err;
  }
  if (res.status !== 200) return [];
  return (JSON.parse(res.body) as { items?: LastSync[] }).items ?? [];
}

/**
 * An API pod the running sync's admission rejected (OutOfcpu, NodeAffinity,
 * …): it has no record and nothing in the runtime, only the sync knows it.
 * Explained from its /plans entry.
 */
async function explainRejectedApiPod(ref: string, notFound: PodNotFoundError, deps: ServiceDeps): Promise<Explanation> {
  const rejected = (await lastSyncs(deps))
    .filter((p) => p.blocked !== undefined && p.plan.containersToStart.length === 0)
    .map((p) => ({ ...p, namespace: p.pod.split('/')[0] ?? '', name: p.pod.split('/').slice(1).join('/') }));
  let item: (typeof rejected)[number];
  try {
    item = resolvePodRef(ref, rejected);
  } catch {
    throw notFound;
  }
  const blocked = item.blocked!;
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: item.namespace, name: item.name, uid: item.uid },
    spec: { containers: [] },
    status: { phase: 'Failed', reason: blocked.reason, message: blocked.message },
  };
  return explainPod({
    now: Date.now(),
    pod,
    record: { pod, source: 'api', firstSeen: item.time },
    syncState: { containers: {}, rejected: true, reason: blocked.reason, message: blocked.message },
    runtime: { uid: item.uid, name: item.name, namespace: item.namespace, sandboxes: [], containers: [] },
    probes: {},
    source: 'sync',
    lastSync: item,
    events: [],
    logs: {},
  });
}

/** Why the pod is in its state, and what klet does next. */
export async function explain(opts: ExplainOptions, deps: ServiceDeps): Promise<Explanation> {
  let known;
  try {
    [known] = (await findPods(deps, [opts.pod])) as [KnownPod];
  } catch (err) {
    if (!(err instanceof PodNotFoundError)) throw err;
    return explainRejectedApiPod(opts.pod, err, deps);
  }
  const record = await readPodRecord(deps.rootDir, known.uid);
  if (record === null) {
    throw new NotFoundError(`pod ${known.namespace}/${known.name}: klet has no record of it under ${deps.rootDir}, only runtime objects: nothing to explain`);
  }
  const runtime = await getRuntimePodStatus(deps.cri, known, { signal: deps.signal, owner: instanceSelector(deps) });
  const ctx = syncContext(deps);
  const [pod, syncState, probes, events, syncs] = await Promise.all([
    podWithStatus(ctx, record, runtime),
    readSyncState(deps.rootDir, known.uid),
    readProbeResults(deps.rootDir, known.uid),
    listEvents({ pod: known.uid }, deps),
    lastSyncs(deps),
  ]);
  const lastSync = syncs.find((p) => p.uid === known.uid);
  const dir = podLogDir(known.namespace, known.name, known.uid, deps.logRoot);
  const names = [...(record.pod.spec?.initContainers ?? []), ...(record.pod.spec?.containers ?? [])].map((c) => c.name);
  const logs: Record<string, string[]> = {};
  for (const name of names) logs[name] = await logTail(dir, name, opts.logLines ?? 5, deps.signal);
  return explainPod({
    now: Date.now(),
    pod,
    record,
    syncState,
    runtime,
    probes,
    source: events.source,
    ...(events.source === 'sync' && lastSync !== undefined ? { lastSync } : {}),
    events: events.events,
    logs,
  });
}
