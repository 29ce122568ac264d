/**
 * Garbage collection in `klet sync`, as the kubelet's StartGarbageCollection
 * runs it: container GC every minute (ContainerGCPeriod) and image GC every
 * 5 minutes (ImageGCPeriod), each first at start; and the pod container
 * deletor, which on each ContainerDied removes the instances of that
 * container beyond the one kept. The plans are pure
 * (kuberuntime/container-gc.ts, kuberuntime/image-gc.ts); this runs them.
 *
 * Only this klet's containers and sandboxes (its owner label for this root
 * dir and node name) are ever listed for removal, and only images klet
 * pulled (kuberuntime/pulled-images.ts): a kubelet or another klet root dir
 * on the same containerd keeps everything of its own.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { CriClient } from '../cri/client.js';
import { CriNotFoundError } from '../cri/errors.js';
import { ContainerState, PodSandboxState, type Container, type PodSandbox } from '../cri/gen/api.js';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL, instanceSelector } from '../kuberuntime/labels.js';
import {
  CONTAINER_GC_PERIOD_MS,
  DEFAULT_CONTAINER_GC_POLICY,
  containersToDeleteInPod,
  deletorKeeps,
  planContainerEviction,
  planSandboxEviction,
  type ContainerGCPolicy,
  type ContainerRemoval,
  type GcContainer,
  type GcContainerState,
  type GcSandbox,
} from '../kuberuntime/container-gc.js';
import {
  DEFAULT_IMAGE_GC_POLICY,
  IMAGE_GC_PERIOD_MS,
  detectImages,
  freeDiskSpaceFailedMessage,
  freeSpaceVerdict,
  imageGCDisabled,
  imagesInEvictionOrder,
  planDiskUsage,
  type ImageFsStats,
  type ImageGCPolicy,
  type ImageRecord,
} from '../kuberuntime/image-gc.js';
import { listPodRecordUids } from '../kuberuntime/poddir.js';
import { forgetPulledImage, listPulledImages, pulledByKlet } from '../kuberuntime/pulled-images.js';
import { PAUSE_IMAGE } from '../runtime/containerd-config.js';
import { pause } from '../util/sleep.js';

/** A node event, with the kubelet's reason and message (ContainerGCFailed, ImageGCFailed, FreeDiskSpaceFailed, InvalidDiskCapacity). */
export interface GcNodeEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface GarbageCollectorOptions {
  cri: CriClient;
  rootDir: string;
  nodeName: string;
  containerPolicy?: ContainerGCPolicy;
  imagePolicy?: ImageGCPolicy;
  /** Container GC period (the kubelet's ContainerGCPeriod, 1m). */
  containerGCPeriodMs?: number;
  /** Image GC period (the kubelet's ImageGCPeriod, 5m). */
  imageGCPeriodMs?: number;
  /** The runtime's sandbox image: never removed (klet's own pause image by default). */
  sandboxImage?: string;
  /**
   * The kubelet's ShouldPodContentBeRemoved: the pod no longer exists (asked
   * only once every source is ready, and only for pods without a record
   * under the root dir).
   */
  podRemoved: (uid: string) => boolean;
  /** Every pod source has answered (the kubelet's sourcesReady.AllReady). */
  allSourcesReady: () => boolean;
  onNodeEvent?: (e: GcNodeEvent) => void;
  /** kubelet_image_garbage_collected_total. */
  metrics?: Pick<import('../metrics/metrics.js').KletMetrics, 'imageGarbageCollected'>;
  /** The image filesystem's size and free space; default: statfs of the mountpoint CRI ImageFsInfo names. */
  imageFsStats?: (signal: AbortSignal) => Promise<ImageFsStats>;
  now?: () => number;
}

/** The kubelet's containerDeletorBufferLimit: removal requests beyond it are dropped (the next GC catches them). */
const DELETOR_BUFFER = 50;

function gcState(s: ContainerState): GcContainerState {
  switch (s) {
    case ContainerState.CONTAINER_RUNNING:
      return 'running';
    case ContainerState.CONTAINER_EXITED:
      return 'exited';
    case ContainerState.CONTAINER_CREATED:
      return 'created';
    default:
      return 'unknown';
  }
}

const nsToMs = (ns: bigint): number => Number(ns / 1_000_000n);

export function gcContainerOf(c: Container): GcContainer {
  return {
    id: c.id,
    podUid: c.labels[POD_UID_LABEL] ?? '',
    name: c.labels[CONTAINER_NAME_LABEL] ?? c.metadata?.name ?? '',
    state: gcState(c.state),
    createdAt: nsToMs(c.createdAt),
    sandboxId: c.podSandboxId,
  };
}

