/**
 * Pod and QoS cgroups, as the kubelet's container manager makes them with
 * the cgroupfs driver (--cgroups-per-qos): `<cgroup-root>/kubepods` (node
 * allocatable), its `burstable` and `besteffort` children, and a
 * `pod<uid>` cgroup per pod (Guaranteed pods directly under kubepods), whose
 * name the runtime gets as the sandbox's cgroup_parent. With the systemd
 * driver the same cgroups are systemd slices (kubepods.slice,
 * kubepods-burstable.slice, kubepods-burstable-pod<uid>.slice: lib/cm/systemd.ts),
 * started over D-Bus with their settings as unit properties and stopped when
 * they go; their files are written as with cgroupfs (as libcontainer does).
 * Names inside this module are the cgroupfs form; `literal()` is the path in
 * the hierarchies (and the cgroup_parent) that the driver gives them.
 *
 * klet never changes or removes a cgroup it did not create: each cgroup it
 * creates is recorded first (a marker file under <root-dir>/cgroups), and
 * only recorded ones get settings written or are removed. A `kubepods` that
 * another kubelet made is used as it is. One exception, the pod cgroups the
 * runtime re-makes for klet: runc creates a sandbox's cgroup_parent if it is
 * missing, so a pod cgroup removed (with its record) while a sandbox of the
 * same pod UID was being created — `klet delete` racing a `klet sync` that
 * re-creates the pod — comes back with neither klet's record nor its
 * settings. A `pod<uid>` directly under a QoS cgroup klet made is klet's:
 * recorded and given its settings when the pod is synced (ensurePod,
 * reclaimPod), removed with the pod.
 *
 * A pod cgroup is removed only once nothing runs in it: one that still holds
 * a process after its pod's sandboxes were removed is in use by a new
 * instance of the same pod UID (a sync that re-created the pod meanwhile),
 * and is left to it, with its record.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { InputError, errorMessage } from '../errors.js';
import { log } from '../log.js';
import { qosClass, type QOSClass } from '../kuberuntime/resources.js';
import { type CgroupVersion, V2_CONTROLLERS, cgroupWrites, kubepodsCgroup, podCgroup, qosCgroup } from './cgroup-files.js';
import { type PodCgroupOptions, type ResourceConfig, nodeAllocatableConfig, qosCgroupConfigs, resourceConfigForPod } from './resource-config.js';
import type { CgroupDriver, CgroupSettings } from './settings.js';
import { type Systemd, resourceProperties, sliceProperties, toSystemdPath, unitOf } from './systemd.js';
import { nodeCapacity } from '../node/machine.js';
import { type CgroupStatsDirs, readMaxPid } from '../stats/node-stats.js';

/** CGROUP2_SUPER_MAGIC: /sys/fs/cgroup is the unified hierarchy. */
const CGROUP2_MAGIC = 0x63677270;

/** The cgroup hierarchies of the host: controller (or name=...) → mount point. */
export interface Hierarchies {
  version: CgroupVersion;
  /** v1: one entry per mounted hierarchy (its first controller names it); v2: { '': mount }. */
  mounts: Map<string, string>;
}

/**
 * The cgroup hierarchies in /proc/self/mountinfo: every cgroup v1 mount (by
 * its controllers, or name=… for a named one) and, on a hybrid host, the
 * cgroup2 mount beside them (runc puts containers there too).
 */
export function parseMountinfo(text: string, version: CgroupVersion): Map<string, string> {
  const mounts = new Map<string, string>();
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const pre = line.slice(0, sep).split(' ');
    const [fstype, , superOpts = ''] = line.slice(sep + 3).split(' ');
    const mountPoint = pre[4];
    if (mountPoint === undefined) continue;
    if (version === 2) {
      if (fstype === 'cgroup2' && !mounts.has('')) mounts.set('', mountPoint);
      continue;
    }
    if (fstype === 'cgroup2') mounts.set('unified', mountPoint);
    if (fstype !== 'cgroup') continue;
    for (const opt of superOpts.split(',')) {
      if (['rw', 'ro', 'clone_children', 'noprefix', 'xattr', 'cpuset_v2_mode'].includes(opt) || opt.startsWith('release_agent=')) continue;
      if (!mounts.has(opt)) mounts.set(opt, mountPoint);
    }
  }
  return mounts;
}

