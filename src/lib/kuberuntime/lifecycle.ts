/**
 * The one pod lifecycle klet has, shared by `klet sync` (syncloop/kubelet.ts)
 * and the one-shot services (run-pod, runonce, delete): admit a pod (record
 * it under the root dir), kill it (killPod, in sync-pod.ts: containers
 * gracefully, then sandboxes), remove it (containers, sandboxes, pod dir,
 * log dir) and delete it (kill, then remove).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import { errorMessage } from '../errors.js';
import { KLET_INSTANCE_LABEL, POD_UID_LABEL, instanceSelector, kletInstance } from './labels.js';
import { podKey } from '../pod/key.js';
import { podLogDirOf } from '../logs/paths.js';
import { listPodRecords, podDir, readPodRecord, removePodDir, writePodRecord, type PodRecord } from './poddir.js';
import { getRuntimePodStatus } from './runtime-status.js';
import { killPod, type SyncContext } from './sync-pod.js';

export type LifecycleContext = SyncContext;

/**
 * Record the pod under the root dir. A pod klet already knows keeps its
 * first-seen time (its startTime) and the source it came from.
 */
export async function admitPod(ctx: Pick<SyncContext, 'rootDir'>, pod: V1Pod, source: string): Promise<PodRecord> {
  const uid = pod.metadata?.uid ?? '';
  const prev = await readPodRecord(ctx.rootDir, uid);
  const rec: PodRecord = { pod, source: prev?.source ?? source, firstSeen: prev?.firstSeen ?? new Date().toISOString() };
  await writePodRecord(ctx.rootDir, rec);
  return rec;
}

function identity(pod: V1Pod): { uid: string; name: string; namespace: string } {
  const md = pod.metadata ?? {};
  return { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? 'default' };
}

/**
 * Remove what is left of a pod: its containers and sandboxes (stopped
 * first), its pod dir and its log dir. Its containers should have been
 * killed first (deletePod does both).
 */
export async function removePod(ctx: LifecycleContext, pod: V1Pod): Promise<void> {
  const id = identity(pod);
  const opts = { signal: ctx.signal };
  const status = await getRuntimePodStatus(ctx.cri, id, { ...opts, owner: instanceSelector(ctx) });
  for (const c of status.containers) await ctx.cri.removeContainer({ containerId: c.id }, opts);
  for (const sb of status.sandboxes) {
    await ctx.cri.stopPodSandbox({ podSandboxId: sb.id }, opts);
    await ctx.cri.removePodSandbox({ podSandboxId: sb.id }, opts);
  }
  // Volumes first (unmounted, their dirs removed); removePodDir would refuse a live mount.
  await ctx.volumes?.unmountPod(pod);
  await removePodDir(ctx.rootDir, id.uid);
  await removePodLogDir(ctx, { metadata: id });
}

/**
 * Remove a pod's log dir, unless a sandbox of that pod UID that is not this
 * klet's still runs: the pod log root is shared by every klet root dir and
 * the kubelet, and a static pod of the same manifest and node name has the
 * same UID (so the same log dir) in each. Another owner's logs are never deleted.
 */
export async function removePodLogDir(
  ctx: { cri: CriClient; rootDir: string; nodeName: string; logRoot?: string; signal?: AbortSignal },
  pod: V1Pod,
): Promise<void> {
  const uid = pod.metadata?.uid ?? '';
  const logDir = podLogDirOf(pod, ctx.logRoot);
  const mine = kletInstance(ctx.rootDir, ctx.nodeName);
  const { items } = await ctx.cri.listPodSandbox({ filter: { labelSelector: { [POD_UID_LABEL]: uid } } }, { signal: ctx.signal });
  if (items.some((sb) => sb.labels[KLET_INSTANCE_LABEL] !== mine)) return;
  await fsp.rm(logDir, { recursive: true, force: true }).catch((err) => {
    throw new Error(`cannot remove ${logDir}: ${errorMessage(err)}`);
  });
}

/**
 * Delete a pod: stop its containers gracefully (SIGTERM, then SIGKILL after
 * the grace period: the override, else the pod's), then remove it.
 */
export async function deletePod(ctx: LifecycleContext, pod: V1Pod, opts: { gracePeriodSeconds?: number } = {}): Promise<void> {
  const status = await getRuntimePodStatus(ctx.cri, identity(pod), { signal: ctx.signal, owner: instanceSelector(ctx) });
  const grace = opts.gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
  await markTerminating(ctx, pod, grace);
  await killPod(ctx, pod, status, { gracePeriodSeconds: grace });
  await removePod(ctx, pod);
}

/**
 * Record that the pod is being terminated, so that `status` (from any
 * process) shows it with a deletionTimestamp — Terminating, with the IP it
 * had — rather than as a pod whose containers are being created.
 */
export async function markTerminating(ctx: Pick<SyncContext, 'rootDir'>, pod: V1Pod, gracePeriodSeconds: number): Promise<void> {
  const rec = await readPodRecord(ctx.rootDir, pod.metadata?.uid ?? '');
  if (rec === null || rec.deletion !== undefined) return;
  // Never re-create the dir of a pod removed meanwhile.
  if (!fs.existsSync(podDir(ctx.rootDir, pod.metadata?.uid ?? ''))) return;
  await writePodRecord(ctx.rootDir, { ...rec, deletion: { at: new Date().toISOString(), gracePeriodSeconds } });
}

/**
 * A static pod's full name is unique on a node: when its manifest changes,
 * the pod with the new UID replaces the old one (the kubelet kills the old
 * pod before it starts the new). Deletes every pod klet recorded under this
 * root dir with the same namespace/name and another UID; returns them.
 */
export async function replaceOtherInstances(ctx: LifecycleContext, pod: V1Pod): Promise<V1Pod[]> {
  const id = identity(pod);
  const others = (await listPodRecords(ctx.rootDir))
    .map((r) => r.pod)
    .filter((p) => podKey(p) === podKey(pod) && (p.metadata?.uid ?? '') !== id.uid);
  for (const old of others) await deletePod(ctx, old);
  return others;
}