function gcSandboxOf(sb: PodSandbox): GcSandbox {
  return { id: sb.id, podUid: sb.labels[POD_UID_LABEL] ?? sb.metadata?.uid ?? '', ready: sb.state === PodSandboxState.SANDBOX_READY, createdAt: nsToMs(sb.createdAt) };
}

/** statfs of the filesystem CRI ImageFsInfo names (the kubelet reads it through cadvisor). */
async function statImageFs(cri: CriClient, signal: AbortSignal): Promise<ImageFsStats> {
  const info = await cri.imageFsInfo({}, { signal });
  const mountpoint = info.imageFilesystems[0]?.fsId?.mountpoint;
  if (!mountpoint) throw new Error('the runtime reports no image filesystem (ImageFsInfo)');
  const st = await fsp.statfs(mountpoint);
  return { capacityBytes: st.blocks * st.bsize, availableBytes: st.bavail * st.bsize };
}

export class GarbageCollector {
  private readonly containerPolicy: ContainerGCPolicy;
  private readonly imagePolicy: ImageGCPolicy;
  private imageRecords = new Map<string, ImageRecord>();
  private failedContainerGC = false;
  private readonly deletions: { podUid: string; containerId: string; containers: readonly GcContainer[] }[] = [];
  private wakeDeletor: (() => void) | undefined;

