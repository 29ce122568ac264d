/**
 * `klet sync --kubeconfig` against a real kube-apiserver: the sync loop
 * registers the node and keeps its Lease fresh beside the static pods, and
 * keeps running (retrying) while the API server cannot be reached.
 */
import fs from 'node:fs';
import path from 'node:path';
import { hostIPs } from '../../src/lib/node/addresses.js';
import { poll } from '../helpers/poll.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, explain, nonEmptyLines, runKlet, runKletJson } from '../helpers/cli.js';
import { ensureNamespace as ensureClusterNamespace, freePort, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { KUBEADM_CONFIG_HERE as KUBEADM_CONFIG } from '../helpers/kubeadm-config.js';
import { killAllSyncs, startSync } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';

const NODE = 'klet-sync-node';
let cluster: TestCluster;
let rt: TestRuntime;
let manifests: string;

beforeAll(async () => {
  // The audit log tells which requests klet made (the status-write count below).
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE], audit: true })]);
  manifests = fs.mkdtempSync(path.join(cluster.dir, 'manifests-'));
}, 240_000);
afterEach(async () => {
  await killAllSyncs();
});
afterAll(async () => {
  await teardown(rt, cluster);
}, 120_000);

interface Lease {
  spec: { renewTime: string; holderIdentity: string };
}

