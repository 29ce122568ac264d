/**
 * Pod and QoS cgroups (klet sync --cgroups-per-qos) on a private containerd:
 * pods land in <cgroup-root>/kubepods/{,burstable/,besteffort/}pod<uid> with
 * the kubelet's cpu.shares, CFS quota and memory limit, their containers get
 * the kubelet's oom_score_adj, a pod-level memory limit OOM-kills a
 * container that goes past it, and a pod's cgroup goes with the pod.
 *
 * The host's cgroups are never touched: every sync runs under a private
 * --cgroup-root (/klet-test-<random>) that this file creates in each
 * hierarchy and removes after.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { hostHierarchies, rmdirTree, type Hierarchies } from '../../src/lib/cm/manager.js';
import { KLET_BIN, PROJECT_ROOT, cleanEnv, explain, runKlet } from '../helpers/cli.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { apiGet, eventually, killAllSyncs, startSync, writeAtomic, type SyncProcess } from '../helpers/sync.js';

const execFileP = promisify(execFile);
const NODE = 'testnode';
const NS = 'kcgroups';
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";
const MI = 1024 * 1024;

let rt: TestRuntime;
let cri: CriClient;
let h: Hierarchies;
/** The private cgroup root of this file. */
const ROOT = `/klet-test-${randomBytes(4).toString('hex')}`;
const tempDirs: string[] = [];

function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `klet-cg-${prefix}-`));
  tempDirs.push(d);
  return d;
}

/** A cgroup's file in the hierarchy of `controller`. */
function cg(controller: string, name: string, file: string): string {
  return fs.readFileSync(path.join(h.mounts.get(controller)!, name, file), 'utf8').trim();
}

function cgExists(name: string): boolean {
  return [...new Set(h.mounts.values())].some((m) => fs.existsSync(path.join(m, name)));
}

