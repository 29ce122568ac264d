/**
 * The node's own figures for the Summary API, where cAdvisor takes them for the kubelet: CPU and
 * memory of the root cgroup (cgroup v1: cpuacct.usage and memory.usage_in_bytes minus
 * total_inactive_file, the working set; cgroup v2, whose root has no memory.current:
 * /proc/meminfo), the root dir's filesystem (statfs), and the process limit.
 */
import fs from 'node:fs/promises';
import type { CpuReading, FsStats, MemoryStats } from './summary.js';

/** Where the cgroup hierarchy and /proc are (tests point them elsewhere). */
export interface NodeStatsPaths {
  cgroupRoot: string;
  proc: string;
}

export const HOST_PATHS: NodeStatsPaths = { cgroupRoot: '/sys/fs/cgroup', proc: '/proc' };

/** `key value` lines (memory.stat, cpu.stat) as a map. */
export function parseKeyValues(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && /^\d+$/.test(v)) out.set(k, Number(v));
  }
  return out;
}

/** /proc/meminfo in bytes by field. */
export function parseMeminfo(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([^:]+):\s+(\d+)(?:\s+kB)?/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]) * (line.includes('kB') ? 1024 : 1));
  }
  return out;
}

/** The node's memory as cAdvisor reports the root cgroup (v1), or from /proc/meminfo (v2). */
export function nodeMemory(at: Date, meminfo: Map<string, number>, v1?: { usage: number; stat: Map<string, number> }): MemoryStats {
  const capacity = meminfo.get('MemTotal') ?? 0;
  let usage: number;
  let workingSet: number;
  let rss: number | undefined;
  let faults: number | undefined;
  let majorFaults: number | undefined;
  if (v1 !== undefined) {
    usage = v1.usage;
    const inactiveFile = v1.stat.get('total_inactive_file') ?? 0;
    workingSet = Math.max(0, usage - inactiveFile);
    rss = v1.stat.get('total_rss');
    // cAdvisor's root figures: the root cgroup's own fault counters, not the hierarchy's totals.
    faults = v1.stat.get('pgfault');
    majorFaults = v1.stat.get('pgmajfault');
  } else {
    usage = capacity - (meminfo.get('MemFree') ?? 0);
    workingSet = Math.max(0, usage - (meminfo.get('Inactive(file)') ?? 0));
  }
  return {
    time: at.toISOString(),
    availableBytes: Math.max(0, capacity - workingSet),
    usageBytes: usage,
    workingSetBytes: workingSet,
    ...(rss !== undefined ? { rssBytes: rss } : {}),
    ...(faults !== undefined ? { pageFaults: faults } : {}),
    ...(majorFaults !== undefined ? { majorPageFaults: majorFaults } : {}),
  };
}