describe('klet sync --kubeconfig', () => {
  it('registers the node (Ready) and renews its Lease every 10 s while the sync loop runs; SIGTERM exits 0', async () => {
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: manifests, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--log-level', 'debug'] });
    expect(sync.stderr).toContain(`API server ${cluster.server}`);
    await sync.waitForStderr(new RegExp(`registered node ${NODE} with ${cluster.server.replace(/\./g, '\\.')}`), 30_000);
    const node = await cluster.kubectlJson<{ status: { conditions: Array<{ type: string; status: string; reason: string }> } }>(['get', 'node', NODE]);
    expect(node.status.conditions.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'KubeletReady' });

    const renewTimes = new Set<string>();
    const deadline = Date.now() + 40_000;
    while (renewTimes.size < 3 && Date.now() < deadline) {
      renewTimes.add((await cluster.kubectlJson<Lease>(['get', 'lease', '-n', 'kube-node-lease', NODE])).spec.renewTime);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const times = [...renewTimes].map((t) => Date.parse(t)).sort((a, b) => a - b);
    expect(times.length, sync.tail()).toBe(3);
    for (let i = 1; i < times.length; i++) {
      expect((times[i]! - times[i - 1]!) / 1000).toBeGreaterThanOrEqual(8);
      expect((times[i]! - times[i - 1]!) / 1000).toBeLessThanOrEqual(12);
    }

    // klet status (and the local API's /node) tell the cluster klet sync joined.
    const statusArgs = ['status', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
    const table = await runKlet(statusArgs);
    expect(table.code, explain(table)).toBe(0);
    expect(table.stdout).toContain(`Cluster:  ${cluster.server} (node ${NODE} registered)\n`);
    expect(table.stdout).toMatch(/\nLease: {4}renewed \d+s ago \(\d{4}-\d\d-\d\dT[0-9:.]+Z\)\n/);
    expect(table.stdout).toMatch(/\nWatch: {4}watching, \d+ pods?\n/);
    const { json } = await runKletJson<{ kind: string; cluster: { server: string; registered: boolean; nodeName: string; lease: { renewTime: string; ageSeconds: number }; watch: { state: string }; requests: Record<string, number> } }>([...statusArgs, '-o', 'json']);
    expect(json.kind).toBe('PodList');
    expect(json.cluster).toMatchObject({ server: cluster.server, registered: true, nodeName: NODE, watch: { state: 'watching' } });
    expect(json.cluster.lease.ageSeconds).toBeLessThanOrEqual(12);
    expect(Date.parse(json.cluster.lease.renewTime)).toBeGreaterThanOrEqual(times[times.length - 1]!);
    expect(json.cluster.requests.update).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(json)).not.toContain(cluster.nodes[NODE]!.token);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toContain(cluster.nodes[NODE]!.token);
  }, 120_000);

  it('keeps the sync loop running and retries while the API server cannot be reached', async () => {
    const kc = path.join(cluster.dir, 'closed.kubeconfig');
    await cluster.writeKubeconfig(kc, { token: cluster.nodes[NODE]!.token, server: `https://127.0.0.1:${await freePort()}` });
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: manifests, nodeName: NODE, args: ['--kubeconfig', kc] });
    await sync.waitForStderr(/warning: registering node klet-sync-node: API server https:\/\/127\.0\.0\.1:\d+: create node klet-sync-node: connection refused/, 20_000);
    // Still retrying a while later (klet status shows each new failure), still serving, and the same failure is logged once.
    const statusArgs = ['status', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json'];
    const lastError = async () => (await runKletJson<{ cluster: { registered: boolean; lastError: { message: string; at: string } } }>(statusArgs)).json.cluster;
    const first = await lastError();
    expect(first.registered).toBe(false);
    expect(first.lastError.message).toMatch(/create node klet-sync-node: connection refused/);
    await poll('another failed registration attempt', 20_000, async () => ((await lastError()).lastError.at > first.lastError.at ? true : undefined));
    expect(sync.running).toBe(true);
    expect(sync.stderr.match(/warning: registering node/g)).toHaveLength(1);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toContain(cluster.nodes[NODE]!.token);
  }, 90_000);

  it('with kubeadm\'s config.yaml (--config): its maxPods, port, healthzPort and clientCAFile take effect on the Node and the kubelet server', async () => {
    const [port, healthzPort] = [await freePort(), await freePort()];
    // The API server's node proxy refuses loopback addresses: the host's own (traffic never leaves the machine).
    const nodeIP = hostIPs()[0] ?? '127.0.0.1';
    const file = path.join(cluster.dir, 'kubelet-config.yaml');
    fs.writeFileSync(
      file,
      KUBEADM_CONFIG.replace('clientCAFile: /etc/kubernetes/pki/ca.crt', `clientCAFile: ${cluster.caFile}`)
        .replace('healthzPort: 10248', `healthzPort: ${healthzPort}`)
        .replace('staticPodPath: /etc/kubernetes/manifests', `staticPodPath: ${manifests}`)
        .replace('kind: KubeletConfiguration', `kind: KubeletConfiguration\nmaxPods: 42\nport: ${port}\naddress: ${nodeIP}`),
    );
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, args: ['--config', file, '--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--node-ip', nodeIP] });
    expect(sync.stderr).toContain(`kubelet server on https://${nodeIP}:${port}`);
    const node = await poll('the Node with the file\'s maxPods and port', 30_000, async () => {
      const n = await cluster.kubectlJson<{ status: { capacity: Record<string, string>; daemonEndpoints: { kubeletEndpoint: { Port: number } } } }>(['get', 'node', NODE]);
      return n.status.capacity.pods === '42' && n.status.daemonEndpoints.kubeletEndpoint.Port === port ? n : undefined;
    });
    expect(node.status.capacity.pods).toBe('42');
    // The API server reaches it with its client certificate, which the file's clientCAFile verifies.
    const configz = await cluster.kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/configz`]);
    expect(JSON.parse(configz).kubeletconfig).toMatchObject({ maxPods: 42, port, address: nodeIP, healthzPort, healthzBindAddress: '127.0.0.1', authentication: { x509: { clientCAFile: cluster.caFile } } });
    // kubeadm join's kubelet-check: the localhost healthz endpoint answers.
    const healthz = await fetch(`http://127.0.0.1:${healthzPort}/healthz`);
    expect([healthz.status, await healthz.text()]).toEqual([200, 'ok']);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 90_000);

  it('a bad kubeconfig or registration flag is a one-line error at start', async () => {
    const base = ['sync', '--manifest-dir', manifests, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
    // Each must answer at once; a run that does not fails here with its output. (Twice in full runs at
    // load 30+ the missing file took over 25 s to report: klet loaded @kubernetes/client-node, 1.3 s of
    // CPU, before looking at the file; the file is now read first, 0.2 s of CPU like the taint case.)
    let r = await runKlet([...base, '--kubeconfig', path.join(cluster.dir, 'missing.yaml')], { timeoutMs: 25_000 });
    expect(r.code, explain(r)).toBe(2);
    expect(nonEmptyLines(r.stderr)).toEqual([`error: kubeconfig ${path.join(cluster.dir, 'missing.yaml')}: no such file`]);
    r = await runKlet([...base, '--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--register-with-taints', 'x:Bad'], { timeoutMs: 25_000 });
    expect(r.code, explain(r)).toBe(2);
    expect(nonEmptyLines(r.stderr)).toEqual(['error: --register-with-taints taint "x:Bad": effect "Bad" is not one of NoSchedule, PreferNoSchedule, NoExecute']);
  });
});

