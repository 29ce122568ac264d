/**
 * klet owns exactly what it created. On one private containerd: klet root
 * dir A (which started the runtime), klet root dir B (another node name, on
 * the same endpoint) and a pod of "the real kubelet" (a sandbox and
 * container created directly through CRI with the kubelet's labels for
 * another node, and its log dir under /var/log/pods). Each klet goes through
 * status, sync (housekeeping, adoption), delete --all and runtime stop, and
 * none touches the others' pods, logs, runtime or socket.
 *
 * Also: two `klet runtime start` with different root dirs racing on one
 * endpoint start exactly one containerd; the loser says whose it is and how
 * to get a private one; `runtime stop` removes the CNI bridge its runtime made.
 * A root dir's runtime given another runtime's endpoint is stopped on its own
 * socket (never the other's pods, shims or socket), and neither reused nor
 * reported as managed there.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1PodList } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerState, CriClient, PodSandboxState } from '../../src/lib/cri/index.js';
import { networkFor, shimPids, stopManagedRuntime } from '../../src/lib/runtime/containerd.js';
import { explain, runKlet, type CliResult } from '../helpers/cli.js';
import { removeAllPods, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, sleep, startSync } from '../helpers/sync.js';
import { podYaml as manifest, SLEEP_FOREVER } from '../helpers/manifests.js';

const NS = 'kown';

let rt: TestRuntime;
let cri: CriClient;
let tmp: string;
/** Root dir B: a second klet on the same runtime. */
let rootB: string;
const kubeletPod = { uid: randomBytes(16).toString('hex'), name: 'kube-proxy-othernode', namespace: NS };
let kubeletSandbox = '';
let kubeletContainer = '';

const A = { node: 'nodea', root: () => rt.rootDir };
const B = { node: 'nodeb', root: () => rootB };

function klet(who: { node: string; root: () => string }, args: string[], timeoutMs = 90_000): Promise<CliResult> {
  return runKlet([...args, '--root-dir', who.root(), '--container-runtime-endpoint', rt.endpoint, '--node-name', who.node], { timeoutMs });
}

function podYaml(name: string): string {
  return manifest({ name, namespace: NS, image: rt.images.busybox, script: `echo ${name} up; ${SLEEP_FOREVER}` });
}

function manifestDir(name: string, pods: string[]): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const p of pods) fs.writeFileSync(path.join(dir, `${p}.yaml`), podYaml(p));
  return dir;
}

interface RuntimeView {
  sandboxes: Map<string, { id: string; ready: boolean }>;
  containers: Map<string, { id: string; running: boolean }>;
}

/** Every pod on the runtime by pod name: sandbox and container ids and states. */
async function runtimeView(): Promise<RuntimeView> {
  const sandboxes = new Map<string, { id: string; ready: boolean }>();
  for (const s of (await cri.listPodSandbox()).items) {
    sandboxes.set(s.labels['io.kubernetes.pod.name'] ?? '?', { id: s.id, ready: s.state === PodSandboxState.SANDBOX_READY });
  }
  const containers = new Map<string, { id: string; running: boolean }>();
  for (const c of (await cri.listContainers()).containers) {
    containers.set(c.labels['io.kubernetes.pod.name'] ?? '?', { id: c.id, running: c.state === ContainerState.CONTAINER_RUNNING });
  }
  return { sandboxes, containers };
}

function logDirsOf(prefix: string): string[] {
  return fs
    .readdirSync('/var/log/pods')
    .filter((d) => d.startsWith(`${NS}_${prefix}`))
    .sort();
}

