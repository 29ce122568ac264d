/**
 * `klet status`: the node and its pods with the status the kubelet would
 * report, once (podStatus, nodeSummary) or as a stream of changes (watchPods).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { otherNodeRecords } from '../kuberuntime/poddir.js';
import { resolveOwnPod } from './lookup.js';
import { listPodsWithStatus, runtimeName } from '../status/pods.js';
import { localApiRequest, localApiSocketPath } from '../server/client.js';
import { isNodeStatus, type ClusterStatus } from '../server/node-status.js';
import { jsonReplacer } from '../util/json.js';
import { readProbeResults, staleReadiness } from '../prober/results.js';
import { humanDuration } from '../status/format.js';
import { sleep, syncContext, type ServiceDeps } from './deps.js';

export interface PodStatusOptions {
  /** One pod as the user named it (ns/name, name, UID prefix); every pod when unset. */
  pod?: string;
}

/** The pods (or the one named) with status. */
export async function podStatus(opts: PodStatusOptions, deps: ServiceDeps): Promise<V1Pod[]> {
  const pods = await listPodsWithStatus(syncContext(deps));
  if (opts.pod === undefined) return pods;
  const refs = pods.map((p) => ({ namespace: p.metadata?.namespace ?? 'default', name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '', pod: p }));
  return [(await resolveOwnPod(deps, opts.pod, refs)).pod];
}

export interface NodeSummary {
  nodeName: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
  /** The runtime's conditions, `Type=Status`. */
  conditions: string[];
  /** Pods by phase, in the order first seen. */
  phases: [string, number][];
  /** When a `klet sync --kubeconfig` runs on this root dir: the cluster it joined (its /node). */
  cluster?: ClusterStatus;
}

/**
 * Pods under the root dir that klet ran for other node names, by node name
 * (not listed: their runtime objects carry another instance's owner label).
 */
export async function otherNodePods(deps: Pick<ServiceDeps, 'rootDir' | 'nodeName'>): Promise<[string, number][]> {
  return [...(await otherNodeRecords(deps.rootDir, deps.nodeName)).entries()];
}

/**
 * The cluster a running `klet sync --kubeconfig` on this root dir has
 * joined, from its local API; undefined when no sync runs there or it is
 * not in cluster mode.
 */
export async function runningClusterStatus(deps: ServiceDeps): Promise<ClusterStatus | undefined> {
  try {
    const res = await localApiRequest(localApiSocketPath(deps.rootDir), '/node', { signal: deps.signal, timeoutMs: 3000 });
    if (res.status !== 200) return undefined;
    const body = JSON.parse(res.body) as unknown;
    return isNodeStatus(body) ? body.cluster : undefined;
  } catch (err) {
    if (deps.signal.aborted) throw err;
    return undefined;
  }
}

/** Does a `klet sync` answer on this root dir's local API (and so probe its pods)? */
async function syncRuns(deps: ServiceDeps): Promise<boolean> {
  try {
    return (await localApiRequest(localApiSocketPath(deps.rootDir), '/node', { signal: deps.signal, timeoutMs: 3000 })).status === 200;
  } catch (err) {
    if (deps.signal.aborted) throw err;
    return false;
  }
}

/**
 * When no `klet sync` runs on the root dir, nothing probes the pods (after
 * a runonce, say): one line per pod whose running containers have a
 * readiness probe, saying that its READY is the last result (with its age)
 * or not known at all. Empty while a sync runs.
 */
export async function readinessNotes(pods: V1Pod[], deps: ServiceDeps, now = Date.now()): Promise<string[]> {
  const probed = pods.filter((p) => [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].some((c) => c.readinessProbe !== undefined));
  if (probed.length === 0 || (await syncRuns(deps))) return [];
  const notes: string[] = [];
  for (const pod of probed) {
    const stale = staleReadiness(pod, await readProbeResults(deps.rootDir, pod.metadata?.uid ?? ''));
    if (stale.length === 0) continue;
    const what = stale.map((s) =>
      s.result === undefined || s.since === undefined
        ? `${s.container}: not probed yet`
        : `${s.container}: ${s.result} ${humanDuration(now - Date.parse(s.since))} ago`,
    );
    notes.push(`${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''} readiness ${what.join(', ')}`);
  }
  return notes;
}

export async function nodeSummary(pods: V1Pod[], deps: ServiceDeps): Promise<NodeSummary> {
  const opts = { signal: deps.signal };
  const v = await deps.cri.version({}, opts);
  const st = await deps.cri.status({}, opts);
  const phases = new Map<string, number>();
  for (const p of pods) phases.set(p.status?.phase ?? 'Unknown', (phases.get(p.status?.phase ?? 'Unknown') ?? 0) + 1);
  return {
    nodeName: deps.nodeName,
    runtimeName: await runtimeName(syncContext(deps)),
    runtimeVersion: v.runtimeVersion,
    runtimeApiVersion: v.runtimeApiVersion,
    conditions: (st.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`),
    phases: [...phases.entries()],
    cluster: await runningClusterStatus(deps),
  };
}

export interface PodWatchEvent {
  /** ADDED for the first set, MODIFIED for a pod whose status changed since. */
  type: 'ADDED' | 'MODIFIED';
  pods: V1Pod[];
}

/**
 * The pods (or the one named), then every pod whose status changed, polling
 * every `intervalMs`, until the signal aborts (then it ends, without error).
 */
export async function* watchPods(opts: PodStatusOptions & { intervalMs: number }, deps: ServiceDeps): AsyncGenerator<PodWatchEvent> {
  const seen = new Map<string, string>();
  const changed = (list: V1Pod[]) => {
    const out = list.filter((p) => seen.get(p.metadata?.uid ?? '') !== JSON.stringify(p.status, jsonReplacer));
    for (const p of list) seen.set(p.metadata?.uid ?? '', JSON.stringify(p.status, jsonReplacer));
    return out;
  };
  const first = changed(await podStatus(opts, deps));
  if (first.length > 0) yield { type: 'ADDED', pods: first };
  while (!deps.signal.aborted) {
    try {
      await sleep(opts.intervalMs, deps.signal);
    } catch {
      return;
    }
    let pods: V1Pod[];
    try {
      pods = await podStatus(opts, deps);
    } catch (err) {
      if (deps.signal.aborted) return; // interrupted mid-poll: the watch ends
      throw err;
    }
    const next = changed(pods);
    if (next.length > 0) yield { type: 'MODIFIED', pods: next };
  }
}
