/**
 * `klet mount-volumes`: set up (or tear down) one pod's volumes with the
 * volume manager, without starting the pod — for provisioning scripts
 * (pre-seed a hostPath, check a secret projection) and for debugging mounts.
 * The pod comes from a manifest file or from klet's record of a pod (its
 * ConfigMaps and Secrets from that manifest and from an objects dir).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { V1ConfigMap, V1Pod, V1Secret } from '@kubernetes/client-node';
import { InputError } from '../errors.js';
import type { ServiceDeps } from './deps.js';
import { listPodRecords } from '../kuberuntime/poddir.js';
import { loadManifests, manifestErrorsToError } from '../pod/index.js';
import { resolvePodRef } from '../pod/ref.js';
import { validatePod } from '../pod/validate.js';
import { VolumeManager, VolumeMountError, diskUsage, type VolumeState } from '../volume/manager.js';
import { ApiObjectManager, type ObjectApi, podObjectRefs } from '../volume/api-objects.js';
import { type ObjectSource, localObjectSource } from '../volume/plugins.js';
import { API_SOURCE } from '../config/api.js';
import { CONFIG_SOURCE_ANNOTATION } from '../pod/static-pod.js';

/** The pod's volumes read API objects and no API server was given (the command names its flag). */
export class NeedsApiServerError extends InputError {}

/** ConfigMaps, Secrets or service account tokens in the pod's volumes. */
function podReferencesApiObjects(pod: V1Pod): boolean {
  const refs = podObjectRefs(pod);
  return refs.configMaps.size + refs.secrets.size > 0 || (pod.spec?.volumes ?? []).some((v) => (v.projected?.sources ?? []).some((s) => s.serviceAccountToken));
}

export interface MountVolumesOptions {
  /** A manifest file, or a pod klet has a record of (ns/name, name, UID prefix). */
  target: string;
  /** A directory (or file) of ConfigMaps and Secrets. */
  objectsDir?: string;
  mode: 'mount' | 'unmount' | 'dry-run';
}

/** No runtime needed: the volumes are the node's; only --unmount asks whether the pod runs. */
export interface MountVolumesDeps extends Pick<ServiceDeps, 'rootDir' | 'nodeName' | 'signal' | 'onEvent'> {
  /** The API server a pod from it reads its ConfigMaps, Secrets and tokens from (as klet sync does). */
  objectApi?: () => Promise<ObjectApi>;
  /** How many containers of the pod are running (refuses --unmount under a running pod); unset: not checked. */
  runningContainers?: (uid: string) => Promise<number>;
}

export interface VolumeRow {
  name: string;
  /** The kubelet's plugin dir name, e.g. kubernetes.io~secret. */
  plugin: string;
  hostPath: string;
  medium: 'Memory' | '';
  /** tmpfs size, or a disk emptyDir's sizeLimit. */
  sizeBytes?: number;
  usedBytes?: number;
  /** Mounted (a tmpfs), Ready (a directory), Unmounted, Failed, or for a dry run what would be done. */
  state: string;
  message?: string;
}

export interface MountVolumesResult {
  /** `namespace/name`. */
  pod: string;
  uid: string;
  mode: MountVolumesOptions['mode'];
  volumes: VolumeRow[];
  exitCode: number;
}

async function isFile(p: string): Promise<boolean> {
  return fsp.stat(p).then(
    (st) => st.isFile(),
    () => false,
  );
}

async function loadObjects(where: string | undefined, nodeName: string): Promise<{ configMaps: V1ConfigMap[]; secrets: V1Secret[] }> {
  if (where === undefined) return { configMaps: [], secrets: [] };
  const set = await loadManifests({ dir: where, nodeName });
  if (set.errors.length > 0) throw manifestErrorsToError(set.errors);
  return { configMaps: set.configMaps, secrets: set.secrets };
}

/** The pod and its objects: from a manifest file, or from klet's record (and its manifest, when still there). */
async function resolveTarget(opts: MountVolumesOptions, deps: MountVolumesDeps): Promise<{ pod: V1Pod; configMaps: V1ConfigMap[]; secrets: V1Secret[] }> {
  const extra = await loadObjects(opts.objectsDir, deps.nodeName);
  if (await isFile(opts.target)) {
    const set = await loadManifests({ files: [opts.target], nodeName: deps.nodeName });
    if (set.errors.length > 0) throw manifestErrorsToError(set.errors);
    if (set.pods.length !== 1) throw new InputError(`${opts.target}: expected exactly one Pod, found ${set.pods.length}`);
    return { pod: set.pods[0]!.pod, configMaps: [...set.configMaps, ...extra.configMaps], secrets: [...set.secrets, ...extra.secrets] };
  }
  const recs = await listPodRecords(deps.rootDir, deps.nodeName);
  const known = recs.map((r) => ({ namespace: r.pod.metadata?.namespace ?? 'default', name: r.pod.metadata?.name ?? '', uid: r.pod.metadata?.uid ?? '', rec: r }));
  const hit = resolvePodRef(opts.target, known);
  const fromSource = (await isFile(hit.rec.source)) ? await loadObjects(hit.rec.source, deps.nodeName).catch(() => ({ configMaps: [], secrets: [] })) : { configMaps: [], secrets: [] };
  return { pod: hit.rec.pod, configMaps: [...fromSource.configMaps, ...extra.configMaps], secrets: [...fromSource.secrets, ...extra.secrets] };
}