/** A's pod and the kubelet's pod are exactly as they were: same ids, ready, running, log dirs present. */
async function expectOthersUntouched(before: RuntimeView, names: string[]): Promise<void> {
  const now = await runtimeView();
  for (const n of names) {
    expect(now.sandboxes.get(n), `sandbox of ${n}`).toEqual(before.sandboxes.get(n));
    expect(now.sandboxes.get(n)?.ready, `sandbox of ${n} ready`).toBe(true);
    expect(now.containers.get(n), `container of ${n}`).toEqual(before.containers.get(n));
    expect(now.containers.get(n)?.running, `container of ${n} running`).toBe(true);
  }
  expect(fs.existsSync(path.join('/var/log/pods', `${NS}_${kubeletPod.name}_${kubeletPod.uid}`, 'kube-proxy', '0.log'))).toBe(true);
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-own-'));
  rootB = path.join(tmp, 'root-b');
  // "The real kubelet": a sandbox and a container with its labels, for another node, and its log dir.
  const logDirectory = path.join('/var/log/pods', `${NS}_${kubeletPod.name}_${kubeletPod.uid}`);
  fs.mkdirSync(logDirectory, { recursive: true });
  const labels = { 'io.kubernetes.pod.name': kubeletPod.name, 'io.kubernetes.pod.namespace': NS, 'io.kubernetes.pod.uid': kubeletPod.uid };
  const config = { metadata: { ...kubeletPod, attempt: 0 }, hostname: 'kube-proxy', logDirectory, labels, linux: {} };
  kubeletSandbox = (await cri.runPodSandbox({ config })).podSandboxId;
  kubeletContainer = (
    await cri.createContainer({
      podSandboxId: kubeletSandbox,
      sandboxConfig: config,
      config: {
        metadata: { name: 'kube-proxy', attempt: 0 },
        image: { image: rt.images.busybox },
        command: ['sh', '-c', SLEEP_FOREVER],
        labels: { ...labels, 'io.kubernetes.container.name': 'kube-proxy' },
        logPath: 'kube-proxy/0.log',
      },
    })
  ).containerId;
  await cri.startContainer({ containerId: kubeletContainer });
}, 120_000);

afterAll(async () => {
  await killAllSyncs();
  if (cri) {
    await klet(A, ['delete', '--all', '--force']).catch(() => undefined);
    await klet(B, ['delete', '--all', '--force']).catch(() => undefined);
    await removeAllPods(cri);
    cri.close();
  }
  fs.rmSync(path.join('/var/log/pods', `${NS}_${kubeletPod.name}_${kubeletPod.uid}`), { recursive: true, force: true });
  await rt?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
}, 180_000);