  constructor(private readonly opts: GarbageCollectorOptions) {
    this.containerPolicy = opts.containerPolicy ?? DEFAULT_CONTAINER_GC_POLICY;
    this.imagePolicy = opts.imagePolicy ?? DEFAULT_IMAGE_GC_POLICY;
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /**
   * Run until the signal aborts: container GC now and every period, image GC
   * now and every period (unless --image-gc-high-threshold is 100), and the
   * deletor's queue.
   */
  async run(signal: AbortSignal): Promise<void> {
    const loops = [this.every(signal, this.opts.containerGCPeriodMs ?? CONTAINER_GC_PERIOD_MS, () => this.containerGCPass(signal)), this.runDeletor(signal)];
    if (imageGCDisabled(this.imagePolicy)) {
      log.debug('ImageGCHighThresholdPercent is set 100, Disable image GC');
    } else {
      let failedBefore = false;
      loops.push(
        this.every(signal, this.opts.imageGCPeriodMs ?? IMAGE_GC_PERIOD_MS, async () => {
          try {
            await this.collectImages(signal);
            if (failedBefore) log.info('Image garbage collection succeeded');
            failedBefore = false;
          } catch (err) {
            if (signal.aborted) return;
            // As the kubelet: the first failure is logged only (stats may not be ready yet), repeated ones are a node event.
            if (failedBefore) {
              log.error(`Image garbage collection failed multiple times in a row: ${errorMessage(err)}`);
              this.opts.onNodeEvent?.({ type: 'Warning', reason: 'ImageGCFailed', message: errorMessage(err) });
            } else {
              log.error(`Image garbage collection failed once. Stats initialization may not have completed yet: ${errorMessage(err)}`);
            }
            failedBefore = true;
          }
        }),
      );
    }
    await Promise.all(loops);
  }

  private async every(signal: AbortSignal, periodMs: number, fn: () => Promise<void>): Promise<void> {
    while (!signal.aborted) {
      await fn();
      await pause(periodMs, signal);
    }
  }

  private async containerGCPass(signal: AbortSignal): Promise<void> {
    try {
      await this.collectContainers(signal);
      if (this.failedContainerGC) log.info('Container garbage collection succeeded');
      this.failedContainerGC = false;
    } catch (err) {
      if (signal.aborted) return;
      log.error(`Container garbage collection failed: ${errorMessage(err)}`);
      this.opts.onNodeEvent?.({ type: 'Warning', reason: 'ContainerGCFailed', message: errorMessage(err) });
      this.failedContainerGC = true;
    }
  }

  private async listOwn(signal: AbortSignal): Promise<{ containers: Container[]; sandboxes: PodSandbox[] }> {
    const filter = { labelSelector: instanceSelector(this.opts) };
    const [c, s] = await Promise.all([this.opts.cri.listContainers({ filter }, { signal }), this.opts.cri.listPodSandbox({ filter }, { signal })]);
    return { containers: c.containers, sandboxes: s.items };
  }

  /**
   * One container GC (the kubelet's GarbageCollect): dead containers by the
   * policy, then sandboxes. Failures of single removals are logged; the
   * pass fails (ContainerGCFailed) only when the runtime cannot be listed.
   */
  async collectContainers(signal: AbortSignal): Promise<void> {
    const ready = this.opts.allSourcesReady();
    const podRemoved = await this.podRemovedCheck();
    const before = await this.listOwn(signal);
    const plan = planContainerEviction({
      containers: before.containers.map(gcContainerOf),
      policy: this.containerPolicy,
      now: this.now(),
      allSourcesReady: ready,
      podRemoved,
    });
    for (const r of plan) await this.removeContainer(r, signal);
    const after = await this.listOwn(signal);
    for (const id of planSandboxEviction({ sandboxes: after.sandboxes.map(gcSandboxOf), containers: after.containers.map(gcContainerOf), podRemoved })) {
      await this.removeSandbox(id, signal);
    }
  }

  /**
   * A container of the pod died (PLEG ContainerDied): queue the removal of
   * its exited instances beyond the one kept (all of the pod's exited
   * containers when the pod no longer exists). `containers`: the pod's
   * containers as the PLEG last listed them.
   */
  containerDied(podUid: string, containerId: string, containers: readonly GcContainer[]): void {
    if (this.deletions.length >= DELETOR_BUFFER) {
      log.info(`Failed to issue the request to remove container containerID=${containerId}`);
      return;
    }
    this.deletions.push({ podUid, containerId, containers });
    this.wakeDeletor?.();
  }

  private async runDeletor(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const next = this.deletions.shift();
      if (next !== undefined) {
        const removed = await this.podRemovedCheck().catch(() => () => false);
        const all = removed(next.podUid);
        for (const r of containersToDeleteInPod(next.containers, next.containerId, deletorKeeps(this.containerPolicy), all)) await this.removeContainer(r, signal);
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          this.wakeDeletor = undefined;
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.wakeDeletor = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  /**
   * ShouldPodContentBeRemoved for this pass: once every source is ready, a
   * pod klet neither wants nor works on, and has no record of under its
   * root dir, no longer exists.
   */
  private async podRemovedCheck(): Promise<(uid: string) => boolean> {
    if (!this.opts.allSourcesReady()) return () => false;
    const records = await listPodRecordUids(this.opts.rootDir);
    return (uid) => !records.has(uid) && this.opts.podRemoved(uid);
  }

  /**
   * The kubelet's removeContainer: the container's log files (its log path
   * and the rotated ones beside it, logManager.Clean), then the container.
   * One in the unknown state is stopped first.
   */
  private async removeContainer(r: ContainerRemoval, signal: AbortSignal): Promise<void> {
    const call = { signal };
    try {
      if (r.unknown) await this.opts.cri.stopContainer({ containerId: r.id, timeout: 2n }, call);
      const { status } = await this.opts.cri.containerStatus({ containerId: r.id }, call);
      if (status?.logPath) await removeLogFiles(status.logPath);
      await this.opts.cri.removeContainer({ containerId: r.id }, call);
      log.debug(`Removed dead container containerID=${r.id} podUID=${r.podUid} containerName=${r.name}`);
    } catch (err) {
      if (err instanceof CriNotFoundError || signal.aborted) return;
      log.error(`Failed to remove container containerID=${r.id}: ${errorMessage(err)}`);
    }
  }

  private async removeSandbox(id: string, signal: AbortSignal): Promise<void> {
    const call = { signal };
    try {
      // The kubelet stops it first, in case it was not.
      await this.opts.cri.stopPodSandbox({ podSandboxId: id }, call);
      await this.opts.cri.removePodSandbox({ podSandboxId: id }, call);
      log.debug(`Removed sandbox sandboxID=${id}`);
    } catch (err) {
      if (err instanceof CriNotFoundError || signal.aborted) return;
      log.error(`Failed to remove sandbox sandboxID=${id}: ${errorMessage(err)}`);
    }
  }

  /**
   * One image GC (the kubelet's GarbageCollect): when the image filesystem
   * is at or above the high threshold, remove unused images klet pulled,
   * least recently used first, until usage is down to the low threshold.
   * Throws when it cannot (FreeDiskSpaceFailed is recorded then).
   */
  async collectImages(signal: AbortSignal): Promise<void> {
    await this.freeImages(signal, false);
  }

  /**
   * The eviction manager's DeleteUnusedImages: every unused image klet
   * pulled that is old enough, whatever the disk usage (no event when
   * nothing could be freed).
   */
  async deleteUnusedImages(signal: AbortSignal): Promise<void> {
    await this.freeImages(signal, true);
  }

  private async freeImages(signal: AbortSignal, all: boolean): Promise<void> {
    const freeTime = this.now();
    const call = { signal };
    const [{ images }, { containers }, pulled] = await Promise.all([
      this.opts.cri.listImages({}, call),
      // Every container of the runtime, whoever's, running or not: an image someone uses stays.
      this.opts.cri.listContainers({}, call),
      listPulledImages(this.opts.rootDir),
    ]);
    const names = new Map<string, string>();
    for (const img of images) for (const n of [img.id, ...img.repoTags, ...img.repoDigests]) names.set(n, img.id);
    const inUse = new Set<string>();
    for (const c of containers) {
      for (const n of [c.imageRef, c.image?.image ?? '']) {
        const id = names.get(n);
        if (id !== undefined) inUse.add(id);
      }
    }
    this.imageRecords = detectImages(
      this.imageRecords,
      images.map((i) => ({ id: i.id, size: Number(i.size), pinned: i.pinned })),
      inUse,
      freeTime,
      this.now(),
    );
    // Records of references no image has any more (removed by someone else) are dropped.
    const present = new Set(names.keys());
    for (const p of pulled) if (!present.has(p.ref)) await forgetPulledImage(this.opts.rootDir, p.ref).catch(() => undefined);
    const pulledRefs = new Set(pulled.map((p) => p.ref));
    const sandboxImage = names.get(this.opts.sandboxImage ?? PAUSE_IMAGE);
    const byId = new Map(images.map((i) => [i.id, i]));
    const candidates = imagesInEvictionOrder(this.imageRecords, inUse, (id) => {
      const img = byId.get(id);
      return img !== undefined && id !== sandboxImage && pulledByKlet(img, pulledRefs);
    });

    const fs = await (this.opts.imageFsStats ?? ((s) => statImageFs(this.opts.cri, s)))(signal);
    const planned = planDiskUsage(fs, this.imagePolicy);
    const disk = all && planned.kind !== 'invalid-capacity' ? { kind: 'free' as const, usagePercent: 0, amountToFree: Number.POSITIVE_INFINITY } : planned;
    if (disk.kind === 'invalid-capacity') {
      const message = 'invalid capacity 0 on image filesystem';
      this.opts.onNodeEvent?.({ type: 'Warning', reason: 'InvalidDiskCapacity', message });
      throw new Error(message);
    }
    if (disk.kind === 'below') return;
    const { highThresholdPercent, lowThresholdPercent } = this.imagePolicy;
    if (!all)
      log.info(
      `Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold usage=${disk.usagePercent} highThreshold=${highThresholdPercent} amountToFree=${disk.amountToFree} lowThreshold=${lowThresholdPercent}`,
    );
    let freed = 0;
    const errors: string[] = [];
    for (const c of candidates) {
      if (freeSpaceVerdict(c, freeTime, this.imagePolicy) !== 'remove') continue;
      const img = byId.get(c.id);
      log.info(`Removing image to free bytes imageID=${c.id} size=${c.size}`);
      try {
        await this.opts.cri.removeImage({ image: { image: c.id } }, call);
      } catch (err) {
        if (signal.aborted) throw err;
        errors.push(errorMessage(err));
        continue;
      }
      this.imageRecords.delete(c.id);
      this.opts.metrics?.imageGarbageCollected('space');
      for (const ref of [...(img?.repoTags ?? []), ...(img?.repoDigests ?? [])]) await forgetPulledImage(this.opts.rootDir, ref).catch(() => undefined);
      freed += c.size;
      if (freed >= disk.amountToFree) break;
    }
    if (errors.length > 0) throw new Error(`wanted to free ${disk.amountToFree} bytes, but freed ${freed} bytes space with errors in image deletion: ${errors.join('; ')}`);
    if (freed < disk.amountToFree && !all) {
      const message = freeDiskSpaceFailedMessage(disk.amountToFree, freed);
      this.opts.onNodeEvent?.({ type: 'Warning', reason: 'FreeDiskSpaceFailed', message });
      throw new Error(message);
    }
  }
}

/** A container's log file and its rotated files beside it (`<log path>*`, as logManager.Clean globs). */
async function removeLogFiles(logPath: string): Promise<void> {
  const dir = path.dirname(logPath);
  const base = path.basename(logPath);
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  for (const n of names) if (n.startsWith(base)) await fsp.rm(path.join(dir, n), { force: true });
}
