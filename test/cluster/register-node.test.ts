/**
 * `klet register-node` against a real kube-apiserver and etcd (Node,RBAC
 * authorization, NodeRestriction), with a private containerd for CRI, and
 * kubectl as the client that looks at the result — as a user would.
 *
 * klet runs with a node identity (system:node:<name>, group system:nodes),
 * so every request it makes is one a real kubelet is allowed to make.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN, cleanEnv, explain, nonEmptyLines, runKlet, type CliResult } from '../helpers/cli.js';
import { freePort, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { teardown } from '../helpers/teardown.js';

const NODE = 'klet-node-a';
const OTHER = 'klet-node-b';

let cluster: TestCluster;
let rt: TestRuntime;
/** Everything klet wrote in this file, to check no credential ever appears. */
const written: string[] = [];

interface K8sNode {
  metadata: { name: string; uid: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: { taints?: Array<{ key: string; value?: string; effect: string }> };
  status: {
    capacity: Record<string, string>;
    allocatable: Record<string, string>;
    conditions: Array<{ type: string; status: string; reason: string; message: string; lastHeartbeatTime: string }>;
    addresses: Array<{ type: string; address: string }>;
    nodeInfo: Record<string, string>;
    images: Array<{ names: string[]; sizeBytes: number }>;
  };
}
interface K8sLease {
  metadata: { ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string }> };
  spec: { holderIdentity: string; leaseDurationSeconds: number; renewTime: string };
}

async function klet(args: string[], timeoutMs = 90_000): Promise<CliResult> {
  const r = await runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint], { timeoutMs });
  written.push(r.stdout, r.stderr);
  return r;
}

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE, OTHER] })]);
}, 240_000);

afterAll(async () => {
  await teardown(rt, cluster);
}, 120_000);