describe('two klet root dirs and the kubelet on one runtime', () => {
  it('status, sync, delete --all, runtime stop and adoption act only on their own pods', async () => {
    // Both klets start a pod.
    const ra = await klet(A, ['runonce', '--manifest-dir', manifestDir('a', ['pa'])]);
    expect(ra.code, explain(ra)).toBe(0);
    const rb = await klet(B, ['runonce', '--manifest-dir', manifestDir('b', ['pb'])]);
    expect(rb.code, explain(rb)).toBe(0);
    const before = await runtimeView();
    expect([...before.sandboxes.keys()].sort()).toEqual([kubeletPod.name, 'pa-nodea', 'pb-nodeb']);
    // The kubelet's log file exists once its container has written (or at least been started).
    fs.mkdirSync(path.join('/var/log/pods', `${NS}_${kubeletPod.name}_${kubeletPod.uid}`, 'kube-proxy'), { recursive: true });
    fs.appendFileSync(path.join('/var/log/pods', `${NS}_${kubeletPod.name}_${kubeletPod.uid}`, 'kube-proxy', '0.log'), '');

    // status: each klet lists its own pod only (no "NoRecord" rows for the others').
    const sb = await klet(B, ['status', '-o', 'json']);
    expect(sb.code, explain(sb)).toBe(0);
    expect((JSON.parse(sb.stdout) as V1PodList).items.map((p) => p.metadata?.name)).toEqual(['pb-nodeb']);

    // sync of B (its manifest dir wants only pb): housekeeping leaves A's and the kubelet's pods alone.
    const syncB = await startSync({ rootDir: rootB, endpoint: rt.endpoint, nodeName: B.node, manifestDir: path.join(tmp, 'b') });
    // Let several housekeeping passes (every 2 s) run once the source has answered.
    await sleep(7000);
    expect((await syncB.stop()).code, syncB.tail()).toBe(0);
    expect(syncB.stderr).not.toMatch(/pa-nodea|kube-proxy/);
    await expectOthersUntouched(before, ['pa-nodea', kubeletPod.name, 'pb-nodeb']);

    // delete --all of B removes B's pod (and its logs) only.
    const del = await klet(B, ['delete', '--all']);
    expect(del.code, explain(del)).toBe(0);
    expect(del.stdout).toBe(`pod "${NS}/pb-nodeb" deleted\n`);
    expect(logDirsOf('pb-nodeb')).toEqual([]);
    expect(logDirsOf('pa-nodea')).toHaveLength(1);
    await expectOthersUntouched(before, ['pa-nodea', kubeletPod.name]);

    // runtime stop of B (B started no runtime): nothing is touched, not even the socket.
    const pid = await rt.pid();
    const shims = (await shimPids(rt.socketPath)).sort();
    const stop = await klet(B, ['runtime', 'stop']);
    expect(stop.code, explain(stop)).toBe(0);
    expect(stop.stdout).toContain(`no klet-managed containerd was running for ${rt.endpoint}`);
    expect(await rt.pid()).toBe(pid);
    expect(fs.existsSync(rt.socketPath)).toBe(true);
    expect((await shimPids(rt.socketPath)).sort()).toEqual(shims);
    await expectOthersUntouched(before, ['pa-nodea', kubeletPod.name]);

    // sync of A adopts its running pod (same sandbox and container) and leaves the kubelet's alone.
    const syncA = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: A.node, manifestDir: path.join(tmp, 'a') });
    await sleep(7000);
    expect((await syncA.stop()).code, syncA.tail()).toBe(0);
    await expectOthersUntouched(before, ['pa-nodea', kubeletPod.name]);

    // A's delete --all: its own pod goes, the kubelet's stays.
    const delA = await klet(A, ['delete', '--all']);
    expect(delA.code, explain(delA)).toBe(0);
    expect(delA.stdout).toBe(`pod "${NS}/pa-nodea" deleted\n`);
    await expectOthersUntouched(before, [kubeletPod.name]);
    expect([...(await runtimeView()).sandboxes.keys()]).toEqual([kubeletPod.name]);
  }, 300_000);

  it('the pod log dir of a pod with the same UID in another root dir is never deleted', async () => {
    // Same node name and the same manifest file: the static pod has the same UID (and log dir) in both.
    const dir = manifestDir('same', ['same']);
    const rc = { node: 'nodea', root: () => path.join(tmp, 'root-c') };
    const ra = await klet(A, ['runonce', '--manifest-dir', dir]);
    expect(ra.code, explain(ra)).toBe(0);
    const [uidDir] = logDirsOf('same-nodea');
    expect(uidDir).toBeDefined();
    // C records the pod too (its sandbox cannot be made: the name is A's), then deletes everything it has.
    await klet(rc, ['runonce', '--manifest-dir', dir, '--timeout', '5s']);
    const del = await klet(rc, ['delete', '--all']);
    expect(del.code, explain(del)).toBe(0);
    expect(logDirsOf('same-nodea')).toEqual([uidDir]);
    const view = await runtimeView();
    expect(view.containers.get('same-nodea')?.running).toBe(true);
    const delA = await klet(A, ['delete', '--all']);
    expect(delA.code, explain(delA)).toBe(0);
    expect(logDirsOf('same-nodea')).toEqual([]);
  }, 180_000);

  it('one root dir, two node names: each lists, deletes and cleans up only the pods it ran, and status says where the others are', async () => {
    const rootD = path.join(tmp, 'root-d');
    const C = { node: 'nodec', root: () => rootD };
    const D = { node: 'noded', root: () => rootD };
    const rc = await klet(C, ['runonce', '--manifest-dir', manifestDir('d', ['pc'])]);
    expect(rc.code, explain(rc)).toBe(0);
    const before = await runtimeView();
    const [uid] = fs.readdirSync(path.join(rootD, 'pods'));
    const record = path.join(rootD, 'pods', uid!, 'pod.json');
    expect(fs.existsSync(record)).toBe(true);
    expect(logDirsOf('pc-nodec')).toHaveLength(1);

    // status as D: no pending row for C's pod, and a line on stderr naming C's node.
    const st = await klet(D, ['status', '-o', 'json']);
    expect(st.code, explain(st)).toBe(0);
    expect((JSON.parse(st.stdout) as V1PodList).items).toEqual([]);
    expect(st.stderr).toBe(`klet status: 1 pod under --root-dir ${rootD} was run for node "nodec", not "noded": pass --node-name nodec to see it\n`);

    // delete, logs, probe and status of C's pod by name as D: not D's pod, and the error says whose it is.
    const ref = `${NS}/pc-nodec`;
    for (const args of [['delete', ref], ['logs', ref], ['probe', ref], ['status', ref], ['status', '--watch', ref]]) {
      const r = await klet(D, args);
      // probe's "could not run" is exit 2 (its documented code), the others' not found 1.
      expect(r.code, `${args.join(' ')}: ${explain(r)}`).toBe(args[0] === 'probe' ? 2 : 1);
      expect(r.stderr, args.join(' ')).toBe(
        `error: pod "${ref}" not found for node "noded" (it was run for node "nodec" under this root dir, not "noded"; pass --node-name nodec to act on it)\n`,
      );
    }
    expect(fs.existsSync(record)).toBe(true);

    // delete --all as D: nothing of C's (record, log dir, sandbox, container).
    const del = await klet(D, ['delete', '--all']);
    expect(del.code, explain(del)).toBe(0);
    expect(del.stdout).toBe('No pods to delete.\n');
    expect(fs.existsSync(record)).toBe(true);
    expect(logDirsOf('pc-nodec')).toHaveLength(1);
    await expectOthersUntouched(before, ['pc-nodec']);

    // sync as D with no manifests: its housekeeping leaves C's pod dir and log dir alone.
    const empty = manifestDir('d-empty', []);
    const syncD = await startSync({ rootDir: rootD, endpoint: rt.endpoint, nodeName: D.node, manifestDir: empty });
    await sleep(7000);
    expect((await syncD.stop()).code, syncD.tail()).toBe(0);
    expect(fs.existsSync(record)).toBe(true);
    expect(logDirsOf('pc-nodec')).toHaveLength(1);
    await expectOthersUntouched(before, ['pc-nodec']);

    // As C, the pod is there and running, and C's delete removes it all.
    const sc = await klet(C, ['status', '-o', 'json']);
    expect(sc.code, explain(sc)).toBe(0);
    expect(sc.stderr).toBe('');
    expect((JSON.parse(sc.stdout) as V1PodList).items.map((p) => [p.metadata?.name, p.status?.phase])).toEqual([['pc-nodec', 'Running']]);
    const delC = await klet(C, ['delete', '--all']);
    expect(delC.code, explain(delC)).toBe(0);
    expect(delC.stdout).toBe(`pod "${NS}/pc-nodec" deleted\n`);
    expect(fs.existsSync(record)).toBe(false);
    expect(logDirsOf('pc-nodec')).toEqual([]);
  }, 180_000);
});