function pod(name: string, containers: string, extra = ''): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${NS}`,
    'spec:',
    '  terminationGracePeriodSeconds: 2',
    extra,
    '  containers:',
    containers,
    '',
  ]
    .filter((l) => l !== '')
    .join('\n');
}

function container(resources: string[], script = SLEEP_FOREVER): string {
  return [
    '    - name: c',
    `      image: ${rt.images.busybox}`,
    `      command: ["sh", "-c", ${JSON.stringify(script)}]`,
    ...(resources.length > 0 ? ['      resources:', ...resources.map((r) => `        ${r}`)] : []),
  ].join('\n');
}

async function pods(sync: SyncProcess): Promise<V1Pod[]> {
  const res = await apiGet(sync.socketPath, '/pods');
  return (JSON.parse(res.body) as V1PodList).items.filter((p) => p.metadata?.namespace === NS);
}

function syncWith(manifestDir: string, args: string[]): Promise<SyncProcess> {
  return startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir, args: ['--cgroup-root', ROOT, ...args] });
}

/** The pid of the pod's container `c` and its oom_score_adj. */
async function containerOOMScoreAdj(uid: string): Promise<number> {
  const { containers } = await cri.listContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'c' } } });
  const id = containers[0]?.id ?? '';
  const st = await cri.containerStatus({ containerId: id, verbose: true });
  const pid = (JSON.parse(st.info.info ?? '{}') as { pid?: number }).pid;
  expect(pid, `pid of ${id}`).toBeGreaterThan(0);
  return Number(fs.readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8').trim());
}

/** The test runtime's containerd's own oom_score_adj: the lowest it gives a container. */
async function runtimeOOMScoreAdj(): Promise<number> {
  return Number(fs.readFileSync(`/proc/${await rt.pid()}/oom_score_adj`, 'utf8').trim());
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  h = await hostHierarchies();
  for (const m of new Set(h.mounts.values())) fs.mkdirSync(path.join(m, ROOT));
}, 120_000);

afterEach(async () => {
  await killAllSyncs();
  await wipeNode(cri, rt.rootDir, NS);
  for (const d of tempDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}, 120_000);

afterAll(async () => {
  cri?.close();
  await rt?.stop();
  if (h) for (const m of new Set(h.mounts.values())) await rmdirTree(path.join(m, ROOT));
}, 120_000);

describe('klet sync --cgroups-per-qos', () => {
  it("puts Guaranteed, Burstable and BestEffort pods in the kubelet's cgroups with its settings, and removes them with the pod", async () => {
    const dir = tempDir('qos');
    writeAtomic(dir, 'g.yaml', pod('guaranteed', container(['limits: {cpu: 200m, memory: 64Mi}'])));
    writeAtomic(dir, 'b.yaml', pod('burstable', container(['requests: {cpu: 100m, memory: 32Mi}', 'limits: {memory: 128Mi}'])));
    writeAtomic(dir, 'e.yaml', pod('besteffort', container([])));
    const sync = await syncWith(dir, ['--kube-reserved', 'cpu=100m,memory=100Mi', '--system-reserved', 'memory=50Mi']);
    const running = await eventually(async () => {
      const items = await pods(sync);
      if (items.length !== 3 || !items.every((p) => p.status?.containerStatuses?.[0]?.state?.running)) throw new Error(`not running: ${JSON.stringify(items.map((p) => p.status?.phase))}`);
      return items;
    }, 90_000);
    const uid = (name: string) => running.find((p) => p.metadata?.name === `${name}-${NODE}`)?.metadata?.uid ?? '';
    const kubepods = `${ROOT}/kubepods`;

    // Node allocatable: the capacity less --kube-reserved and --system-reserved (enforced on pods).
    expect(cg('cpu', kubepods, 'cpu.shares')).toBe(String(Math.floor(((os.cpus().length * 1000 - 100) * 1024) / 1000)));
    expect(Number(cg('memory', kubepods, 'memory.limit_in_bytes'))).toBe(Math.floor((os.totalmem() - 150 * MI) / 4096) * 4096);
    // QoS classes: burstable has its pods' requests, besteffort the minimum.
    expect(cg('cpu', `${kubepods}/burstable`, 'cpu.shares')).toBe('102');
    expect(cg('cpu', `${kubepods}/besteffort`, 'cpu.shares')).toBe('2');

    const g = `${kubepods}/pod${uid('guaranteed')}`;
    expect(cg('cpu', g, 'cpu.shares')).toBe('204');
    expect(cg('cpu', g, 'cpu.cfs_period_us')).toBe('100000');
    expect(cg('cpu', g, 'cpu.cfs_quota_us')).toBe('20000');
    expect(cg('memory', g, 'memory.limit_in_bytes')).toBe(String(64 * MI));
    const b = `${kubepods}/burstable/pod${uid('burstable')}`;
    expect(cg('cpu', b, 'cpu.shares')).toBe('102');
    expect(cg('cpu', b, 'cpu.cfs_quota_us')).toBe('-1');
    expect(cg('memory', b, 'memory.limit_in_bytes')).toBe(String(128 * MI));
    const e = `${kubepods}/besteffort/pod${uid('besteffort')}`;
    expect(cg('cpu', e, 'cpu.shares')).toBe('2');
    expect(cg('cpu', e, 'cpu.cfs_quota_us')).toBe('-1');
    expect(BigInt(cg('memory', e, 'memory.limit_in_bytes'))).toBeGreaterThan(BigInt(os.totalmem()));

    // The runtime put the pods' containers there: the container's cgroup is under the pod's.
    for (const [name, dirName] of [['guaranteed', g], ['burstable', b], ['besteffort', e]] as const) {
      const { containers } = await cri.listContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid(name) } } });
      expect(fs.existsSync(path.join(h.mounts.get('memory')!, dirName, containers[0]!.id)), `${name}'s container cgroup in ${dirName}`).toBe(true);
    }

    // oom_score_adj by QoS class (pkg/kubelet/qos/policy.go).
    // containerd (restrict_oom_score_adj) raises a value below its own to its own: where the host denies
    // negative values (this VM does; src/lib/runtime/containerd-config.ts), -997 becomes 0.
    expect(await containerOOMScoreAdj(uid('guaranteed'))).toBe(Math.max(-997, await runtimeOOMScoreAdj()));
    expect(await containerOOMScoreAdj(uid('besteffort'))).toBe(1000);
    expect(await containerOOMScoreAdj(uid('burstable'))).toBe(1000 - Math.floor((1000 * 32 * MI) / os.totalmem()));

    // A removed pod's cgroup goes with it; the QoS class's shares follow.
    fs.rmSync(path.join(dir, 'b.yaml'));
    await eventually(() => {
      if (cgExists(b)) throw new Error(`${b} still there`);
    }, 60_000);
    expect(cg('cpu', `${kubepods}/burstable`, 'cpu.shares')).toBe('2');
    expect(cgExists(g)).toBe(true);
    await sync.stop();
  }, 240_000);

  it('a pod-level memory limit OOM-kills the container that goes past it (reason OOMKilled)', async () => {
    const dir = tempDir('oom');
    // 200Mi without a newline: tail keeps it all in memory.
    writeAtomic(dir, 'oom.yaml', pod('oom', container([], 'head -c 200m /dev/zero | tail'), '  restartPolicy: Never\n  resources:\n    limits: {memory: 64Mi}'));
    const sync = await syncWith(dir, []);
    const terminated = await eventually(async () => {
      const t = (await pods(sync))[0]?.status?.containerStatuses?.[0]?.state?.terminated;
      if (!t) throw new Error('not terminated yet');
      return t;
    }, 90_000);
    expect(terminated.reason).toBe('OOMKilled');
    expect(terminated.exitCode).toBe(137);
    const uid = (await pods(sync))[0]?.metadata?.uid ?? '';
    expect(cg('memory', `${ROOT}/kubepods/burstable/pod${uid}`, 'memory.limit_in_bytes')).toBe(String(64 * MI));
    await sync.stop();
  }, 180_000);

  it('--pod-max-pids is each pod cgroup\'s pids.max: the pod\'s processes together cannot go past it', async () => {
    const dir = tempDir('pids');
    writeAtomic(dir, 'forks.yaml', pod('forks', container([])));
    const sync = await syncWith(dir, ['--pod-max-pids', '20']);
    const uid = await eventually(async () => {
      const p = (await pods(sync))[0];
      if (p?.status?.containerStatuses?.[0]?.state?.running === undefined) throw new Error('not running yet');
      return p.metadata?.uid ?? '';
    }, 60_000);
    const podCg = `${ROOT}/kubepods/besteffort/pod${uid}`;
    expect(cg('pids', podCg, 'pids.max')).toBe('20');
    // 40 more processes asked for in the container: the pod (pause, the shell, its sleep) reaches 20 and no more.
    const { containers } = await cri.listContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'c' } } });
    const r = await cri.execSync({ containerId: containers[0]!.id, cmd: ['sh', '-c', 'for i in $(seq 1 40); do sleep 30 >/dev/null 2>&1 & done'], timeout: 20n });
    expect(Buffer.from(r.stderr).toString('utf8')).toMatch(/can't fork/);
    // At the limit while the loop ran; its shell gone, the sleeps it started stay: 20 less that shell.
    expect(Number(cg('pids', podCg, 'pids.current'))).toBe(19);
    await sync.stop();
  }, 120_000);

  it("reports MemoryPressure when the pods' cgroup nears its limit (allocatableMemory.available), and the `pods` system container in /stats/summary", async () => {
    const dir = tempDir('alloc');
    // kubepods gets capacity - system-reserved = 300Mi; the default hard memory.available<100Mi is copied for allocatable memory.
    const reserved = Math.floor(os.totalmem() / MI) - 300;
    // 250Mi held by tail, which waits for an EOF that never comes: the pods' cgroup has under 100Mi left.
    writeAtomic(dir, 'hog.yaml', pod('hog', container([], '(head -c 250m /dev/zero; sleep 1000000) | tail')));
    const sync = await syncWith(dir, ['--system-reserved', `memory=${reserved}Mi`]);
    // The node's capacity as klet reads it (MemTotal) is not os.totalmem() to the byte: within 1Mi of 300Mi.
    const limit = Number(cg('memory', `${ROOT}/kubepods`, 'memory.limit_in_bytes'));
    expect(Math.abs(limit - 300 * MI)).toBeLessThan(MI);
    const pressure = await eventually(async () => {
      const node = JSON.parse((await apiGet(sync.socketPath, '/node')).body) as { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
      const c = node.conditions?.find((x) => x.type === 'MemoryPressure');
      if (c?.status !== 'True') throw new Error(`MemoryPressure ${JSON.stringify(c)}`);
      return c;
    }, 90_000);
    expect(pressure).toMatchObject({ reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' });
    const summary = JSON.parse((await apiGet(sync.socketPath, '/stats/summary')).body) as { node: { systemContainers?: Array<{ name: string; memory?: { availableBytes?: number; workingSetBytes?: number } }> } };
    const podsMemory = summary.node.systemContainers?.find((c) => c.name === 'pods')?.memory;
    // What the kernel says of kubepods, within what the hog's 250Mi may move between the two reads.
    const usage = Number(cg('memory', `${ROOT}/kubepods`, 'memory.usage_in_bytes'));
    // Pressure means under 100Mi left of ~300Mi: over 200Mi in use (tail may still be reading towards its 250Mi).
    expect(podsMemory?.workingSetBytes).toBeGreaterThan(200 * MI);
    expect(podsMemory?.workingSetBytes).toBeLessThanOrEqual(usage + 8 * MI);
    expect((podsMemory?.availableBytes ?? 0) + (podsMemory?.workingSetBytes ?? 0)).toBe(limit);
    // The hog is a static pod: critical, so the eviction manager leaves it running, as the kubelet would.
    expect((await pods(sync))[0]?.status?.phase).toBe('Running');
    await sync.stop();
  }, 180_000);

  it('a kubepods klet did not make is used as it is: its settings unchanged, never removed', async () => {
    const dir = tempDir('foreign');
    const root = `${ROOT}/foreign`;
    for (const m of new Set(h.mounts.values())) {
      for (const d of ['', '/kubepods', '/kubepods/burstable', '/kubepods/besteffort']) fs.mkdirSync(path.join(m, root + d));
    }
    fs.writeFileSync(path.join(h.mounts.get('cpu')!, root, 'kubepods', 'cpu.shares'), '1234');
    fs.writeFileSync(path.join(h.mounts.get('cpu')!, root, 'kubepods', 'burstable', 'cpu.shares'), '567');
    writeAtomic(dir, 'p.yaml', pod('foreign', container(['requests: {cpu: 300m}'])));
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir: dir, args: ['--cgroup-root', root] });
    const uid = await eventually(async () => {
      const p = (await pods(sync))[0];
      if (!p?.status?.containerStatuses?.[0]?.state?.running) throw new Error('not running');
      return p.metadata?.uid ?? '';
    }, 60_000);
    const podName = `${root}/kubepods/burstable/pod${uid}`;
    expect(cg('cpu', podName, 'cpu.shares')).toBe('307');
    expect(cg('cpu', `${root}/kubepods`, 'cpu.shares')).toBe('1234');
    expect(cg('cpu', `${root}/kubepods/burstable`, 'cpu.shares')).toBe('567');
    fs.rmSync(path.join(dir, 'p.yaml'));
    await eventually(() => {
      if (cgExists(podName)) throw new Error(`${podName} still there`);
    }, 60_000);
    await sync.stop();
    expect(cg('cpu', `${root}/kubepods/burstable`, 'cpu.shares')).toBe('567');
  }, 180_000);

  it('--cgroups-per-qos=false keeps the runtime\'s cgroups: no kubepods is made', async () => {
    const dir = tempDir('flat');
    const root = `${ROOT}/flat`;
    for (const m of new Set(h.mounts.values())) fs.mkdirSync(path.join(m, root));
    writeAtomic(dir, 'p.yaml', pod('flat', container(['limits: {cpu: 100m, memory: 32Mi}'])));
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir: dir, args: ['--cgroup-root', root, '--cgroups-per-qos=false', '--enforce-node-allocatable='] });
    await eventually(async () => {
      if (!(await pods(sync))[0]?.status?.containerStatuses?.[0]?.state?.running) throw new Error('not running');
    }, 60_000);
    expect(cgExists(`${root}/kubepods`)).toBe(false);
    await sync.stop();
  }, 120_000);
});

