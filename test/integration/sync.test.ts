/**
 * `klet sync`, the long-running kubelet, end to end: the BUILT CLI as a
 * child process against a private containerd, watching a manifest
 * directory (or polling a manifest URL), observed from outside through CRI
 * (the io.kubernetes.pod.* labels), `klet status -o json`, the file system
 * and its local API (/events, /healthz, /pods over the unix socket).
 *
 * One runtime for the file. Every test starts from an empty node and
 * leaves one: afterEach kills any sync a failed test left, removes what is
 * left through CRI and asserts that no sandbox, container or pod dir is
 * left.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ContainerState, CriClient, PodSandboxState } from '../../src/lib/cri/index.js';
import { mountsUnder } from '../../src/lib/util/mounts.js';
import { explain, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import {
  apiEvents,
  apiGet,
  apiHealth,
  eventually,
  killAllSyncs,
  sleep,
  startSync,
  type SyncEvent,
  type SyncOptions,
  type SyncProcess,
  writeAtomic,
} from '../helpers/sync.js';

const execFileP = promisify(execFile);

const NODE = 'testnode';
/** Every pod of this file lives in this namespace, so its log dirs are easy to find (and to clean). */
const NS = 'ksynct';
const LOG_ROOT = '/var/log/pods';
const UID_LABEL = 'io.kubernetes.pod.uid';
const NAME_LABEL = 'io.kubernetes.pod.name';
const NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
const RESTART_COUNT = 'io.kubernetes.container.restartCount';
/** PID 1 has no default SIGTERM action: trap it so the container stops promptly. */
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";
/** A second tag of the busybox image (same content), for edits that change only the image. */
const EDIT_IMAGE = 'localhost/klet/busybox:edit';

let rt: TestRuntime;
let cri: CriClient;
let busybox: string;
/** Temp dirs a test made (manifest dirs, hook dirs, foreign root dirs): removed after each test. */
const tempDirs: string[] = [];
/** Servers a test started: closed after each test. */
const closers: (() => Promise<void>)[] = [];

// ------------------------------------------------------------ helpers

function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `klet-sync-${prefix}-`));
  tempDirs.push(d);
  return d;
}

/** `klet sync` against this file's runtime and root dir, watching `manifestDir`. */
function sync(opts: Partial<SyncOptions> & { manifestDir?: string }): Promise<SyncProcess> {
  return startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, ...opts });
}

/** `klet ARGS...` against this file's runtime and root dir. */
function klet(args: string[], timeoutMs = 60_000): Promise<CliResult> {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs });
}

/** `klet status NAME -o json` (the pod name without the node suffix). */
async function status(name: string): Promise<V1Pod> {
  const r = await klet(['status', `${NS}/${name}-${NODE}`, '-o', 'json']);
  expect(r.code, explain(r)).toBe(0);
  return JSON.parse(r.stdout) as V1Pod;
}

interface ContainerSpec {
  name: string;
  image?: string;
  script?: string;
  /** Extra container fields (lifecycle, volumeMounts, ...). */
  extra?: Record<string, unknown>;
}

interface PodSpecOpts {
  containers?: ContainerSpec[];
  grace?: number;
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  volumes?: unknown[];
  annotations?: Record<string, string>;
}

/** A pod manifest (JSON is YAML) named `name` in the test namespace. */
function podManifest(name: string, opts: PodSpecOpts = {}): string {
  const containers = (opts.containers ?? [{ name: 'c' }]).map((c) => ({
    name: c.name,
    image: c.image ?? busybox,
    command: ['sh', '-c', c.script ?? SLEEP_FOREVER],
    ...c.extra,
  }));
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, ...(opts.annotations ? { annotations: opts.annotations } : {}) },
    spec: {
      ...(opts.restartPolicy ? { restartPolicy: opts.restartPolicy } : {}),
      terminationGracePeriodSeconds: opts.grace ?? 5,
      containers,
      ...(opts.volumes ? { volumes: opts.volumes } : {}),
    },
  };
  return JSON.stringify(pod, null, 2) + '\n';
}

interface PodView {
  uid: string;
  sandboxes: { id: string; ready: boolean; attempt: number }[];
  containers: { id: string; name: string; state: ContainerState; attempt: number; restartCount: number; sandboxId: string; createdAt: bigint }[];
}

/** Everything the runtime has for pod `name` (without the node suffix), by its name labels. */
async function podView(name: string): Promise<PodView | null> {
  const labels = { [NAME_LABEL]: `${name}-${NODE}`, [NAMESPACE_LABEL]: NS };
  const sandboxes = (await cri.listPodSandbox({ filter: { labelSelector: labels } })).items;
  const containers = (await cri.listContainers({ filter: { labelSelector: labels } })).containers;
  if (sandboxes.length === 0 && containers.length === 0) return null;
  const uids = new Set([...sandboxes.map((s) => s.labels[UID_LABEL]), ...containers.map((c) => c.labels[UID_LABEL])]);
  expect(uids.size, `pod ${name} has one UID in the runtime`).toBe(1);
  return {
    uid: [...uids][0] ?? '',
    sandboxes: sandboxes.map((s) => ({ id: s.id, ready: s.state === PodSandboxState.SANDBOX_READY, attempt: s.metadata?.attempt ?? -1 })),
    containers: containers.map((c) => ({
      id: c.id,
      name: c.metadata?.name ?? '',
      state: c.state,
      attempt: c.metadata?.attempt ?? -1,
      restartCount: Number(c.annotations[RESTART_COUNT] ?? -1),
      sandboxId: c.podSandboxId,
      createdAt: c.createdAt,
    })),
  };
}

interface RunningPod {
  uid: string;
  sandboxId: string;
  /** The running container of each name. */
  containers: Record<string, PodView['containers'][number]>;
  /** Every container id the runtime has for the pod, running or not. */
  allIds: string[];
}

/** Pod `name` is running: one ready sandbox, each of `names` running in it. Throws otherwise (use with eventually). */
async function runningPod(name: string, names: string[] = ['c']): Promise<RunningPod> {
  const v = await podView(name);
  if (v === null) throw new Error(`pod ${name}: nothing in the runtime`);
  const ready = v.sandboxes.filter((s) => s.ready);
  if (ready.length !== 1) throw new Error(`pod ${name}: ${ready.length} ready sandboxes: ${JSON.stringify(v.sandboxes)}`);
  const sandboxId = ready[0]!.id;
  const containers: RunningPod['containers'] = {};
  for (const n of names) {
    const running = v.containers.filter((c) => c.name === n && c.state === ContainerState.CONTAINER_RUNNING);
    if (running.length !== 1) throw new Error(`pod ${name}: ${running.length} running containers named ${n}`);
    expect(running[0]!.sandboxId).toBe(sandboxId);
    containers[n] = running[0]!;
  }
  return { uid: v.uid, sandboxId, containers, allIds: v.containers.map((c) => c.id).sort() };
}

function podDirs(): string[] {
  try {
    return fs.readdirSync(path.join(rt.rootDir, 'pods'));
  } catch {
    return [];
  }
}

