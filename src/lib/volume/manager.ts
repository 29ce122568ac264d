/**
 * The volume manager (the kubelet's pkg/kubelet/volumemanager), for the
 * volume kinds a node can set up on its own.
 *
 * - Desired state: the pods klet runs (mountPod / podUpdated / unmountPod).
 * - Actual state: what is set up under `<root>/pods/<uid>/volumes/<plugin>/<name>`,
 *   rebuilt from those dirs and /proc/self/mountinfo when klet starts, so a
 *   restarted klet neither mounts a tmpfs twice nor rewrites unchanged files.
 * - Reconciling: set-up happens when a pod worker needs the pod's volumes
 *   (mountPod, the kubelet's WaitForAttachAndMount before containers start);
 *   API-data volumes (configMap, secret, downwardAPI, projected) are
 *   re-projected when their objects or the pod change (objectsChanged,
 *   podUpdated) and on a periodic resync. Between those nothing runs: no
 *   polling loop, no idle CPU.
 *
 * The same class serves one-shot commands (no resync timer) and `klet sync`.
 */
import { createHash } from 'node:crypto';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import type { VolumeEvent } from '../events/types.js';
import type { EnvContext } from '../kuberuntime/env.js';
import { podDir } from '../kuberuntime/poddir.js';
import { log } from '../log.js';
import { hostIPs } from '../node/addresses.js';
import { nodeCapacity } from '../node/machine.js';
import { parseQuantity } from '../pod/quantity.js';
import { goFsError } from '../util/go-errors.js';
import { mountTmpfs, mountsUnder, unmountAll } from '../util/mounts.js';
import { ContainerConfigError } from '../kuberuntime/env.js';
import { DATA_DIR_NAME, PayloadError, type Payload, writePayload } from './atomic-writer.js';
import { checkHostPathType } from './host-path.js';
import { setVolumeOwnership } from './ownership.js';
import {
  PLUGIN_DIRS,
  type ObjectSource,
  type PluginInfo,
  type PluginKind,
  type VolumeFailureKind,
  VolumeSetupError,
  memoryVolumeSize,
  pluginOf,
  unsupportedVolumeMessage,
  volumeDir,
  volumePayload,
} from './plugins.js';

/** The volumes of one pod, ready for its containers' mounts. */
export interface MountedVolumes {
  /** Volume name → host path. */
  paths: Map<string, string>;
  /** Volumes containers must mount read-only whatever their volumeMounts say. */
  readOnly: Set<string>;
}

/** One volume of a dry run. */
export interface VolumePlan {
  name: string;
  plugin: string;
  hostPath: string;
  medium: 'Memory' | '';
  sizeBytes?: number;
  /** What set-up would do ('' when it would fail). */
  action: string;
  error?: string;
}

/** What syncPod needs from a volume manager. */
export interface PodVolumes {
  mountPod(pod: V1Pod, signal?: AbortSignal): Promise<MountedVolumes>;
  /** Tear down every volume of the pod (it is no longer desired). */
  unmountPod(pod: V1Pod): Promise<void>;
}

/** One volume of one pod, as set up (the actual state). */
export interface VolumeState {
  name: string;
  kind: PluginKind;
  plugin: string;
  hostPath: string;
  medium: 'Memory' | '';
  /** tmpfs size in bytes (memory-backed volumes). */
  sizeBytes?: number;
  readOnly: boolean;
  /** sha256 of the payload last published (API-data volumes). */
  payloadHash?: string;
}

/** The pod-level failure: the kubelet's WaitForAttachAndMount error, plus each volume's own. */
export class VolumeMountError extends Error {
  constructor(
    readonly unmounted: string[],
    readonly causes: { volume: string; message: string; kind: VolumeFailureKind }[],
  ) {
    super(
      `unmounted volumes=[${unmounted.join(' ')}], unattached volumes=[], failed to process volumes=[]: ${causes.map((c) => c.message).join('; ')}`,
    );
  }
  /**
   * Can a retry set the volumes up, with the objects as they are? Not when a
   * volume failed for its spec, or for a ConfigMap, Secret or key its source
   * does not have (a one-shot command reads its objects once).
   */
  retryableWithSameObjects(): boolean {
    return this.causes.every((c) => c.kind === 'node');
  }