describe('klet sync: bad cgroup settings', () => {
  /** The one error line of a sync that must not start; nothing may be left under the cgroup root. */
  async function refused(args: string[], wrap?: string[]): Promise<string> {
    const dir = tempDir('bad');
    const argv = [KLET_BIN, 'sync', '--manifest-dir', dir, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, ...args];
    const r = wrap
      ? await execFileP(wrap[0]!, [...wrap.slice(1), process.execPath, ...argv], { cwd: PROJECT_ROOT, env: cleanEnv(), timeout: 60_000 }).then(
          (x) => ({ code: 0, stdout: x.stdout, stderr: x.stderr }),
          (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
        )
      : await runKlet(argv.slice(1), { timeoutMs: 60_000 });
    expect(r.code, explain(r as never)).toBe(2);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('error: '));
    expect(lines, r.stderr).toHaveLength(1);
    return lines[0]!;
  }

  it('a --cgroup-root that does not exist', async () => {
    const missing = `${ROOT}-missing`;
    const line = await refused(['--cgroup-root', missing]);
    expect(line).toContain(`--cgroup-root ${missing}`);
    expect(line).toContain('missing paths');
    expect(cgExists(missing)).toBe(false);
  }, 60_000);

  it('a --cgroup-root that is not writable: nothing half-created', async () => {
    const root = `${ROOT}/ro`;
    for (const m of new Set(h.mounts.values())) fs.mkdirSync(path.join(m, root));
    const memory = path.join(h.mounts.get('memory')!, root);
    // In a private mount namespace the memory hierarchy's root is read-only: the cpu one (before it) is made, then removed.
    const line = await refused(['--cgroup-root', root], ['unshare', '-m', '--propagation', 'private', 'sh', '-c', `mount --bind -o ro ${memory} ${memory} && mount -o remount,bind,ro ${memory} && exec "$@"`, 'sh']);
    expect(line).toContain(`--cgroup-root ${root}`);
    expect(line).toMatch(/read-only/i);
    expect(cgExists(`${root}/kubepods`)).toBe(false);
  }, 60_000);

  it('--cgroup-driver systemd on a host whose init is not systemd: refused before anything starts', async () => {
    // This host runs no systemd (test/integration/cgroups-systemd.test.ts runs the driver against a real one).
    const line = await refused(['--cgroup-driver', 'systemd']);
    expect(line).toContain('--cgroup-driver systemd: cannot reach systemd over D-Bus');
    expect(line).toContain('/run/systemd/private');
    expect(cgExists('/kubepods.slice')).toBe(false);
    expect(fs.existsSync(path.join(rt.rootDir, 'cgroups', encodeURIComponent('/kubepods.slice')))).toBe(false);
  }, 60_000);

  it('--cgroups-per-qos=false with node allocatable enforced on pods (the kubelet refuses it too)', async () => {
    const line = await refused(['--cgroups-per-qos=false']);
    expect(line).toContain('--enforce-node-allocatable pods');
    expect(line).toContain('cgroupsPerQOS (--cgroups-per-qos) must be set to true');
  }, 60_000);
});