async function describe(st: VolumeState, pod: V1Pod): Promise<VolumeRow> {
  const row: VolumeRow = { name: st.name, plugin: st.plugin, hostPath: st.hostPath, medium: st.medium, state: st.medium === 'Memory' ? 'Mounted' : 'Ready' };
  if (st.kind === 'hostPath') return row;
  if (st.medium === 'Memory') {
    const fs = await fsp.statfs(st.hostPath).catch(() => null);
    if (fs !== null) {
      row.sizeBytes = fs.blocks * fs.bsize;
      row.usedBytes = (fs.blocks - fs.bfree) * fs.bsize;
    }
    return row;
  }
  const limit = pod.spec?.volumes?.find((v) => v.name === st.name)?.emptyDir?.sizeLimit;
  if (limit !== undefined) {
    const { parseQuantity } = await import('../pod/quantity.js');
    row.sizeBytes = parseQuantity(String(limit)).toNumber();
  }
  row.usedBytes = await diskUsage(st.hostPath);
  return row;
}

export async function mountVolumes(opts: MountVolumesOptions, deps: MountVolumesDeps): Promise<MountVolumesResult> {
  // Watches of API objects end with the command.
  const done = new AbortController();
  try {
    return await mountVolumesOnce(opts, { ...deps, signal: AbortSignal.any([deps.signal, done.signal]) });
  } finally {
    done.abort();
  }
}

async function mountVolumesOnce(opts: MountVolumesOptions, deps: MountVolumesDeps): Promise<MountVolumesResult> {
  const { pod, configMaps, secrets } = await resolveTarget(opts, deps);
  const md = pod.metadata ?? {};
  const key = `${md.namespace ?? 'default'}/${md.name ?? ''}`;
  const uid = md.uid ?? '';
  // A pod from a record was valid when admitted; validate again (records may be older than the rules).
  const invalid = validatePod(pod);
  if (invalid.length > 0) throw new InputError(`${opts.target}: ${invalid[0]!.toString()}`);
  let objects: ObjectSource = localObjectSource({ configMaps, secrets });
  const fromApi = md.annotations?.[CONFIG_SOURCE_ANNOTATION] === API_SOURCE;
  if (fromApi && opts.mode !== 'unmount' && podReferencesApiObjects(pod)) {
    if (deps.objectApi === undefined) throw new NeedsApiServerError(`${opts.target}: pod ${key} came from the API server: its ConfigMaps, Secrets and tokens need the API server's kubeconfig`);
    const api = new ApiObjectManager({ api: await deps.objectApi(), signal: deps.signal });
    api.registerPod(pod);
    objects = api.source(pod, deps.signal);
  }
  const manager = new VolumeManager({
    rootDir: deps.rootDir,
    nodeName: deps.nodeName,
    objects: () => objects,
    onEvent: deps.onEvent,
    resyncMs: 0,
  });
  await manager.rebuild();
  const result: MountVolumesResult = { pod: key, uid, mode: opts.mode, volumes: [], exitCode: 0 };

  if (opts.mode === 'dry-run') {
    for (const p of await manager.plan(pod)) {
      result.volumes.push({
        name: p.name,
        plugin: p.plugin,
        hostPath: p.hostPath,
        medium: p.medium,
        sizeBytes: p.sizeBytes,
        state: p.error === undefined ? `would ${p.action}` : 'Failed',
        message: p.error,
      });
      if (p.error !== undefined) result.exitCode = 1;
    }
    return result;
  }

  if (opts.mode === 'unmount') {
    const running = (await deps.runningContainers?.(uid)) ?? 0;
    if (running > 0) throw new InputError(`${opts.target}: pod ${key} has ${running} running container${running === 1 ? '' : 's'}: delete the pod instead (klet delete)`);
    const before = new Map(manager.volumes(uid).map((st) => [st.name, st]));
    await manager.unmountPod(pod);
    // A pod dir left empty (no record, nothing else) goes too.
    await fsp.rmdir(path.join(deps.rootDir, 'pods', uid)).catch(() => undefined);
    for (const v of pod.spec?.volumes ?? []) {
      const st = before.get(v.name);
      if (v.hostPath) {
        result.volumes.push({ name: v.name, plugin: 'kubernetes.io~host-path', hostPath: v.hostPath.path, medium: '', state: 'Unchanged (hostPath)' });
      } else if (st !== undefined) {
        result.volumes.push({ name: v.name, plugin: st.plugin, hostPath: st.hostPath, medium: st.medium, state: 'Unmounted' });
      } else {
        result.volumes.push({ name: v.name, plugin: '', hostPath: '', medium: '', state: 'Not set up' });
      }
    }
    return result;
  }

  let failures: { volume: string; message: string }[] = [];
  try {
    await manager.mountPod(pod, deps.signal);
  } catch (err) {
    if (!(err instanceof VolumeMountError)) throw err;
    failures = err.causes;
    result.exitCode = 1;
  }
  const states = new Map(manager.volumes(uid).map((s) => [s.name, s]));
  for (const v of pod.spec?.volumes ?? []) {
    const failed = failures.find((f) => f.volume === v.name);
    const st = states.get(v.name);
    if (failed !== undefined || st === undefined) {
      result.volumes.push({ name: v.name, plugin: st?.plugin ?? '', hostPath: st?.hostPath ?? '', medium: st?.medium ?? '', state: 'Failed', message: failed?.message });
      continue;
    }
    result.volumes.push(await describe(st, pod));
  }
  return result;
}
