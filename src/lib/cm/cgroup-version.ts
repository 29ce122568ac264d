/**
 * Whether the host runs the unified cgroup hierarchy (cgroup v2), decided as
 * the kubelet decides it (opencontainers/cgroups IsCgroup2UnifiedMode):
 * /sys/fs/cgroup is a cgroup2 filesystem. A hybrid host (a tmpfs there with
 * v1 controllers, cgroup2 mounted beside them at /sys/fs/cgroup/unified) is
 * cgroup v1; so is a host where /sys/fs/cgroup cannot be read. Synchronous
 * and without the container manager (manager.ts hostHierarchies reads the
 * mounts too), for the configuration's checks at start.
 */
import fs from 'node:fs';

/** CGROUP2_SUPER_MAGIC. */
const CGROUP2_SUPER_MAGIC = 0x63677270;

export function isCgroup2UnifiedMode(mountPoint = '/sys/fs/cgroup'): boolean {
  try {
    return fs.statfsSync(mountPoint).type === CGROUP2_SUPER_MAGIC;
  } catch {
    return false;
  }
}