interface ApiPod {
  metadata: { uid: string; annotations: Record<string, string>; ownerReferences?: Array<{ kind: string; name: string; uid: string; controller?: boolean }> };
  spec: { nodeName: string };
  status: {
    phase?: string;
    podIP?: string;
    hostIP?: string;
    hostIPs?: Array<{ ip: string }>;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ name: string; ready: boolean; containerID?: string; restartCount: number; state: Record<string, unknown> }>;
    initContainerStatuses?: Array<{ name: string; state: Record<string, unknown> }>;
  };
}

/**
 * The log dirs under /var/log/pods of these pods of `ns`. The server forgets a
 * deleted pod once klet has stopped it; klet then removes what it has of it
 * (sandbox, log dir, record): a test waits for that before it stops klet.
 */
function logDirsLeft(ns: string, names: string[]): string[] {
  return fs.readdirSync('/var/log/pods').filter((d) => names.some((n) => d.startsWith(`${ns}_${n}_`)));
}

describe('klet sync --kubeconfig: mirror pods for static pods', () => {
  it('kubectl shows a mirror pod with the static pod\'s status; a deleted mirror pod comes back; a removed static pod takes its mirror pod with it', async () => {
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'static-'));
    fs.copyFileSync(path.join(PROJECT_ROOT, 'examples', 'web.yaml'), path.join(dir, 'web.yaml'));
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    const name = `web-${NODE}`;
    const running = await poll(`mirror pod default/${name} Running and Ready`, 90_000, async () => {
      const p = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', 'default', name]);
      return p.status.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready) ? p : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });

    const { json: local } = await runKletJson<ApiPod>(['status', `default/${name}`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
    expect(running.metadata.annotations['kubernetes.io/config.mirror']).toBe(local.metadata.annotations['kubernetes.io/config.hash']);
    expect(running.metadata.annotations['kubernetes.io/config.source']).toBe('file');
    const node = await cluster.kubectlJson<{ metadata: { uid: string } }>(['get', 'node', NODE]);
    expect(running.metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: node.metadata.uid, controller: true }]);
    expect(running.spec.nodeName).toBe(NODE);
    // The server has the status klet computed.
    expect(running.status.phase).toBe(local.status.phase);
    expect(running.status.podIP).toBe(local.status.podIP);
    expect(running.status.podIP).toMatch(/^10\.89\./);
    expect(running.status.conditions?.map((c) => [c.type, c.status]).sort()).toEqual(local.status.conditions?.map((c) => [c.type, c.status]).sort());
    expect(running.status.containerStatuses?.map((c) => [c.name, c.ready, c.containerID, c.restartCount, Object.keys(c.state)])).toEqual(
      local.status.containerStatuses?.map((c) => [c.name, c.ready, c.containerID, c.restartCount, Object.keys(c.state)]),
    );
    expect(running.status.initContainerStatuses?.[0]?.state).toHaveProperty('terminated');
    const table = await cluster.kubectl(['get', 'pod', '-n', 'default', name, '--no-headers']);
    expect(table).toMatch(new RegExp(`^${name}\\s+1/1\\s+Running\\s+0\\s`));

    // Deleted by an admin: klet creates it again (a new object), the static pod keeps running.
    await cluster.kubectl(['delete', 'pod', '-n', 'default', name, '--wait=false']);
    const again = await poll('mirror pod recreated', 30_000, async () => {
      const p = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', 'default', name]);
      return p.metadata.uid !== running.metadata.uid && p.status.phase === 'Running' ? p : undefined;
    });
    expect(again.status.containerStatuses?.[0]?.containerID).toBe(running.status.containerStatuses?.[0]?.containerID);

    // The static pod goes: so does its mirror pod.
    fs.rmSync(path.join(dir, 'web.yaml'));
    await poll('mirror pod deleted', 60_000, async () => {
      const out = await cluster.kubectl(['get', 'pods', '-n', 'default', '-o', 'name']);
      return out.includes(name) ? undefined : true;
    });
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toMatch(/warning: mirror pod/);
  }, 240_000);
});