/** Log dirs of this file's pods under /var/log/pods. */
function podLogDirs(): string[] {
  try {
    return fs.readdirSync(LOG_ROOT).filter((d) => d.startsWith(`${NS}_`));
  } catch {
    return [];
  }
}

/** Nothing of pod `uid` is left: no sandbox, no container, no pod dir, no log dir. */
async function expectPodGone(name: string, uid: string): Promise<void> {
  expect((await cri.listPodSandbox({ filter: { labelSelector: { [UID_LABEL]: uid } } })).items).toEqual([]);
  expect((await cri.listContainers({ filter: { labelSelector: { [UID_LABEL]: uid } } })).containers).toEqual([]);
  expect(fs.existsSync(path.join(rt.rootDir, 'pods', uid)), `pod dir of ${name}`).toBe(false);
  expect(fs.existsSync(path.join(LOG_ROOT, `${NS}_${name}-${NODE}_${uid}`)), `log dir of ${name}`).toBe(false);
}

/** The node is empty: no sandbox, no container, no pod dir, no log dir of this file's pods. */
async function expectNodeEmpty(): Promise<void> {
  expect((await cri.listPodSandbox()).items.map((s) => s.metadata?.name)).toEqual([]);
  expect((await cri.listContainers()).containers.map((c) => c.metadata?.name)).toEqual([]);
  expect(podDirs()).toEqual([]);
  expect(podLogDirs()).toEqual([]);
}

/** Wait until the sync has read its sources once (the first config iteration). */
async function sourcesRead(s: SyncProcess): Promise<void> {
  await eventually(async () => {
    const events = await apiEvents(s.socketPath);
    expect(events.some((e) => e.kind === 'SyncLoopIteration' && e.trigger === 'config'), s.tail()).toBe(true);
  }, 15_000);
}

/** The sync's events matching `pred`. */
async function eventsWhere(s: SyncProcess, pred: (e: SyncEvent) => boolean): Promise<SyncEvent[]> {
  return (await apiEvents(s.socketPath)).filter(pred);
}

/** Stop the sync with SIGTERM: exit code 0, promptly. */
async function stopOk(s: SyncProcess): Promise<void> {
  const exit = await s.stop();
  expect(exit.code, s.tail()).toBe(0);
  expect(exit.durationMs, s.tail()).toBeLessThan(10_000);
}

async function ctr(...args: string[]): Promise<string> {
  const { stdout } = await execFileP('ctr', ['-a', rt.socketPath, '-n', 'k8s.io', ...args]);
  return stdout;
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  busybox = rt.images.busybox;
  await ctr('images', 'tag', busybox, EDIT_IMAGE);
});