/** The host's hierarchies: v2 when /sys/fs/cgroup is cgroup2, else v1 (legacy or hybrid). */
export async function hostHierarchies(): Promise<Hierarchies> {
  const st = await fsp.statfs('/sys/fs/cgroup');
  const version: CgroupVersion = st.type === CGROUP2_MAGIC ? 2 : 1;
  return { version, mounts: parseMountinfo(await fsp.readFile('/proc/self/mountinfo', 'utf8'), version) };
}

export interface CgroupManagerOptions {
  /** --cgroup-root (cgroupfs form, e.g. "/"). */
  cgroupRoot: string;
  /** How errors name cgroupRoot (where it came from: its flag, or file:line and the field); default: the field. */
  cgroupRootName?: string;
  /** klet's root dir: where the record of the cgroups klet made is kept. */
  rootDir: string;
  /** The settings of kubepods (node allocatable). */
  nodeAllocatable: ResourceConfig;
  pod?: PodCgroupOptions;
  /** pids.max of each pod cgroup when > 0 (the kubelet's podPidsLimit, set as its pod container manager's EnsureExists sets it). */
  podPidsLimit?: number;
  /** The host's hierarchies (hostHierarchies()). */
  hierarchies: Hierarchies;
  /** Default cgroupfs. */
  driver?: CgroupDriver;
  /** systemd's Manager, with the systemd driver. */
  systemd?: Systemd;
}

/** A cgroupfs-form name as the driver lays it out: the path in each hierarchy, and the runtime's cgroup_parent. */
export function literalCgroup(driver: CgroupDriver | undefined, name: string): string {
  return driver === 'systemd' ? toSystemdPath(name) : name;
}

/** What the pod sync needs of the container manager. */
export interface PodCgroups {
  /** The pod's cgroup (cgroup_parent of its sandbox and containers). */
  parentOf(pod: V1Pod): string;
  /** Create the pod's cgroup with its settings (if klet has not) and update the QoS cgroups; the cgroup_parent. */
  ensurePod(pod: V1Pod): Promise<string>;
  /** Remove the pod's cgroup, if klet made it (or the runtime re-made it under klet's QoS cgroup) and nothing runs in it. */
  removePod(uid: string): Promise<void>;
  /**
   * The pod's cgroup as the runtime re-made it (under a QoS cgroup klet
   * made, with no record of klet's): recorded and given its settings, as
   * ensurePod does; nothing otherwise (one look at the record).
   */
  reclaimPod?(pod: V1Pod): Promise<void>;
  /** The settings the pod's cgroup gets for this spec (ResourceConfigForPod). */
  podConfig(pod: V1Pod): ResourceConfig;
  /** Write some settings of the pod's cgroup (an in-place resize), if klet made it; the burstable QoS cgroup follows. */
  setPodConfig(pod: V1Pod, rc: ResourceConfig): Promise<void>;
}

export class CgroupManager implements PodCgroups {
  /** Pods with a cgroup: what the burstable QoS cgroup's shares are summed from. */
  private readonly pods = new Map<string, V1Pod>();

  private constructor(private readonly opts: CgroupManagerOptions) {}

  /**
   * Check --cgroup-root and create kubepods and the QoS cgroups (those
   * missing). On any failure, what this call created is removed and an
   * InputError names the flag.
   */
  static async open(opts: CgroupManagerOptions): Promise<CgroupManager> {
    const m = new CgroupManager(opts);
    const rootName = opts.cgroupRootName ?? 'cgroupRoot';
    assertCgroupRoot(literalCgroup(opts.driver, opts.cgroupRoot), opts.cgroupRoot, rootName, opts.hierarchies);
    if (opts.driver === 'systemd' && !opts.systemd) throw new Error('the systemd cgroup driver needs a connection to systemd');
    const created: string[] = [];
    try {
      const kubepods = kubepodsCgroup(opts.cgroupRoot);
      await m.create(kubepods, opts.nodeAllocatable, created);
      for (const qos of ['Burstable', 'BestEffort'] as const) await m.create(qosCgroup(opts.cgroupRoot, qos), qosCgroupConfigs([])[qos === 'Burstable' ? 'burstable' : 'besteffort'], created);
    } catch (err) {
      for (const name of created.reverse()) await m.remove(name).catch(() => undefined);
      throw new InputError(`${rootName} ${opts.cgroupRoot}: ${errorMessage(err)} (--cgroups-per-qos=false --enforce-node-allocatable=none keeps the runtime's cgroups)`, { cause: err });
    }
    return m;
  }

