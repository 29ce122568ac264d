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
import { ContainerState, PodSandboxState, type Container, type PodSandbox } from '../cri/gen/api.js';
import { CriError, CriNotFoundError } from '../cri/errors.js';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { podEvents } from '../events/pod-events.js';
import { admittedKey } from './admission.js';
import { KLET_INSTANCE_LABEL, POD_UID_LABEL, instanceSelector, kletInstance } from './labels.js';
import { podKey } from '../pod/key.js';
import { podLogDirOf } from '../logs/paths.js';
import { listPodRecords, podDir, readPodRecord, removePodDir, writePodRecord, type PodRecord } from './poddir.js';
import { killContainer, type SyncContext } from './sync-pod.js';
import { terminationOrdering } from './termination-order.js';
import { pause } from '../util/sleep.js';

export type LifecycleContext = SyncContext;

/**
 * Record the pod under the root dir. A pod klet already knows keeps its
 * first-seen time (its startTime) and the source it came from. `prev` is the
 * pod's record when the caller has just read it (null: it has none); without
 * it, the record is read here. `admitted` is its place in admission order
 * (admissionKey; a pod already recorded keeps its own).
 */
export async function admitPod(
  ctx: Pick<SyncContext, 'rootDir'>,
  pod: V1Pod,
  source: string,
  prev?: PodRecord | null,
  admitted?: string,
): Promise<PodRecord> {
  const uid = pod.metadata?.uid ?? '';
  if (prev === undefined) prev = await readPodRecord(ctx.rootDir, uid);
  const firstSeen = prev?.firstSeen ?? new Date().toISOString();
  const key = prev ? prev.admitted : (admitted ?? admittedKey({ firstSeen }));
  const rec: PodRecord = { pod, source: prev?.source ?? source, firstSeen, ...(key !== undefined ? { admitted: key } : {}) };
  await writePodRecord(ctx.rootDir, rec);
  return rec;
}

function identity(pod: V1Pod): { uid: string; name: string; namespace: string } {
  const md = pod.metadata ?? {};
  return { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? 'default' };
}

/**
 * What the runtime holds of some pods, from one list of each kind (no
 * per-object status call): every sandbox of those UIDs whoever's (the log
 * dir's owner check needs the others'), and this klet's containers.
 */
export interface PodRuntimeObjects {
  sandboxes: PodSandbox[];
  containers: Container[];
}

/** The runtime objects of one pod UID, or (no `uid`) of every pod on the node, by UID. */
export async function listPodRuntimeObjects(
  ctx: Pick<SyncContext, 'cri' | 'rootDir' | 'nodeName' | 'signal'>,
  uid?: string,
): Promise<Map<string, PodRuntimeObjects>> {
  const byUid = uid === undefined ? {} : { [POD_UID_LABEL]: uid };
  const call = { signal: ctx.signal };
  const [sbs, ctrs] = await Promise.all([
    ctx.cri.listPodSandbox({ filter: { labelSelector: byUid } }, call),
    ctx.cri.listContainers({ filter: { labelSelector: { ...instanceSelector(ctx), ...byUid } } }, call),
  ]);
  const out = new Map<string, PodRuntimeObjects>();
  const entry = (u: string) => {
    let e = out.get(u);
    if (e === undefined) out.set(u, (e = { sandboxes: [], containers: [] }));
    return e;
  };
  for (const sb of sbs.items) {
    const u = sb.labels[POD_UID_LABEL];
    if (u !== undefined) entry(u).sandboxes.push(sb);
  }
  for (const c of ctrs.containers) {
    const u = c.labels[POD_UID_LABEL];
    if (u !== undefined) entry(u).containers.push(c);
  }
  return out;
}

const NO_OBJECTS: PodRuntimeObjects = { sandboxes: [], containers: [] };

/**
 * Remove what is left of a pod: its sandboxes (stopped first; RemovePodSandbox
 * removes their containers, as CRI requires), containers without a sandbox,
 * its pod dir and its log dir. Its containers should have been killed first
 * (deletePod does both). `objects`: the runtime's objects of the pod when
 * the caller has listed them already.
 */
