/**
 * The stats provider: reads the runtime (CRI ListContainerStats, ListContainers, ListPodSandbox,
 * ImageFsInfo — only this klet's own objects, by its instance label) and the node, and answers
 * the Summary API. CPU rates (usageNanoCores) are taken against the last sample(): `klet sync`
 * samples every 10 s, as cAdvisor's housekeeping does for the kubelet; `klet top` without a sync
 * samples, waits its window and reads again. summary() keeps a reading only for a container no
 * sample has seen yet, so readers do not shorten each other's window.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { CriClient } from '../cri/client.js';
import { ContainerState, PodSandboxState, type ContainerStats as CriContainerStats } from '../cri/index.js';
import { CONTAINER_NAME_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL } from '../kuberuntime/labels.js';
import { containerLogDir, podLogDir } from '../logs/paths.js';
import { HOST_PATHS, readCgroupStats, readFsStats, readNodeCpu, readNodeMemory, readRlimit, type CgroupStatsDirs, type NodeStatsPaths } from './node-stats.js';
import { NODE_KEY, PODS_KEY, buildSummary, type ContainerSample, type CpuReading, type FsStats, type MemoryStats, type PodSample, type Summary } from './summary.js';

/** A rate is taken over at least this long; a younger sample gives way to the one before it. */
export const MIN_WINDOW_NS = 500_000_000n;

export interface StatsProviderOptions {
  cri: CriClient;
  /** The instance labels of this klet: nothing else is read. */
  owner: Record<string, string>;
  nodeName: string;
  rootDir: string;
  /** Root of the pod log dirs (/var/log/pods). */
  logRoot: string;
  /** When the node (this klet) started. */
  startTime: Date;
  paths?: NodeStatsPaths;
  /** The pods' cgroup (kubepods) when klet makes the pod cgroups: the Summary's `pods` system container. */
  podsCgroup?: CgroupStatsDirs;
}

interface Reading {
  nodeCpu?: CpuReading;
  kubepods?: { cpu?: CpuReading; memory?: MemoryStats };
  containers: ContainerSample[];
  pods: PodSample[];
}

const num = (v: { value: bigint } | undefined): number | undefined => (v === undefined ? undefined : Number(v.value));

/** A CRI container's stats as a sample (undefined without the pod labels klet gives its containers). */
export function containerSample(s: CriContainerStats, createdAt: bigint): ContainerSample | undefined {
  const a = s.attributes;
  const labels = a?.labels ?? {};
  const podUid = labels[POD_UID_LABEL];
  if (a === undefined || podUid === undefined) return undefined;
  const cpuUsage = num(s.cpu?.usageCoreNanoSeconds);
  const m = s.memory;
  const w = s.writableLayer;
  return {
    id: a.id,
    podUid,
    podName: labels[POD_NAME_LABEL] ?? '',
    podNamespace: labels[POD_NAMESPACE_LABEL] ?? '',
    name: labels[CONTAINER_NAME_LABEL] ?? a.metadata?.name ?? '',
    createdAt,
    ...(s.cpu && cpuUsage !== undefined ? { cpu: { at: s.cpu.timestamp, usageCoreNanoSeconds: cpuUsage } } : {}),
    ...(m
      ? {
          memory: {
            at: m.timestamp,
            workingSetBytes: num(m.workingSetBytes),
            usageBytes: num(m.usageBytes),
            rssBytes: num(m.rssBytes),
            pageFaults: num(m.pageFaults),
            majorPageFaults: num(m.majorPageFaults),
            availableBytes: num(m.availableBytes),
          },
        }
      : {}),
    ...(w ? { writableLayer: { at: w.timestamp, usedBytes: num(w.usedBytes), inodesUsed: num(w.inodesUsed) } } : {}),
  };
}

export class StatsProvider {
  /** The image filesystem's mount point, as the runtime last named it. */
  private imageMount: string | undefined;
  /** The last two samples' CPU readings, newest first. */
  private samples: Array<Map<string, CpuReading>> = [];

  constructor(private readonly opts: StatsProviderOptions) {}

