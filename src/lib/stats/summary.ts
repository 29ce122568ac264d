/**
 * The kubelet's Summary API (`/stats/summary`, k8s.io/kubelet/pkg/apis/stats/v1alpha1) as JSON,
 * and the pure step that builds it from the runtime's figures: CRI container stats grouped into
 * pods by their labels, CPU rates from two readings of the cumulative counters, pod figures as
 * the sum of their containers' (the kubelet's CRI stats provider does the same when the runtime
 * has no pod sandbox stats, which containerd 1.6 has not).
 *
 * Field names and their omission rules follow the v1alpha1 types: pointers become optional
 * numbers, times RFC 3339 strings.
 */

export interface CpuStats {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface ContainerStats {
  name: string;
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
}

export interface PodStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerStats[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  'ephemeral-storage'?: FsStats;
  process_stats?: { process_count?: number };
}

export interface NodeStats {
  nodeName: string;
  /** The node's system containers: `pods` (kubepods, the pods' cgroup) when klet makes the pod cgroups. */
  systemContainers?: ContainerStats[];
  startTime: string;
  cpu?: CpuStats;
  memory?: MemoryStats;
  fs?: FsStats;
  runtime?: { imageFs?: FsStats; containerFs?: FsStats };
  rlimit?: { time: string; maxpid?: number; curproc?: number };
}

export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

/** One container's cumulative figures as the runtime reported them (ns timestamps). */
export interface ContainerSample {
  id: string;
  podUid: string;
  podName: string;
  podNamespace: string;
  name: string;
  /** When the container was created (ns since the epoch). */
  createdAt: bigint;
  cpu?: { at: bigint; usageCoreNanoSeconds: number };
  memory?: { at: bigint; workingSetBytes?: number; usageBytes?: number; rssBytes?: number; pageFaults?: number; majorPageFaults?: number; availableBytes?: number };
  writableLayer?: { at: bigint; usedBytes?: number; inodesUsed?: number };
}

/** A pod with a ready sandbox, and when that sandbox was created. */
export interface PodSample {
  uid: string;
  name: string;
  namespace: string;
  createdAt: bigint;
}

/** An earlier reading of a cumulative CPU counter. */
export interface CpuReading {
  at: bigint;
  usageCoreNanoSeconds: number;
}

export interface SummaryInput {
  /** The node's figures but its CPU, which comes from nodeCpu and the previous reading under `node`. */
  node: Omit<NodeStats, 'cpu'>;
  nodeCpu?: CpuReading;
  pods: PodSample[];
  containers: ContainerSample[];
  /** Earlier CPU readings by container id (and `node`): usageNanoCores is the rate since then. */
  previous: ReadonlyMap<string, CpuReading>;
  /** The image filesystem's capacity and free space, for the containers' rootfs figures. */
  imageFs?: FsStats;
  /** Each container's log usage, by container id. */
  logs?: ReadonlyMap<string, FsStats>;
  /** Only CPU and memory (the kubelet's `only_cpu_and_memory=true`, what metrics-server asks). */
  onlyCpuAndMemory?: boolean;
  /** The pods' cgroup (kubepods), as the `pods` system container; its CPU rate against `previous` under PODS_KEY. */
  podsCgroup?: { startTime: string; cpu?: CpuReading; memory?: MemoryStats };
}

/** The key of the node's own CPU reading among the containers' in SummaryInput.previous. */
export const NODE_KEY = 'node';
/** The key of the pods' cgroup's CPU reading. */
export const PODS_KEY = 'pods';

/** A CRI timestamp (ns) as RFC 3339. */
export function nsTime(ns: bigint): string {
  return new Date(Number(ns / 1_000_000n)).toISOString();
}

/** The rate between two readings of a cumulative counter in nanocores, or undefined when there is none to take. */
export function usageNanoCores(now: CpuReading, before: CpuReading | undefined): number | undefined {
  if (before === undefined || now.at <= before.at || now.usageCoreNanoSeconds < before.usageCoreNanoSeconds) return undefined;
  return Math.round(((now.usageCoreNanoSeconds - before.usageCoreNanoSeconds) * 1e9) / Number(now.at - before.at));
}

function cpuOf(key: string, reading: CpuReading | undefined, previous: ReadonlyMap<string, CpuReading>): CpuStats | undefined {
  if (reading === undefined) return undefined;
  const rate = usageNanoCores(reading, previous.get(key));
  return { time: nsTime(reading.at), ...(rate !== undefined ? { usageNanoCores: rate } : {}), usageCoreNanoSeconds: reading.usageCoreNanoSeconds };
}

/**
 * A container's memory as the kubelet reports it (cAdvisor's view): no page fault counts, and
 * availableBytes only under a memory limit (the runtime says 0 without one).
 */
function memoryOf(m: ContainerSample['memory']): MemoryStats | undefined {
  if (m === undefined) return undefined;
  return {
    time: nsTime(m.at),
    ...defined({ availableBytes: m.availableBytes ? m.availableBytes : undefined, usageBytes: m.usageBytes, workingSetBytes: m.workingSetBytes, rssBytes: m.rssBytes }),
  };
}

function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Figures summed over a pod's containers (undefined when none has the figure). */
function sum(values: Array<number | undefined>): number | undefined {
  const present = values.filter((v): v is number => v !== undefined);
  return present.length === 0 ? undefined : present.reduce((a, b) => a + b, 0);
}

/** The `pods` system container (no filesystem figures, as the kubelet's system containers have none). */
function systemContainers(input: SummaryInput): Pick<NodeStats, 'systemContainers'> {
  const p = input.podsCgroup;
  if (p === undefined) return {};
  const cpu = cpuOf(PODS_KEY, p.cpu, input.previous);
  return { systemContainers: [{ name: 'pods', startTime: p.startTime, ...(cpu ? { cpu } : {}), ...(p.memory ? { memory: p.memory } : {}) }] };
}

/** The Summary of the node and its pods: pods in name order, containers in name order. */
export function buildSummary(input: SummaryInput): Summary {
  const byPod = new Map<string, ContainerSample[]>();
  for (const c of input.containers) byPod.set(c.podUid, [...(byPod.get(c.podUid) ?? []), c]);
  const pods: PodStats[] = [];
  for (const p of [...input.pods].sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name))) {
    const samples = (byPod.get(p.uid) ?? []).sort((a, b) => a.name.localeCompare(b.name));
    const containers: ContainerStats[] = samples.map((c) => {
      const cpu = cpuOf(c.id, c.cpu, input.previous);
      const memory = memoryOf(c.memory);
      const out: ContainerStats = { name: c.name, startTime: nsTime(c.createdAt), ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) };
      if (!input.onlyCpuAndMemory) {
        if (c.writableLayer) {
          const fs = input.imageFs;
          out.rootfs = {
            time: nsTime(c.writableLayer.at),
            ...defined({ availableBytes: fs?.availableBytes, capacityBytes: fs?.capacityBytes, usedBytes: c.writableLayer.usedBytes, inodesFree: fs?.inodesFree, inodes: fs?.inodes, inodesUsed: c.writableLayer.inodesUsed }),
          };
        }
        const logs = input.logs?.get(c.id);
        if (logs) out.logs = logs;
      }
      return out;
    });
    const pod: PodStats = { podRef: { name: p.name, namespace: p.namespace, uid: p.uid }, startTime: nsTime(p.createdAt), containers };
    const cpuReadings = samples.map((c) => c.cpu).filter((c) => c !== undefined);
    if (cpuReadings.length > 0) {
      const at = cpuReadings.reduce((a, c) => (c.at > a ? c.at : a), 0n);
      const rates = samples.map((c) => containers.find((x) => x.name === c.name)?.cpu?.usageNanoCores);
      const rate = rates.every((r) => r !== undefined) ? sum(rates) : undefined;
      pod.cpu = { time: nsTime(at), ...(rate !== undefined ? { usageNanoCores: rate } : {}), usageCoreNanoSeconds: sum(cpuReadings.map((c) => c.usageCoreNanoSeconds)) ?? 0 };
    }
    const mems = samples.map((c) => c.memory).filter((m) => m !== undefined);
    if (mems.length > 0) {
      const at = mems.reduce((a, m) => (m.at > a ? m.at : a), 0n);
      pod.memory = {
        time: nsTime(at),
        ...defined({
          usageBytes: sum(mems.map((m) => m.usageBytes)),
          workingSetBytes: sum(mems.map((m) => m.workingSetBytes)),
          rssBytes: sum(mems.map((m) => m.rssBytes)),
          pageFaults: sum(mems.map((m) => m.pageFaults)),
          majorPageFaults: sum(mems.map((m) => m.majorPageFaults)),
        }),
      };
    }
    if (!input.onlyCpuAndMemory) {
      const used = sum(containers.flatMap((c) => [c.rootfs?.usedBytes, c.logs?.usedBytes]));
      if (used !== undefined) {
        const fs = input.imageFs;
        pod['ephemeral-storage'] = {
          time: containers.find((c) => c.rootfs)?.rootfs?.time ?? nsTime(p.createdAt),
          ...defined({
            availableBytes: fs?.availableBytes,
            capacityBytes: fs?.capacityBytes,
            usedBytes: used,
            inodesFree: fs?.inodesFree,
            inodes: fs?.inodes,
            inodesUsed: sum(containers.flatMap((c) => [c.rootfs?.inodesUsed, c.logs?.inodesUsed])),
          }),
        };
      }
    }
    pods.push(pod);
  }
  const cpu = cpuOf(NODE_KEY, input.nodeCpu, input.previous);
  const { nodeName, startTime, memory, ...rest } = input.node;
  const node: NodeStats = { nodeName, ...systemContainers(input), startTime, ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}), ...(input.onlyCpuAndMemory ? {} : rest) };
  return { node, pods };
}