export async function removePod(ctx: LifecycleContext, pod: V1Pod, objects?: PodRuntimeObjects): Promise<void> {
  const id = identity(pod);
  const objs = objects ?? (await listPodRuntimeObjects(ctx, id.uid)).get(id.uid) ?? NO_OBJECTS;
  await removeRuntimeObjects(ctx, objs, { stop: true });
  await removePodFiles(ctx, pod, objs);
}

/** This klet's sandboxes among `objs`. */
function ownSandboxes(ctx: Pick<SyncContext, 'rootDir' | 'nodeName'>, objs: PodRuntimeObjects): PodSandbox[] {
  const mine = kletInstance(ctx.rootDir, ctx.nodeName);
  return objs.sandboxes.filter((sb) => sb.labels[KLET_INSTANCE_LABEL] === mine);
}

async function removeRuntimeObjects(ctx: LifecycleContext, objs: PodRuntimeObjects, opts: { stop: boolean }): Promise<void> {
  const call = { signal: ctx.signal };
  const sandboxes = ownSandboxes(ctx, objs);
  const ids = new Set(sandboxes.map((sb) => sb.id));
  for (const c of objs.containers) if (!ids.has(c.podSandboxId)) await removeRacing(ctx, () => ctx.cri.removeContainer({ containerId: c.id }, call));
  for (const sb of sandboxes) {
    if (opts.stop) await ctx.cri.stopPodSandbox({ podSandboxId: sb.id }, call);
    await removeRacing(ctx, () => ctx.cri.removePodSandbox({ podSandboxId: sb.id }, call));
  }
}

/** How long a removal waits out another remover (or a start) of the same object. */
const RACING_REMOVAL_MS = 10_000;

/**
 * A removal that another process may be making at the same moment — `klet
 * delete` while a running `klet sync` removes the old sandbox of the pod it
 * re-creates, or its pod container deletor the dead containers: containerd
 * refuses the second remover ("container is already in removing state"),
 * and a container the sync is starting ("in starting state, can't be
 * removed"). Tried again until the other is done (at most
 * RACING_REMOVAL_MS); an object gone meanwhile is removed.
 */
async function removeRacing(ctx: Pick<LifecycleContext, 'signal'>, remove: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + RACING_REMOVAL_MS;
  for (;;) {
    try {
      await remove();
      return;
    } catch (err) {
      if (err instanceof CriNotFoundError) return;
      const racing = err instanceof CriError && /already in removing state|in starting state/.test(err.details);
      if (!racing || Date.now() >= deadline || ctx.signal?.aborted === true) throw err;
      log.debug(`${errorMessage(err)}: trying again`);
      if (ctx.signal) await pause(250, ctx.signal);
      else await new Promise((r) => setTimeout(r, 250));
    }
  }
}

async function removePodFiles(ctx: LifecycleContext, pod: V1Pod, objs: PodRuntimeObjects): Promise<void> {
  const id = identity(pod);
  // Volumes first (unmounted, their dirs removed); removePodDir would refuse a live mount.
  await ctx.volumes?.unmountPod(pod);
  // The pod dir last: its record is how a later run finds what is left of the
  // pod. A removal cut short (Ctrl-C, SIGKILL) or a log dir that cannot be
  // removed yet leaves the record for the next try, not a log dir nothing knows of.
  const mine = kletInstance(ctx.rootDir, ctx.nodeName);
  if (!objs.sandboxes.some((sb) => sb.labels[KLET_INSTANCE_LABEL] !== mine)) await removeLogDir(podLogDirOf({ metadata: id }, ctx.logRoot));
  // The pod cgroup once its sandbox is gone (the kubelet's cleanupOrphanedPodCgroups), before the record that names the pod.
  // Without a container manager (klet delete), the cgroups recorded for the pod.
  if (ctx.cgroups) await ctx.cgroups.removePod(id.uid);
  else await (await import('../cm/manager.js')).removeRecordedPodCgroups(ctx.rootDir, id.uid);
  await removePodDir(ctx.rootDir, id.uid);
}

