/**
 * The eviction manager on real containerd and a real kube-apiserver: klet's
 * --root-dir on a small tmpfs this test mounts (96 MiB), a hard threshold
 * nodefs.available<40%, an API pod filling an emptyDir. It is evicted as the
 * kubelet evicts (Failed, reason Evicted, the kubelet's message, an Evicted
 * event), the Node reports DiskPressure (and klet's /node), a pod arriving
 * under pressure is refused as the kubelet refuses it, and once the filler
 * is gone the condition goes back to False after the transition period.
 * (API pods only: the kubelet never evicts a static pod, a critical pod.)
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNamespace, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { poll } from '../helpers/poll.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { apiGet, killAllSyncs, startSync, type SyncProcess } from '../helpers/sync.js';

const execFileP = promisify(execFile);
const NODE = 'klet-eviction-node';
const NS = 'evict';
const IMAGE = 'localhost/klet/busybox:1.36';
let cluster: TestCluster;
let rt: TestRuntime;
let dir: string;
let rootDir: string;
let manifests: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-eviction-'));
  rootDir = path.join(dir, 'root');
  manifests = path.join(dir, 'manifests');
  fs.mkdirSync(rootDir);
  fs.mkdirSync(manifests);
  await execFileP('mount', ['-t', 'tmpfs', '-o', 'size=96m,mode=0755', 'tmpfs', rootDir]);
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE] })]);
  await ensureNamespace(cluster, NS);
}, 240_000);

afterAll(async () => {
  await killAllSyncs();
  await Promise.allSettled([cluster?.stop(), rt?.stop()]);
  // The pods' volume mounts under the root dir go with it (recursive), even when the test failed half-way.
  await execFileP('umount', ['-R', rootDir]).catch(() => execFileP('umount', ['-R', '-l', rootDir]).catch(() => undefined));
  fs.rmSync(dir, { recursive: true, force: true });
  for (const d of fs.readdirSync('/var/log/pods').filter((x) => x.startsWith(`${NS}_`))) fs.rmSync(path.join('/var/log/pods', d), { recursive: true, force: true });
}, 120_000);

interface ApiPod {
  metadata: { generation?: number };
  status: { phase?: string; reason?: string; message?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string; observedGeneration?: number }> };
}
interface NodeCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

const apply = (o: unknown) => cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(o) });
const podJson = (name: string) => cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, name]);
const diskPressure = async (): Promise<NodeCondition | undefined> =>
  (await cluster.kubectlJson<{ status: { conditions?: NodeCondition[] } }>(['get', 'node', NODE])).status.conditions?.find((c) => c.type === 'DiskPressure');
const pod = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec: { nodeName: NODE, terminationGracePeriodSeconds: 30, ...spec } });

describe('klet sync: node pressure and eviction, as the kubelet', () => {
  it('evicts the pod filling the root dir (Failed/Evicted, the message, DisruptionTarget, the event), reports DiskPressure, refuses new pods under it, and recovers after the transition period', async () => {
    const s: SyncProcess = await startSync({
      rootDir,
      endpoint: rt.endpoint,
      manifestDir: manifests,
      nodeName: NODE,
      args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--eviction-hard', 'nodefs.available<40%', '--eviction-pressure-transition-period', '20s'],
    });
    const fail = (err: unknown): never => {
      throw new Error(`${String(err)}\n${s.tail()}`);
    };
    expect(await poll('the Node with DiskPressure False', 60_000, diskPressure).catch(fail)).toMatchObject({ status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' });

    // 70 MiB into an emptyDir on the 96 MiB root dir: 26 MiB left, under 40 % (38.4 MiB). A line in
    // its log first: until containerd's snapshot syncer (every 10 s) measures the writable layer its
    // usage reads 0, and a container using nothing over its request is not named (as by the kubelet).
    await apply(
      pod('filler', {
        volumes: [{ name: 'scratch', emptyDir: {} }],
        containers: [{ name: 'filler', image: IMAGE, command: ['sh', '-c', 'echo filling; dd if=/dev/zero of=/scratch/fill bs=1M count=70 2>/dev/null; echo filled; sleep 3600'], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
      }),
    );
    const evicted = await poll('filler Failed', 90_000, async () => {
      const p = await podJson('filler');
      return p.status.phase === 'Failed' ? p : undefined;
    }).catch(fail);
    expect(evicted.status.reason).toBe('Evicted');
    // The eviction manager's DisruptionTarget, shared with the API server (what PodDisruptionBudgets and Job pod failure policies read).
    expect(evicted.status.conditions?.filter((c) => c.type === 'DisruptionTarget')).toEqual([
      expect.objectContaining({ status: 'True', reason: 'TerminationByKubelet', message: evicted.status.message, observedGeneration: evicted.metadata.generation }),
    ]);
    // 40 % of 96 MiB as the kubelet computes it (a float32 percentage): 40265319 bytes; the container's writable layer and log over its request (none).
    expect(evicted.status.message, `the eviction message: ${JSON.stringify(evicted.status.message)}`).toMatch(
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: 40265319, available: \d+(Ki|Mi)?\. Container filler was using \d+(Ki|Mi)?, request is 0, has larger consumption of ephemeral-storage\. $/,
    );
    const [, amount, unit] = /available: (\d+)(Ki|Mi)?\./.exec(evicted.status.message!)!;
    expect(Number(amount) * (unit === 'Mi' ? 1024 * 1024 : unit === 'Ki' ? 1024 : 1)).toBeLessThan(40265319);
    const events = await cluster.kubectlJson<{ items: Array<{ reason: string; message: string; type: string; involvedObject: { name: string } }> }>(['get', 'events', '-n', NS]);
    expect(events.items.filter((e) => e.involvedObject.name === 'filler' && e.reason === 'Evicted').map((e) => [e.type, e.message])).toEqual([['Warning', evicted.status.message]]);

    expect(await poll('DiskPressure True', 30_000, async () => ((await diskPressure())?.status === 'True' ? diskPressure() : undefined)).catch(fail)).toMatchObject({
      reason: 'KubeletHasDiskPressure',
      message: 'kubelet has disk pressure',
    });
    const local = JSON.parse((await apiGet(s.socketPath, '/node')).body) as { conditions: NodeCondition[] };
    expect(local.conditions.map((c) => `${c.type}=${c.status}`)).toEqual(['MemoryPressure=False', 'DiskPressure=True', 'PIDPressure=False']);

    // Under disk pressure every new pod is refused (not only BestEffort ones), with the kubelet's reason and message.
    await apply(pod('late', { containers: [{ name: 'c', image: IMAGE, command: ['sleep', '3600'], resources: { requests: { cpu: '10m' } } }] }));
    const late = await poll('late Failed', 60_000, async () => {
      const p = await podJson('late');
      return p.status.phase === 'Failed' ? p : undefined;
    }).catch(fail);
    expect(late.status).toMatchObject({ reason: 'Evicted', message: 'Pod was rejected: The node had condition: [DiskPressure]. ' });

    // The filler gone (its emptyDir with it), the pressure ends once the transition period has passed.
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'filler', 'late', '--wait=true']);
    expect(await poll('DiskPressure False again', 90_000, async () => ((await diskPressure())?.status === 'False' ? diskPressure() : undefined)).catch(fail)).toMatchObject({
      reason: 'KubeletHasNoDiskPressure',
      message: 'kubelet has no disk pressure',
    });
    const after = JSON.parse((await apiGet(s.socketPath, '/node')).body) as { conditions: NodeCondition[] };
    expect(after.conditions.find((c) => c.type === 'DiskPressure')?.status).toBe('False');
    // A pod is admitted again.
    await apply(pod('again', { containers: [{ name: 'c', image: IMAGE, command: ['sleep', '3600'] }] }));
    await poll('again Running', 60_000, async () => ((await podJson('again')).status.phase === 'Running' ? true : undefined)).catch(fail);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'again', '--wait=true']);
  }, 360_000);
});