describe('klet register-node against a real kube-apiserver', () => {
  it('creates a Node that the API server validates and kubectl shows with capacity, allocatable, conditions, addresses, nodeInfo, images and labels', async () => {
    const r = await klet([
      'register-node',
      '--kubeconfig', cluster.nodes[NODE]!.kubeconfig,
      '--node-name', NODE,
      '--node-labels', 'node.kubernetes.io/pool=edge,example.com/tier=2',
      '--register-with-taints', 'dedicated=edge:NoSchedule',
      '--kube-reserved', 'cpu=100m,memory=128Mi',
      '--system-reserved', 'memory=128Mi,ephemeral-storage=1Gi',
      '--max-pods', '50',
      '--node-ip', '127.0.0.1',
    ]);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stderr).toContain(`registered node ${NODE} with ${cluster.server}`);
    expect(r.stdout).toMatch(new RegExp(`^Node: +${NODE} \\(created\\)`));

    const node = await cluster.kubectlJson<K8sNode>(['get', 'node', NODE]);
    expect(node.metadata.labels).toMatchObject({
      'kubernetes.io/hostname': NODE,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/arch': 'amd64',
      'node.kubernetes.io/pool': 'edge',
      'example.com/tier': '2',
    });
    expect(node.metadata.annotations['volumes.kubernetes.io/controller-managed-attach-detach']).toBe('true');
    // The API server's TaintNodesByCondition admission adds node.kubernetes.io/not-ready on create
    // (the node lifecycle controller, not running here, would lift it): only klet's taint is ours.
    expect(node.spec.taints).toContainEqual({ key: 'dedicated', value: 'edge', effect: 'NoSchedule' });
    expect(node.spec.taints?.filter((t) => t.key !== 'node.kubernetes.io/not-ready')).toHaveLength(1);

    const cpus = (await import('node:os')).cpus().length;
    expect(node.status.capacity.cpu).toBe(String(cpus));
    expect(node.status.capacity.pods).toBe('50');
    expect(node.status.allocatable.cpu).toBe(`${cpus * 1000 - 100}m`);
    expect(node.status.allocatable.pods).toBe('50');
    const memTotalKi = Number(/^MemTotal:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))![1]);
    expect(node.status.capacity.memory).toBe(`${memTotalKi}Ki`);
    // allocatable memory = capacity - 128Mi - 128Mi - 100Mi (hard eviction) - huge pages (none here).
    const allocMemKi = memTotalKi - (128 + 128 + 100) * 1024;
    expect([`${allocMemKi}Ki`, `${allocMemKi / 1024}Mi`, `${allocMemKi / 1024 / 1024}Gi`]).toContain(node.status.allocatable.memory);
    const st = fs.statfsSync(rt.rootDir);
    expect(Number(node.status.capacity['ephemeral-storage']!.replace(/Ki$/, '')) * (node.status.capacity['ephemeral-storage']!.endsWith('Ki') ? 1024 : 1)).toBe(st.blocks * st.bsize);

    expect(node.status.conditions.map((c) => [c.type, c.status, c.reason, c.message])).toEqual([
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
      ['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'],
    ]);
    expect(node.status.addresses).toEqual([
      { type: 'InternalIP', address: '127.0.0.1' },
      { type: 'Hostname', address: (await import('node:os')).hostname().toLowerCase() },
    ]);
    expect(node.status.nodeInfo).toMatchObject({
      bootID: fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      machineID: fs.readFileSync('/etc/machine-id', 'utf8').trim(),
      kernelVersion: (await import('node:os')).release(),
      operatingSystem: 'linux',
      architecture: 'amd64',
      kubeletVersion: expect.stringMatching(/^v1\.\d+\.\d+\+klet\.\d+\.\d+\.\d+$/),
      containerRuntimeVersion: expect.stringMatching(/^containerd:\/\/\d+\.\d+/),
    });
    expect(node.status.images.some((i) => i.names.some((n) => n.includes('busybox')) && i.sizeBytes > 0)).toBe(true);

    // kubectl's own view: Ready, the klet version.
    const table = await cluster.kubectl(['get', 'node', NODE, '--no-headers']);
    expect(table).toMatch(new RegExp(`^${NODE}\\s+Ready\\s+<none>\\s+\\S+\\s+v1\\.\\d+\\.\\d+\\+klet\\.`));

    // One registration renews the node's Lease once: owned by the Node, 40 s.
    const lease = await cluster.kubectlJson<K8sLease>(['get', 'lease', '-n', 'kube-node-lease', NODE]);
    expect(lease.spec.holderIdentity).toBe(NODE);
    expect(lease.spec.leaseDurationSeconds).toBe(40);
    expect(lease.spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(lease.metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: node.metadata.uid }]);
  });

  it('reconciles an existing Node: restores the default labels, keeps what the admin set, and does not touch taints', async () => {
    const before = await cluster.kubectlJson<K8sNode>(['get', 'node', NODE]);
    await cluster.kubectl(['label', 'node', NODE, 'kubernetes.io/arch-', 'team=infra']);
    const r = await klet(['register-node', '--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--node-name', NODE, '-o', 'json']);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stderr).toContain(`updated node ${NODE}`);
    expect((JSON.parse(r.stdout) as K8sNode).metadata.name).toBe(NODE);
    const node = await cluster.kubectlJson<K8sNode>(['get', 'node', NODE]);
    expect(node.metadata.labels['kubernetes.io/arch']).toBe('amd64');
    expect(node.metadata.labels.team).toBe('infra');
    expect(node.spec.taints).toEqual(before.spec.taints);
    expect(node.metadata.uid).toBe(before.metadata.uid);
  });

  it("is refused by NodeRestriction when one node's identity registers another node", async () => {
    const r = await klet(['register-node', '--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--node-name', OTHER]);
    expect(r.code, explain(r)).toBe(1);
    const lines = nonEmptyLines(r.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^error: API server ${cluster.server.replace(/[.]/g, '\\.')}: create node ${OTHER}: 403 Forbidden: nodes "${OTHER}" is forbidden: node "${NODE}" is not allowed to modify node "${OTHER}"$`));
    await expect(cluster.kubectl(['get', 'node', OTHER])).rejects.toThrow(/NotFound|not found/);
  });

  it('--heartbeat renews the Lease every 10 s ± 2 s; after klet stops the Lease goes stale', async () => {
    const started = Date.now();
    const child = spawn(
      process.execPath,
      [KLET_BIN, 'register-node', '--heartbeat', '--log-level', 'debug', '--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--node-name', NODE, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint],
      { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // Watch renewTime as the server stores it, polling faster than it changes.
      const seen: number[] = [];
      while (seen.length < 5 && Date.now() - started < 75_000) {
        const lease = await cluster.kubectlJson<K8sLease>(['get', 'lease', '-n', 'kube-node-lease', NODE]);
        const t = Date.parse(lease.spec.renewTime);
        // Only this klet's renewals: an earlier test's one-shot registration renewed the Lease moments before.
        if (t >= started && !seen.includes(t)) seen.push(t);
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(seen.length, out).toBe(5);
      const gaps = seen.slice(1).map((t, i) => (t - seen[i]!) / 1000);
      for (const g of gaps) {
        expect(g, `renewTime gaps ${gaps.join(', ')} s`).toBeGreaterThanOrEqual(8);
        expect(g, `renewTime gaps ${gaps.join(', ')} s`).toBeLessThanOrEqual(12);
      }
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, out).toBe(0);
    written.push(out);
    expect(out).toMatch(/lease kube-node-lease\/klet-node-a renewed at/);

    // Stopped: the renewTime no longer moves, so it ages past the renew interval and then past leaseDurationSeconds.
    const last = Date.parse((await cluster.kubectlJson<K8sLease>(['get', 'lease', '-n', 'kube-node-lease', NODE])).spec.renewTime);
    await new Promise((r) => setTimeout(r, 14_000));
    const after = await cluster.kubectlJson<K8sLease>(['get', 'lease', '-n', 'kube-node-lease', NODE]);
    expect(Date.parse(after.spec.renewTime)).toBe(last);
    expect(Date.now() - last).toBeGreaterThan(12_000);
  }, 150_000);
});

describe('klet register-node: bad input is one line naming the input, and no credential is ever shown', () => {
  const dir = () => path.join(cluster.dir, 'bad');
  const expectOneLine = (r: CliResult, code: number, re: RegExp) => {
    expect(r.code, explain(r)).toBe(code);
    const lines = nonEmptyLines(r.stderr);
    expect(lines, explain(r)).toHaveLength(1);
    expect(lines[0]).toMatch(re);
  };

  it('a kubeconfig that does not exist, is not YAML, or is not a kubeconfig', async () => {
    fs.mkdirSync(dir(), { recursive: true });
    expectOneLine(await klet(['register-node', '--kubeconfig', path.join(dir(), 'none.yaml'), '--node-name', NODE]), 2, /^error: kubeconfig \S+none\.yaml: no such file$/);
    fs.writeFileSync(path.join(dir(), 'broken.yaml'), 'apiVersion: v1\nclusters: [\n  - name: x\n  bad: {\n');
    expectOneLine(await klet(['register-node', '--kubeconfig', path.join(dir(), 'broken.yaml'), '--node-name', NODE]), 2, /^error: kubeconfig \S+broken\.yaml:\d+: not YAML: /);
    fs.writeFileSync(path.join(dir(), 'list.yaml'), '- a\n- b\n');
    expectOneLine(await klet(['register-node', '--kubeconfig', path.join(dir(), 'list.yaml'), '--node-name', NODE]), 2, /^error: kubeconfig \S+list\.yaml: not a kubeconfig/);
  });

  it('a kubeconfig pointing at a closed port, with a wrong CA, or with a wrong token', async () => {
    const token = cluster.nodes[NODE]!.token;
    const closed = path.join(dir(), 'closed.yaml');
    await cluster.writeKubeconfig(closed, { token, server: `https://127.0.0.1:${await freePort()}` });
    expectOneLine(await klet(['register-node', '--kubeconfig', closed, '--node-name', NODE]), 1, /^error: API server https:\/\/127\.0\.0\.1:\d+: create node klet-node-a: connection refused$/);

    const wrongCa = path.join(dir(), 'wrong-ca.yaml');
    await cluster.writeKubeconfig(wrongCa, { token, caFile: cluster.otherCaFile });
    expectOneLine(await klet(['register-node', '--kubeconfig', wrongCa, '--node-name', NODE]), 1, /^error: API server \S+: create node klet-node-a: TLS: the server's certificate is not trusted with the kubeconfig's certificate-authority/);

    const wrongToken = 'wrong-token-0123456789abcdef';
    const badToken = path.join(dir(), 'bad-token.yaml');
    await cluster.writeKubeconfig(badToken, { token: wrongToken });
    const r = await klet(['register-node', '--kubeconfig', badToken, '--node-name', NODE, '--log-level', 'debug']);
    expect(r.code, explain(r)).toBe(1);
    expect(r.stderr).toMatch(/^error: API server \S+: create node klet-node-a: 401 Unauthorized: the server rejected the kubeconfig's credentials$/m);
    expect(r.stdout + r.stderr).not.toContain(wrongToken);
  });

  it('a node name that is not a DNS subdomain, a taint that does not parse, a label NodeRestriction forbids', async () => {
    const kc = cluster.nodes[NODE]!.kubeconfig;
    expectOneLine(await klet(['register-node', '--kubeconfig', kc, '--node-name', 'node_1']), 2, /^error: --node-name node name "node_1": a lowercase RFC 1123 subdomain/);
    expectOneLine(await klet(['register-node', '--kubeconfig', kc, '--node-name', NODE, '--register-with-taints', 'dedicated=edge']), 2, /^error: --register-with-taints taint "dedicated=edge": not key=value:Effect/);
    expectOneLine(await klet(['register-node', '--kubeconfig', kc, '--node-name', NODE, '--register-with-taints', 'a=b:Sometimes']), 2, /effect "Sometimes" is not one of NoSchedule, PreferNoSchedule, NoExecute/);
    expectOneLine(await klet(['register-node', '--kubeconfig', kc, '--node-name', NODE, '--node-labels', 'node-role.kubernetes.io/worker=']), 2, /^error: --node-labels label "node-role\.kubernetes\.io\/worker": a node may not set/);
  });

  it('no node token appeared in anything klet wrote in this file', () => {
    const all = written.join('\n');
    expect(all.length).toBeGreaterThan(0);
    for (const n of Object.values(cluster.nodes)) expect(all).not.toContain(n.token);
  });
});