  private async read(signal?: AbortSignal): Promise<Reading> {
    const { cri, owner } = this.opts;
    const call = { signal };
    const [stats, containers, sandboxes, nodeCpu, kubepods] = await Promise.all([
      cri.listContainerStats({ filter: { labelSelector: owner } }, call),
      cri.listContainers({ filter: { state: { state: ContainerState.CONTAINER_RUNNING }, labelSelector: owner } }, call),
      cri.listPodSandbox({ filter: { state: { state: PodSandboxState.SANDBOX_READY }, labelSelector: owner } }, call),
      readNodeCpu(this.opts.paths ?? HOST_PATHS),
      this.opts.podsCgroup === undefined ? undefined : readCgroupStats(this.opts.podsCgroup),
    ]);
    const running = new Map(containers.containers.map((c) => [c.id, c.createdAt]));
    const out: ContainerSample[] = [];
    for (const s of stats.stats) {
      const created = running.get(s.attributes?.id ?? '');
      if (created === undefined) continue;
      const sample = containerSample(s, created);
      if (sample) out.push(sample);
    }
    const pods = sandboxes.items.map((p) => ({ uid: p.metadata?.uid ?? '', name: p.metadata?.name ?? '', namespace: p.metadata?.namespace ?? '', createdAt: p.createdAt }));
    return { ...(nodeCpu ? { nodeCpu } : {}), ...(kubepods ? { kubepods } : {}), containers: out, pods };
  }

  /** Keep this moment's CPU counters as the base of the rates summary() gives from now on. */
  async sample(signal?: AbortSignal): Promise<void> {
    const r = await this.read(signal);
    const m = new Map<string, CpuReading>();
    if (r.nodeCpu) m.set(NODE_KEY, r.nodeCpu);
    if (r.kubepods?.cpu) m.set(PODS_KEY, r.kubepods.cpu);
    for (const c of r.containers) if (c.cpu) m.set(c.id, c.cpu);
    this.samples = [m, ...this.samples].slice(0, 2);
  }

  /**
   * The base of each rate: the newest sample at least MIN_WINDOW_NS older than `now`, per key. A
   * key no sample has (a container started since the last one) gets this reading as its first
   * base, so the next read has a rate without waiting for the next sample.
   */
  private previous(now: Reading): Map<string, CpuReading> {
    const out = new Map<string, CpuReading>();
    const readings: Array<[string, CpuReading | undefined]> = [[NODE_KEY, now.nodeCpu], [PODS_KEY, now.kubepods?.cpu], ...now.containers.map((c): [string, CpuReading | undefined] => [c.id, c.cpu])];
    for (const [key, reading] of readings) {
      if (reading === undefined) continue;
      const known = this.samples.map((s) => s.get(key)).filter((r) => r !== undefined);
      if (known.length === 0) {
        (this.samples[0] ??= new Map()).set(key, reading);
        continue;
      }
      const base = known.find((r) => reading.at - r.at >= MIN_WINDOW_NS);
      if (base) out.set(key, base);
    }
    return out;
  }

  /** The Summary API's answer, read now. */
  async summary(opts: { signal?: AbortSignal; onlyCpuAndMemory?: boolean } = {}): Promise<Summary> {
    const r = await this.read(opts.signal);
    const base = {
      nodeName: this.opts.nodeName,
      startTime: this.opts.startTime.toISOString(),
    };
    const memory = await readNodeMemory(this.opts.paths ?? HOST_PATHS);
    const podsCgroup = r.kubepods === undefined ? {} : { podsCgroup: { startTime: base.startTime, ...r.kubepods } };
    if (opts.onlyCpuAndMemory) {
      return buildSummary({ node: { ...base, ...(memory ? { memory } : {}) }, ...(r.nodeCpu ? { nodeCpu: r.nodeCpu } : {}), ...podsCgroup, pods: r.pods, containers: r.containers, previous: this.previous(r), onlyCpuAndMemory: true });
    }
    const [rootFs, imageFs, rlimit, logs] = await Promise.all([readFsStats(this.opts.rootDir), this.imageFs(opts.signal), readRlimit(this.opts.paths ?? HOST_PATHS), this.logUsage(r.containers)]);
    return buildSummary({
      node: {
        ...base,
        ...(memory ? { memory } : {}),
        ...(rootFs ? { fs: rootFs } : {}),
        // One filesystem for images and container layers (containerd's snapshotter): the kubelet names it twice.
        ...(imageFs ? { runtime: { imageFs, containerFs: imageFs } } : {}),
        rlimit,
      },
      ...(r.nodeCpu ? { nodeCpu: r.nodeCpu } : {}),
      ...podsCgroup,
      pods: r.pods,
      containers: r.containers,
      previous: this.previous(r),
      ...(imageFs ? { imageFs } : {}),
      logs,
    });
  }