async function removeLogDir(logDir: string): Promise<void> {
  await fsp.rm(logDir, { recursive: true, force: true }).catch((err) => {
    throw new Error(`cannot remove ${logDir}: ${errorMessage(err)}`);
  });
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
  const mine = kletInstance(ctx.rootDir, ctx.nodeName);
  const { items } = await ctx.cri.listPodSandbox({ filter: { labelSelector: { [POD_UID_LABEL]: uid } } }, { signal: ctx.signal });
  if (items.some((sb) => sb.labels[KLET_INSTANCE_LABEL] !== mine)) return;
  await removeLogDir(podLogDirOf(pod, ctx.logRoot));
}

/**
 * Delete a pod: stop its containers gracefully (preStop, SIGTERM, then
 * SIGKILL after the grace period: the override, else the pod's), stop and
 * remove its sandboxes, then its files. With the runtime's objects listed
 * once (`objects`, from listPodRuntimeObjects), a pod costs one
 * StopContainer per running container (none with a zero grace period:
 * StopPodSandbox kills them), one StopPodSandbox and one RemovePodSandbox
 * per sandbox.
 */
export async function deletePod(
  ctx: LifecycleContext,
  pod: V1Pod,
  opts: { gracePeriodSeconds?: number; objects?: PodRuntimeObjects } = {},
): Promise<void> {
  const uid = pod.metadata?.uid ?? '';
  const objs = opts.objects ?? (await listPodRuntimeObjects(ctx, uid)).get(uid) ?? NO_OBJECTS;
  const grace = opts.gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
  // Killing a pod never needs a disk write: on a full (or read-only) root
  // dir the pod is stopped and removed all the same, only not shown as
  // Terminating meanwhile.
  await markTerminating(ctx, pod, grace).catch((err: unknown) => log.warn(`${podKey(pod)}: not marked as terminating: ${errorMessage(err)}`));
  const live = objs.containers.filter(
    (c) => c.state === ContainerState.CONTAINER_RUNNING || c.state === ContainerState.CONTAINER_UNKNOWN,
  );
  const ordering = terminationOrdering(pod, live.map((c) => c.metadata?.name ?? ''));
  await Promise.all(
    live.map(async (c) => {
      const name = c.metadata?.name ?? '';
      const hasPreStop = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].some((x) => x.name === name && x.lifecycle?.preStop);
      if (grace > 0 || hasPreStop) await killContainer(ctx, pod, { id: c.id, name }, grace, `Stopping container ${name}`, true, ordering);
      else ctx.onEvent?.(podEvents.killing(pod, name, c.id, `Stopping container ${name}`));
    }),
  );
  // Every sandbox is stopped (one left not ready by a runtime crash still holds its network), then removed.
  for (const sb of ownSandboxes(ctx, objs)) {
    await ctx.cri.stopPodSandbox({ podSandboxId: sb.id }, { signal: ctx.signal });
    if (sb.state === PodSandboxState.SANDBOX_READY) ctx.onEvent?.(podEvents.sandboxStopped(pod, sb.id));
  }
  await removeRuntimeObjects(ctx, objs, { stop: false });
  await removePodFiles(ctx, pod, objs);
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
 * `records`: the root dir's pod records, when the caller has read them
 * (runonce reads them once for all its pods rather than once per pod).
 */
export async function replaceOtherInstances(ctx: LifecycleContext, pod: V1Pod, records?: PodRecord[]): Promise<V1Pod[]> {
  const id = identity(pod);
  const others = (records ?? (await listPodRecords(ctx.rootDir, ctx.nodeName)))
    .map((r) => r.pod)
    .filter((p) => podKey(p) === podKey(pod) && (p.metadata?.uid ?? '') !== id.uid);
  for (const old of others) await deletePod(ctx, old);
  return others;
}