  parentOf(pod: V1Pod): string {
    return this.literal(podCgroup(this.opts.cgroupRoot, qosClass(pod), pod.metadata?.uid ?? ''));
  }

  private literal(name: string): string {
    return literalCgroup(this.opts.driver, name);
  }

  async ensurePod(pod: V1Pod): Promise<string> {
    const qos = qosClass(pod);
    const name = podCgroup(this.opts.cgroupRoot, qos, pod.metadata?.uid ?? '');
    const uid = pod.metadata?.uid ?? '';
    this.pods.set(uid, pod);
    const pids = this.opts.podPidsLimit ?? -1;
    await this.create(name, { ...resourceConfigForPod(pod, this.opts.pod), ...(pids > 0 ? { pidsLimit: pids } : {}) }, [], qosCgroup(this.opts.cgroupRoot, qos));
    await this.updateQOS();
    return this.literal(name);
  }

  async reclaimPod(pod: V1Pod): Promise<void> {
    const qos = qosClass(pod);
    const name = podCgroup(this.opts.cgroupRoot, qos, pod.metadata?.uid ?? '');
    if (fs.existsSync(this.marker(name)) || !this.reMadeByRuntime(name, qosCgroup(this.opts.cgroupRoot, qos))) return;
    log.debug(`pod cgroup ${this.literal(name)}: made again by the runtime without klet's record or settings; recorded, its settings written`);
    await this.ensurePod(pod);
  }

  /** A pod cgroup with no record of klet's, in a hierarchy, under the QoS cgroup `parent` klet made: the runtime made it for klet's pod. */
  private reMadeByRuntime(name: string, parent: string): boolean {
    return fs.existsSync(this.marker(parent)) && this.dirs(name).some((d) => fs.existsSync(d));
  }

  podConfig(pod: V1Pod): ResourceConfig {
    return resourceConfigForPod(pod, this.opts.pod);
  }

  async setPodConfig(pod: V1Pod, rc: ResourceConfig): Promise<void> {
    const name = podCgroup(this.opts.cgroupRoot, qosClass(pod), pod.metadata?.uid ?? '');
    if (!fs.existsSync(this.marker(name))) return;
    this.pods.set(pod.metadata?.uid ?? '', pod);
    await this.write(name, rc);
    await this.updateQOS();
  }

  async removePod(uid: string): Promise<void> {
    this.pods.delete(uid);
    for (const qos of ['Guaranteed', 'Burstable', 'BestEffort'] as QOSClass[]) {
      const name = podCgroup(this.opts.cgroupRoot, qos, uid);
      if (!fs.existsSync(this.marker(name)) && !this.reMadeByRuntime(name, qosCgroup(this.opts.cgroupRoot, qos))) continue;
      const dirs = this.dirs(name);
      const busy = await populatedCgroup(dirs);
      if (busy !== null) {
        log.debug(`pod cgroup ${this.literal(name)} left: in use (${busy}), a new instance of pod ${uid} runs in it`);
        continue;
      }
      try {
        await this.remove(name);
      } catch (err) {
        if (!(err instanceof CgroupInUseError)) throw err;
        log.debug(`pod cgroup ${this.literal(name)} left: ${err.message}`);
      }
    }
    await this.updateQOS();
  }

  /** Where kubepods' figures are read (the Summary's `pods` system container, the eviction manager's allocatable memory). */
  kubepodsStatsDirs(): CgroupStatsDirs {
    const { version, mounts } = this.opts.hierarchies;
    const name = this.literal(kubepodsCgroup(this.opts.cgroupRoot));
    const dir = (mount: string | undefined) => (mount === undefined ? undefined : path.join(mount, name));
    if (version === 2) {
      const unified = dir(mounts.get(''));
      return unified === undefined ? { version } : { version, memory: unified, cpu: unified };
    }
    const memory = dir(mounts.get('memory'));
    const cpu = dir(mounts.get('cpuacct'));
    return { version, ...(memory !== undefined ? { memory } : {}), ...(cpu !== undefined ? { cpu } : {}) };
  }