  /**
   * The node's own figures only (memory, the root dir's and the image
   * filesystem, the process limit, the pods' cgroup's memory), without a
   * pod: what the eviction manager reads every round; the pods' stats only
   * when it must rank them.
   */
  async nodeSummary(signal?: AbortSignal): Promise<Summary> {
    return this.nodeFigures(signal, false);
  }

  /**
   * The node's cheap figures: memory, the pods' cgroup's memory, and the
   * root dir's and the image filesystem's free space from statfs (the image
   * filesystem's mount point as the runtime last named it) — no runtime
   * call, no process count: what the eviction manager looks at between rounds.
   */
  async quickNodeSummary(signal?: AbortSignal): Promise<Summary> {
    return this.nodeFigures(signal, true);
  }

  private async nodeFigures(signal: AbortSignal | undefined, quick: boolean): Promise<Summary> {
    const paths = this.opts.paths ?? HOST_PATHS;
    const startTime = this.opts.startTime.toISOString();
    const quickImageFs = async () => (this.imageMount === undefined ? undefined : readFsStats(this.imageMount));
    const [memory, rootFs, imageFs, rlimit, kubepods] = await Promise.all([
      readNodeMemory(paths),
      readFsStats(this.opts.rootDir),
      quick ? quickImageFs() : this.imageFs(signal),
      quick ? undefined : readRlimit(paths),
      this.opts.podsCgroup === undefined ? undefined : readCgroupStats({ ...this.opts.podsCgroup, cpu: undefined }),
    ]);
    return {
      node: {
        nodeName: this.opts.nodeName,
        ...(kubepods?.memory ? { systemContainers: [{ name: 'pods', startTime, memory: kubepods.memory }] } : {}),
        startTime,
        ...(memory ? { memory } : {}),
        ...(rootFs ? { fs: rootFs } : {}),
        ...(imageFs ? { runtime: { imageFs, containerFs: imageFs } } : {}),
        ...(rlimit ? { rlimit } : {}),
      },
      pods: [],
    };
  }

  /** The runtime's image filesystem: its usage from CRI, its size from statfs of its mount point. */
  private async imageFs(signal?: AbortSignal): Promise<FsStats | undefined> {
    try {
      const info = await this.opts.cri.imageFsInfo({}, { signal });
      const f = info.imageFilesystems[0];
      if (f === undefined) return undefined;
      const mount = f.fsId?.mountpoint;
      if (mount) this.imageMount = mount;
      const fsStats = mount ? await readFsStats(mount) : undefined;
      return {
        time: new Date(Number(f.timestamp / 1_000_000n)).toISOString(),
        ...(fsStats?.availableBytes !== undefined ? { availableBytes: fsStats.availableBytes, capacityBytes: fsStats.capacityBytes } : {}),
        ...(f.usedBytes ? { usedBytes: Number(f.usedBytes.value) } : {}),
        ...(fsStats?.inodesFree !== undefined ? { inodesFree: fsStats.inodesFree, inodes: fsStats.inodes } : {}),
        ...(f.inodesUsed ? { inodesUsed: Number(f.inodesUsed.value) } : {}),
      };
    } catch {
      return undefined;
    }
  }

  /** Each container's log files under the pod log dir: their size and count, on the log root's filesystem. */
  private async logUsage(containers: ContainerSample[]): Promise<Map<string, FsStats>> {
    const out = new Map<string, FsStats>();
    const fsStats = await readFsStats(this.opts.logRoot);
    await Promise.all(
      containers.map(async (c) => {
        const dir = containerLogDir(podLogDir(c.podNamespace, c.podName, c.podUid, this.opts.logRoot), c.name);
        let used = 0;
        let files = 0;
        try {
          for (const name of await fs.readdir(dir)) {
            const st = await fs.lstat(path.join(dir, name)).catch(() => undefined);
            if (st?.isFile()) {
              used += st.blocks * 512;
              files++;
            }
          }
        } catch {
          return;
        }
        out.set(c.id, {
          time: new Date().toISOString(),
          ...(fsStats ? { availableBytes: fsStats.availableBytes, capacityBytes: fsStats.capacityBytes, inodesFree: fsStats.inodesFree, inodes: fsStats.inodes } : {}),
          usedBytes: used,
          inodesUsed: files,
        });
      }),
    );
    return out;
  }
}
