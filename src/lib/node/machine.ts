/**
 * What the node reports about its machine (the kubelet's cadvisor MachineInfo
 * and node status setters): CPUs, memory, the root dir's filesystem, and the
 * node info identifiers. Read fresh on each call; nothing is cached here.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import { nodeHostname } from './addresses.js';

export interface MachineFacts {
  cpus: number;
  /** Pre-allocated huge pages by resource name (hugepages-2Mi, hugepages-1Gi), in bytes. */
  hugepages: Record<string, number>;
  memoryBytes: number;
  /** MemAvailable from /proc/meminfo. */
  memoryAvailableBytes: number;
  /** Size of the filesystem holding the root dir. */
  fsCapacityBytes: number;
  /** Space available to unprivileged users on it (statfs bavail). */
  fsAvailableBytes: number;
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  operatingSystem: string;
  architecture: string;
  hostname: string;
}

async function readTrim(file: string): Promise<string> {
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    return '';
  }
}

function meminfoBytes(text: string, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : 0;
}

/** PRETTY_NAME of /etc/os-release, as the kubelet's osImage. */
export function osImageFrom(osRelease: string): string {
  const m = /^PRETTY_NAME=(.*)$/m.exec(osRelease);
  if (!m) return 'Linux';
  return m[1]!.trim().replace(/^["'](.*)["']$/, '$1');
}

/** Node's process.arch in GOARCH spelling (runtime.GOARCH, the kubernetes.io/arch label). */
export function goArch(arch: string = process.arch): string {
  const map: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };
  return map[arch] ?? arch;
}

/** Pre-allocated huge pages per size, as the kubelet's hugepages-<size> capacity. */
async function readHugepages(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  let dirs: string[];
  try {
    dirs = await fs.readdir('/sys/kernel/mm/hugepages');
  } catch {
    return out;
  }
  for (const d of dirs) {
    const m = /^hugepages-(\d+)kB$/.exec(d);
    if (!m) continue;
    const kb = Number(m[1]);
    const name = kb % (1024 * 1024) === 0 ? `hugepages-${kb / 1024 / 1024}Gi` : kb % 1024 === 0 ? `hugepages-${kb / 1024}Mi` : `hugepages-${kb}Ki`;
    const n = Number(await readTrim(`/sys/kernel/mm/hugepages/${d}/nr_hugepages`)) || 0;
    out[name] = n * kb * 1024;
  }
  return out;
}

/**
 * The node's CPUs (as millicores) and memory, as the kubelet's node capacity
 * counts them (the downward API's limits default to these). Callers that
 * need them per container keep the answer (NodeCache.capacity()):
 * os.cpus() reads /proc/stat, /proc/cpuinfo and every CPU's cpufreq.
 */
export function nodeCapacity(): { cpuMillis: number; memoryBytes: number } {
  return { cpuMillis: os.cpus().length * 1000, memoryBytes: os.totalmem() };
}

export async function readMachineFacts(rootDir: string): Promise<MachineFacts> {
  const meminfo = await readTrim('/proc/meminfo');
  const st = await fs.statfs(rootDir);
  const machineID = (await readTrim('/etc/machine-id')) || (await readTrim('/var/lib/dbus/machine-id'));
  return {
    cpus: os.cpus().length,
    hugepages: await readHugepages(),
    memoryBytes: meminfoBytes(meminfo, 'MemTotal'),
    memoryAvailableBytes: meminfoBytes(meminfo, 'MemAvailable'),
    fsCapacityBytes: st.blocks * st.bsize,
    fsAvailableBytes: st.bavail * st.bsize,
    machineID,
    // Readable by root only; the kubelet leaves it empty when it cannot read it.
    systemUUID: (await readTrim('/sys/class/dmi/id/product_uuid')).toLowerCase(),
    bootID: await readTrim('/proc/sys/kernel/random/boot_id'),
    kernelVersion: os.release(),
    osImage: osImageFrom(await readTrim('/etc/os-release')),
    operatingSystem: 'linux',
    architecture: goArch(),
    hostname: nodeHostname(),
  };
}
