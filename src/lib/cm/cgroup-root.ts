/**
 * A private cgroup root: a cgroup of the caller's own at the top of every
 * hierarchy, given to an agent as its --cgroup-root (cgroupRoot) so that its
 * pod and QoS cgroups stay away from the host's /kubepods. The conformance
 * run (test/conformance/run.ts) and the benchmarks (bench/bench.js) give one
 * to klet and to the kubelet alike.
 *
 * On cgroup v1 it is made in every v1 hierarchy, cpuset's cpus and mems
 * copied from the parent (a new cpuset cgroup has none, and the kubelet does
 * not fill in its root's); on a v2-only host in the unified hierarchy. On a
 * hybrid host the kubelet also makes it (and its children) in the v2
 * hierarchy beside the v1 ones: removeCgroupRoot removes it from every
 * hierarchy.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { type Hierarchies, copyCpuset, hostHierarchies, rmdirTree } from './manager.js';

/** Every mount point of the host's hierarchies, each once (a hybrid host's cgroup2 mount included). */
function allMounts(h: Hierarchies): string[] {
  return [...new Set(h.mounts.values())];
}

/**
 * Create cgroup `name` (e.g. "/klet-bench-1a2b3c") in every hierarchy an
 * agent needs it in. Refuses one that exists already in any hierarchy (not
 * the caller's); on a failure what this call made is removed.
 */
export async function makeCgroupRoot(name: string, hierarchies?: Hierarchies): Promise<void> {
  const h = hierarchies ?? (await hostHierarchies());
  const existing = allMounts(h).map((m) => path.join(m, name)).filter((d) => fs.existsSync(d));
  if (existing.length > 0) throw new Error(`cgroup ${existing[0]} exists already (not ours)`);
  const unified = h.version === 1 ? h.mounts.get('unified') : undefined;
  const made: string[] = [];
  try {
    for (const mount of allMounts(h).filter((m) => m !== unified)) {
      const dir = path.join(mount, name);
      await fsp.mkdir(dir);
      made.push(dir);
      if (h.version === 1 && mount === h.mounts.get('cpuset')) await copyCpuset(dir);
    }
  } catch (err) {
    for (const dir of made.reverse()) await rmdirTree(dir).catch(() => undefined);
    throw err;
  }
}

/** Remove cgroup `name` and every cgroup under it from every hierarchy (deepest first); absent ones are skipped. */
export async function removeCgroupRoot(name: string, hierarchies?: Hierarchies): Promise<void> {
  const h = hierarchies ?? (await hostHierarchies());
  for (const mount of allMounts(h)) await rmdirTree(path.join(mount, name));
}

/** The cgroup directories of `name`'s tree (itself included) in every hierarchy: what is left of it. */
export function cgroupTree(name: string, hierarchies: Hierarchies): string[] {
  const walk = (dir: string): string[] => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return [];
    }
    return [dir, ...entries.filter((e) => e.isDirectory()).flatMap((e) => walk(path.join(dir, e.name)))];
  };
  return allMounts(hierarchies).flatMap((m) => walk(path.join(m, name)));
}