describe('klet runonce and klet run-pod make the pod and QoS cgroups as klet sync does', () => {
  const common = () => ['--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
  const podsByName = async (): Promise<Map<string, V1Pod>> => {
    const r = await runKlet(['status', '-o', 'json', ...common()]);
    expect(r.code, explain(r)).toBe(0);
    return new Map((JSON.parse(r.stdout) as V1PodList).items.filter((p) => p.metadata?.namespace === NS).map((p) => [p.metadata?.name ?? '', p]));
  };
  const hostKubepods = () => [...new Set(h.mounts.values())].filter((m) => fs.existsSync(path.join(m, 'kubepods')));

  it('runonce puts a Guaranteed pod in <cgroup-root>/kubepods/pod<uid> with its limits; --cleanup removes it, and klet delete the one a run left', async () => {
    const before = hostKubepods();
    const dir = tempDir('runonce');
    fs.writeFileSync(path.join(dir, 'g.yaml'), pod('once', container(['limits: {cpu: 300m, memory: 48Mi}'])));
    const r = await runKlet(['runonce', '--manifest-dir', dir, '--cgroup-root', ROOT, '--settle', '0', ...common()], { timeoutMs: 120_000 });
    expect(r.code, explain(r)).toBe(0);
    const uid = (await podsByName()).get(`once-${NODE}`)?.metadata?.uid ?? '';
    const name = `${ROOT}/kubepods/pod${uid}`;
    expect(cg('cpu', name, 'cpu.shares')).toBe('307');
    expect(cg('cpu', name, 'cpu.cfs_quota_us')).toBe('30000');
    expect(cg('memory', name, 'memory.limit_in_bytes')).toBe(String(48 * MI));
    // The container is in it (the sandbox's cgroup_parent), with the kubelet's Guaranteed oom_score_adj (or containerd's floor).
    expect(await containerOOMScoreAdj(uid)).toBe(Math.max(-997, await runtimeOOMScoreAdj()));
    expect(cgExists(`${ROOT}/kubepods/burstable`) && cgExists(`${ROOT}/kubepods/besteffort`)).toBe(true);
    // klet delete has no container manager: it removes the cgroup the run recorded.
    const d = await runKlet(['delete', '--all', ...common()], { timeoutMs: 120_000 });
    expect(d.code, explain(d)).toBe(0);
    expect(cgExists(name)).toBe(false);

    const again = await runKlet(['runonce', '--manifest-dir', dir, '--cgroup-root', ROOT, '--settle', '0', '--cleanup', ...common()], { timeoutMs: 120_000 });
    expect(again.code, explain(again)).toBe(0);
    expect(again.stdout).toContain(`once-${NODE}`);
    expect(cgExists(name)).toBe(false);
    expect(hostKubepods()).toEqual(before);
  }, 240_000);

  it('run-pod --rm puts a Burstable pod in kubepods/burstable/pod<uid>, where its pod-level memory limit holds, and removes it', async () => {
    const dir = tempDir('runpod');
    const file = path.join(dir, 'b.yaml');
    // The container copies its cgroup's memory limit to its output: the pod-level limit is what it lives under.
    fs.writeFileSync(file, pod('burst', container([], 'cat /proc/self/cgroup | grep memory'), '  restartPolicy: Never\n  resources: {limits: {memory: 40Mi}}'));
    const r = await runKlet(['run-pod', file, '--rm', '--cgroup-root', ROOT, ...common()], { timeoutMs: 120_000 });
    expect(r.code, explain(r)).toBe(0);
    const m = new RegExp(`memory:(${ROOT}/kubepods/burstable/pod[0-9a-f]{32})/[0-9a-f]{64}`).exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    expect(cgExists(m![1]!)).toBe(false);
  }, 240_000);

  it('a --cgroup-root that does not exist: a one-line error naming the flag, no pod made', async () => {
    const dir = tempDir('bad');
    fs.writeFileSync(path.join(dir, 'g.yaml'), pod('never', container([])));
    const r = await runKlet(['runonce', '--manifest-dir', dir, '--cgroup-root', `${ROOT}-missing`, ...common()]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`--cgroup-root ${ROOT}-missing`);
    expect((await podsByName()).size).toBe(0);
  }, 60_000);
});