  /** The per-volume event messages (FailedMount). */
  volumeMessages(): string[] {
    return this.causes.map((c) => `MountVolume.SetUp failed for volume "${c.volume}" : ${c.message}`);
  }
}

export interface VolumeManagerOptions {
  rootDir: string;
  nodeName: string;
  /** Where a pod's ConfigMaps and Secrets come from. */
  objects: (pod: V1Pod) => ObjectSource;
  onEvent?: (e: VolumeEvent) => void;
  /** Periodic re-projection of API-data volumes (the kubelet's sync frequency); 0 = none. */
  resyncMs?: number;
  /** Node allocatable memory (default: the machine's). */
  nodeMemoryBytes?: number;
}

const BACKOFF_INITIAL_MS = 500;
const BACKOFF_MAX_MS = 122_000;

function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
}

/** Bytes a directory tree occupies on disk (allocated blocks, as du counts; symlinks not followed). */
export async function diskUsage(dir: string): Promise<number> {
  return (await diskAndInodeUsage(dir)).usedBytes;
}

/** Bytes (allocated blocks) and inodes (entries) under `dir`, as the kubelet's du-based volume metrics count them. */
export async function diskAndInodeUsage(dir: string): Promise<{ usedBytes: number; inodesUsed: number }> {
  let total = 0;
  let inodes = 0;
  const walk = async (p: string): Promise<void> => {
    for (const e of await fsp.readdir(p, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(p, e.name);
      const st = await fsp.lstat(full).catch(() => null);
      if (st === null) continue;
      total += st.blocks * 512;
      inodes++;
      if (st.isDirectory()) await walk(full);
    }
  };
  await walk(dir);
  return { usedBytes: total, inodesUsed: inodes };
}

function hashPayload(p: Payload): string {
  const h = createHash('sha256');
  for (const k of [...p.keys()].sort()) {
    const f = p.get(k);
    if (f === undefined) continue;
    h.update(`${k}\0${f.mode}\0${f.data.length}\0`);
    h.update(f.data);
  }
  return h.digest('hex');
}

/** A volume's set-up error as the kubelet words it (a file system error as Go's: "open PATH: no such file or directory"). */
function setupErrorMessage(err: unknown): string {
  return err instanceof VolumeSetupError ? err.message : goFsError(err);
}

/** What kind of failure a set-up error is (VolumeFailureKind): the node's state unless it says otherwise. */
function setupFailureKind(err: unknown): VolumeFailureKind {
  if (err instanceof VolumeSetupError) return err.kind;
  // An invalid payload path, a downward API field that cannot be: the spec's.
  if (err instanceof PayloadError || err instanceof ContainerConfigError) return 'spec';
  return 'node';
}

export class VolumeManager implements PodVolumes {
  private readonly desired = new Map<string, V1Pod>();
  private readonly actual = new Map<string, Map<string, VolumeState>>();
  /** Per pod: the tail of its operation chain (operations on one pod never overlap). */
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Per pod: mount retry back-off (the operation executor's exponential back-off), and the failure it follows. */
  private readonly backoff = new Map<string, { delayMs: number; until: number; error: VolumeMountError }>();
  private timer: NodeJS.Timeout | undefined;
  private pendingResync: NodeJS.Timeout | undefined;
  private readonly nodeMemory: number;
  /** Read on first use, then kept (nodeCapacity() reads a few /proc and /sys files each time). */
  private nodeCpuMillis: number | undefined;

  constructor(private readonly opts: VolumeManagerOptions) {
    this.nodeMemory = opts.nodeMemoryBytes ?? os.totalmem();
  }

  /** Rebuild the actual state from disk and the mount table, then resync periodically until `signal` aborts. */
  async start(signal: AbortSignal): Promise<void> {
    await this.rebuild();
    const period = this.opts.resyncMs ?? 60_000;
    if (period > 0) {
      const tick = () => {
        this.timer = setTimeout(() => {
          void this.resyncAll().finally(() => {
            if (!signal.aborted) tick();
          });
        }, period);
        this.timer.unref();
      };
      tick();
    }
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(this.timer);
        clearTimeout(this.pendingResync);
      },
      { once: true },
    );
  }

  /** The actual state from `<root>/pods/<uid>/volumes` and /proc/self/mountinfo. */
  async rebuild(): Promise<void> {
    const pods = path.join(this.opts.rootDir, 'pods');
    const uids = await fsp.readdir(pods).catch(() => [] as string[]);
    const mounted = new Set(await mountsUnder(pods).catch(() => [] as string[]));
    const byDir = new Map<string, PluginKind>(Object.entries(PLUGIN_DIRS).map(([k, d]) => [d, k as PluginKind]));
    for (const uid of uids) {
      const vols = new Map<string, VolumeState>();
      for (const pdir of await fsp.readdir(path.join(pods, uid, 'volumes')).catch(() => [] as string[])) {
        const kind = byDir.get(pdir);
        if (kind === undefined) continue;
        for (const name of await fsp.readdir(path.join(pods, uid, 'volumes', pdir)).catch(() => [] as string[])) {
          const hostPath = path.join(pods, uid, 'volumes', pdir, name);
          const memory = mounted.has(hostPath);
          vols.set(name, { name, kind, plugin: pdir, hostPath, medium: memory ? 'Memory' : '', readOnly: kind !== 'emptyDir' });
        }
      }
      if (vols.size > 0) this.actual.set(uid, vols);
    }
  }

  /** Run `fn` after every earlier operation on the same pod. */
  private serial<T>(uid: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(uid) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.chains.set(uid, tail);
    void tail.then(() => {
      if (this.chains.get(uid) === tail) this.chains.delete(uid);
    });
    return next;
  }

  private envFor(pod: V1Pod): EnvContext {
    return {
      pod,
      podIPs: [],
      // Read only when a downward API item asks for status.hostIP(s): os.networkInterfaces() walks every
      // interface (a veth per pod), and every API-data volume is re-projected each minute (bench/cluster-cpu.md).
      get hostIPs() {
        return hostIPs();
      },
      nodeName: this.opts.nodeName,
      objects: { configMaps: [], secrets: [] },
      nodeAllocatable: { cpuMillis: (this.nodeCpuMillis ??= nodeCapacity().cpuMillis), memoryBytes: this.nodeMemory, ephemeralStorageBytes: 0 },
    };
  }

  /** The pod's volumes' state, as set up (for `klet mount-volumes` and status). */
  volumes(uid: string): VolumeState[] {
    return [...(this.actual.get(uid)?.values() ?? [])];
  }

  /**
   * Set up every volume of the pod (the kubelet's WaitForAttachAndMount).
   * Volumes already set up are not set up again; a volume the pod no longer
   * declares is torn down. Throws VolumeMountError naming what failed.
   */
  mountPod(pod: V1Pod, signal?: AbortSignal): Promise<MountedVolumes> {
    const uid = pod.metadata?.uid ?? '';
    this.desired.set(uid, pod);
    return this.serial(uid, () => this.doMountPod(pod, signal));
  }

  /** When a mount failed, how long until a retry makes sense (ms), else undefined. */
  retryInMs(uid: string): number | undefined {
    const b = this.backoff.get(uid);
    return b === undefined ? undefined : Math.max(0, b.until - Date.now());
  }

  /** The pod's last mount failure, while its retry back-off runs (none once its volumes are set up). */
  lastFailure(uid: string): VolumeMountError | undefined {
    return this.backoff.get(uid)?.error;
  }

  private async doMountPod(pod: V1Pod, signal?: AbortSignal): Promise<MountedVolumes> {
    const uid = pod.metadata?.uid ?? '';
    const vols = this.actual.get(uid) ?? new Map<string, VolumeState>();
    this.actual.set(uid, vols);
    const base = path.join(podDir(this.opts.rootDir, uid), 'volumes');
    // The mount table is read only when there are volumes to set up (a pod without volumes, the common static pod, reads nothing).
    const mounted = new Set((pod.spec?.volumes ?? []).length > 0 ? await mountsUnder(base) : []);
    const out: MountedVolumes = { paths: new Map(), readOnly: new Set() };
    const failed: { volume: string; message: string; kind: VolumeFailureKind }[] = [];
    for (const v of pod.spec?.volumes ?? []) {
      signal?.throwIfAborted();
      const info = pluginOf(v);
      if (info === null) {
        failed.push({ volume: v.name, message: unsupportedVolumeMessage(v), kind: 'spec' });
        continue;
      }
      try {
        const st = await this.setUp(pod, v, info, vols.get(v.name), mounted);
        vols.set(v.name, st);
        out.paths.set(v.name, st.hostPath);
        if (info.readOnly) out.readOnly.add(v.name);
      } catch (err) {
        failed.push({ volume: v.name, message: setupErrorMessage(err), kind: setupFailureKind(err) });
      }
    }
    // Volumes the pod no longer declares (an edited manifest keeps its UID).
    const declared = new Set((pod.spec?.volumes ?? []).map((v) => v.name));
    for (const st of [...vols.values()]) {
      if (declared.has(st.name)) continue;
      await this.tearDown(pod, st).catch((err) => log.warn(`tearing down volume ${st.name} of ${podKey(pod)}: ${errorMessage(err)}`));
      vols.delete(st.name);
    }
    if (failed.length > 0) {
      const prev = this.backoff.get(uid);
      const delayMs = prev === undefined ? BACKOFF_INITIAL_MS : Math.min(prev.delayMs * 2, BACKOFF_MAX_MS);
      const error = new VolumeMountError(failed.map((f) => f.volume).sort(), failed);
      this.backoff.set(uid, { delayMs, until: Date.now() + delayMs, error });
      throw error;
    }
    this.backoff.delete(uid);
    return out;
  }

  private emit(pod: V1Pod, st: VolumeState, op: VolumeEvent['op']): void {
    this.opts.onEvent?.({ kind: 'Volume', pod: podKey(pod), uid: pod.metadata?.uid ?? '', volume: st.name, plugin: st.plugin, op, hostPath: st.hostPath });
  }

  private async setUp(pod: V1Pod, v: V1Volume, info: PluginInfo, prev: VolumeState | undefined, mounted: Set<string>): Promise<VolumeState> {
    const uid = pod.metadata?.uid ?? '';
    const fsGroup = pod.spec?.securityContext?.fsGroup;
    if (v.hostPath) {
      await checkHostPathType(v.hostPath.path, v.hostPath.type ?? '');
      const st: VolumeState = { name: v.name, kind: 'hostPath', plugin: PLUGIN_DIRS.hostPath, hostPath: v.hostPath.path, medium: '', readOnly: false };
      if (prev === undefined) this.emit(pod, st, 'SetUp');
      return st;
    }
    const dir = volumeDir(podDir(this.opts.rootDir, uid), info.kind, v.name);
    const st: VolumeState = {
      name: v.name,
      kind: info.kind,
      plugin: PLUGIN_DIRS[info.kind],
      hostPath: dir,
      medium: info.memory ? 'Memory' : '',
      readOnly: info.readOnly,
      payloadHash: prev?.payloadHash,
    };
    const isNew = (await fsp.lstat(dir).catch(() => null)) === null;
    if (isNew) {
      await fsp.mkdir(dir, { recursive: true, mode: 0o777 });
      await fsp.chmod(dir, 0o777);
    }
    if (info.memory) {
      st.sizeBytes = memoryVolumeSize(pod, v.emptyDir ? v : undefined, this.nodeMemory);
      if (!mounted.has(dir)) {
        await mountTmpfs(dir, { sizeBytes: st.sizeBytes, mode: 0o1777 });
        mounted.add(dir);
      }
    }
    if (info.kind === 'emptyDir') {
      if (isNew || prev === undefined) await setVolumeOwnership(dir, fsGroup, false);
    } else {
      try {
        await this.project(pod, v, st);
      } catch (err) {
        // Already published: the volume is mounted and keeps its last content (the kubelet's remount failure).
        if ((await fsp.lstat(path.join(dir, DATA_DIR_NAME)).catch(() => null)) === null) throw err;
        log.warn(`MountVolume.SetUp failed for volume "${v.name}" of ${podKey(pod)} : ${setupErrorMessage(err)} (keeping the last content)`);
      }
    }
    if (prev === undefined) this.emit(pod, st, 'SetUp');
    return st;
  }

  /** Publish an API-data volume's payload when it differs from what was last published. */
  private async project(pod: V1Pod, v: V1Volume, st: VolumeState): Promise<boolean> {
    const fsGroup = pod.spec?.securityContext?.fsGroup;
    const payload = await volumePayload(v, this.envFor(pod), this.opts.objects(pod));
    if (fsGroup !== undefined) for (const f of payload.values()) f.mode |= 0o440;
    const hash = hashPayload(payload);
    if (hash === st.payloadHash) return false;
    const changed = await writePayload(st.hostPath, payload, {
      setPerms: fsGroup === undefined ? undefined : (gen) => setVolumeOwnership(gen, fsGroup, true),
    });
    if (fsGroup !== undefined) await setVolumeOwnership(st.hostPath, fsGroup, true);
    const first = st.payloadHash === undefined;
    st.payloadHash = hash;
    if (changed && !first) this.emit(pod, st, 'Updated');
    return changed;
  }

  /**
   * What mountPod would do, without doing any of it (nothing is created,
   * mounted or written): per volume its plugin, host path, medium, size and
   * the action, or the error set-up would fail with.
   */
  async plan(pod: V1Pod): Promise<VolumePlan[]> {
    const uid = pod.metadata?.uid ?? '';
    const base = path.join(podDir(this.opts.rootDir, uid), 'volumes');
    const mounted = new Set(await mountsUnder(base));
    const out: VolumePlan[] = [];
    for (const v of pod.spec?.volumes ?? []) {
      const info = pluginOf(v);
      if (info === null) {
        out.push({ name: v.name, plugin: '', hostPath: '', medium: '', action: '', error: 'this volume type is not supported by klet' });
        continue;
      }
      const hostPath = v.hostPath ? v.hostPath.path : volumeDir(podDir(this.opts.rootDir, uid), info.kind, v.name);
      const row: VolumePlan = { name: v.name, plugin: PLUGIN_DIRS[info.kind], hostPath, medium: info.memory ? 'Memory' : '', action: '' };
      try {
        if (v.hostPath) {
          row.action = (await checkHostPathType(v.hostPath.path, v.hostPath.type ?? '', { dryRun: true })) === 'would create' ? `create (${v.hostPath.type})` : 'use';
          out.push(row);
          continue;
        }
        const exists = (await fsp.lstat(hostPath).catch(() => null)) !== null;
        const steps: string[] = [exists ? 'exists' : 'create dir'];
        if (info.memory) {
          row.sizeBytes = memoryVolumeSize(pod, v.emptyDir ? v : undefined, this.nodeMemory);
          if (!mounted.has(hostPath)) steps.push(`mount tmpfs size=${row.sizeBytes}`);
        }
        if (info.kind !== 'emptyDir') {
          const payload = await volumePayload(v, this.envFor(pod), this.opts.objects(pod));
          steps.push(`project ${payload.size} file${payload.size === 1 ? '' : 's'}`);
        }
        row.action = steps.join(', ');
      } catch (err) {
        row.error = setupErrorMessage(err);
      }
      out.push(row);
    }
    return out;
  }

  /**
   * Disk emptyDirs over their sizeLimit, of the pods set up (the kubelet's
   * eviction manager, localStorageEviction / emptyDirLimitEviction), with the
   * kubelet's eviction message.
   */
  /** Each pod's disk emptyDirs' usage, by pod UID (the eviction manager's local volume stats). */
  async localVolumeUsage(): Promise<Map<string, { usedBytes: number; inodesUsed: number }>> {
    const out = new Map<string, { usedBytes: number; inodesUsed: number }>();
    for (const [uid, pod] of this.desired) {
      for (const v of pod.spec?.volumes ?? []) {
        if (!v.emptyDir || v.emptyDir.medium === 'Memory') continue;
        const st = this.actual.get(uid)?.get(v.name);
        if (st === undefined) continue;
        const u = await diskAndInodeUsage(st.hostPath);
        const sum = out.get(uid) ?? { usedBytes: 0, inodesUsed: 0 };
        out.set(uid, { usedBytes: sum.usedBytes + u.usedBytes, inodesUsed: sum.inodesUsed + u.inodesUsed });
      }
    }
    return out;
  }

  async emptyDirsOverLimit(): Promise<{ uid: string; pod: string; volume: string; message: string }[]> {
    const out: { uid: string; pod: string; volume: string; message: string }[] = [];
    for (const [uid, pod] of this.desired) {
      for (const v of pod.spec?.volumes ?? []) {
        if (!v.emptyDir || v.emptyDir.medium === 'Memory' || v.emptyDir.sizeLimit === undefined) continue;
        const st = this.actual.get(uid)?.get(v.name);
        if (st === undefined) continue;
        const limit = parseQuantity(String(v.emptyDir.sizeLimit));
        if ((await diskUsage(st.hostPath)) > limit.toNumber()) {
          out.push({ uid, pod: podKey(pod), volume: v.name, message: `Usage of EmptyDir volume "${v.name}" exceeds the limit "${String(v.emptyDir.sizeLimit)}".` });
        }
      }
    }
    return out;
  }

  /** The pod changed (labels, annotations, volumes): re-project its API-data volumes now. */
  podUpdated(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (!this.desired.has(uid)) return;
    this.desired.set(uid, pod);
    void this.serial(uid, () => this.resyncPod(uid)).catch((err) => log.warn(`volumes of ${podKey(pod)}: ${errorMessage(err)}`));
  }

  /** ConfigMaps or Secrets changed: re-project every pod's API-data volumes soon (coalesced). */
  objectsChanged(): void {
    if (this.pendingResync !== undefined) return;
    this.pendingResync = setTimeout(() => {
      this.pendingResync = undefined;
      void this.resyncAll();
    }, 50);
    this.pendingResync.unref();
  }

  /** Re-project the API-data volumes of every desired pod. */
  async resyncAll(): Promise<void> {
    await Promise.all(
      [...this.desired.keys()].map((uid) =>
        this.serial(uid, () => this.resyncPod(uid)).catch((err) => log.warn(`volumes of pod ${uid}: ${errorMessage(err)}`)),
      ),
    );
  }

  private async resyncPod(uid: string): Promise<void> {
    const pod = this.desired.get(uid);
    const vols = this.actual.get(uid);
    if (pod === undefined || vols === undefined) return;
    for (const v of pod.spec?.volumes ?? []) {
      const st = vols.get(v.name);
      const info = pluginOf(v);
      if (st === undefined || info === null || !info.updatable) continue;
      try {
        await this.project(pod, v, st);
      } catch (err) {
        // The kubelet keeps the last good content when an update cannot be projected.
        log.warn(`MountVolume.SetUp failed for volume "${v.name}" of ${podKey(pod)} : ${setupErrorMessage(err)}`);
      }
    }
  }

  private async tearDown(pod: V1Pod, st: VolumeState): Promise<void> {
    if (st.kind !== 'hostPath') {
      const left = await unmountAll(st.hostPath);
      if (left.length > 0) throw new Error(`still mounted: ${left.join(', ')}`);
      await fsp.rm(st.hostPath, { recursive: true, force: true });
    }
    this.emit(pod, st, 'TearDown');
  }

  /**
   * Tear down every volume of the pod (and its subPath binds): unmount, then
   * remove the dirs. The pod is no longer desired. hostPath contents are
   * never touched.
   */
  unmountPod(pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.desired.delete(uid);
    this.backoff.delete(uid);
    return this.serial(uid, async () => {
      const dir = podDir(this.opts.rootDir, uid);
      const vols = this.actual.get(uid);
      for (const sub of ['volume-subpaths', 'volumes']) {
        const left = await unmountAll(path.join(dir, sub));
        if (left.length > 0) throw new Error(`cannot tear down the volumes of ${podKey(pod)}: still mounted: ${left.join(', ')}`);
      }
      for (const st of vols?.values() ?? []) this.emit(pod, st, 'TearDown');
      await fsp.rm(path.join(dir, 'volume-subpaths'), { recursive: true, force: true });
      await fsp.rm(path.join(dir, 'volumes'), { recursive: true, force: true });
      this.actual.delete(uid);
    });
  }

  /** Forget a pod without touching its files (its dir is removed by the caller). */
  forget(uid: string): void {
    this.desired.delete(uid);
    this.actual.delete(uid);
    this.backoff.delete(uid);
  }
}
