/**
 * The container manager of a one-shot command (`klet runonce`, `klet
 * run-pod`), as `klet sync` has it (the kubelet's --runonce used the same
 * one): its flags go through the one KubeletConfiguration path that
 * `klet sync`'s do (src/cli/sync.ts, lib/kubeletconfig: the same names,
 * defaults and checks), then kubepods and the QoS cgroups are made and each
 * pod gets its pod<uid> cgroup.
 */
import type { PodCgroups } from '../lib/cm/manager.js';
import type { SyncFlags } from './sync.js';

/** The container manager's flags a one-shot command takes (node-flags.ts cgroupFlags and reservationFlags). */
export type CgroupFlags = Pick<SyncFlags, 'cgroups-per-qos' | 'cgroup-root' | 'cgroup-driver' | 'enforce-node-allocatable' | 'kube-reserved' | 'system-reserved'>;

/**
 * Open the container manager of these flags for the node at `rootDir`:
 * undefined with --cgroups-per-qos=false. Bad input is an InputError naming
 * the flag, before anything is made.
 */
export async function openCommandCgroups(flags: CgroupFlags, node: { rootDir: string; nodeName: string }): Promise<PodCgroups | undefined> {
  const { syncConfig, checkedCgroupSettings } = await import('./config-flags.js');
  const given: CgroupFlags = {
    'cgroups-per-qos': flags['cgroups-per-qos'],
    'cgroup-root': flags['cgroup-root'],
    'cgroup-driver': flags['cgroup-driver'],
    'enforce-node-allocatable': flags['enforce-node-allocatable'],
    'kube-reserved': flags['kube-reserved'],
    'system-reserved': flags['system-reserved'],
  };
  const built = await syncConfig(given, { nodeName: node.nodeName, globals: {}, notice: () => undefined }, true);
  const settings = await checkedCgroupSettings(built.config, built.describe);
  if (settings === null) return undefined;
  const { openCgroups } = await import('../lib/cm/manager.js');
  return openCgroups(settings, node.rootDir);
}