afterEach(async () => {
  await killAllSyncs();
  for (const close of closers.splice(0)) await close().catch(() => undefined);
  if (rt) {
    if ((await rt.pid()) === null) await rt.restart(); // a test that killed containerd and failed
    const left = (await cri.listPodSandbox()).items.length + (await cri.listContainers()).containers.length + podDirs().length + podLogDirs().length;
    if (left > 0) await wipeNode(cri, rt.rootDir, NS);
    await expectNodeEmpty();
  }
  for (const d of tempDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

afterAll(async () => {
  await killAllSyncs();
  cri?.close();
  await rt?.stop();
});

// ------------------------------------------------------------ tests

describe('klet sync: the process', () => {
  it('re-executes itself in place with two malloc arenas and V8 --optimize-for-size (bin/run.js: the RSS budget), and not --single-threaded-gc (it deadlocked process.exit now and then)', async () => {
    const s = await sync({ manifestDir: tempDir('m') });
    // Same pid as the one spawned: process.execve, no second process.
    const argv = fs.readFileSync(`/proc/${s.pid}/cmdline`, 'utf8').split('\0');
    const env = fs.readFileSync(`/proc/${s.pid}/environ`, 'utf8').split('\0');
    expect(argv).toContain('--optimize-for-size');
    expect(argv).not.toContain('--single-threaded-gc');
    // It implies 1 MB semi-spaces; a --max-semi-space-size beside it would only mislead.
    expect(argv.some((a) => a.startsWith('--max-semi-space-size'))).toBe(false);
    expect(env).toContain('MALLOC_ARENA_MAX=2');
    await stopOk(s);
  });
});

/**
 * bin/run.js runs `klet sync` without oclif when src/cli/sync-entry.ts takes
 * its arguments (KLET_ENTRY=oclif forces the oclif command): oclif would stay
 * resident for the life of the sync. Both must behave the same.
 */
describe('klet sync without oclif', () => {
  /** NODE_OPTIONS for a preload that reports on stderr, at exit, how many @oclif/core modules the process loaded. */
  function oclifProbe(): Record<string, string> {
    const file = path.join(tempDir('probe'), 'oclif-probe.cjs');
    fs.writeFileSync(
      file,
      "process.on('exit', () => { const n = Object.keys(require.cache).filter((k) => k.includes('@oclif')).length; require('fs').writeSync(2, `[oclif modules: ${n}]\\n`); });\n",
    );
    return { NODE_OPTIONS: `--require ${file}` };
  }
  /** What differs between two identical runs: times, pids, temp dir names. */
  const masked = (s: string) => s.replace(/klet-sync-[a-z]+-\w+/g, 'DIR').replace(/[0-9]+/g, '0');

  it('a well-formed sync loads no oclif; KLET_ENTRY=oclif does; both run and stop alike', async () => {
    const probe = oclifProbe();
    const stderr: string[] = [];
    const dir = tempDir('m');
    writeAtomic(dir, 'web.yaml', podManifest('web'));
    // The second sync (oclif's) adopts the pod the first one left running.
    for (const env of [probe, { ...probe, KLET_ENTRY: 'oclif' }]) {
      const s = await sync({ manifestDir: dir, env });
      const pod = await eventually(() => runningPod('web'), 20_000);
      await stopOk(s);
      expect(s.stderr).toMatch(/SIGTERM: stopping the sync loop; pods keep running/);
      // The pod outlives the sync, whichever entry ran it.
      expect((await runningPod('web')).containers.c!.id).toBe(pod.containers.c!.id);
      stderr.push(s.stderr);
    }
    expect(stderr[0]).toContain('[oclif modules: 0]');
    expect(stderr[1]).toMatch(/\[oclif modules: [1-9]/);
    const lines = (t: string) => masked(t).split('\n').filter((l) => l.startsWith('klet sync: '));
    expect(lines(stderr[0]!)).toEqual(lines(stderr[1]!));
  });

  it('bad input ends the same through both entries: exit code and the one-line error naming the flag', async () => {
    const probe = oclifProbe();
    const token = path.join(tempDir('token'), 'token');
    fs.writeFileSync(token, 'secret-token-value\n', { mode: 0o600 });
    // Flag values the entry's parser refuses (oclif's usage errors) go to oclif; the rest klet reports itself.
    const invocations: { args: string[]; parsedBy: 'entry' | 'oclif' }[] = [
      { args: ['--listen', '127.0.0.1:0'], parsedBy: 'entry' },
      { args: ['--auth-token-file', token], parsedBy: 'entry' },
      { args: ['--listen', 'example.com:80', '--auth-token-file', token], parsedBy: 'entry' },
      { args: ['--kubeconfig', path.join(tempDir('kc'), 'missing.conf')], parsedBy: 'entry' },
      { args: ['--manifest-url', 'http://127.0.0.1:9/pods.yaml', '--manifest-url-header', 'no colon'], parsedBy: 'entry' },
      { args: ['--max-parallel-syncs', '0'], parsedBy: 'oclif' },
      { args: ['--pleg-relist-period', 'soon'], parsedBy: 'oclif' },
    ];
    for (const { args, parsedBy } of invocations) {
      const base = ['sync', '--manifest-dir', tempDir('m'), ...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
      const fast = await runKlet(base, { extraEnv: probe, timeoutMs: 30_000 });
      const forced = await runKlet(base, { extraEnv: { ...probe, KLET_ENTRY: 'oclif' }, timeoutMs: 30_000 });
      const label = `klet ${args.join(' ')}\n${explain(fast)}\n${explain(forced)}`;
      expect(fast.code, label).toBeGreaterThan(0);
      expect(fast.code, label).toBe(forced.code);
      const errorLine = (t: string) => masked(t).split('\n').filter((l) => l.startsWith('error: '));
      expect(errorLine(fast.stderr), label).toHaveLength(1);
      expect(errorLine(fast.stderr), label).toEqual(errorLine(forced.stderr));
      expect(fast.stderr + forced.stderr, label).not.toContain('secret-token-value');
      if (parsedBy === 'entry') expect(fast.stderr, label).toContain('[oclif modules: 0]');
      else expect(fast.stderr, label).toMatch(/\[oclif modules: [1-9]/);
    }
  });
});

describe('klet sync: manifest directory', () => {
  it('starts a pod within 2 s of its manifest being dropped into the watched dir', async () => {
    const dir = tempDir('m');
    const s = await sync({ manifestDir: dir });
    await sourcesRead(s);
    const health = await apiHealth(s.socketPath);
    expect(health.status, JSON.stringify(health.body)).toBe(200);

    const t0 = Date.now();
    writeAtomic(dir, 'web.yaml', podManifest('web'));
    const pod = await eventually(() => runningPod('web'), 10_000, 50);
    const elapsed = Date.now() - t0;
    expect(elapsed, `pod running ${elapsed} ms after the write\n${s.tail()}`).toBeLessThan(2000);

    // The local API knows it: /pods lists it Running, /events has its start.
    await eventually(async () => {
      const res = await apiGet(s.socketPath, '/pods');
      expect(res.status).toBe(200);
      const list = JSON.parse(res.body) as V1PodList;
      const p = list.items.find((x) => x.metadata?.uid === pod.uid);
      expect(p?.metadata?.name).toBe(`web-${NODE}`);
      expect(p?.status?.phase).toBe('Running');
    });
    const started = await eventsWhere(s, (e) => e.kind === 'Event' && e.uid === pod.uid && e.reason === 'Started');
    expect(started.map((e) => e.message)).toEqual(['Started container c']);
    const metrics = await apiGet(s.socketPath, '/metrics');
    expect(metrics.status).toBe(200);

    // SIGTERM stops the loop and leaves the pod running.
    await stopOk(s);
    expect(s.stderr).toMatch(/SIGTERM: stopping the sync loop; pods keep running/);
    const after = await runningPod('web');
    expect(after.containers.c!.id).toBe(pod.containers.c!.id);
    expect(fs.existsSync(s.socketPath), 'the local API socket is removed on exit').toBe(false);
  });

  it('an edited image restarts only that container: same pod UID, same sandbox, the other container untouched', async () => {
    const dir = tempDir('m');
    const containers = (image2: string): ContainerSpec[] => [
      { name: 'keep', image: busybox },
      { name: 'change', image: image2 },
    ];
    writeAtomic(dir, 'edit.yaml', podManifest('edit', { containers: containers(busybox) }));
    const s = await sync({ manifestDir: dir });
    const before = await eventually(() => runningPod('edit', ['keep', 'change']), 20_000);
    const statusBefore = await status('edit');
    expect(statusBefore.metadata?.uid).toBe(before.uid);

    writeAtomic(dir, 'edit.yaml', podManifest('edit', { containers: containers(EDIT_IMAGE) }));
    const after = await eventually(async () => {
      const p = await runningPod('edit', ['keep', 'change']);
      expect(p.containers.change!.id).not.toBe(before.containers.change!.id);
      return p;
    }, 20_000);
    expect(after.uid).toBe(before.uid);
    expect(after.sandboxId).toBe(before.sandboxId);
    expect(after.containers.keep!.id).toBe(before.containers.keep!.id);
    expect(after.containers.change!.restartCount).toBe(before.containers.change!.restartCount + 1);
    expect(after.containers.change!.attempt).toBe(before.containers.change!.attempt + 1);

    // And it stays that way: no later sync restarts anything else.
    await sleep(3000);
    const settled = await runningPod('edit', ['keep', 'change']);
    expect(settled.containers).toEqual(after.containers);
    expect(settled.sandboxId).toBe(before.sandboxId);

    const st = await status('edit');
    expect(st.metadata?.uid).toBe(before.uid);
    expect(st.status?.phase).toBe('Running');
    const byName = new Map((st.status?.containerStatuses ?? []).map((c) => [c.name, c]));
    expect(byName.get('keep')?.restartCount).toBe(0);
    expect(byName.get('change')?.restartCount).toBe(1);
    expect(byName.get('change')?.image).toBe(EDIT_IMAGE);
    expect(byName.get('keep')?.image).toBe(busybox);
    expect(byName.get('change')?.containerID).toBe(`containerd://${after.containers.change!.id}`);
    await stopOk(s);
  }, 90_000);

  it('deleting the manifest terminates the pod within its grace period, runs preStop, and leaves nothing behind', async () => {
    const dir = tempDir('m');
    const hooks = tempDir('hooks');
    writeAtomic(
      dir,
      'term.yaml',
      podManifest('term', {
        grace: 3,
        containers: [
          // Ignores SIGTERM: only the SIGKILL at the end of the grace period stops it.
          { name: 'stubborn', script: "trap '' TERM; sleep 1000000 & wait" },
          {
            name: 'hooked',
            extra: {
              lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo "prestop ran" > /hooks/prestop'] } } },
              volumeMounts: [{ name: 'hooks', mountPath: '/hooks' }],
            },
          },
          // A preStop hook that fails (its output must not reach the event).
          { name: 'badhook', extra: { lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo secret-ish; exit 7'] } } } } },
        ],
        volumes: [{ name: 'hooks', hostPath: { path: hooks, type: 'Directory' } }],
      }),
    );
    const s = await sync({ manifestDir: dir });
    const pod = await eventually(() => runningPod('term', ['stubborn', 'hooked', 'badhook']), 20_000);
    expect(fs.existsSync(path.join(hooks, 'prestop'))).toBe(false);

    const t0 = Date.now();
    fs.unlinkSync(path.join(dir, 'term.yaml'));
    let lastRunning = 0;
    let goneAt = 0;
    while (Date.now() - t0 < 15_000) {
      const v = await podView('term');
      const now = Date.now();
      if (v === null) {
        goneAt = now;
        break;
      }
      if (v.containers.some((c) => c.name === 'stubborn' && c.state === ContainerState.CONTAINER_RUNNING)) lastRunning = now;
      await sleep(100);
    }
    expect(goneAt, `pod still there 15 s after its manifest was deleted\n${s.tail()}`).toBeGreaterThan(0);
    // Not before the grace period (the container ignores SIGTERM), not much after it.
    expect(lastRunning - t0, 'the TERM-ignoring container was stopped before its grace period').toBeGreaterThanOrEqual(2500);
    expect(goneAt - t0, 'the pod outlived its grace period').toBeLessThan(6000);
    expect(fs.readFileSync(path.join(hooks, 'prestop'), 'utf8')).toBe('prestop ran\n');

    await eventually(() => expectPodGone('term', pod.uid), 5000);
    // Past the next housekeeping pass too: the pod is removed once, and its worker forgotten.
    await sleep(2500);
    const events = await eventsWhere(s, (e) => e.uid === pod.uid);
    expect(events.filter((e) => e.kind === 'PodLifecycle').map((e) => e.state)).toEqual(['SyncPod', 'TerminatingPod', 'TerminatedPod', 'Removed']);
    const killing = events.filter((e) => e.kind === 'Event' && e.reason === 'Killing');
    expect(killing.map((e) => e.container).sort()).toEqual(['badhook', 'hooked', 'stubborn']);
    // Recorded as the kill starts, as the kubelet does: while the TERM-ignoring container still ran, not when it was SIGKILLed.
    const stubbornKilling = Date.parse(killing.find((e) => e.container === 'stubborn')!.time);
    expect(stubbornKilling, 'Killing recorded only after the container stopped').toBeLessThan(lastRunning);
    // A failed preStop hook: the kubelet's reason and fixed message, after the Killing of its container.
    const hookFailed = events.filter((e) => e.kind === 'Event' && e.container === 'badhook' && e.type === 'Warning');
    expect(hookFailed.map((e) => [e.reason, e.message])).toEqual([['FailedPreStopHook', 'PreStopHook failed']]);
    expect(hookFailed[0]!.seq).toBeGreaterThan(killing.find((e) => e.container === 'badhook')!.seq);
    const h = await apiHealth(s.socketPath);
    expect(typeof h.body === 'object' && h.body.checks?.syncloop?.message).toBe('pod workers {"SyncPod":0,"TerminatingPod":0,"TerminatedPod":0}');
    await stopOk(s);
  }, 60_000);

  it('a sandbox the runtime refuses: ContainerCreating, a FailedCreatePodSandBox event, retried after a back-off', async () => {
    const dir = tempDir('m');
    const pod = JSON.parse(podManifest('nosandbox')) as V1Pod;
    // runc cannot write a sysctl the kernel does not have: RunPodSandbox fails (allowed at admission, as the kubelet
    // allows it with allowedUnsafeSysctls; without that it is SysctlForbidden, below).
    pod.spec!.securityContext = { sysctls: [{ name: 'net.ipv4.klet_no_such_sysctl', value: '1' }] };
    writeAtomic(dir, 'nosandbox.yaml', JSON.stringify(pod));
    const s = await sync({ manifestDir: dir, args: ['--crash-loop-backoff-initial', '1s', '--crash-loop-backoff-max', '2s', '--allowed-unsafe-sysctls', 'net.ipv4.klet_no_such_sysctl'] });
    const failed = await eventually(async () => {
      const e = await eventsWhere(s, (x) => x.kind === 'Event' && x.reason === 'FailedCreatePodSandBox');
      expect(e.length, s.tail()).toBeGreaterThanOrEqual(2);
      return e;
    }, 30_000);
    expect(failed[0]).toMatchObject({ type: 'Warning', pod: `${NS}/nosandbox-${NODE}` });
    expect(String(failed[0]!.message)).toMatch(/^Failed to create pod sandbox: rpc error: code = Unknown desc = .*klet_no_such_sysctl/);
    const st = await status('nosandbox');
    expect(st.status?.phase).toBe('Pending');
    expect(st.status?.containerStatuses?.[0]?.state?.waiting).toEqual({ reason: 'ContainerCreating' });
    const table = await klet(['status']);
    expect(table.stdout).toMatch(new RegExp(`nosandbox-${NODE} +0/1 +ContainerCreating `));
    await stopOk(s);
  }, 60_000);

  it('a static pod with an unsafe sysctl the node does not allow is rejected at admission: Failed, SysctlForbidden, nothing made', async () => {
    const dir = tempDir('m');
    const pod = JSON.parse(podManifest('unsafe')) as V1Pod;
    pod.spec!.securityContext = { sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] };
    writeAtomic(dir, 'unsafe.yaml', JSON.stringify(pod));
    const s = await sync({ manifestDir: dir });
    const rejected = await eventually(async () => {
      const p = await status('unsafe');
      expect(p.status?.reason, s.tail()).toBe('SysctlForbidden');
      return p;
    }, 20_000);
    expect(rejected.status).toMatchObject({ phase: 'Failed', message: 'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted' });
    const e = await eventsWhere(s, (x) => x.kind === 'Event' && x.reason === 'SysctlForbidden');
    expect(e[0]).toMatchObject({ type: 'Warning', pod: `${NS}/unsafe-${NODE}` });
    const { items } = await cri.listPodSandbox({});
    expect(items.filter((i) => i.metadata?.name === `unsafe-${NODE}`)).toEqual([]);
    await stopOk(s);
  }, 60_000);

  it('a static pod asking for more memory than the node has is rejected as the kubelet rejects a critical pod: UnexpectedAdmissionError, nothing made; the pods after it run', async () => {
    // The docs' memory-request-limit{,-2,-3}.yaml: file name order is -2, -3, then the plain one. Static pods are critical, so the kubelet
    // tries preemption and says why it failed; -3 holds nothing, so the last one fits beside -2.
    const dir = tempDir('m');
    const mem = (name: string, request: string) => {
      const pod = JSON.parse(podManifest(name)) as V1Pod;
      pod.spec!.containers[0]!.resources = { requests: { memory: request }, limits: { memory: request } };
      return JSON.stringify(pod);
    };
    writeAtomic(dir, 'memory-request-limit.yaml', mem('memory-demo', '100Mi'));
    writeAtomic(dir, 'memory-request-limit-2.yaml', mem('memory-demo-2', '50Mi'));
    writeAtomic(dir, 'memory-request-limit-3.yaml', mem('memory-demo-3', '1000Gi'));
    const s = await sync({ manifestDir: dir });
    const rejected = await eventually(async () => {
      const p = await status('memory-demo-3');
      expect(p.status?.reason, s.tail()).toBe('UnexpectedAdmissionError');
      return p;
    }, 20_000);
    // What preemption could not free: the request less what is left beside memory-demo-2 (allocatable: MemTotal less the 100Mi hard eviction threshold).
    const memTotal = Number(/MemTotal:\s+(\d+) kB/.exec(fs.readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;
    const q = 1000 * 1024 ** 3 - (memTotal - 100 * 1024 ** 2 - 50 * 1024 ** 2);
    expect(rejected.status).toMatchObject({
      phase: 'Failed',
      message: `Pod was rejected: Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: memory, q: ${q}), ]`,
    });
    const e = await eventsWhere(s, (x) => x.kind === 'Event' && x.reason === 'UnexpectedAdmissionError');
    expect(e).toHaveLength(1);
    expect(e[0]).toMatchObject({ type: 'Warning', pod: `${NS}/memory-demo-3-${NODE}`, message: rejected.status!.message!.replace('Pod was rejected: ', '') });
    for (const name of ['memory-demo', 'memory-demo-2']) {
      await eventually(async () => expect((await status(name)).status?.phase, s.tail()).toBe('Running'), 20_000);
    }
    const { items } = await cri.listPodSandbox({});
    expect(items.filter((i) => i.metadata?.name === `memory-demo-3-${NODE}`)).toEqual([]);
    await stopOk(s);
  }, 60_000);

  it('pods of one update asking for one hostPort are admitted in the kubelet order: the older creationTimestamp wins', async () => {
    const dir = tempDir('m');
    const port = 34000 + Math.floor(Math.random() * 2000);
    const portPod = (name: string, created: string) => {
      const pod = JSON.parse(podManifest(name)) as V1Pod;
      pod.metadata!.creationTimestamp = created as unknown as Date;
      pod.spec!.containers[0]!.ports = [{ containerPort: 80, hostPort: port }];
      return JSON.stringify(pod);
    };
    writeAtomic(dir, 'a.yaml', portPod('newer', '2025-06-01T00:00:00Z'));
    writeAtomic(dir, 'b.yaml', portPod('older', '2025-01-01T00:00:00Z'));
    const s = await sync({ manifestDir: dir });
    await eventually(() => runningPod('older'), 20_000);
    const loser = await eventually(async () => {
      const p = await status('newer');
      expect(p.status?.reason, s.tail()).toBe('NodePorts');
      return p;
    }, 20_000);
    expect(loser.status?.phase).toBe('Failed');
    expect(loser.status?.containerStatuses).toBeUndefined();
    await stopOk(s);
  }, 60_000);

  it('a manifest put back while its pod is terminating brings the pod back', async () => {
    const dir = tempDir('m');
    const text = podManifest('back', { grace: 2, containers: [{ name: 'c', script: "trap '' TERM; sleep 1000000 & wait" }] });
    writeAtomic(dir, 'back.yaml', text);
    const s = await sync({ manifestDir: dir });
    const first = await eventually(() => runningPod('back'), 20_000);

    fs.unlinkSync(path.join(dir, 'back.yaml'));
    await eventually(async () => {
      const e = await eventsWhere(s, (x) => x.kind === 'PodLifecycle' && x.uid === first.uid && x.state === 'TerminatingPod');
      expect(e.length).toBe(1);
    }, 5000, 50);
    // Back while the container is still in its grace period.
    writeAtomic(dir, 'back.yaml', text);
    const again = await eventually(async () => {
      const p = await runningPod('back');
      expect(p.containers.c!.id).not.toBe(first.containers.c!.id);
      return p;
    }, 20_000);
    // Same manifest, same UID: the same pod, started over.
    expect(again.uid).toBe(first.uid);
    await stopOk(s);
  }, 60_000);

  it('crash-loop back-off: restarts at once, then after 1 s, 2 s, 4 s; status says CrashLoopBackOff', async () => {
    const dir = tempDir('m');
    writeAtomic(dir, 'crash.yaml', podManifest('crash', { containers: [{ name: 'c', script: 'exit 1' }] }));
    // Container GC keeps every dead instance here (the kubelet's --maximum-dead-containers-per-container):
    // with its default of 1 an instance may be gone before it is read.
    const s = await sync({ manifestDir: dir, args: ['--crash-loop-backoff-initial', '1s', '--crash-loop-backoff-max', '8s', '--maximum-dead-containers-per-container', '10'] });

    // Every instance, by restart count: created and finished times from the runtime.
    const instances = new Map<number, { id: string; createdAt: number; startedAt: number; finishedAt: number }>();
    const collect = async (): Promise<void> => {
      const v = await podView('crash');
      for (const c of v?.containers ?? []) {
        if (instances.get(c.restartCount)?.finishedAt) continue;
        const st = (await cri.containerStatus({ containerId: c.id })).status;
        if (st === undefined) continue;
        const ms = (ns: bigint) => Number(ns / 1_000_000n);
        instances.set(c.restartCount, { id: c.id, createdAt: ms(st.createdAt), startedAt: ms(st.startedAt), finishedAt: ms(st.finishedAt) });
      }
    };
    let backoffStatus: V1Pod | undefined;
    await eventually(
      async () => {
        await collect();
        // Status while held back (any of the back-off windows).
        if (backoffStatus === undefined && instances.size >= 2) {
          const st = await status('crash');
          if (st.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff') backoffStatus = st;
        }
        const done = [0, 1, 2, 3, 4].every((n) => (instances.get(n)?.finishedAt ?? 0) > 0);
        expect(done, `instances so far: ${JSON.stringify([...instances])}`).toBe(true);
      },
      45_000,
      250,
    );
    const seq = [0, 1, 2, 3, 4].map((n) => instances.get(n)!);
    // Delay from an instance's exit to the creation of the next one.
    const gaps = [1, 2, 3, 4].map((n) => seq[n]!.createdAt - seq[n - 1]!.finishedAt);
    const explainGaps = `gaps ${JSON.stringify(gaps)} ms\n${s.tail()}`;
    if (process.env.KLET_TEST_VERBOSE) console.info(`crash-loop gaps (ms): ${JSON.stringify(gaps)}`);
    const expected = [0, 1000, 2000, 4000];
    const SLACK = 1500;
    gaps.forEach((g, i) => {
      expect(g, explainGaps).toBeGreaterThanOrEqual(expected[i]! - 20);
      expect(g, explainGaps).toBeLessThanOrEqual(expected[i]! + SLACK);
    });

    // Now held back for 8 s: the status shows it, with the kubelet's message.
    const st = await eventually(async () => {
      const p = await status('crash');
      expect(p.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('CrashLoopBackOff');
      return p;
    }, 10_000);
    const uid = st.metadata?.uid ?? '';
    for (const p of [st, backoffStatus]) {
      const cs = p?.status?.containerStatuses?.[0];
      expect(cs?.state?.waiting?.message).toMatch(
        new RegExp(`^back-off [1248]s restarting failed container=c pod=crash-${NODE}_${NS}\\(${uid}\\)$`),
      );
      expect(cs?.lastState?.terminated?.exitCode).toBe(1);
    }
    expect(st.status?.containerStatuses?.[0]?.restartCount).toBeGreaterThanOrEqual(4);
    const backoffEvents = await eventsWhere(s, (e) => e.kind === 'Event' && e.uid === uid && e.reason === 'BackOff');
    expect(backoffEvents.length, s.tail()).toBeGreaterThan(0);
    expect(String(backoffEvents[0]!.message)).toMatch(/^back-off 1s restarting failed container=c /);
    await stopOk(s);
  }, 90_000);

  it("a new image starts the crash-loop back-off over: restarted at once, then after the initial delay (the kubelet's back-off key has the image)", async () => {
    // The e2e spec "Pods should have their auto-restart back-off timer reset on image update".
    const dir = tempDir('m');
    const manifest = (image: string) => podManifest('crashimg', { containers: [{ name: 'c', image, script: 'exit 1' }] });
    writeAtomic(dir, 'crashimg.yaml', manifest(busybox));
    const s = await sync({ manifestDir: dir, args: ['--crash-loop-backoff-initial', '2s', '--crash-loop-backoff-max', '60s', '--maximum-dead-containers-per-container', '10'] });
    // Instances by container id: the spec hash klet gave it (the runtime names both tags of one image alike)
    // and its created/finished times from the runtime.
    const instances = new Map<string, { hash: string; createdAt: number; finishedAt: number }>();
    const labels = { [NAME_LABEL]: `crashimg-${NODE}`, [NAMESPACE_LABEL]: NS };
    const collect = async (): Promise<void> => {
      for (const c of (await cri.listContainers({ filter: { labelSelector: labels } })).containers) {
        if (instances.get(c.id)?.finishedAt) continue;
        const st = (await cri.containerStatus({ containerId: c.id })).status;
        if (st === undefined) continue;
        const ms = (ns: bigint) => Number(ns / 1_000_000n);
        instances.set(c.id, { hash: c.annotations['io.kubernetes.container.hash'] ?? '', createdAt: ms(st.createdAt), finishedAt: ms(st.finishedAt) });
      }
    };
    const sorted = () => [...instances.values()].sort((a, b) => a.createdAt - b.createdAt);
    // Restarts at once, then after 2 s, 4 s, 8 s: five instances exited, the back-off is now 16 s.
    await eventually(
      async () => {
        await collect();
        const done = sorted().filter((i) => i.finishedAt > 0);
        expect(done.length, `instances so far: ${JSON.stringify(sorted())}`).toBeGreaterThanOrEqual(5);
      },
      45_000,
      250,
    );
    const firstHash = sorted()[0]!.hash;
    writeAtomic(dir, 'crashimg.yaml', manifest(EDIT_IMAGE));
    const editedAt = Date.now();
    // The new image's first instance starts at once (not after the 16 s), its second after 2 s.
    await eventually(
      async () => {
        await collect();
        const edited = sorted().filter((i) => i.hash !== firstHash && i.finishedAt > 0);
        expect(edited.length, `instances so far: ${JSON.stringify(sorted())}`).toBeGreaterThanOrEqual(2);
      },
      30_000,
      250,
    );
    const edited = sorted().filter((i) => i.hash !== firstHash);
    const explainEdit = `edited at ${editedAt}, instances ${JSON.stringify(sorted())}\n${s.tail()}`;
    expect(edited[0]!.createdAt - editedAt, explainEdit).toBeLessThan(8000);
    const gap = edited[1]!.createdAt - edited[0]!.finishedAt;
    expect(gap, explainEdit).toBeGreaterThanOrEqual(2000 - 20);
    expect(gap, explainEdit).toBeLessThanOrEqual(2000 + 1500);
    await stopOk(s);
  }, 120_000);
});

describe('klet sync: restarts and runtime failures', () => {
  it('after SIGKILL, a new klet sync adopts the running pods: no new sandbox, no new container', async () => {
    const dir = tempDir('m');
    writeAtomic(dir, 'a.yaml', podManifest('adopt-a'));
    writeAtomic(dir, 'b.yaml', podManifest('adopt-b', { containers: [{ name: 'x' }, { name: 'y' }] }));
    const first = await sync({ manifestDir: dir });
    const a = await eventually(() => runningPod('adopt-a'), 20_000);
    const b = await eventually(() => runningPod('adopt-b', ['x', 'y']), 20_000);
    const snapshot = async () => ({
      sandboxes: (await cri.listPodSandbox()).items.map((x) => x.id).sort(),
      containers: (await cri.listContainers()).containers.map((x) => x.id).sort(),
    });
    const before = await snapshot();
    expect(before.sandboxes).toHaveLength(2);
    expect(before.containers).toHaveLength(3);

    const exit = await first.kill();
    expect(exit.signal).toBe('SIGKILL');
    const second = await sync({ manifestDir: dir });
    // The new process has synced both pods (it knows them as SyncPod) ...
    await eventually(async () => {
      const synced = await eventsWhere(second, (e) => e.kind === 'PodLifecycle' && e.state === 'SyncPod');
      expect(synced.map((e) => e.uid).sort()).toEqual([a.uid, b.uid].sort());
    }, 15_000);
    // ... and over a few seconds (relists, housekeeping, file re-reads) creates nothing.
    const t0 = Date.now();
    while (Date.now() - t0 < 6000) {
      expect(await snapshot()).toEqual(before);
      await sleep(500);
    }
    expect((await runningPod('adopt-a')).containers).toEqual(a.containers);
    expect((await runningPod('adopt-b', ['x', 'y'])).containers).toEqual(b.containers);
    const created = await eventsWhere(second, (e) => e.kind === 'Event' && (e.reason === 'SandboxCreated' || e.reason === 'Started' || e.reason === 'Killing'));
    expect(created, second.tail()).toEqual([]);
    const res = await apiGet(second.socketPath, '/pods');
    const phases = (JSON.parse(res.body) as V1PodList).items.map((p) => [p.metadata?.name, p.status?.phase]).sort();
    expect(phases).toEqual([
      [`adopt-a-${NODE}`, 'Running'],
      [`adopt-b-${NODE}`, 'Running'],
    ]);
    await stopOk(second);
  }, 90_000);

  it('keeps going when containerd is killed and restarted, and converges back (a pod added meanwhile starts)', async () => {
    const dir = tempDir('m');
    writeAtomic(dir, 'a.yaml', podManifest('crd-a'));
    writeAtomic(dir, 'b.yaml', podManifest('crd-b'));
    const s = await sync({ manifestDir: dir });
    await eventually(() => runningPod('crd-a'), 20_000);
    await eventually(() => runningPod('crd-b'), 20_000);

    await rt.killContainerd();
    try {
      // The relist fails: /healthz says so in its runtime check.
      await eventually(async () => {
        const h = await apiHealth(s.socketPath);
        expect(typeof h.body === 'object' && h.body.checks?.runtime?.ok, JSON.stringify(h.body)).toBe(false);
      }, 10_000);
      writeAtomic(dir, 'c.yaml', podManifest('crd-c'));
      await sleep(2000);
      expect(s.running, s.tail()).toBe(true);
    } finally {
      await rt.restart();
    }
    await eventually(
      async () => {
        await runningPod('crd-a');
        await runningPod('crd-b');
        await runningPod('crd-c');
        const h = await apiHealth(s.socketPath);
        expect(h.status, JSON.stringify(h.body)).toBe(200);
        expect(typeof h.body === 'object' && h.body.checks?.runtime?.ok, JSON.stringify(h.body)).toBe(true);
      },
      60_000,
      500,
    );
    expect(s.stderr).toMatch(/PLEG: relist failed/);
    expect(s.stderr).toMatch(/PLEG: relisting works again/);
    await stopOk(s);
  }, 120_000);
});

describe('klet sync: bad input is reported, nothing running is killed, the loop goes on', () => {
  it('a manifest with invalid YAML', async () => {
    const dir = tempDir('m');
    writeAtomic(dir, 'keep.yaml', podManifest('keep'));
    const s = await sync({ manifestDir: dir });
    const keep = await eventually(() => runningPod('keep'), 20_000);

    const mark = s.stderr.length;
    writeAtomic(dir, 'bad.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n  spec: : :\n');
    const line = await s.waitForStderr(/bad\.yaml/, 10_000, mark);
    expect(line).toMatch(/^warning: /);
    await eventually(async () => {
      const errs = await eventsWhere(s, (e) => e.kind === 'SourceError' && String(e.message).includes('bad.yaml'));
      expect(errs.length).toBeGreaterThan(0);
    });

    writeAtomic(dir, 'after.yaml', podManifest('after'));
    await eventually(() => runningPod('after'), 10_000);
    expect((await runningPod('keep')).containers).toEqual(keep.containers);
    // Reported once, not on every re-read (--file-check-frequency 2s).
    await sleep(2500);
    expect(s.stderr.slice(mark).split('\n').filter((l) => l.includes('bad.yaml')), s.tail()).toHaveLength(1);

    fs.unlinkSync(path.join(dir, 'bad.yaml'));
    await s.waitForStderr(/all manifests read cleanly again/, 10_000, mark);
    expect((await runningPod('keep')).containers).toEqual(keep.containers);
    expect(s.running).toBe(true);
    await stopOk(s);
  }, 60_000);

  it('the manifest directory deleted while running (pods keep running) and re-created', async () => {
    const parent = tempDir('m');
    const dir = path.join(parent, 'manifests');
    fs.mkdirSync(dir);
    const keepText = podManifest('dirkeep');
    writeAtomic(dir, 'keep.yaml', keepText);
    const s = await sync({ manifestDir: dir });
    const keep = await eventually(() => runningPod('dirkeep'), 20_000);

    const mark = s.stderr.length;
    fs.rmSync(dir, { recursive: true });
    const line = await s.waitForStderr(/manifest directory does not exist/, 10_000, mark);
    expect(line).toContain(dir);
    await eventually(async () => {
      const errs = await eventsWhere(s, (e) => e.kind === 'SourceError' && String(e.message).includes('manifest directory does not exist'));
      expect(errs.length).toBeGreaterThan(0);
    });
    // Several re-reads and housekeeping passes later the pod still runs.
    await sleep(5000);
    expect((await runningPod('dirkeep')).containers).toEqual(keep.containers);

    fs.mkdirSync(dir);
    writeAtomic(dir, 'keep.yaml', keepText);
    writeAtomic(dir, 'new.yaml', podManifest('dirnew'));
    await eventually(() => runningPod('dirnew'), 10_000);
    await s.waitForStderr(/all manifests read cleanly again/, 10_000, mark);
    const after = await runningPod('dirkeep');
    expect(after.containers).toEqual(keep.containers);
    expect(after.uid).toBe(keep.uid);
    await stopOk(s);
  }, 60_000);

  it('a manifest URL answering 500, then HTML, then a 50 MB body: the pods of its last good answer keep running', async () => {
    type Mode = 'good' | '500' | 'html' | 'huge' | 'good2';
    let mode = 'good' as Mode;
    let requests = 0;
    const good = podManifest('urlpod');
    const server = http.createServer((req, res) => {
      requests++;
      res.on('error', () => undefined);
      switch (mode) {
        case 'good':
          res.end(good);
          return;
        case 'good2':
          res.end(`${good}---\n${podManifest('urlpod2')}`);
          return;
        case '500':
          res.writeHead(500, { 'Content-Type': 'text/plain' });
          res.end('boom\n');
          return;
        case 'html':
          res.writeHead(200, { 'Content-Type': 'text/html' });
          res.end('<!DOCTYPE html>\n<html><body><h1>Please log in</h1></body></html>\n');
          return;
        case 'huge': {
          // 50 MB, chunked (no Content-Length): the limit must hold while streaming.
          res.writeHead(200, { 'Content-Type': 'application/yaml' });
          const chunk = Buffer.alloc(1024 * 1024, '# padding padding padding padding padding padding padding padding\n');
          let sent = 0;
          const write = (): void => {
            while (sent < 50) {
              sent++;
              if (!res.write(chunk)) {
                res.once('drain', write);
                return;
              }
            }
            res.end();
          };
          req.socket.once('close', () => {
            sent = 50;
          });
          write();
          return;
        }
      }
    });
    server.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', () => r()));
    closers.push(
      () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    );
    const port = (server.address() as net.AddressInfo).port;
    const url = `http://127.0.0.1:${port}/node/pods.yaml?token=secret`;

    const s = await sync({ manifestUrl: url, args: ['--http-check-frequency', '1s'] });
    const pod = await eventually(() => runningPod('urlpod'), 20_000);

    const bad: [Mode, RegExp][] = [
      ['500', /HTTP 500/],
      ['html', /HTML/],
      ['huge', /10 MiB limit/],
    ];
    for (const [m, re] of bad) {
      const mark = s.stderr.length;
      mode = m;
      const line = await s.waitForStderr(re, 15_000, mark);
      // The URL is named, its query (a token) is not.
      expect(line).toContain(`http://127.0.0.1:${port}/node/pods.yaml`);
      expect(line).not.toContain('secret');
      await eventually(async () => {
        const errs = await eventsWhere(s, (e) => e.kind === 'SourceError' && re.test(String(e.message)));
        expect(errs.length).toBeGreaterThan(0);
      });
      // A few more polls of the bad answer: still running, same containers.
      const seen = requests;
      await eventually(() => expect(requests).toBeGreaterThanOrEqual(seen + 2), 10_000);
      expect((await runningPod('urlpod')).containers, `after ${m}\n${s.tail()}`).toEqual(pod.containers);
    }
    expect(s.running).toBe(true);
    const h = await apiHealth(s.socketPath);
    expect(h.status).toBe(200);

    mode = 'good2';
    await eventually(() => runningPod('urlpod2'), 15_000);
    expect((await runningPod('urlpod')).containers).toEqual(pod.containers);
    await stopOk(s);
  }, 120_000);

  it('a pod whose image disappears is reported as an image pull error; the other pods are untouched', async () => {
    const GONE = 'localhost/klet/busybox:gone';
    await ctr('images', 'tag', busybox, GONE);
    const dir = tempDir('m');
    writeAtomic(dir, 'steady.yaml', podManifest('steady'));
    writeAtomic(dir, 'fragile.yaml', podManifest('fragile', { containers: [{ name: 'c', image: GONE }] }));
    const s = await sync({ manifestDir: dir });
    const steady = await eventually(() => runningPod('steady'), 20_000);
    const fragile = await eventually(() => runningPod('fragile'), 20_000);

    await ctr('images', 'rm', GONE);
    await cri.stopContainer({ containerId: fragile.containers.c!.id, timeout: 0n });
    const st = await eventually(async () => {
      const p = await status('fragile');
      expect(['ErrImagePull', 'ImagePullBackOff']).toContain(p.status?.containerStatuses?.[0]?.state?.waiting?.reason);
      return p;
    }, 30_000);
    expect(st.status?.containerStatuses?.[0]?.state?.waiting?.message).toContain(GONE);
    await eventually(async () => {
      const failed = await eventsWhere(s, (e) => e.kind === 'Event' && e.uid === fragile.uid && e.type === 'Warning');
      expect(failed.some((e) => String(e.message).includes(`failed to pull image "${GONE}"`)), JSON.stringify(failed)).toBe(true);
    });
    // Still no container running for it, and the other pod has not been touched.
    const v = await podView('fragile');
    expect(v?.containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING)).toEqual([]);
    expect((await runningPod('steady')).containers).toEqual(steady.containers);
    expect((await status('steady')).status?.phase).toBe('Running');
    expect(s.running).toBe(true);
    await stopOk(s);
  }, 90_000);

  it('a runtime socket that accepts and never answers: stays up, unhealthy, reports the deadline, SIGTERM exits 0 promptly', async () => {
    const root = tempDir('root');
    const dir = tempDir('m');
    const sock = path.join(root, 'hung.sock');
    const held: net.Socket[] = [];
    const server = net.createServer((c) => {
      held.push(c);
      c.on('error', () => undefined);
      c.resume(); // read and never answer
    });
    server.listen(sock);
    await new Promise<void>((r) => server.once('listening', () => r()));
    closers.push(
      () =>
        new Promise<void>((r) => {
          for (const c of held) c.destroy();
          server.close(() => r());
        }),
    );
    writeAtomic(dir, 'p.yaml', podManifest('never'));

    const s = await startSync({ rootDir: root, endpoint: `unix://${sock}`, manifestDir: dir, nodeName: NODE, args: ['--runtime-request-timeout', '2s'] });
    // The deadline, named: "the container runtime at unix://... did not answer ListPodSandbox within 2s"
    // (garbage collection's first passes fail on it too, and say so in lines of their own).
    const line = await s.waitForStderr(/^warning: PLEG: relist failed.*did not answer \w+ within 2s/, 15_000);
    expect(line).toContain(sock);
    const h = await apiHealth(s.socketPath);
    expect(h.status, JSON.stringify(h.body)).toBe(500);
    expect(typeof h.body === 'object' && h.body.ok, JSON.stringify(h.body)).toBe(false);
    expect(typeof h.body === 'object' && h.body.checks?.runtime?.ok, JSON.stringify(h.body)).toBe(false);
    await sleep(3000);
    expect(s.running, s.tail()).toBe(true);
    expect(held.length, 'klet connected to the socket').toBeGreaterThan(0);

    const exit = await s.stop();
    expect(exit.code, s.tail()).toBe(0);
    expect(exit.durationMs, s.tail()).toBeLessThan(5000);
  }, 60_000);
});

describe('klet sync: churn', () => {
  it('200 add/remove cycles through the manifest dir converge to an empty node', async () => {
    const dir = tempDir('m');
    const s = await sync({ manifestDir: dir, args: ['--max-parallel-syncs', '8'] });
    await sourcesRead(s);
    const ROUNDS = 20;
    const FILES = 10;
    // Time each round's files stay: 0 (never seen: removed within the fs-event debounce), a little
    // (removed before its pod could start), and long enough for many pods to be running.
    const stays = [0, 150, 400, 900, 1500];
    const everUids = new Set<string>();
    let cycles = 0;
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < FILES; i++) {
        // Odd files change every round (new pods); even ones are the same manifest every time (the same pod UID, re-added).
        const annotations = i % 2 === 1 ? { round: String(r) } : undefined;
        writeAtomic(dir, `churn-${i}.yaml`, podManifest(`churn-${i}`, { grace: 2, annotations }));
      }
      await sleep(stays[r % stays.length]!);
      // Remove in two halves, a moment apart.
      for (let i = 0; i < FILES; i++) {
        if (i === FILES / 2) await sleep(50);
        fs.unlinkSync(path.join(dir, `churn-${i}.yaml`));
        cycles++;
      }
      for (const sb of (await cri.listPodSandbox({ filter: { labelSelector: { [NAMESPACE_LABEL]: NS } } })).items) everUids.add(sb.labels[UID_LABEL] ?? '');
      await sleep(100);
    }
    expect(cycles).toBe(ROUNDS * FILES);
    expect(everUids.size, 'some churned pods got as far as a sandbox').toBeGreaterThan(0);

    await eventually(
      async () => {
        expect((await cri.listPodSandbox()).items.map((x) => x.metadata?.name)).toEqual([]);
        expect((await cri.listContainers()).containers.map((x) => x.metadata?.name)).toEqual([]);
        expect(podDirs()).toEqual([]);
        expect(podLogDirs()).toEqual([]);
        expect(await mountsUnder(rt.rootDir)).toEqual([]);
      },
      120_000,
      1000,
    );
    expect(s.running, s.tail()).toBe(true);
    const h = await apiHealth(s.socketPath);
    expect(h.status, JSON.stringify(h.body)).toBe(200);
    // Nothing is left in the pod workers either.
    expect(typeof h.body === 'object' && h.body.checks?.syncloop?.message).toBe('pod workers {"SyncPod":0,"TerminatingPod":0,"TerminatedPod":0}');
    expect(s.stderr, s.tail()).not.toMatch(/^error: /m);
    // A file deleted while the directory was being read is gone, not broken.
    expect(s.stderr, s.tail()).not.toMatch(/no such file or directory/);
    // It was real churn: many sandboxes and containers were created (and all removed again).
    const metrics = (await apiGet(s.socketPath, '/metrics')).body;
    const counter = (re: RegExp): number =>
      metrics
        .split('\n')
        .filter((l) => re.test(l))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    const sandboxesRun = counter(/^kubelet_runtime_operations_total\{operation_type="run_podsandbox"\}/);
    const started = counter(/^kubelet_started_containers_total\{/);
    expect(sandboxesRun, metrics).toBeGreaterThanOrEqual(20);
    expect(started, metrics).toBeGreaterThanOrEqual(20);

    // The loop still works: a pod added now starts.
    writeAtomic(dir, 'final.yaml', podManifest('final'));
    await eventually(() => runningPod('final'), 15_000);
    await stopOk(s);
  }, 240_000);
});
