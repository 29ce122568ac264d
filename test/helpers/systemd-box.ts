/**
 * A real systemd (the host's /lib/systemd/systemd) as the init of a private
 * set of namespaces, for testing the systemd cgroup driver on a machine
 * whose own init is not systemd.
 *
 * It cannot touch the host:
 * - its pid, mount, UTS, cgroup and network namespaces are its own, and
 *   /run is a private tmpfs (its D-Bus socket, runc's and CNI's state);
 * - its cgroup namespace root is a new cgroup (klet-sdbox-<random>) under this
 *   process's cgroup in every hierarchy, so every slice it makes is in there;
 * - it loads units only from its own directory (SYSTEMD_UNIT_PATH, no default
 *   path appended): no sysinit.target, so none of the host's units (tmpfiles'
 *   clean-up of /tmp, sysctl, modules, swap) can run, whatever a test starts.
 * stop() kills its init (every process of the box goes with it) and removes
 * its cgroups.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { rmdirTree } from '../../src/lib/cm/manager.js';

const execFileP = promisify(execFile);

export interface BoxResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface SystemdBox {
  /** systemd's pid (as the host sees it). */
  pid: number;
  /** Run a command in every namespace of the box (working directory `cwd`, default this repository). */
  run(argv: string[], opts?: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv }): Promise<BoxResult>;
  /** The box's root cgroup in a hierarchy, as the host sees it (e.g. `cpu`, `memory`, `name=systemd`). */
  cgroupDir(controller: string): string;
  stop(): Promise<void>;
}

/** The host's hierarchies as /proc/self/cgroup names them, with this process's cgroup in each: mount dir + path. */
function ownCgroups(): Array<{ controller: string; controllers: string; mount: string; dir: string }> {
  const mounts = new Map<string, string>();
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const mountPoint = line.slice(0, sep).split(' ')[4]!;
    const [fstype, , opts = ''] = line.slice(sep + 3).split(' ');
    if (fstype === 'cgroup2') mounts.set('', mountPoint);
    if (fstype === 'cgroup') for (const o of opts.split(',')) if (o !== 'rw' && o !== 'ro') mounts.set(o, mountPoint);
  }
  const out: Array<{ controller: string; controllers: string; mount: string; dir: string }> = [];
  for (const line of fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n')) {
    const [, controllers = '', cgPath = '/'] = line.split(':');
    const first = controllers.split(',')[0]!;
    const mount = mounts.get(first);
    if (mount !== undefined) out.push({ controller: first, controllers, mount, dir: path.join(mount, cgPath) });
  }
  return out;
}

/** A child's children, by /proc. */
function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export async function startSystemdBox(): Promise<SystemdBox> {
  const name = `klet-sdbox-${randomBytes(4).toString('hex')}`;
  const dirs = ownCgroups().map((c) => ({ ...c, dir: path.join(c.dir, name) }));
  for (const { controller, dir } of dirs) {
    fs.mkdirSync(dir);
    if (controller === 'cpuset') for (const f of ['cpuset.cpus', 'cpuset.mems']) fs.writeFileSync(path.join(dir, f), fs.readFileSync(path.join(path.dirname(dir), f)));
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-sdbox-'));
  const v1 = dirs.filter((d) => d.controller !== '' && !d.controller.startsWith('name='));
  // Inside: the cgroup hierarchies remounted so they show the box's own root, a private /run, lo up, then systemd.
  const inner = [
    'set -e',
    'mount -t proc proc /proc',
    'mount -t tmpfs tmpfs /sys/fs/cgroup',
    ...dirs.map((d) => {
      if (d.controller === '') return v1.length > 0 ? `mkdir -p ${d.mount} && mount -t cgroup2 cgroup2 ${d.mount}` : 'umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup';
      return `mkdir -p ${d.mount} && mount -t cgroup -o ${d.controller.startsWith('name=') ? `none,${d.controllers}` : d.controllers} cgroup ${d.mount}`;
    }),
    'mount -t tmpfs tmpfs /run',
    'ip link set lo up',
    'mkdir -p /run/klet-box-units',
    "printf '[Unit]\\nDescription=klet test box\\nDefaultDependencies=no\\n' > /run/klet-box-units/klet-box.target",
    'export container=klet-test SYSTEMD_UNIT_PATH=/run/klet-box-units',
    'exec /lib/systemd/systemd --system --unit=klet-box.target --log-target=console --log-level=warning',
  ].join('\n');
  fs.writeFileSync(path.join(work, 'inner.sh'), inner);
  const procs = dirs.map((d) => path.join(d.dir, 'cgroup.procs'));
  const outer = `for f in ${procs.map((p) => `'${p}'`).join(' ')}; do echo $$ > "$f"; done; exec unshare --pid --fork --mount --uts --cgroup --net --propagation private bash '${path.join(work, 'inner.sh')}'`;
  const log = fs.openSync(path.join(work, 'systemd.log'), 'a');
  const child: ChildProcess = spawn('bash', ['-c', outer], { stdio: ['ignore', log, log], detached: true });
  fs.closeSync(log);
  let pid = 0;
  const cleanup = async () => {
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid!, 'SIGKILL');
      } catch {
        // gone
      }
      await new Promise((r) => child.once('exit', r));
    }
    for (const { dir } of dirs) await rmdirTree(dir);
    fs.rmSync(work, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the systemd box exited: ${fs.readFileSync(path.join(work, 'systemd.log'), 'utf8')}`);
      pid = childrenOf(child.pid!)[0] ?? 0;
      if (pid > 0 && fs.existsSync(`/proc/${pid}/root/run/systemd/private`) && fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'systemd') break;
      if (Date.now() > deadline) throw new Error(`the systemd box did not start in 20 s: ${fs.readFileSync(path.join(work, 'systemd.log'), 'utf8')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (err) {
    await cleanup();
    throw err;
  }
  const projectRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
  return {
    pid,
    async run(argv, opts = {}) {
      return execFileP('nsenter', ['-t', String(pid), '-a', `--wdns=${opts.cwd ?? projectRoot}`, '--', ...argv], {
        timeout: opts.timeoutMs ?? 120_000,
        maxBuffer: 16 * 1024 * 1024,
        env: opts.env ?? process.env,
      }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(e) }),
      );
    },
    cgroupDir(controller) {
      const d = dirs.find((x) => x.controller === controller);
      if (!d) throw new Error(`no ${controller} hierarchy on this host`);
      return d.dir;
    },
    stop: cleanup,
  };
}

/** A one-container busybox pod that sleeps until stopped, with `resources` lines (YAML flow maps) under its container. */
export function sleeperPod(namespace: string, name: string, resources: string[]): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${namespace}`,
    'spec:',
    '  terminationGracePeriodSeconds: 1',
    '  containers:',
    '  - name: c',
    '    image: localhost/klet/busybox:1.36',
    '    command: ["sh", "-c", "trap \'exit 0\' TERM; sleep 1000000 & wait"]',
    ...(resources.length > 0 ? ['    resources:', ...resources.map((r) => `      ${r}`)] : []),
    '',
  ].join('\n');
}
