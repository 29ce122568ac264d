/**
 * A private cgroup root (src/lib/cm/cgroup-root.ts), what the conformance run
 * and the benchmarks give klet and the kubelet as their cgroupRoot: made in
 * every hierarchy an agent needs (on cgroup v1 with cpuset's cpus and mems
 * copied, or the kubelet cannot put a pod in it), never over one that exists,
 * and removed with everything made under it, in every hierarchy.
 *
 * Real cgroups of the host, under a name of this file's own (removed after).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cgroupTree, makeCgroupRoot, removeCgroupRoot } from '../../src/lib/cm/cgroup-root.js';
import { hostHierarchies, type Hierarchies } from '../../src/lib/cm/manager.js';

const NAME = `/klet-test-root-${randomBytes(4).toString('hex')}`;
let h: Hierarchies;

beforeAll(async () => {
  h = await hostHierarchies();
});

afterAll(async () => {
  if (h) await removeCgroupRoot(NAME, h);
});

/** The mounts an agent needs the root in: every v1 hierarchy (not a hybrid host's cgroup2 one), or the v2 one. */
function needed(): string[] {
  const unified = h.version === 1 ? h.mounts.get('unified') : undefined;
  return [...new Set(h.mounts.values())].filter((m) => m !== unified);
}

describe('makeCgroupRoot / removeCgroupRoot', () => {
  it('makes the root in every hierarchy an agent needs, with the parent cpuset on v1; refuses one that exists; removes all of it', async () => {
    await makeCgroupRoot(NAME, h);
    for (const m of needed()) expect(fs.existsSync(path.join(m, NAME)), m).toBe(true);
    if (h.version === 1) {
      const cpuset = h.mounts.get('cpuset')!;
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        const own = fs.readFileSync(path.join(cpuset, NAME, f), 'utf8').trim();
        expect(own, f).not.toBe('');
        expect(own, f).toBe(fs.readFileSync(path.join(cpuset, f), 'utf8').trim());
      }
    }
    expect(cgroupTree(NAME, h).sort()).toEqual(needed().map((m) => path.join(m, NAME)).sort());

    await expect(makeCgroupRoot(NAME, h)).rejects.toThrow(`cgroup ${path.join(needed()[0]!, NAME)} exists already (not ours)`);

    // What an agent makes under it: nested cgroups, and (the kubelet on a hybrid host) the root in the cgroup2 hierarchy too.
    const cpu = h.mounts.get(h.version === 1 ? 'cpu' : '')!;
    fs.mkdirSync(path.join(cpu, NAME, 'kubepods', 'besteffort', 'podabc'), { recursive: true });
    const unified = h.version === 1 ? h.mounts.get('unified') : undefined;
    if (unified) fs.mkdirSync(path.join(unified, NAME, 'kubepods'), { recursive: true });
    expect(cgroupTree(NAME, h)).toContain(path.join(cpu, NAME, 'kubepods', 'besteffort', 'podabc'));

    await removeCgroupRoot(NAME, h);
    expect(cgroupTree(NAME, h)).toEqual([]);
    for (const m of new Set(h.mounts.values())) expect(fs.existsSync(path.join(m, NAME)), m).toBe(false);
  });
});
