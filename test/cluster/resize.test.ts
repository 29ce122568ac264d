/**
 * In-place pod resize (InPlacePodVerticalScaling, on by default in 1.34)
 * through the real kube-apiserver and kubectl's `--subresource resize`: a
 * running API pod's CPU limit changes its container's and its pod cgroup's
 * CFS quota without a restart, a memory resize with resizePolicy
 * RestartContainer restarts the container, and a resize to more CPU than
 * the node has is PodResizePending/Infeasible. A pending resize holds
 * nothing when another pod is admitted, and a Deferred one is allocated as
 * soon as the pod in its way is deleted. An edited static pod is
 * replaced by a new pod (new UID, new mirror pod), as the kubelet replaces it.
 *
 * Pod cgroups are on, under a private --cgroup-root (/klet-test-<random>)
 * this file creates in each hierarchy and removes after: never the host's
 * /kubepods.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { hostHierarchies, rmdirTree, type Hierarchies } from '../../src/lib/cm/manager.js';
import { ensureNamespace, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { poll } from '../helpers/poll.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, startSync, writeAtomic, type SyncProcess } from '../helpers/sync.js';

const NODE = 'klet-resize-node';
const NS = 'resize';
const IMAGE = 'localhost/klet/busybox:1.36';
const SLEEP = "trap 'exit 0' TERM; sleep 3600 & wait";
const MI = 1024 * 1024;
const ROOT = `/klet-test-${randomBytes(4).toString('hex')}`;
let cluster: TestCluster;
let rt: TestRuntime;
let cri: CriClient;
let h: Hierarchies;
let manifests: string;

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE] })]);
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  h = await hostHierarchies();
  for (const m of new Set(h.mounts.values())) fs.mkdirSync(path.join(m, ROOT));
  manifests = fs.mkdtempSync(path.join(cluster.dir, 'manifests-'));
  await ensureNamespace(cluster, NS);
}, 240_000);
afterEach(async () => {
  await killAllSyncs();
});
afterAll(async () => {
  await killAllSyncs();
  if (cri && rt) await wipeNode(cri, rt.rootDir, NS).catch(() => undefined);
  cri?.close();
  await Promise.allSettled([cluster?.stop(), rt?.stop()]);
  if (h) for (const m of new Set(h.mounts.values())) await rmdirTree(path.join(m, ROOT));
}, 120_000);

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}
interface ContainerStatus {
  name: string;
  containerID?: string;
  restartCount: number;
  state: { running?: unknown };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  allocatedResources?: Record<string, string>;
}
interface ApiPod {
  metadata: { uid: string; generation?: number; annotations?: Record<string, string> };
  spec: { containers: Array<{ resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }> };
  status: { phase?: string; qosClass?: string; observedGeneration?: number; conditions?: Condition[]; containerStatuses?: ContainerStatus[] };
}

const podJson = (name: string, ns = NS) => cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', ns, name]);
const sync = (extra: string[] = []): Promise<SyncProcess> =>
  startSync({
    rootDir: rt.rootDir,
    endpoint: rt.endpoint,
    manifestDir: manifests,
    nodeName: NODE,
    args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--port', '0', '--cgroup-root', ROOT, ...extra],
  });
/** An API pod on this node whose container "c" sleeps with these resources (resizePolicy NotRequired for both). */
const createPod = (name: string, resources: Record<string, unknown>) =>
  cluster.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS },
      spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: IMAGE, command: ['sh', '-c', SLEEP], resources }] },
    }),
  });
const resize = (name: string, resources: Record<string, unknown>) =>
  cluster.kubectl(['patch', 'pod', '-n', NS, name, '--subresource', 'resize', '--patch', JSON.stringify({ spec: { containers: [{ name: 'c', resources }] } })]);
