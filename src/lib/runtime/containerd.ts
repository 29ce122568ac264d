/**
 * The klet-managed containerd: start it detached with its own root, state,
 * socket and CNI network, find it again from its pidfile in later
 * invocations, report its status, and stop it leaving no process, mount or
 * network namespace behind.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { CriClient } from '../cri/client.js';
import { PodSandboxState } from '../cri/gen/api.js';
import { parseEndpoint } from '../cri/endpoint.js';
import { InputError, KletError, MissingDependencyError, TimeoutError, errorMessage } from '../errors.js';
import { log } from '../log.js';
import { unmountAll } from '../util/mounts.js';
import { findExecutable } from '../util/which.js';
import {
  CNI_CONFLIST,
  DEFAULT_NETWORK,
  type CniNetwork,
  type ContainerdVersion,
  type ManagedRuntimeLayout,
  MIN_CONTAINERD,
  cniConflist,
  configVersionFor,
  containerdConfig,
  managedRuntimeLayout,
  parseContainerdVersion,
  supportedContainerd,
} from './containerd-config.js';
import { pidAlive } from '../util/process.js';

/**
 * The built-in images, imported when missing. Loaded on use: the image code
 * and tar-stream cost ~10 ms of start-up to every command that only checks
 * for a runtime (ensureRuntime, on a socket that is there).
 */
async function builtinImages(layout: ManagedRuntimeLayout, ctrPath: string | undefined): Promise<string[]> {
  const { ensureBuiltinImages } = await import('./images.js');
  return ensureBuiltinImages(layout.socketPath, layout.imageCacheDir, ctrPath === undefined ? {} : { ctrPath });
}

/**
 * The PATH a containerd runs with: its own directory first, so the shim
 * (containerd-shim-runc-v2), runc and ctr beside it are the ones used (a
 * containerd built into a directory of its own, scripts/build-containerd.sh),
 * then the caller's PATH.
 */
export function runtimePath(containerdBin: string, envPath = process.env.PATH ?? ''): string {
  const dir = path.dirname(containerdBin);
  return [dir, ...envPath.split(':').filter((d) => d !== '' && d !== dir)].join(':');
}

/** The ctr to import images with: the one beside containerd, else ctr on PATH. */
async function ctrBeside(containerdBin: string | null): Promise<string | undefined> {
  if (containerdBin === null) return undefined;
  return (await findExecutable(path.join(path.dirname(containerdBin), 'ctr'))) ?? undefined;
}

/**
 * The version of the containerd at `bin`, from `containerd --version`. A
 * binary that does not run, prints no containerd version, or is older than
 * 1.6 is an error naming it (one line).
 */
export async function containerdVersion(bin: string, opts: { input?: string } = {}): Promise<ContainerdVersion> {
  const input = opts.input === undefined ? {} : { input: opts.input };
  const out = await new Promise<string>((resolve, reject) => {
    execFile(bin, ['--version'], { encoding: 'utf8', timeout: 10_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err === null) return resolve(stdout);
      const why = stderr.trim().split('\n').at(-1) || errorMessage(err);
      reject(new RuntimeStartError(`${bin}: cannot run it with --version: ${why}`, input));
    });
  });
  const v = parseContainerdVersion(out);
  if (v === null) {
    const first = out.trim().split('\n')[0] ?? '';
    throw new RuntimeStartError(`${bin}: not a containerd (--version printed ${first === '' ? 'nothing' : JSON.stringify(first.slice(0, 120))})`, input);
  }
  if (!supportedContainerd(v)) {
    throw new RuntimeStartError(`${bin}: containerd ${v.text} is too old: klet needs containerd ${MIN_CONTAINERD.major}.${MIN_CONTAINERD.minor} or newer`, input);
  }
  return v;
}

/**
 * The containerd executable asked for (a path, or a name looked up on PATH),
 * as an absolute path; an explicit one that is missing or not executable is
 * an error naming it. Null when none was asked for and none is on PATH.
 */