  /** The burstable QoS cgroup's shares follow its pods (the kubelet's UpdateCgroups). */
  private async updateQOS(): Promise<void> {
    const name = qosCgroup(this.opts.cgroupRoot, 'Burstable');
    if (fs.existsSync(this.marker(name))) await this.write(name, qosCgroupConfigs([...this.pods.values()]).burstable);
  }

  /** The cgroup's directory in each hierarchy. */
  private dirs(name: string): string[] {
    return [...new Set(this.opts.hierarchies.mounts.values())].map((mount) => path.join(mount, this.literal(name)));
  }

  private marker(name: string): string {
    return path.join(this.opts.rootDir, 'cgroups', encodeURIComponent(this.literal(name)));
  }

  /**
   * Create `name` in every hierarchy if klet has not yet, and write its
   * settings if it is klet's. Created names are pushed to `created`. With
   * `adoptUnder` (a pod cgroup's QoS cgroup): one that exists without klet's
   * record is klet's all the same when klet made that parent (the runtime
   * made it again for klet's pod): recorded now, its settings written.
   */
  private async create(name: string, rc: ResourceConfig, created: string[], adoptUnder?: string): Promise<void> {
    const marker = this.marker(name);
    const literal = this.literal(name);
    const required = requiredMounts(this.opts.hierarchies);
    const exists = [...required].every((mount) => fs.existsSync(path.join(mount, literal)));
    if (exists && !fs.existsSync(marker)) {
      if (adoptUnder === undefined || !fs.existsSync(this.marker(adoptUnder))) return; // someone else's: used as it is
      await fsp.mkdir(path.dirname(marker), { recursive: true, mode: 0o700 });
      await fsp.writeFile(marker, literal + '\n');
    }
    if (!exists) {
      // The record first: a crash after it leaves a cgroup klet knows is its own.
      await fsp.mkdir(path.dirname(marker), { recursive: true, mode: 0o700 });
      await fsp.writeFile(marker, literal + '\n');
      created.push(name);
      const { version, mounts } = this.opts.hierarchies;
      if (this.opts.systemd) {
        // The slice first (systemd makes its directories in the controllers it manages); the rest below, as libcontainer's joinCgroups.
        const { unit, parent } = unitOf(literal);
        await this.opts.systemd.startSlice(unit, [...sliceProperties(unit, parent), ...resourceProperties(version, rc, this.opts.systemd.version)]);
      }
      for (const mount of new Set(mounts.values())) {
        const dir = path.join(mount, literal);
        if (fs.existsSync(dir)) continue;
        // A hierarchy the kubelet does not require, without the parent (a --cgroup-root made in the required ones only): left to the runtime.
        if (!required.has(mount) && !fs.existsSync(path.dirname(dir))) continue;
        if (version === 2) await enableControllers(path.dirname(dir));
        await fsp.mkdir(dir).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw new Error(`cannot create cgroup ${dir}: ${errorMessage(err)}`);
        });
        // The cpuset hierarchy (alone or co-mounted with others).
        if (mount === mounts.get('cpuset')) await copyCpuset(dir);
      }
    }
    await this.write(name, rc);
  }

  private async write(name: string, rc: ResourceConfig): Promise<void> {
    const { version, mounts } = this.opts.hierarchies;
    const literal = this.literal(name);
    // systemd's unit gets the settings too, or it would write its own back on its next realisation (libcontainer's Set).
    if (this.opts.systemd) await this.opts.systemd.setProperties(unitOf(literal).unit, resourceProperties(version, rc, this.opts.systemd.version));
    for (const w of cgroupWrites(version, rc)) {
      const mount = mounts.get(w.controller);
      if (mount === undefined) continue;
      const file = path.join(mount, literal, w.file);
      await fsp.writeFile(file, w.value).catch((err) => {
        throw new Error(`cannot write ${w.value} to ${file}: ${errorMessage(err)}`);
      });
    }
  }

  /**
   * Remove a cgroup klet made (and what the runtime left in it), then its
   * record. A CgroupInUseError when a process turns up in it meanwhile (the
   * record is kept).
   */
  private async remove(name: string): Promise<void> {
    if (this.opts.systemd) await this.opts.systemd.stopUnit(unitOf(this.literal(name)).unit);
    for (const dir of this.dirs(name)) await rmdirTree(dir, { inUse: 'fail' });
    await fsp.rm(this.marker(name), { force: true });
  }
}