describe('runtime start and stop on a shared endpoint', () => {
  it('two starts with different root dirs race: one containerd; the other names its root dir and the private socket; stop removes the bridge', async () => {
    const socket = path.join(tmp, 'shared.sock');
    const endpoint = `unix://${socket}`;
    const r1 = path.join(tmp, 'rs1');
    const r2 = path.join(tmp, 'rs2');
    const start = (root: string) => runKlet(['runtime', 'start', '--root-dir', root, '--container-runtime-endpoint', endpoint], { timeoutMs: 120_000 });
    try {
      await raceStarts(socket, endpoint, r1, r2, await Promise.all([start(r1), start(r2)]));
    } finally {
      // Whatever happened, leave no containerd of this test running.
      for (const root of [r1, r2]) await stopManagedRuntime({ endpoint, rootDir: root }).catch(() => undefined);
    }
  }, 300_000);
});

describe("a root dir's runtime is stopped where it runs, whatever endpoint is given", () => {
  it('runtime stop/start/status with another runtime\'s endpoint: the root dir\'s own containerd is stopped on its own socket; the other runtime\'s pods, shims and socket are untouched', async () => {
    const root = path.join(tmp, 'rs3');
    const socket = path.join(tmp, 'own3.sock');
    const own = `unix://${socket}`;
    const rtSocket = rt.endpoint.replace(/^unix:\/\//, '');
    try {
      const started = await runKlet(['runtime', 'start', '--root-dir', root, '--container-runtime-endpoint', own], { timeoutMs: 120_000 });
      expect(started.code, explain(started)).toBe(0);
      const before = await runtimeView();
      const shimsBefore = (await shimPids(rtSocket)).sort();
      expect(shimsBefore.length).toBeGreaterThan(0);
      // The endpoint given is the other runtime's (as the flag's default may be the kubelet's containerd).
      const other = ['--root-dir', root, '--container-runtime-endpoint', rt.endpoint];

      const restart = await runKlet(['runtime', 'start', ...other], { timeoutMs: 60_000 });
      expect(restart.code, explain(restart)).not.toBe(0);
      expect(restart.stderr.trim().split('\n'), explain(restart)).toHaveLength(1);
      expect(restart.stderr).toContain(`already runs on ${own}, not on ${rt.endpoint}`);
      expect(restart.stderr).toContain('--container-runtime-endpoint');

      const status = await runKlet(['runtime', 'status', ...other, '-o', 'json']);
      expect(JSON.parse(status.stdout), explain(status)).toMatchObject({ endpoint: rt.endpoint, managed: false, pid: null, rootDirRuntimeEndpoint: own });
      const table = await runKlet(['runtime', 'status', ...other]);
      // The key column is as wide as the longest key: containerd 2.x's ContainerdHasNoDeprecationWarnings row widens it.
      expect(table.stdout.split('\n').map((l) => l.replace(/^(\S+)\s+/, '$1 '))).toContain(`MANAGED no (this root dir's runtime runs on ${own})`);

      const stop = await runKlet(['runtime', 'stop', ...other], { timeoutMs: 90_000 });
      expect(stop.code, explain(stop)).toBe(0);
      expect(stop.stdout).toContain(`stopped containerd on ${own}`);
      // Its own runtime is gone...
      expect(fs.existsSync(path.join(root, 'containerd', 'containerd.pid'))).toBe(false);
      expect(fs.existsSync(socket)).toBe(false);
      expect(fs.existsSync(`/sys/class/net/${networkFor(root).bridge}`)).toBe(false);
      // ...and the runtime the endpoint named keeps its pods, shims and socket.
      await expectOthersUntouched(before, [kubeletPod.name]);
      expect((await shimPids(rtSocket)).sort()).toEqual(shimsBefore);
      expect(fs.existsSync(rtSocket)).toBe(true);
    } finally {
      await stopManagedRuntime({ endpoint: own, rootDir: root }).catch(() => undefined);
    }
  }, 300_000);
});

async function raceStarts(socket: string, endpoint: string, r1: string, r2: string, [s1, s2]: CliResult[]): Promise<void> {
  const results = [
    { root: r1, other: r2, r: s1 },
    { root: r2, other: r1, r: s2 },
  ];
  const won = results.filter((x) => x.r.code === 0);
  expect(won, `${explain(s1)}\n${explain(s2)}`).toHaveLength(1);
  const winner = won[0]!;
  const loser = results.find((x) => x !== winner)!;
  expect(loser.r.code, explain(loser.r)).not.toBe(0);
  expect(loser.r.stderr).toContain(`the klet-managed containerd of root dir ${winner.root} already serves ${endpoint}`);
  expect(loser.r.stderr).toContain(`unix://${path.join(loser.root, 'containerd.sock')}`);
  expect(fs.existsSync(path.join(loser.root, 'containerd', 'containerd.pid'))).toBe(false);

  // The loser's stop touches nothing; the winner's runs a pod, then stops everything and removes its bridge.
  const stopLoser = await runKlet(['runtime', 'stop', '--root-dir', loser.root, '--container-runtime-endpoint', endpoint]);
  expect(stopLoser.code, explain(stopLoser)).toBe(0);
  expect(fs.existsSync(socket)).toBe(true);
  const pod = path.join(tmp, 'bridge-pod.yaml');
  fs.writeFileSync(pod, podYaml('bridged'));
  const run = await runKlet(['run-pod', pod, '--root-dir', winner.root, '--container-runtime-endpoint', endpoint, '--node-name', 'n1'], { timeoutMs: 90_000 });
  expect(run.code, explain(run)).toBe(0);
  const bridge = networkFor(winner.root).bridge;
  expect(fs.existsSync(`/sys/class/net/${bridge}`)).toBe(true);
  const del = await runKlet(['delete', '--all', '--root-dir', winner.root, '--container-runtime-endpoint', endpoint, '--node-name', 'n1']);
  expect(del.code, explain(del)).toBe(0);
  const stop = await runKlet(['runtime', 'stop', '--root-dir', winner.root, '--container-runtime-endpoint', endpoint], { timeoutMs: 90_000 });
  expect(stop.code, explain(stop)).toBe(0);
  expect(fs.existsSync(`/sys/class/net/${bridge}`)).toBe(false);
  expect(fs.existsSync(socket)).toBe(false);
  expect(await shimPids(socket)).toEqual([]);
}