describe('klet sync --kubeconfig: pods from the API server', () => {
  const NS = 'apps';
  const ensureNamespace = () => ensureClusterNamespace(cluster, NS);
  const podYaml = (name: string, grace = 5) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS, labels: { app: name } },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: grace,
        containers: [{ name: 'main', image: 'localhost/klet/busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] }],
      },
    });

  it('runs a pod bound with spec.nodeName, reports its status to the server, and finishes kubectl delete within the grace period', async () => {
    await ensureNamespace();
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
    // --node-ip, not the default route's address: the pods' hostIP is the node's InternalIP, as the kubelet reports it.
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--node-ip', '127.0.0.1'] });
    await cluster.kubectl(['apply', '-f', '-'], { input: podYaml('sleeper') });
    const running = await poll('API pod Running and Ready on the server', 90_000, async () => {
      const p = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, 'sleeper']);
      return p.status.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready) ? p : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    const { json: local } = await runKletJson<ApiPod>(['status', `${NS}/sleeper`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
    expect(local.metadata.uid).toBe(running.metadata.uid);
    expect(running.status.podIP).toBe(local.status.podIP);
    expect(running.status.podIP).toMatch(/^10\.89\./);
    expect(running.status).toMatchObject({ hostIP: '127.0.0.1', hostIPs: [{ ip: '127.0.0.1' }] });
    expect(running.status.conditions?.map((c) => [c.type, c.status]).sort()).toEqual(local.status.conditions?.map((c) => [c.type, c.status]).sort());
    expect(running.status.containerStatuses?.map((c) => [c.name, c.ready, c.containerID, c.restartCount, Object.keys(c.state)])).toEqual(
      local.status.containerStatuses?.map((c) => [c.name, c.ready, c.containerID, c.restartCount, Object.keys(c.state)]),
    );

    // kubectl delete: klet stops it (the container traps TERM) and then deletes it from the server.
    const t0 = Date.now();
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'sleeper', '--wait=false']);
    await poll('pod gone from the server', 30_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).includes('sleeper') ? undefined : true));
    const took = Date.now() - t0;
    expect(took, sync.tail()).toBeLessThan(5_000 + 5_000);
    const { json: after } = await runKletJson<{ items: ApiPod[] }>(['status', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
    expect(after.items.map((p) => p.metadata.uid)).not.toContain(running.metadata.uid);

    // The same name again is a new pod (new UID, new container).
    await cluster.kubectl(['apply', '-f', '-'], { input: podYaml('sleeper') });
    const second = await poll('recreated pod Running', 90_000, async () => {
      const p = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, 'sleeper']);
      return p.status.phase === 'Running' ? p : undefined;
    });
    expect(second.metadata.uid).not.toBe(running.metadata.uid);
    expect(second.status.containerStatuses?.[0]?.containerID).not.toBe(running.status.containerStatuses?.[0]?.containerID);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'sleeper', '--wait=false']);
    await poll('second pod gone', 30_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).includes('sleeper') ? undefined : true));
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toMatch(/^warning: /m);
  }, 300_000);

  it("writes starting pods' status as the kubelet's status manager does: Pending while they start, then Running, in no more PATCHes per pod than the kubelet's 2", async () => {
    await ensureNamespace();
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    // Registered, or updated when an earlier test left the Node: the status manager writes only once the Node is there.
    await sync.waitForStderr(new RegExp(`(registered|updated) node ${NODE} with`), 30_000);
    // Every version of the pods the server stores from here on is replayed by a watch from this resourceVersion.
    const rv = (JSON.parse(await cluster.kubectl(['get', '--raw', `/api/v1/namespaces/${NS}/pods`])) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    // Several at once: each pod's status is written for itself, whatever the others' syncs do meanwhile.
    const names = Array.from({ length: 5 }, (_, i) => `counted-${i}`);
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: names.map((n) => JSON.parse(podYaml(n)) as unknown) }) });
    const ready = (p: ApiPod) => p.status.phase === 'Running' && p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    await poll('counted-* Running and Ready on the server', 90_000, async () => {
      const { items } = await cluster.kubectlJson<{ items: ApiPod[] }>(['get', 'pods', '-n', NS, '-l', 'app in (' + names.join(',') + ')']);
      return items.length === names.length && items.every(ready) ? true : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    // Room for any later write of these starts: the PLEG's relist (1 s) sees the containers started and syncs the pods again.
    await new Promise((r) => setTimeout(r, 4000));

    // The kubelet writes 2 for such a pod (status_manager.go: SetPodStatus at the start of the first
    // syncPod, Pending with the container ContainerCreating; then after the PLEG's ContainerStarted,
    // Running; a status equal but for condition times is not written; bench/README api-start-30
    // measured 2.0 per pod for kubelet v1.34.4). Counted from the API server's audit log.
    const audit = fs
      .readFileSync(cluster.auditLog!, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { verb: string; user: { username: string }; objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string } })
      .filter((e) => e.user.username === `system:node:${NODE}` && e.verb === 'patch' && e.objectRef?.resource === 'pods' && e.objectRef.subresource === 'status' && e.objectRef.namespace === NS);
    const patches = Object.fromEntries(names.map((n) => [n, audit.filter((e) => e.objectRef?.name === n).length]));
    for (const n of names) {
      expect(patches[n], `${n}: ${JSON.stringify(patches)}\n${sync.tail()}`).toBeGreaterThanOrEqual(1);
      expect(patches[n], `${n}: ${JSON.stringify(patches)}\n${sync.tail()}`).toBeLessThanOrEqual(2);
    }

    // What users saw on the server, version by version: Pending with the container being created, then Running.
    const events = (await cluster.kubectl(['get', '--raw', `/api/v1/namespaces/${NS}/pods?watch=1&resourceVersion=${rv}&timeoutSeconds=1`]))
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { object: ApiPod & { metadata: { name: string } } }).object);
    for (const n of names) {
      const history = events.filter((o) => o.metadata.name === n).map((o) => o.status);
      const pendingAt = history.findIndex((st) => st.phase === 'Pending' && JSON.stringify(st.containerStatuses?.[0]?.state) === JSON.stringify({ waiting: { reason: 'ContainerCreating' } }));
      const runningAt = history.findIndex((st) => st.phase === 'Running');
      expect(pendingAt, `${n}: ${JSON.stringify(history)}`).toBeGreaterThanOrEqual(0);
      expect(runningAt, `${n}: ${JSON.stringify(history)}`).toBeGreaterThan(pendingAt);
    }
    // And the end state is klet's own view of each pod.
    for (const n of names) {
      const { json: local } = await runKletJson<ApiPod>(['status', `${NS}/${n}`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
      const final = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, n]);
      expect(final.metadata.uid).toBe(local.metadata.uid);
      expect(final.status.phase).toBe(local.status.phase);
      expect(final.status.podIP).toBe(local.status.podIP);
      expect(final.status.conditions?.map((c) => [c.type, c.status]).sort()).toEqual(local.status.conditions?.map((c) => [c.type, c.status]).sort());
      expect(final.status.containerStatuses?.map((c) => [c.name, c.ready, c.containerID, c.restartCount, Object.keys(c.state)])).toEqual(
        local.status.containerStatuses?.map((c) => [c.name, c.ready, c.containerID, c.restartCount, Object.keys(c.state)]),
      );
    }
    await cluster.kubectl(['delete', 'pod', '-n', NS, ...names, '--wait=false']);
    await poll('counted-* gone', 60_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).includes('counted-') ? undefined : true));
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 240_000);

  it('fault: kube-apiserver stopped for 60 s while a pod completes — klet keeps running the pods, and the server ends with the latest status', async () => {
    await ensureNamespace();
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    const short = JSON.parse(podYaml('short')) as { spec: { restartPolicy?: string; containers: Array<{ command: string[] }> } };
    short.spec.restartPolicy = 'Never';
    short.spec.containers[0]!.command = ['sh', '-c', 'sleep 15; exit 0'];
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(short) });
    await cluster.kubectl(['apply', '-f', '-'], { input: podYaml('steady') });
    for (const name of ['short', 'steady']) {
      await poll(`${name} Running`, 90_000, async () => ((await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, name])).status.phase === 'Running' ? true : undefined)).catch((err: Error) => {
        throw new Error(`${err.message}\n${sync.tail()}`);
      });
    }
    const steadyBefore = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, 'steady']);

    await cluster.stopApiServer();
    const down = Date.now();
    // Meanwhile "short" exits 0: klet sees it locally while the server cannot be told.
    await poll('short Succeeded locally', 45_000, async () => {
      const { json } = await runKletJson<ApiPod>(['status', `${NS}/short`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
      return json.status.phase === 'Succeeded' ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, Math.max(0, 60_000 - (Date.now() - down))));
    expect(sync.running, sync.tail()).toBe(true);
    await cluster.startApiServer();

    const done = await poll('the server has short Succeeded', 60_000, async () => {
      const p = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, 'short']);
      return p.status.phase === 'Succeeded' ? p : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    expect(done.status.containerStatuses?.[0]?.state).toMatchObject({ terminated: { exitCode: 0, reason: 'Completed' } });
    // The other pod ran through the outage: same container, never restarted, still Running on the server.
    const steady = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, 'steady']);
    expect(steady.status.phase).toBe('Running');
    expect(steady.status.containerStatuses?.[0]?.containerID).toBe(steadyBefore.status.containerStatuses?.[0]?.containerID);
    expect(steady.status.containerStatuses?.[0]?.restartCount).toBe(0);
    // And the Lease is being renewed again.
    const renew = Date.parse((await cluster.kubectlJson<{ spec: { renewTime: string } }>(['get', 'lease', '-n', 'kube-node-lease', NODE])).spec.renewTime);
    await poll('lease renewed after the outage', 30_000, async () =>
      Date.parse((await cluster.kubectlJson<{ spec: { renewTime: string } }>(['get', 'lease', '-n', 'kube-node-lease', NODE])).spec.renewTime) > renew ? true : undefined,
    );
    expect(sync.running, sync.tail()).toBe(true);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'short', 'steady', '--wait=false']);
    await poll('pods deleted', 40_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).trim() === '' ? true : undefined));
    await poll('klet removed the pods and their log dirs', 40_000, async () => (logDirsLeft(NS, ['short', 'steady']).length === 0 ? true : undefined));
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 300_000);

  it('fault: etcd stopped for 45 s while pods run — pods keep running, heartbeats fail and back off without log spam, then the lease renews and statuses converge', async () => {
    await ensureNamespace();
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    const short = JSON.parse(podYaml('short-etcd')) as { spec: { restartPolicy?: string; containers: Array<{ command: string[] }> } };
    short.spec.restartPolicy = 'Never';
    short.spec.containers[0]!.command = ['sh', '-c', 'sleep 25; exit 0'];
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(short) });
    await cluster.kubectl(['apply', '-f', '-'], { input: podYaml('steady-etcd') });
    for (const name of ['short-etcd', 'steady-etcd']) {
      await poll(`${name} Running`, 90_000, async () => ((await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, name])).status.phase === 'Running' ? true : undefined)).catch((err: Error) => {
        throw new Error(`${err.message}\n${sync.tail()}`);
      });
    }
    const steadyBefore = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, 'steady-etcd']);
    const logFrom = sync.stderr.length;

    await cluster.stopEtcd();
    const down = Date.now();
    // Meanwhile short-etcd exits 0 and steady-etcd keeps running: klet sees both locally.
    await poll('short-etcd Succeeded locally', 45_000, async () => {
      const { json } = await runKletJson<ApiPod>(['status', `${NS}/short-etcd`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
      return json.status.phase === 'Succeeded' ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, Math.max(0, 45_000 - (Date.now() - down))));
    expect(sync.running, sync.tail()).toBe(true);
    const { json: during } = await runKletJson<{ cluster: { lease: { renewTime: string } } }>(['status', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
    // No renewal got through while etcd was away.
    expect(Date.parse(during.cluster.lease.renewTime)).toBeLessThan(down + 1000);
    await cluster.startEtcd();
    const up = Date.now();

    const done = await poll('the server has short-etcd Succeeded', 90_000, async () => {
      const p = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, 'short-etcd']);
      return p.status.phase === 'Succeeded' ? p : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    expect(done.status.containerStatuses?.[0]?.state).toMatchObject({ terminated: { exitCode: 0, reason: 'Completed' } });
    const steady = await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, 'steady-etcd']);
    expect(steady.status.phase).toBe('Running');
    expect(steady.status.containerStatuses?.[0]?.containerID).toBe(steadyBefore.status.containerStatuses?.[0]?.containerID);
    expect(steady.status.containerStatuses?.[0]?.restartCount).toBe(0);
    await poll('lease renewed after etcd came back', 60_000, async () =>
      Date.parse((await cluster.kubectlJson<{ spec: { renewTime: string } }>(['get', 'lease', '-n', 'kube-node-lease', NODE])).spec.renewTime) > up ? true : undefined,
    );
    expect(sync.running, sync.tail()).toBe(true);
    // Failures were logged, each once, not at every retry: a handful of lines for the whole outage.
    const outage = sync.stderr.slice(logFrom);
    const warnings = outage.split('\n').filter((l) => l.startsWith('warning: '));
    expect(warnings.length, outage).toBeGreaterThan(0);
    expect(warnings.length, outage).toBeLessThanOrEqual(15);
    expect(sync.stderr).not.toContain(cluster.nodes[NODE]!.token);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'short-etcd', 'steady-etcd', '--wait=false']);
    await poll('pods deleted', 40_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).trim() === '' ? true : undefined));
    await poll('klet removed the pods and their log dirs', 40_000, async () => (logDirsLeft(NS, ['short-etcd', 'steady-etcd']).length === 0 ? true : undefined));
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 300_000);

  it("admission counts the static pods' requests: a static pod holding most of the CPU makes a later API pod fail OutOfcpu", async () => {
    await ensureNamespace();
    const cpus = (await import('node:os')).cpus().length;
    const held = cpus * 1000 - 100;
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'static-cpu-'));
    fs.writeFileSync(
      path.join(dir, 'hog.yaml'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'hog', namespace: 'kube-system' },
        spec: {
          priorityClassName: 'system-node-critical',
          containers: [{ name: 'main', image: 'localhost/klet/busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"], resources: { requests: { cpu: `${held}m` } } }],
        },
      }),
    );
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    await poll('static pod hog Running (its mirror pod)', 90_000, async () =>
      (await cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', 'kube-system', `hog-${NODE}`])).status.phase === 'Running' ? true : undefined,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    const small = JSON.parse(podYaml('small')) as { spec: { containers: Array<Record<string, unknown>> } };
    small.spec.containers[0]!.resources = { requests: { cpu: '200m' } };
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(small) });
    const p = await poll('small Failed', 60_000, async () => {
      const pod = await cluster.kubectlJson<ApiPod & { status: { reason?: string; message?: string } }>(['get', 'pod', '-n', NS, 'small']);
      return pod.status.phase === 'Failed' ? pod : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    expect(p.status.reason).toBe('OutOfcpu');
    expect(p.status.message).toBe(`Pod was rejected: Node didn't have enough resource: cpu, requested: 200, used: ${held}, capacity: ${cpus * 1000}`);
    // The rejection is also an event on the pod, as the kubelet records it.
    const events = await poll('OutOfcpu event', 30_000, async () => {
      const evs = (await cluster.kubectlJson<{ items: Array<{ reason: string; type: string; message: string }> }>(['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=small'])).items;
      return evs.some((e) => e.reason === 'OutOfcpu') ? evs : undefined;
    });
    expect(events.find((e) => e.reason === 'OutOfcpu')).toMatchObject({ type: 'Warning', message: p.status.message!.replace('Pod was rejected: ', '') });
    // klet explain tells why, from the running sync (the pod has no record: admission stopped it before any).
    const why = await runKletJson<{ status: string; phase: string; reason: string; summary: string; next: { sentence: string }; decision: { from: string } }>([
      'explain', `${NS}/small`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json',
    ]);
    expect(why.result.code, explain(why.result)).toBe(0);
    expect(why.json).toMatchObject({ status: 'OutOfcpu', phase: 'Failed', reason: 'OutOfcpu', decision: { from: 'sync' } });
    expect(why.json.summary).toBe(`The pod was rejected at admission (OutOfcpu): ${p.status.message}. It never runs: its phase is Failed.`);
    expect(why.json.next.sentence).toMatch(/^Nothing: klet never runs a rejected pod\./);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'small', '--wait=false']);
    fs.rmSync(path.join(dir, 'hog.yaml'));
    await poll('pods gone', 60_000, async () =>
      (await cluster.kubectl(['get', 'pods', '-A', '-o', 'name'])).match(/small|hog/) ? undefined : true,
    );
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 240_000);

  it('admission: a pod that does not fit is Failed with OutOfcpu, one whose nodeSelector does not match with NodeAffinity; neither runs', async () => {
    await ensureNamespace();
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    const big = JSON.parse(podYaml('too-big')) as { spec: { containers: Array<Record<string, unknown>>; nodeSelector?: Record<string, string> } };
    big.spec.containers[0]!.resources = { requests: { cpu: '1000' } };
    const picky = JSON.parse(podYaml('picky')) as typeof big;
    picky.spec.nodeSelector = { disktype: 'ssd' };
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(big) });
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(picky) });
    const failed = async (name: string) =>
      poll(`${name} Failed`, 60_000, async () => {
        const p = await cluster.kubectlJson<ApiPod & { status: { reason?: string; message?: string } }>(['get', 'pod', '-n', NS, name]);
        return p.status.phase === 'Failed' ? p : undefined;
      }).catch((err: Error) => {
        throw new Error(`${err.message}\n${sync.tail()}`);
      });
    const cpus = (await import('node:os')).cpus().length;
    const b = await failed('too-big');
    expect(b.status.reason).toBe('OutOfcpu');
    expect(b.status.message).toBe(`Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000, used: 0, capacity: ${cpus * 1000}`);
    const p = await failed('picky');
    expect(p.status.reason).toBe('NodeAffinity');
    expect(p.status.message).toBe("Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector");
    const table = await cluster.kubectl(['get', 'pods', '-n', NS, '--no-headers']);
    expect(table).toMatch(/^too-big\s+0\/1\s+OutOfcpu\s/m);
    // Nothing of them ran.
    const { json: local } = await runKletJson<{ items: ApiPod[] }>(['status', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
    expect(local.items.map((i) => i.metadata.uid)).not.toContain(b.metadata.uid);
    expect(local.items.map((i) => i.metadata.uid)).not.toContain(p.metadata.uid);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'too-big', 'picky', '--wait=false']);
    await poll('rejected pods deleted', 30_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).trim() === '' ? true : undefined));
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 180_000);
});