/** v2: the parent lets its children have the cpu, memory and pids controllers. */
async function enableControllers(parent: string): Promise<void> {
  const have = (await fsp.readFile(path.join(parent, 'cgroup.subtree_control'), 'utf8')).split(/\s+/);
  const want = V2_CONTROLLERS.filter((c) => !have.includes(c));
  if (want.length > 0) await fsp.writeFile(path.join(parent, 'cgroup.subtree_control'), want.map((c) => `+${c}`).join(' '));
}

/** v1 cpuset: a new cgroup starts with no CPUs or memory nodes; it gets its parent's. */
export async function copyCpuset(dir: string): Promise<void> {
  for (const f of ['cpuset.cpus', 'cpuset.mems']) {
    const own = (await fsp.readFile(path.join(dir, f), 'utf8')).trim();
    if (own !== '') continue;
    await fsp.writeFile(path.join(dir, f), await fsp.readFile(path.join(path.dirname(dir), f), 'utf8'));
  }
}

/** A cgroup that could not be removed because a process runs in it (rmdirTree with `inUse: 'fail'`). */
export class CgroupInUseError extends Error {}

/** The processes of one cgroup (its cgroup.procs), none when it has gone or cannot be read. */
async function cgroupProcs(dir: string): Promise<string[]> {
  const text = await fsp.readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  return text.split('\n').filter((l) => l !== '');
}

/**
 * The first cgroup of the trees at `dirs` (each a cgroup and its
 * descendants, in its hierarchy) that a process runs in, as
 * "<dir>: pid <pid>"; null when none does.
 */
export async function populatedCgroup(dirs: readonly string[]): Promise<string | null> {
  const walk = async (dir: string): Promise<string | null> => {
    let entries: fs.Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch {
      return null;
    }
    const procs = await cgroupProcs(dir);
    if (procs.length > 0) return `${dir}: pid ${procs[0]}`;
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const found = await walk(path.join(dir, e.name));
      if (found !== null) return found;
    }
    return null;
  };
  for (const dir of dirs) {
    const found = await walk(dir);
    if (found !== null) return found;
  }
  return null;
}

/**
 * rmdir a cgroup and the cgroups under it, deepest first (a cgroup dir
 * holds only control files, which rmdir ignores). A cgroup whose last
 * process is still exiting is busy for a moment: retried for up to 5 s.
 * With `inUse: 'fail'`, a busy cgroup that a process runs in is not waited
 * for: a CgroupInUseError at once (what was removed before it stays removed).
 */
export async function rmdirTree(dir: string, opts: { inUse?: 'retry' | 'fail' } = {}): Promise<void> {
  let entries: fs.Dirent[];
  try {
    entries = await fsp.readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const e of entries) if (e.isDirectory()) await rmdirTree(path.join(dir, e.name), opts);
  for (let i = 0; ; i++) {
    try {
      await fsp.rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code === 'EBUSY' && opts.inUse === 'fail') {
        // A process in it, or in a cgroup the runtime made under it meanwhile (a new sandbox's).
        const busy = await populatedCgroup([dir]);
        if (busy !== null) throw new CgroupInUseError(`cgroup ${busy} is in use`, { cause: err });
      }
      if (code !== 'EBUSY' || i >= 50) throw new Error(`cannot remove cgroup ${dir}: ${errorMessage(err)}`, { cause: err });
      await new Promise((r) => setTimeout(r, 100));
      // A child cgroup made since the walk above keeps it busy: removed first, as the others were.
      const now = await fsp.readdir(dir, { withFileTypes: true }).catch(() => [] as fs.Dirent[]);
      for (const e of now) if (e.isDirectory()) await rmdirTree(path.join(dir, e.name), opts);
    }
  }
}


/**
 * The hierarchies the kubelet requires a cgroup in (its cgroupManager.Exists allowlist: cpu, cpuacct,
 * cpuset, memory, pids, systemd, and hugetlb when mounted); on cgroup v2 the one unified mount. Others
 * (blkio, devices, freezer, a hybrid host's cgroup2 mount) get klet's cgroups where their parent exists.
 */