async function resolveContainerd(bin: string | undefined): Promise<string | null> {
  if (bin === undefined) return findExecutable('containerd');
  const input = { input: 'containerdBin' };
  if (bin.trim() === '') throw new InputError('"": expected the path of a containerd executable', input);
  const found = await findExecutable(bin);
  if (found === null) {
    const exists = fs.existsSync(bin);
    throw new InputError(`${bin}: ${exists ? 'not executable' : 'no such file'}`, input);
  }
  if (fs.statSync(found).isDirectory()) throw new InputError(`${bin}: a directory, not a containerd executable`, input);
  return fs.realpathSync(found);
}

/** The kubelet's default endpoint; only this one is started on demand. */
export { DEFAULT_RUNTIME_ENDPOINT } from '../cri/endpoint.js';

export interface RuntimeTarget {
  /** CRI endpoint, `unix:///...`. */
  endpoint: string;
  /** klet's root dir; the managed runtime lives in `<rootDir>/containerd`. */
  rootDir: string;
  network?: CniNetwork;
  /** The cgroup driver the runtime's runc uses (default cgroupfs): klet's --cgroup-driver must be the same. */
  cgroupDriver?: 'cgroupfs' | 'systemd';
}

export function layoutFor(target: RuntimeTarget): ManagedRuntimeLayout {
  const { socketPath } = parseEndpoint(target.endpoint);
  return managedRuntimeLayout({
    dir: path.join(target.rootDir, 'containerd'),
    socketPath,
    network: target.network ?? networkFor(target.rootDir),
    systemdCgroup: target.cgroupDriver === 'systemd',
  });
}

/**
 * The pod network of a managed runtime: klet0 with 10.88.0.0/16 for the
 * default root dir; any other root dir gets its own bridge and a /24 in
 * 10.90.0.0/16 derived from its path, so two managed runtimes on one
 * machine never hand out the same pod IPs on the same bridge.
 */
export function networkFor(rootDir: string, podCidr?: string): CniNetwork {
  const resolved = path.resolve(rootDir);
  if (podCidr === undefined && resolved === '/var/lib/klet') return DEFAULT_NETWORK;
  const h = createHash('sha256').update(resolved).digest();
  const tag = h.subarray(0, 3).toString('hex');
  return {
    bridge: `klet${tag}`,
    subnet: podCidr ?? `10.90.${h[3]}.0/24`,
    name: `klet-${tag}`,
  };
}

/** Validate a --pod-cidr value: an IPv4 CIDR with a prefix from /8 to /28. */
export function parsePodCidr(value: string): string {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(value.trim());
  const octets = m ? m.slice(1, 5).map(Number) : [];
  const prefix = m ? Number(m[5]) : NaN;
  if (!m || octets.some((o) => o > 255) || prefix < 8 || prefix > 28) {
    throw new InputError(`"${value}": expected an IPv4 CIDR like 10.88.0.0/16 (prefix /8 to /28)`, { input: 'podCidr' });
  }
  return value.trim();
}

export class RuntimeStartError extends KletError {
  override readonly code: string = 'RUNTIME_START_FAILED';
}

/**
 * Where the managed runtime of this layout was last started, as its own files
 * record it: the socket in the [grpc] section of its containerd.toml and the
 * bridge in its CNI conflist (both rewritten by every start). The endpoint and
 * pod CIDR given to a later command may differ (the endpoint flag has a
 * default, which may be the kubelet's containerd): what a stop removes, and
 * which runtime it asks to stop its pods, must be this runtime's own.
 */