/** A cgroup file of the `cpu` or `memory` hierarchy. */
const cgFile = (controller: string, cgroup: string, file: string) => fs.readFileSync(path.join(h.mounts.get(controller)!, cgroup, file), 'utf8').trim();
const podCgroup = (uid: string, qos: 'burstable' | 'guaranteed') => `${ROOT}/kubepods${qos === 'burstable' ? '/burstable' : ''}/pod${uid}`;

/** The container's own cgroup in the `controller` hierarchy, from /proc/<pid>/cgroup of its process. */
async function containerCgroup(containerID: string, controller: string): Promise<string> {
  const id = containerID.replace(/^containerd:\/\//, '');
  const st = await cri.containerStatus({ containerId: id, verbose: true });
  const pid = (JSON.parse(st.info.info ?? '{}') as { pid?: number }).pid ?? 0;
  expect(pid, `pid of ${id}`).toBeGreaterThan(0);
  const line = fs
    .readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes(controller));
  return line?.split(':')[2] ?? '';
}

function until<T>(what: string, s: SyncProcess, fn: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  return poll(what, ms, fn).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${s.tail()}`);
  });
}

describe('in-place pod resize (kubectl patch --subresource resize)', () => {
  it('resizes CPU in place (cgroups changed, no restart), restarts for a memory resize with RestartContainer, and leaves an infeasible resize pending', async () => {
    const s = await sync();
    await cluster.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: NS },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'c',
              image: IMAGE,
              command: ['sh', '-c', SLEEP],
              resizePolicy: [
                { resourceName: 'cpu', restartPolicy: 'NotRequired' },
                { resourceName: 'memory', restartPolicy: 'RestartContainer' },
              ],
              resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
            },
          ],
        },
      }),
    });
    const started = await until('web Running', s, async () => {
      const p = await podJson('web');
      return p.status.containerStatuses?.[0]?.state.running ? p : undefined;
    });
    const uid = started.metadata.uid;
    const first = started.status.containerStatuses![0]!;
    expect(started.status.qosClass).toBe('Burstable');
    expect(first.allocatedResources).toEqual({ cpu: '100m', memory: '32Mi' });
    expect(first.resources).toEqual({ requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } });
    const pcg = podCgroup(uid, 'burstable');
    const ccg = await containerCgroup(first.containerID!, 'cpu');
    expect(ccg.startsWith(`${pcg}/`), ccg).toBe(true);
    expect(cgFile('cpu', ccg, 'cpu.cfs_quota_us')).toBe('20000');
    expect(cgFile('cpu', pcg, 'cpu.cfs_quota_us')).toBe('20000');

    // CPU limit 200m → 500m: NotRequired, so in place.
    await resize('web', { limits: { cpu: '500m', memory: '64Mi' } });
    const resized = await until('CPU resize in the status, done', s, async () => {
      const p = await podJson('web');
      const c = p.status.containerStatuses?.[0];
      const inProgress = p.status.conditions?.some((x) => x.type === 'PodResizeInProgress' || x.type === 'PodResizePending');
      return c?.resources?.limits?.cpu === '500m' && !inProgress ? p : undefined;
    });
    const after = resized.status.containerStatuses![0]!;
    expect(after.containerID).toBe(first.containerID);
    expect(after.restartCount).toBe(0);
    expect(after.resources).toEqual({ requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '500m', memory: '64Mi' } });
    expect(after.allocatedResources).toEqual({ cpu: '100m', memory: '32Mi' });
    expect(cgFile('cpu', ccg, 'cpu.cfs_quota_us')).toBe('50000');
    expect(cgFile('cpu', pcg, 'cpu.cfs_quota_us')).toBe('50000');
    // The resize raised the pod's generation; the status says it saw it (PodObservedGenerationTracking).
    expect(resized.metadata.generation).toBeGreaterThan(started.metadata.generation ?? 0);
    expect(resized.status.observedGeneration).toBe(resized.metadata.generation);
    const events = await cluster.kubectlJson<{ items: Array<{ reason: string; message: string; involvedObject: { name: string } }> }>(['get', 'events', '-n', NS]);
    expect(events.items.filter((e) => e.involvedObject.name === 'web' && e.reason === 'ResizeCompleted').map((e) => e.message)).toContain(
      'Pod resize completed: {"containers":[{"name":"c","resources":{"limits":{"cpu":"500m","memory":"64Mi"},"requests":{"cpu":"100m","memory":"32Mi"}}}]}',
    );

    // Memory limit 64Mi → 128Mi: RestartContainer, so the container is restarted with it.
    await resize('web', { limits: { cpu: '500m', memory: '128Mi' } });
    const restarted = await until('memory resize: restarted', s, async () => {
      const p = await podJson('web');
      const c = p.status.containerStatuses?.[0];
      return c?.restartCount === 1 && c.state.running && c.resources?.limits?.memory === '128Mi' ? p : undefined;
    });
    const again = restarted.status.containerStatuses![0]!;
    expect(again.containerID).not.toBe(first.containerID);
    expect(restarted.metadata.uid).toBe(uid);
    expect(cgFile('memory', await containerCgroup(again.containerID!, 'memory'), 'memory.limit_in_bytes')).toBe(String(128 * MI));
    expect(cgFile('memory', pcg, 'memory.limit_in_bytes')).toBe(String(128 * MI));

    // More CPU than the node has at all: Infeasible, nothing changes.
    const cpus = os.cpus().length;
    await resize('web', { requests: { cpu: `${cpus + 1}`, memory: '32Mi' }, limits: { cpu: `${cpus + 1}`, memory: '128Mi' } });
    const pending = await until('PodResizePending', s, async () => {
      const p = await podJson('web');
      return p.status.conditions?.find((x) => x.type === 'PodResizePending') ? p : undefined;
    });
    expect(pending.status.conditions?.find((x) => x.type === 'PodResizePending')).toMatchObject({
      status: 'True',
      reason: 'Infeasible',
      message: `Node didn't have enough capacity: cpu, requested: ${(cpus + 1) * 1000}, capacity: ${cpus * 1000}`,
      observedGeneration: pending.metadata.generation,
    });
    const still = pending.status.containerStatuses![0]!;
    expect(still.containerID).toBe(again.containerID);
    expect(still.resources?.limits?.cpu).toBe('500m');
    expect(still.allocatedResources).toEqual({ cpu: '100m', memory: '32Mi' });
    expect(cgFile('cpu', pcg, 'cpu.cfs_quota_us')).toBe('50000');
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'web', '--timeout=60s']);
    expect((await s.stop()).code, s.tail()).toBe(0);
  }, 240_000);

  it('admits a pod beside one whose resize is pending (its allocated resources count), and allocates a deferred resize as soon as the pod in its way is deleted', async () => {
    // The periodic resync is far away: only the deletion can bring the deferred resize back (the kubelet's RetryPendingResizes).
    const s = await sync(['--sync-frequency', '10m']);
    const node = os.cpus().length * 1000;
    const half = `${node / 2}m`;
    const running = (name: string) =>
      until(`${name} Running`, s, async () => {
        const p = await podJson(name);
        return p.status.containerStatuses?.[0]?.state.running ? p : undefined;
      });
    const condition = (p: ApiPod) => p.status.conditions?.find((x) => x.type === 'PodResizePending');
    await createPod('grow', { requests: { cpu: '100m', memory: '32Mi' } });
    await running('grow');
    // Ten times the node: Infeasible, so grow still holds 100m.
    await resize('grow', { requests: { cpu: `${node * 10}m`, memory: '32Mi' } });
    await until('Infeasible', s, async () => {
      const p = await podJson('grow');
      return condition(p)?.reason === 'Infeasible' ? p : undefined;
    });
    // Half the node fits beside grow's 100m (admission counts what is allocated, not the 10x its spec asks for).
    await createPod('other', { requests: { cpu: half, memory: '32Mi' } });
    const other = await running('other');
    expect(other.status.phase).toBe('Running');
    // Half the node and 200m more does not fit beside other: Deferred.
    const want = `${node / 2 + 200}m`;
    await resize('grow', { requests: { cpu: want, memory: '32Mi' } });
    const deferred = await until('Deferred', s, async () => {
      const p = await podJson('grow');
      return condition(p)?.reason === 'Deferred' ? p : undefined;
    });
    expect(condition(deferred)?.message).toMatch(new RegExp(`^Node didn't have enough resource: cpu, requested: ${node / 2 + 200}, used: \\d+, capacity: ${node}$`));
    expect(deferred.status.containerStatuses?.[0]?.allocatedResources?.cpu).toBe('100m');

    await cluster.kubectl(['delete', 'pod', '-n', NS, 'other', '--timeout=60s']);
    const allocated = await until(
      'the deferred resize allocated once other is gone',
      s,
      async () => {
        const p = await podJson('grow');
        return p.status.containerStatuses?.[0]?.allocatedResources?.cpu === want && condition(p) === undefined ? p : undefined;
      },
      20_000,
    );
    expect(allocated.status.containerStatuses?.[0]?.restartCount).toBe(0);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'grow', '--timeout=60s']);
    expect((await s.stop()).code, s.tail()).toBe(0);
  }, 240_000);

  it('replaces an edited static pod with a new pod (new UID and mirror pod), as the kubelet does', async () => {
    const manifest = (cpu: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'static', namespace: 'default' },
        spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: IMAGE, command: ['sh', '-c', SLEEP], resources: { limits: { cpu, memory: '64Mi' } } }] },
      });
    writeAtomic(manifests, 'static.json', manifest('200m'));
    const s = await sync();
    const name = `static-${NODE}`;
    const mirror = await until('mirror pod Running', s, async () => {
      const p = await podJson(name, 'default').catch(() => undefined);
      return p?.status.containerStatuses?.[0]?.state.running ? p : undefined;
    });
    const oldHash = mirror.metadata.annotations?.['kubernetes.io/config.mirror'] ?? '';
    const oldCgroup = podCgroup(oldHash, 'guaranteed');
    expect(cgFile('cpu', oldCgroup, 'cpu.cfs_quota_us')).toBe('20000');

    writeAtomic(manifests, 'static.json', manifest('400m'));
    const replaced = await until('a new mirror pod for the edited static pod', s, async () => {
      const p = await podJson(name, 'default').catch(() => undefined);
      const hash = p?.metadata.annotations?.['kubernetes.io/config.mirror'];
      return p && hash !== oldHash && p.status.containerStatuses?.[0]?.state.running ? p : undefined;
    }, 90_000);
    expect(replaced.metadata.uid).not.toBe(mirror.metadata.uid);
    expect(replaced.status.containerStatuses?.[0]?.containerID).not.toBe(mirror.status.containerStatuses?.[0]?.containerID);
    expect(replaced.status.containerStatuses?.[0]?.restartCount).toBe(0);
    expect(replaced.spec.containers[0]?.resources?.limits?.cpu).toBe('400m');
    const newCgroup = podCgroup(replaced.metadata.annotations!['kubernetes.io/config.mirror']!, 'guaranteed');
    expect(cgFile('cpu', newCgroup, 'cpu.cfs_quota_us')).toBe('40000');
    await until('the old pod cgroup removed', s, async () => (fs.existsSync(path.join(h.mounts.get('cpu')!, oldCgroup)) ? undefined : true));
    fs.rmSync(path.join(manifests, 'static.json'));
    await until('mirror pod deleted', s, async () => ((await cluster.kubectl(['get', 'pods', '-n', 'default', '-o', 'name'])).includes(name) ? undefined : true));
    expect((await s.stop()).code, s.tail()).toBe(0);
  }, 240_000);
});