const REQUIRED_CONTROLLERS = new Set(['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'hugetlb', 'name=systemd']);

export function requiredMounts(hierarchies: Hierarchies): Set<string> {
  if (hierarchies.version === 2) return new Set(hierarchies.mounts.values());
  return new Set([...hierarchies.mounts].filter(([controller]) => REQUIRED_CONTROLLERS.has(controller)).map(([, mount]) => mount));
}

/** --cgroup-root must exist in every required hierarchy (the kubelet's validateSystemRequirements); an InputError names what is missing. */
function assertCgroupRoot(literal: string, cgroupRoot: string, name: string, hierarchies: Hierarchies): void {
  const missing = [...requiredMounts(hierarchies)].map((mount) => path.join(mount, literal)).filter((d) => !fs.existsSync(d));
  if (missing.length > 0) {
    throw new InputError(`${name} ${cgroupRoot}: invalid configuration: cgroup "${cgroupRoot}" has some missing paths: ${missing.join(', ')}`);
  }
}

/**
 * Remove the pod cgroups klet recorded for pod `uid` under `rootDir` (made
 * by any klet command of that root dir), and the one the runtime re-made
 * under a QoS cgroup klet recorded (see the header): what a command without
 * a container manager (`klet delete`) does when it removes a pod that `klet
 * runonce`, `run-pod` or `sync` ran in its own cgroup. One that a process
 * still runs in (a new instance of the pod, which a running `klet sync`
 * re-created) is left, with its record. Nothing else is touched.
 */
export async function removeRecordedPodCgroups(rootDir: string, uid: string): Promise<void> {
  const dir = path.join(rootDir, 'cgroups');
  const slice = `-pod${uid.replaceAll('-', '_')}.slice`;
  const recorded = (await fsp.readdir(dir).catch(() => [] as string[])).map((f) => decodeURIComponent(f));
  const names = recorded.filter((n) => path.posix.basename(n) === `pod${uid}` || n.endsWith(slice));
  // The pod's cgroup under each QoS cgroup klet recorded: cgroupfs <qos>/pod<uid>, systemd <qos>/<qos unit>-pod<uid>.slice.
  const children = recorded
    .filter(isQosCgroup)
    .map((n) => (n.endsWith('.slice') ? `${n}/${path.posix.basename(n, '.slice')}${slice}` : path.posix.join(n, `pod${uid}`)))
    .filter((n) => !names.includes(n));
  if (names.length === 0 && children.length === 0) return;
  const { mounts } = await hostHierarchies();
  const all = [...new Set(mounts.values())];
  names.push(...children.filter((n) => all.some((m) => fs.existsSync(path.join(m, n)))));
  for (const name of names) {
    const dirs = all.map((m) => path.join(m, name));
    const busy = await populatedCgroup(dirs);
    if (busy !== null) {
      log.debug(`pod cgroup ${name} left: in use (${busy}), a new instance of pod ${uid} runs in it`);
      continue;
    }
    if (name.endsWith('.slice')) {
      // The systemd driver's slice: stopped by systemd first (rmdir alone would leave the unit behind).
      const { Systemd } = await import('./systemd.js');
      const systemd = await Systemd.connect();
      try {
        await systemd.stopUnit(unitOf(name).unit);
      } finally {
        systemd.close();
      }
    }
    try {
      for (const d of dirs) await rmdirTree(d, { inUse: 'fail' });
    } catch (err) {
      if (!(err instanceof CgroupInUseError)) throw err;
      log.debug(`pod cgroup ${name} left: ${err.message}`);
      continue;
    }
    await fsp.rm(path.join(dir, encodeURIComponent(name)), { force: true });
  }
}

/**
 * The pod UIDs of the pod cgroups klet holds under `rootDir`: those it
 * recorded, and the `pod<uid>` cgroups under the QoS cgroups it recorded
 * (in any hierarchy). A systemd slice's UID has its dashes back.
 */
async function podCgroupUids(rootDir: string): Promise<Set<string>> {
  const recorded = (await fsp.readdir(path.join(rootDir, 'cgroups')).catch(() => [] as string[])).map((f) => decodeURIComponent(f));
  const uidOf = (base: string): string | undefined => {
    const m = /^pod([0-9a-zA-Z_-]+)$/.exec(base) ?? /-pod([0-9a-zA-Z_]+)\.slice$/.exec(base);
    return m?.[1] === undefined ? undefined : base.endsWith('.slice') ? m[1].replaceAll('_', '-') : m[1];
  };
  const out = new Set<string>();
  for (const n of recorded) {
    const uid = uidOf(path.posix.basename(n));
    if (uid !== undefined) out.add(uid);
  }
  const qos = recorded.filter(isQosCgroup);
  if (qos.length === 0) return out;
  const { mounts } = await hostHierarchies();
  for (const mount of new Set(mounts.values())) {
    for (const q of qos) {
      for (const e of await fsp.readdir(path.join(mount, q), { withFileTypes: true }).catch(() => [] as fs.Dirent[])) {
        const uid = e.isDirectory() ? uidOf(e.name) : undefined;
        if (uid !== undefined) out.add(uid);
      }
    }
  }
  return out;
}

/**
 * The kubelet's cleanupOrphanedPodCgroups for a root dir: remove the pod
 * cgroups klet holds (podCgroupUids) of every pod UID not in `known` — no
 * pod dir, no pod — that nothing runs in (removeRecordedPodCgroups). What
 * `klet delete --all` leaves: not even the cgroup of a pod whose sync was
 * stopped between making its cgroup and recording it again. The UIDs whose
 * cgroups were looked at.
 */
export async function removeOrphanedPodCgroups(rootDir: string, known: ReadonlySet<string>): Promise<string[]> {
  const orphans = [...(await podCgroupUids(rootDir))].filter((uid) => !known.has(uid));
  for (const uid of orphans) await removeRecordedPodCgroups(rootDir, uid);
  return orphans;
}

/** A QoS cgroup's literal name (kubepods holds the Guaranteed pods), with either driver. */
function isQosCgroup(literal: string): boolean {
  const base = path.posix.basename(literal);
  if (base.endsWith('.slice')) return /(^|-)kubepods(-burstable|-besteffort)?\.slice$/.test(base);
  return base === 'kubepods' || (['burstable', 'besteffort'].includes(base) && path.posix.basename(path.posix.dirname(literal)) === 'kubepods');
}

/** The --cgroup-root check alone, before anything starts (the runtime, the sync loop): bad input leaves nothing behind. */
export async function checkCgroupRoot(settings: CgroupSettings): Promise<void> {
  assertCgroupRoot(literalCgroup(settings.driver, settings.cgroupRoot), settings.cgroupRoot, settings.cgroupRootName, await hostHierarchies());
  if (settings.driver === 'systemd') (await connectSystemd(settings)).close();
}

/** systemd's Manager for the systemd driver; an InputError naming the driver's setting when it cannot be reached. */
async function connectSystemd(settings: CgroupSettings): Promise<Systemd> {
  const { Systemd } = await import('./systemd.js');
  try {
    return await Systemd.connect();
  } catch (err) {
    throw new InputError(`${settings.driverName} systemd: ${errorMessage(err)} (is systemd the init of this host? --cgroup-driver cgroupfs makes the cgroups directly)`, { cause: err });
  }
}

/**
 * The container manager of a `klet sync`: the host's hierarchies, kubepods
 * sized from the node's capacity (less the reservations when `pods` is
 * enforced), the QoS cgroups. Throws an InputError naming cgroupRoot as the settings do.
 */
export async function openCgroups(settings: CgroupSettings, rootDir: string): Promise<CgroupManager> {
  const { cpuMillis, memoryBytes } = nodeCapacity();
  const capacity = { cpuMilli: cpuMillis, memoryBytes, pid: (await readMaxPid()) ?? 0 };
  return CgroupManager.open({
    cgroupRoot: settings.cgroupRoot,
    cgroupRootName: settings.cgroupRootName,
    rootDir,
    nodeAllocatable: nodeAllocatableConfig(capacity, [settings.kubeReserved, settings.systemReserved], settings.enforcePods),
    podPidsLimit: settings.podPidsLimit,
    hierarchies: await hostHierarchies(),
    driver: settings.driver,
    ...(settings.driver === 'systemd' ? { systemd: await connectSystemd(settings) } : {}),
  });
}