export async function recordedLayout(layout: ManagedRuntimeLayout): Promise<ManagedRuntimeLayout> {
  const [toml, conflist] = await Promise.all([
    fsp.readFile(layout.configFile, 'utf8').catch(() => ''),
    fsp.readFile(path.join(layout.cniConfDir, CNI_CONFLIST), 'utf8').catch(() => ''),
  ]);
  const socket = /^\[grpc\]\r?\n\s*address = ("(?:[^"\\]|\\.)*")\s*$/m.exec(toml)?.[1];
  let socketPath = layout.socketPath;
  try {
    if (socket !== undefined) socketPath = path.resolve(JSON.parse(socket) as string);
  } catch {
    // Not ours to parse (edited by hand): keep the one asked for.
  }
  let bridge: unknown;
  try {
    bridge = (JSON.parse(conflist) as { plugins?: { type?: string; bridge?: unknown }[] }).plugins?.find((p) => p.type === 'bridge')?.bridge;
  } catch {
    bridge = undefined;
  }
  // Only a bridge of klet's naming (klet0, klet<hex>): a name edited in by hand is not deleted.
  const network = typeof bridge === 'string' && /^klet[0-9a-f]{0,11}$/.test(bridge) ? { ...layout.network, bridge } : layout.network;
  return { ...layout, socketPath, network };
}