async function read(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Whether the hierarchy is cgroup v2 (one unified tree with cgroup.controllers at its root). */
async function unified(paths: NodeStatsPaths): Promise<boolean> {
  return (await read(`${paths.cgroupRoot}/cgroup.controllers`)) !== undefined;
}

/** The node's cumulative CPU time (ns), read now. */
export async function readNodeCpu(paths: NodeStatsPaths = HOST_PATHS): Promise<CpuReading | undefined> {
  const at = BigInt(Date.now()) * 1_000_000n;
  if (await unified(paths)) {
    const usec = parseKeyValues((await read(`${paths.cgroupRoot}/cpu.stat`)) ?? '').get('usage_usec');
    return usec === undefined ? undefined : { at, usageCoreNanoSeconds: usec * 1000 };
  }
  for (const dir of ['cpu,cpuacct', 'cpuacct']) {
    const text = await read(`${paths.cgroupRoot}/${dir}/cpuacct.usage`);
    if (text !== undefined && /^\d+/.test(text.trim())) return { at, usageCoreNanoSeconds: Number(text.trim()) };
  }
  return undefined;
}

/** The node's memory, read now. */
export async function readNodeMemory(paths: NodeStatsPaths = HOST_PATHS): Promise<MemoryStats | undefined> {
  const meminfo = parseMeminfo((await read(`${paths.proc}/meminfo`)) ?? '');
  if (!meminfo.has('MemTotal')) return undefined;
  const at = new Date();
  if (await unified(paths)) return nodeMemory(at, meminfo);
  const usage = await read(`${paths.cgroupRoot}/memory/memory.usage_in_bytes`);
  const stat = await read(`${paths.cgroupRoot}/memory/memory.stat`);
  if (usage === undefined || stat === undefined) return nodeMemory(at, meminfo);
  return nodeMemory(at, meminfo, { usage: Number(usage.trim()), stat: parseKeyValues(stat) });
}

/** A cgroup's directories for its figures: the memory and cpuacct hierarchies' (v1), or its one directory (v2). */
export interface CgroupStatsDirs {
  version: 1 | 2;
  memory?: string;
  cpu?: string;
}

/** cAdvisor's bound over which a memory limit counts as none (1 << 62). */
const UNLIMITED = 2 ** 62;

/**
 * A cgroup's memory as cAdvisor reports a container for the kubelet: the
 * working set is the usage less the inactive file pages (hierarchical in
 * v1), RSS the anonymous memory, the page faults the cgroup's own, and the
 * available bytes the limit less the working set (none without a limit).
 */
export function cgroupMemory(at: Date, version: 1 | 2, usage: number, stat: Map<string, number>, limit: number | undefined): MemoryStats {
  const workingSet = Math.max(0, usage - (stat.get(version === 1 ? 'total_inactive_file' : 'inactive_file') ?? 0));
  const rss = stat.get(version === 1 ? 'total_rss' : 'anon');
  return {
    time: at.toISOString(),
    ...(limit !== undefined && limit < UNLIMITED ? { availableBytes: Math.max(0, limit - workingSet) } : {}),
    usageBytes: usage,
    workingSetBytes: workingSet,
    ...(rss !== undefined ? { rssBytes: rss } : {}),
    ...(stat.has('pgfault') ? { pageFaults: stat.get('pgfault') } : {}),
    ...(stat.has('pgmajfault') ? { majorPageFaults: stat.get('pgmajfault') } : {}),
  };
}

/** A cgroup's cumulative CPU time and memory, read now (what is missing is left out). */
export async function readCgroupStats(d: CgroupStatsDirs): Promise<{ cpu?: CpuReading; memory?: MemoryStats }> {
  const at = new Date();
  const atNs = BigInt(at.getTime()) * 1_000_000n;
  const v1 = d.version === 1;
  const [cpuText, usageText, statText, limitText] = await Promise.all([
    d.cpu === undefined ? undefined : read(`${d.cpu}/${v1 ? 'cpuacct.usage' : 'cpu.stat'}`),
    d.memory === undefined ? undefined : read(`${d.memory}/${v1 ? 'memory.usage_in_bytes' : 'memory.current'}`),
    d.memory === undefined ? undefined : read(`${d.memory}/memory.stat`),
    d.memory === undefined ? undefined : read(`${d.memory}/${v1 ? 'memory.limit_in_bytes' : 'memory.max'}`),
  ]);
  const out: { cpu?: CpuReading; memory?: MemoryStats } = {};
  const cpuNs = cpuText === undefined ? undefined : v1 ? Number(cpuText.trim()) : (parseKeyValues(cpuText).get('usage_usec') ?? NaN) * 1000;
  if (cpuNs !== undefined && Number.isFinite(cpuNs)) out.cpu = { at: atNs, usageCoreNanoSeconds: cpuNs };
  const usage = Number(usageText?.trim());
  if (usageText !== undefined && statText !== undefined && Number.isFinite(usage)) {
    const limit = limitText === undefined || limitText.trim() === 'max' ? undefined : Number(limitText.trim());
    out.memory = cgroupMemory(at, d.version, usage, parseKeyValues(statText), limit !== undefined && Number.isFinite(limit) ? limit : undefined);
  }
  return out;
}

/** A filesystem's figures from statfs (capacity and free space as the kubelet's fs info gives them). */
export async function readFsStats(dir: string): Promise<FsStats | undefined> {
  try {
    const s = await fs.statfs(dir);
    const capacity = s.blocks * s.bsize;
    const available = s.bavail * s.bsize;
    return {
      time: new Date().toISOString(),
      availableBytes: available,
      capacityBytes: capacity,
      usedBytes: (s.blocks - s.bfree) * s.bsize,
      inodesFree: s.ffree,
      inodes: s.files,
      inodesUsed: s.files - s.ffree,
    };
  } catch {
    return undefined;
  }
}

/**
 * The node's task limit, as the kubelet's pidlimit.Stats takes it: the
 * smaller of kernel.pid_max and kernel.threads-max (both limit the tasks of
 * the system); undefined when neither can be read.
 */
export async function readMaxPid(paths: NodeStatsPaths = HOST_PATHS): Promise<number | undefined> {
  const limits = await Promise.all(['pid_max', 'threads-max'].map(async (f) => Number((await read(`${paths.proc}/sys/kernel/${f}`))?.trim() || NaN)));
  const known = limits.filter((n) => Number.isFinite(n));
  return known.length > 0 ? Math.min(...known) : undefined;
}

/**
 * The task limit and how many tasks exist (the node's rlimit figures): the
 * count is /proc/loadavg's total of scheduling entities (threads included),
 * as the kubelet reads it, else the processes in /proc.
 */
export async function readRlimit(paths: NodeStatsPaths = HOST_PATHS): Promise<{ time: string; maxpid?: number; curproc?: number }> {
  const max = await readMaxPid(paths);
  let cur = Number(/^\S+ \S+ \S+ \d+\/(\d+)/.exec((await read(`${paths.proc}/loadavg`)) ?? '')?.[1] ?? NaN);
  if (!Number.isFinite(cur)) {
    try {
      cur = (await fs.readdir(paths.proc)).filter((n) => /^\d+$/.test(n)).length;
    } catch {
      cur = NaN;
    }
  }
  return { time: new Date().toISOString(), ...(max !== undefined ? { maxpid: max } : {}), ...(Number.isFinite(cur) ? { curproc: cur } : {}) };
}
