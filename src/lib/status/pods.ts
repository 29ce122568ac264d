/**
 * Pods with their API status, as the kubelet would report them: from klet's
 * records under the root dir, the runtime's state and the sync state. Used
 * by `klet status`, the local API's /pods and the one-shot waits.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodRecord } from '../kuberuntime/poddir.js';
import { listPodRecords, readPodRecord, readSyncState } from '../kuberuntime/poddir.js';
import { getRuntimePodStatus, getRuntimePodStatuses, listRuntimePods, type RuntimePodStatus } from '../kuberuntime/runtime-status.js';
import { nodeHostIPs, type SyncContext } from '../kuberuntime/sync-pod.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { podKey } from '../pod/key.js';
import { isStaticPod } from '../pod/static-pod.js';
import { readProbeResults } from '../prober/results.js';
import { generatePodStatus } from './pod-status.js';

export type StatusContext = Pick<SyncContext, 'cri' | 'rootDir' | 'nodeName' | 'signal' | 'cache'>;

/** The runtime's name (containerd), asked once per cache. */
export async function runtimeName(ctx: Pick<StatusContext, 'cri' | 'signal' | 'cache'>): Promise<string> {
  if (ctx.cache?.runtimeName !== undefined) return ctx.cache.runtimeName;
  const name = (await ctx.cri.version({}, { signal: ctx.signal })).runtimeName || 'cri';
  if (ctx.cache) ctx.cache.runtimeName = name;
  return name;
}

/** The pod with its status as the kubelet would report it. */
export async function podWithStatus(ctx: StatusContext, rec: PodRecord, runtime?: RuntimePodStatus): Promise<V1Pod> {
  const md = rec.pod.metadata ?? {};
  const rt =
    runtime ??
    (await getRuntimePodStatus(
      ctx.cri,
      { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? 'default' },
      { signal: ctx.signal, owner: instanceSelector(ctx) },
    ));
  const status = generatePodStatus({
    pod: rec.pod,
    runtime: rt,
    syncState: await readSyncState(ctx.rootDir, md.uid ?? ''),
    runtimeName: await runtimeName(ctx),
    hostIPs: nodeHostIPs(ctx),
    startTime: new Date(rec.firstSeen),
    probes: await readProbeResults(ctx.rootDir, md.uid ?? ''),
    terminating: rec.deletion !== undefined,
  });
  // Static pods have no API server to stamp creation: klet's first sync is
  // their birth, as their mirror pod's creationTimestamp is the API
  // server's. A creationTimestamp written in the manifest (one dumped with
  // kubectl get -o yaml) is the old pod's and does not make AGE years.
  const created = isStaticPod(rec.pod) ? undefined : rec.pod.metadata?.creationTimestamp;
  const metadata = { ...rec.pod.metadata, creationTimestamp: created ?? new Date(rec.firstSeen) };
  // Being terminated: the deletionTimestamp an API server would have set (STATUS shows Terminating).
  if (rec.deletion !== undefined) {
    metadata.deletionTimestamp = new Date(rec.deletion.at);
    metadata.deletionGracePeriodSeconds = rec.deletion.gracePeriodSeconds;
  }
  return { ...rec.pod, apiVersion: 'v1', kind: 'Pod', metadata, status };
}

/**
 * Every pod klet knows (records under the root dir), with status. Pods only
 * the runtime knows are included bare. With `only`, just the recorded pods
 * of those UIDs (only their records are read; no bare pods).
 */
export async function listPodsWithStatus(ctx: StatusContext, only?: ReadonlySet<string>): Promise<V1Pod[]> {
  const recs =
    only === undefined
      ? await listPodRecords(ctx.rootDir, ctx.nodeName)
      : (await Promise.all([...only].map((uid) => readPodRecord(ctx.rootDir, uid)))).filter((r): r is PodRecord => r !== null);
  if (only !== undefined && recs.length === 0) return [];
  const runtime = await getRuntimePodStatuses(
    ctx.cri,
    recs.map((r) => ({ uid: r.pod.metadata?.uid ?? '', name: r.pod.metadata?.name ?? '', namespace: r.pod.metadata?.namespace ?? 'default' })),
    { signal: ctx.signal, owner: instanceSelector(ctx) },
  );
  const pods = await Promise.all(recs.map((r) => podWithStatus(ctx, r, runtime.get(r.pod.metadata?.uid ?? ''))));
  const known = new Set(recs.map((r) => r.pod.metadata?.uid));
  if (only !== undefined) return pods.sort((a, b) => podKey(a).localeCompare(podKey(b)));
  for (const rp of await listRuntimePods(ctx.cri, { signal: ctx.signal, owner: instanceSelector(ctx) })) {
    if (known.has(rp.uid)) continue;
    // A pod this klet created but has no record of (the record was lost):
    // show it without a spec. Other klets' and the kubelet's pods are not listed.
    pods.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid },
      status: { phase: 'Unknown', reason: 'NoRecord', message: 'the runtime runs this pod but klet has no record of it' },
    });
  }
  return pods.sort((a, b) => podKey(a).localeCompare(podKey(b)));
}