/** The pid of the managed containerd for this layout, if it is running. */
export async function managedPid(layout: ManagedRuntimeLayout): Promise<number | null> {
  let text: string;
  try {
    text = await fsp.readFile(layout.pidFile, 'utf8');
  } catch {
    return null;
  }
  const pid = Number.parseInt(text.trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return null;
  // Guard against pid reuse: the process must be containerd with our config.
  try {
    const cmdline = (await fsp.readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    if (!cmdline.includes(layout.configFile)) return null;
  } catch {
    return null;
  }
  return pid;
}

async function tail(file: string, lines: number): Promise<string[]> {
  try {
    const text = await fsp.readFile(file, 'utf8');
    return text.trimEnd().split('\n').slice(-lines);
  } catch {
    return [];
  }
}

/** Wait until the CRI answers Version on the socket, or the process dies, or the deadline passes. */
async function waitReady(layout: ManagedRuntimeLayout, pid: number, timeoutMs: number): Promise<void> {
  const endpoint = `unix://${layout.socketPath}`;
  const deadline = Date.now() + timeoutMs;
  let lastError = 'socket not created yet';
  while (Date.now() < deadline) {
    if (!pidAlive(pid)) {
      const lines = await tail(layout.logFile, 5);
      throw new RuntimeStartError(
        `containerd exited during start-up (see ${layout.logFile}): ${lines.at(-1) ?? 'no output'}`,
      );
    }
    if (fs.existsSync(layout.socketPath)) {
      const client = CriClient.connect(endpoint, { timeoutMs: 2000 });
      try {
        await client.version({});
        return;
      } catch (err) {
        lastError = errorMessage(err);
      } finally {
        client.close();
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new TimeoutError(`containerd did not become ready on ${endpoint} within ${timeoutMs / 1000}s: ${lastError}`);
}

export interface StartResult {
  endpoint: string;
  pid: number;
  /** False when a managed runtime was already running and was reused. */
  started: boolean;
  images: string[];
  layout: ManagedRuntimeLayout;
  /** The containerd executable that runs and its version (null when a reused one's could not be read). */
  containerd: { bin: string; version: ContainerdVersion } | null;
}

/**
 * Start (or reuse) the managed containerd for `target`, then make sure the
 * sandbox image and the busybox image are imported.
 */
export async function startManagedRuntime(
  target: RuntimeTarget,
  opts: {
    timeoutMs?: number;
    /**
     * The containerd to start (a path, or a name on PATH; default: containerd
     * on PATH). It runs with its own directory first on PATH, so the shim and
     * runc beside it are used. A 1.x gets a version-2 config, a 2.x version 3.
     */
    containerdBin?: string;
    signal?: AbortSignal;
  } = {},
): Promise<StartResult> {
  const layout = layoutFor(target);
  // One start per socket at a time, whatever the root dir: two starts racing
  // on one endpoint would both spawn a containerd on it.
  const release = await lockEndpoint(layout.socketPath, { timeoutMs: opts.timeoutMs ?? 60_000, signal: opts.signal });
  try {
    return await startLocked(target, layout, opts);
  } finally {
    await release();
  }
}

async function startLocked(
  target: RuntimeTarget,
  layout: ManagedRuntimeLayout,
  opts: { timeoutMs?: number; containerdBin?: string },
): Promise<StartResult> {
  const endpoint = `unix://${layout.socketPath}`;
  const running = await managedPid(layout);
  if (running !== null) {
    const runningBin = await fsp.readlink(`/proc/${running}/exe`).catch(() => null);
    if (opts.containerdBin !== undefined) {
      const asked = await resolveContainerd(opts.containerdBin);
      if (runningBin !== null && asked !== null && runningBin !== asked) {
        // Reusing it would not run what was asked for.
        throw new RuntimeStartError(
          `the klet-managed containerd of root dir ${path.resolve(target.rootDir)} already runs ${runningBin}, not ${asked}: stop it first (klet runtime stop) to start another`,
        );
      }
    }
    const served = (await recordedLayout(layout)).socketPath;
    if (served !== layout.socketPath) {
      // One runtime per root dir: it cannot also serve another socket, and
      // "reusing" it would hand back an endpoint nothing serves.
      throw new RuntimeStartError(
        `the klet-managed containerd of root dir ${path.resolve(target.rootDir)} already runs on unix://${served}, not on ${endpoint}: use that endpoint, or stop it first`,
        { input: 'containerRuntimeEndpoint' },
      );
    }
    await waitReady(layout, running, opts.timeoutMs ?? 30_000);
    const images = await builtinImages(layout, await ctrBeside(runningBin));
    const version = runningBin === null ? null : await containerdVersion(runningBin).catch(() => null);
    const containerd = runningBin !== null && version !== null ? { bin: runningBin, version } : null;
    return { endpoint, pid: running, started: false, images, layout, containerd };
  }
  if (fs.existsSync(layout.socketPath)) {
    // Something else owns this socket: either a live runtime we do not manage
    // or a stale socket file. Refuse to clobber a live one.
    const client = CriClient.connect(endpoint, { timeoutMs: 2000 });
    try {
      await client.version({});
      const owner = await managingRootDir(layout.socketPath);
      if (owner !== null) {
        throw new RuntimeStartError(
          `the klet-managed containerd of root dir ${owner} already serves ${endpoint}; root dir ${path.resolve(target.rootDir)} can use it as it is (each root dir owns only its own pods), or get a private runtime on its own socket, e.g. unix://${path.join(path.resolve(target.rootDir), 'containerd.sock')}`,
          { input: 'containerRuntimeEndpoint' },
        );
      }
      throw new RuntimeStartError(`a container runtime not managed by klet is already serving ${endpoint}`, {
        suggestions: ['use it as it is, or stop it first'],
      });
    } catch (err) {
      if (err instanceof RuntimeStartError) throw err;
      await fsp.rm(layout.socketPath, { force: true });
    } finally {
      client.close();
    }
  }

  const containerd = await resolveContainerd(opts.containerdBin);
  if (containerd === null) {
    throw new MissingDependencyError('containerd is not installed: no containerd on PATH', {
      suggestions: ['apt-get install containerd runc containernetworking-plugins'],
    });
  }
  const version = await containerdVersion(containerd, opts.containerdBin === undefined ? {} : { input: 'containerdBin' });
  const envPath = runtimePath(containerd);
  if ((await findExecutable('runc', envPath)) === null) {
    throw new MissingDependencyError(`runc is not installed: no runc beside ${containerd} or on PATH`, {
      suggestions: ['apt-get install runc'],
    });
  }
  if (!fs.existsSync(path.join(layout.cniBinDir, 'bridge'))) {
    throw new MissingDependencyError(`the CNI plugins are not installed: no ${layout.cniBinDir}/bridge`, {
      suggestions: ['apt-get install containernetworking-plugins'],
    });
  }

  for (const d of [layout.dir, layout.rootDir, layout.stateDir, layout.cniConfDir, layout.cniDataDir]) {
    await fsp.mkdir(d, { recursive: true, mode: 0o700 });
  }
  await fsp.mkdir(path.dirname(layout.socketPath), { recursive: true });
  await fsp.writeFile(layout.configFile, containerdConfig(layout, { configVersion: configVersionFor(version) }));
  await fsp.writeFile(path.join(layout.cniConfDir, CNI_CONFLIST), cniConflist(layout));

  const logFd = fs.openSync(layout.logFile, 'a');
  let child;
  try {
    child = spawn(containerd, ['--config', layout.configFile], {
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: { ...process.env, PATH: envPath },
    });
  } finally {
    fs.closeSync(logFd);
  }
  const pid = await new Promise<number>((resolve, reject) => {
    child.once('error', (err) => reject(new RuntimeStartError(`cannot start ${containerd}: ${err.message}`)));
    child.once('spawn', () => resolve(child.pid ?? -1));
  });
  child.unref();
  await fsp.writeFile(layout.pidFile, `${pid}\n`);
  log.debug(`started ${containerd} (containerd ${version.text}) pid ${pid} with ${layout.configFile}`);
  try {
    await waitReady(layout, pid, opts.timeoutMs ?? 30_000);
    await reapOrphanShims(layout, pid).catch((err) => log.warn(`cleaning up after the previous containerd: ${errorMessage(err)}`));
    const images = await builtinImages(layout, await ctrBeside(containerd));
    return { endpoint, pid, started: true, images, layout, containerd: { bin: containerd, version } };
  } catch (err) {
    // Leave nothing half-started behind.
    await killAndWait(pid, 5000);
    await fsp.rm(layout.pidFile, { force: true });
    throw err;
  }
}

/**
 * An exclusive lock on starting a runtime on one socket: a file under
 * /run/klet/locks (named by a hash of the socket path) holding the holder's
 * pid. The file appears with its content already in it (written to a file of
 * this process's own, then hard-linked to the lock's name, which fails if the
 * name exists), so a contender never sees an empty lock and mistakes it for
 * a dead holder's. A lock whose holder is gone is taken over; a live holder
 * is waited for.
 */
export async function lockEndpoint(
  socketPath: string,
  opts: { timeoutMs: number; signal?: AbortSignal; lockDir?: string },
): Promise<() => Promise<void>> {
  const dir = opts.lockDir ?? LOCK_DIR;
  const file = path.join(dir, `${createHash('sha256').update(path.resolve(socketPath)).digest('hex').slice(0, 24)}.lock`);
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const mine = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  const content = `${process.pid}\n${socketPath}\n`;
  try {
    await fsp.writeFile(mine, content, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    throw new RuntimeStartError(`cannot create the start lock ${file}: ${errorMessage(err)}`);
  }
  const deadline = Date.now() + opts.timeoutMs;
  try {
    for (;;) {
      opts.signal?.throwIfAborted();
      try {
        await fsp.link(mine, file);
        return async () => {
          await fsp.rm(file, { force: true });
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new RuntimeStartError(`cannot create the start lock ${file}: ${errorMessage(err)}`);
        }
      }
      const text = await fsp.readFile(file, 'utf8').catch(() => null);
      if (text === null) continue; // released meanwhile
      const holder = Number.parseInt(text.split('\n')[0] ?? '', 10);
      if (!Number.isInteger(holder) || holder <= 0 || !pidAlive(holder)) {
        await takeOverStale(file, text);
        continue;
      }
      if (Date.now() > deadline) {
        throw new TimeoutError(`another klet (pid ${holder}) is still starting a runtime on unix://${socketPath} (lock ${file})`);
      }
      // Jittered: contenders that started together would otherwise all retry in the same instant, one winner per round.
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
    }
  } finally {
    await fsp.rm(mine, { force: true });
  }
}

/**
 * Remove a dead holder's lock, unless another contender replaced it
 * meanwhile: the lock is moved aside first (atomic), and put back when what
 * was moved is no longer the dead holder's.
 */
async function takeOverStale(file: string, staleText: string): Promise<void> {
  const aside = `${file}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    await fsp.rename(file, aside);
  } catch {
    return; // gone already
  }
  const moved = await fsp.readFile(aside, 'utf8').catch(() => staleText);
  if (moved !== staleText) await fsp.link(aside, file).catch(() => undefined);
  await fsp.rm(aside, { force: true });
}

const LOCK_DIR = '/run/klet/locks';

/**
 * The root dir whose klet-managed containerd serves this socket, or null:
 * found from the running containerd processes' `--config` files (klet's
 * layout: <root-dir>/containerd/containerd.toml naming the socket).
 */
export async function managingRootDir(socketPath: string): Promise<string | null> {
  const want = path.resolve(socketPath);
  for (const entry of await fsp.readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = (await fsp.readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0');
    } catch {
      continue;
    }
    // containerd, or a build of it named after its version (containerd-2.4.2); never a shim (no --config).
    if (!path.basename(args[0] ?? '').startsWith('containerd')) continue;
    const i = args.indexOf('--config');
    const config = i >= 0 ? args[i + 1] : undefined;
    if (!config || path.basename(config) !== 'containerd.toml' || path.basename(path.dirname(config)) !== 'containerd') continue;
    const text = await fsp.readFile(config, 'utf8').catch(() => '');
    if (text.includes(`address = ${JSON.stringify(want)}`)) return path.dirname(path.dirname(config));
  }
  return null;
}

async function killAndWait(pid: number, graceMs: number): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!pidAlive(pid)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  while (pidAlive(pid)) await new Promise((r) => setTimeout(r, 20));
}

/** Start time of a process in clock ticks since boot (/proc/PID/stat field 22), or null. */
async function startTicks(pid: number): Promise<number | null> {
  try {
    const stat = await fsp.readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[19]);
  } catch {
    return null;
  }
}

/**
 * After a crash of this root dir's containerd (SIGKILL mid-RunPodSandbox),
 * shims of sandboxes or containers whose metadata it never committed keep
 * running, unknown to the restarted containerd and to CRI (or known only as
 * a sandbox that is not ready, so never to be stopped). Kill those that
 * are older than the new containerd (so nothing it starts itself is
 * touched), with the processes they run, and unmount and remove their
 * bundles. Only shims serving this runtime's own socket are considered.
 */
async function reapOrphanShims(layout: ManagedRuntimeLayout, containerdPid: number): Promise<void> {
  const born = await startTicks(containerdPid);
  if (born === null) return;
  const shims: { pid: number; id: string }[] = [];
  for (const pid of await shimPids(layout.socketPath)) {
    const args = (await fsp.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const i = args.indexOf('-id');
    const started = await startTicks(pid);
    if (i >= 0 && args[i + 1] && started !== null && started < born) shims.push({ pid, id: args[i + 1] as string });
  }
  if (shims.length === 0) return;
  const client = CriClient.connect(`unix://${layout.socketPath}`, { timeoutMs: 30_000 });
  let known: Set<string>;
  try {
    const [sbs, ctrs] = await Promise.all([client.listPodSandbox({}), client.listContainers({})]);
    // A sandbox the restarted containerd reports not ready, with no container
    // in it, is not running as far as it knows: a shim still serving it is a
    // leftover as well. (A shim serves its sandbox's containers too: one with
    // containers is kept, they are stopped through it.)
    const withContainers = new Set(ctrs.containers.map((c) => c.podSandboxId));
    known = new Set([
      ...sbs.items.filter((s) => s.state === PodSandboxState.SANDBOX_READY || withContainers.has(s.id)).map((s) => s.id),
      ...ctrs.containers.map((c) => c.id),
    ]);
  } finally {
    client.close();
  }
  const orphans = shims.filter((s) => !known.has(s.id));
  if (orphans.length === 0) return;
  const children = new Map<number, number[]>();
  for (const entry of await fsp.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fsp.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!Number.isInteger(ppid)) continue;
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  for (const o of orphans) {
    for (const child of children.get(o.pid) ?? []) {
      try {
        process.kill(child, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await killAndWait(o.pid, 2000);
    const bundle = path.join(layout.stateDir, 'io.containerd.runtime.v2.task', 'k8s.io', o.id);
    await unmountAll(bundle);
    await fsp.rm(bundle, { recursive: true, force: true });
    log.info(`removed shim ${o.pid} of ${o.id.slice(0, 13)}, left behind by the previous containerd`);
  }
}

/** Pids of containerd shims serving the containerd at this socket. */
export async function shimPids(socketPath: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await fsp.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = (await fsp.readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0');
      if (!path.basename(args[0] ?? '').startsWith('containerd-shim')) continue;
      const i = args.indexOf('-address');
      if (i >= 0 && args[i + 1] === socketPath) pids.push(Number(entry));
    } catch {
      // The process went away while we looked.
    }
  }
  return pids;
}

export interface StopResult {
  endpoint: string;
  wasRunning: boolean;
  podsStopped: number;
}

/**
 * Stop the containerd this root dir started (the process in its own
 * pidfile) after stopping every pod sandbox on it through CRI (so
 * containers, netns and rootfs mounts are torn down properly), then any shim
 * of that containerd that outlived it; unmount whatever is left below the
 * runtime's directory and delete the CNI bridge it made. Files removed are
 * only its own (pidfile, and the socket its containerd created). With no
 * runtime of this root dir (no pidfile), nothing at all is touched: the
 * endpoint may be another root dir's or the kubelet's.
 */
export async function stopManagedRuntime(target: RuntimeTarget, opts: { timeoutMs?: number } = {}): Promise<StopResult> {
  const asked = layoutFor(target);
  const pid = await managedPid(asked);
  let podsStopped = 0;
  const hadPidFile = fs.existsSync(asked.pidFile);
  if (pid === null && !hadPidFile) return { endpoint: `unix://${asked.socketPath}`, wasRunning: false, podsStopped };
  // This root dir's runtime, on the socket it serves: never the endpoint asked
  // for when that is another one (its pods, shims and socket are not ours).
  const layout = await recordedLayout(asked);
  const endpoint = `unix://${layout.socketPath}`;
  if (layout.socketPath !== asked.socketPath) {
    log.info(`the klet-managed containerd of root dir ${path.resolve(target.rootDir)} serves ${endpoint}, not unix://${asked.socketPath}: stopping it there`);
  }
  if (pid === null && (await socketServes(endpoint))) {
    // Our containerd died and something else serves the socket now: only our stale pidfile is ours.
    await fsp.rm(layout.pidFile, { force: true });
    return { endpoint, wasRunning: false, podsStopped };
  }
  if (pid !== null) {
    const client = CriClient.connect(endpoint, { timeoutMs: opts.timeoutMs ?? 60_000 });
    try {
      const { items } = await client.listPodSandbox({});
      for (const sb of items) {
        await client.stopPodSandbox({ podSandboxId: sb.id });
        await client.removePodSandbox({ podSandboxId: sb.id });
        podsStopped++;
      }
    } catch (err) {
      log.warn(`could not stop pods through CRI before stopping containerd: ${errorMessage(err)}`);
    } finally {
      client.close();
    }
    await killAndWait(pid, 10_000);
  }
  // Shims of our containerd (alive, or crashed with its pidfile left): they serve only our socket.
  for (const shim of await shimPids(layout.socketPath)) await killAndWait(shim, 2000);
  await unmountAll(layout.dir);
  await deleteBridge(layout.network.bridge);
  await fsp.rm(layout.pidFile, { force: true });
  await fsp.rm(layout.socketPath, { force: true });
  await fsp.rm(layout.socketPath + '.ttrpc', { force: true });
  return { endpoint, wasRunning: pid !== null, podsStopped };
}

async function socketServes(endpoint: string): Promise<boolean> {
  const client = CriClient.connect(endpoint, { timeoutMs: 2000 });
  try {
    await client.version({});
    return true;
  } catch {
    return false;
  } finally {
    client.close();
  }
}

/** Delete the CNI bridge of a managed runtime, if it exists (the bridge plugin creates it with the first pod). */
async function deleteBridge(bridge: string): Promise<void> {
  if (!fs.existsSync(`/sys/class/net/${bridge}`)) return;
  const ip = await findExecutable('ip');
  if (ip === null) {
    log.warn(`cannot delete the CNI bridge ${bridge}: no ip command on PATH`);
    return;
  }
  await new Promise<void>((resolve) => {
    const child = spawn(ip, ['link', 'del', bridge], { stdio: 'ignore' });
    child.once('error', (err) => {
      log.warn(`cannot delete the CNI bridge ${bridge}: ${err.message}`);
      resolve();
    });
    child.once('exit', (code) => {
      if (code !== 0) log.warn(`cannot delete the CNI bridge ${bridge}: ip link del exited ${code}`);
      resolve();
    });
  });
}

export interface RuntimeStatusReport {
  endpoint: string;
  /** True when klet started this runtime and manages it. */
  managed: boolean;
  pid: number | null;
  /** True when the runtime answered the CRI Version call. */
  reachable: boolean;
  runtimeName: string | null;
  runtimeVersion: string | null;
  runtimeApiVersion: string | null;
  conditions: { type: string; status: boolean; reason: string; message: string }[];
  managedDir: string | null;
  /** When this root dir's managed runtime runs, but on another endpoint than the one asked about: that endpoint. */
  rootDirRuntimeEndpoint: string | null;
  error: string | null;
}

export async function runtimeStatus(target: RuntimeTarget, opts: { timeoutMs?: number } = {}): Promise<RuntimeStatusReport> {
  const layout = layoutFor(target);
  const endpoint = `unix://${layout.socketPath}`;
  // The root dir's runtime manages this endpoint only if it serves it.
  const running = await managedPid(layout);
  const served = running !== null ? (await recordedLayout(layout)).socketPath : null;
  const pid = served === layout.socketPath ? running : null;
  const report: RuntimeStatusReport = {
    endpoint,
    managed: pid !== null,
    pid,
    reachable: false,
    runtimeName: null,
    runtimeVersion: null,
    runtimeApiVersion: null,
    conditions: [],
    managedDir: pid !== null ? layout.dir : null,
    rootDirRuntimeEndpoint: served !== null && served !== layout.socketPath ? `unix://${served}` : null,
    error: null,
  };
  const client = CriClient.connect(endpoint, { timeoutMs: opts.timeoutMs ?? 5000 });
  try {
    const v = await client.version({});
    report.reachable = true;
    report.runtimeName = v.runtimeName;
    report.runtimeVersion = v.runtimeVersion;
    report.runtimeApiVersion = v.runtimeApiVersion;
    const st = await client.status({});
    report.conditions = (st.status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
    }));
  } catch (err) {
    report.error = errorMessage(err);
  } finally {
    client.close();
  }
  return report;
}

/**
 * Make sure a runtime serves `target.endpoint`. When nothing listens on the
 * kubelet's default endpoint and containerd is installed, start the managed
 * runtime there and say so in one line. An explicit endpoint is never
 * started implicitly: a typo must fail, not spawn a daemon.
 */
export async function ensureRuntime(
  target: RuntimeTarget,
  opts: { allowStart: boolean; notify?: (line: string) => void },
): Promise<void> {
  const { socketPath } = parseEndpoint(target.endpoint);
  // A socket that exists but does not answer is reported by the first CRI
  // call, with a hint to run `klet runtime start`.
  if (!opts.allowStart || fs.existsSync(socketPath)) return;
  if ((await findExecutable('containerd')) === null) return;
  const res = await startManagedRuntime(target);
  if (res.started) {
    opts.notify?.(
      `klet: no container runtime at ${res.endpoint}; started a klet-managed containerd (pid ${res.pid}, data in ${res.layout.dir})`,
    );
  }
}
