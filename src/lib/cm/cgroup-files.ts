/**
 * cgroup v1 and v2 behind one small interface: which file of which
 * controller a ResourceConfig is written to, and its value, as runc's
 * libcontainer writes them for the kubelet's cgroupfs driver (v1: cpu.shares,
 * cpu.cfs_period_us, cpu.cfs_quota_us, memory.limit_in_bytes, pids.max; v2:
 * cpu.weight from the shares, cpu.max, memory.max, pids.max). Pure.
 */
import type { ResourceConfig } from './resource-config.js';
import type { QOSClass } from '../kuberuntime/resources.js';

export type CgroupVersion = 1 | 2;

/** One write: `<hierarchy of controller>/<cgroup>/<file>` ← value. v2 has one hierarchy (controller ''). */
export interface CgroupWrite {
  controller: string;
  file: string;
  value: string;
}

/** cpu.shares → cpu.weight (runc's ConvertCPUSharesToCgroupV2Value): [2, 262144] → [1, 10000]. */
export function sharesToWeight(shares: number): number {
  if (shares === 0) return 0;
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

/** The writes that give a cgroup these settings, in order (period before quota). */
export function cgroupWrites(version: CgroupVersion, rc: ResourceConfig): CgroupWrite[] {
  const out: CgroupWrite[] = [];
  if (version === 1) {
    if (rc.cpuShares !== undefined && rc.cpuShares !== 0) out.push({ controller: 'cpu', file: 'cpu.shares', value: String(rc.cpuShares) });
    if (rc.cpuPeriod !== undefined && rc.cpuPeriod !== 0) out.push({ controller: 'cpu', file: 'cpu.cfs_period_us', value: String(rc.cpuPeriod) });
    if (rc.cpuQuota !== undefined && rc.cpuQuota !== 0) out.push({ controller: 'cpu', file: 'cpu.cfs_quota_us', value: String(rc.cpuQuota) });
    if (rc.memory !== undefined && rc.memory !== 0) out.push({ controller: 'memory', file: 'memory.limit_in_bytes', value: String(rc.memory) });
    if (rc.pidsLimit !== undefined && rc.pidsLimit !== 0) out.push({ controller: 'pids', file: 'pids.max', value: rc.pidsLimit < 0 ? 'max' : String(rc.pidsLimit) });
    return out;
  }
  if (rc.cpuShares !== undefined && rc.cpuShares !== 0) out.push({ controller: '', file: 'cpu.weight', value: String(sharesToWeight(rc.cpuShares)) });
  const quota = rc.cpuQuota ?? 0;
  const period = rc.cpuPeriod ?? 0;
  if (quota !== 0 || period !== 0) {
    // runc: "max" for no quota; the period only when set.
    const q = quota > 0 ? String(quota) : 'max';
    out.push({ controller: '', file: 'cpu.max', value: period !== 0 ? `${q} ${period}` : q });
  }
  if (rc.memory !== undefined && rc.memory !== 0) out.push({ controller: '', file: 'memory.max', value: rc.memory < 0 ? 'max' : String(rc.memory) });
  if (rc.pidsLimit !== undefined && rc.pidsLimit !== 0) out.push({ controller: '', file: 'pids.max', value: rc.pidsLimit < 0 ? 'max' : String(rc.pidsLimit) });
  return out;
}

/** The controllers a v2 parent enables for its children (cgroup.subtree_control), as the kubelet needs them. */
export const V2_CONTROLLERS = ['cpu', 'memory', 'pids'] as const;

/** The node allocatable cgroup's name (NodeAllocatableRoot with the cgroupfs driver). */
export function kubepodsCgroup(cgroupRoot: string): string {
  return joinCgroup(cgroupRoot, 'kubepods');
}

/** A QoS class's cgroup: Guaranteed pods sit directly in kubepods. */
export function qosCgroup(cgroupRoot: string, qos: QOSClass): string {
  const kubepods = kubepodsCgroup(cgroupRoot);
  return qos === 'Guaranteed' ? kubepods : joinCgroup(kubepods, qos.toLowerCase());
}

/** The pod's cgroup (GetPodContainerName): pod<uid> under its QoS class's cgroup. */
export function podCgroup(cgroupRoot: string, qos: QOSClass, uid: string): string {
  return joinCgroup(qosCgroup(cgroupRoot, qos), `pod${uid}`);
}

/** cgroupfs names are absolute paths from the hierarchy's root. */
export function joinCgroup(...parts: string[]): string {
  const segs = parts.flatMap((p) => p.split('/')).filter((s) => s !== '');
  return '/' + segs.join('/');
}
