/**
 * `klet sync --kubeconfig` against a real kube-apiserver: the sync loop
 * registers the node and keeps its Lease fresh beside the static pods, and
 * keeps running (retrying) while the API server cannot be reached.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { explain, nonEmptyLines, runKlet } from '../helpers/cli.js';
import { freePort, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, startSync } from '../helpers/sync.js';

const NODE = 'klet-sync-node';
let cluster: TestCluster;
let rt: TestRuntime;
let manifests: string;

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE] })]);
  manifests = fs.mkdtempSync(path.join(cluster.dir, 'manifests-'));
}, 240_000);
afterEach(async () => {
  await killAllSyncs();
});
afterAll(async () => {
  await Promise.allSettled([cluster?.stop(), rt?.stop()]);
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
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toContain(cluster.nodes[NODE]!.token);
  }, 120_000);

  it('keeps the sync loop running and retries while the API server cannot be reached', async () => {
    const kc = path.join(cluster.dir, 'closed.kubeconfig');
    await cluster.writeKubeconfig(kc, { token: cluster.nodes[NODE]!.token, server: `https://127.0.0.1:${await freePort()}` });
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: manifests, nodeName: NODE, args: ['--kubeconfig', kc] });
    await sync.waitForStderr(/warning: registering node klet-sync-node: API server https:\/\/127\.0\.0\.1:\d+: create node klet-sync-node: connection refused/, 20_000);
    // Still retrying a while later, and still serving.
    const first = sync.stderr.length;
    await sync.waitForStderr(/warning: registering node klet-sync-node: .*connection refused/, 20_000, first);
    expect(sync.running).toBe(true);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toContain(cluster.nodes[NODE]!.token);
  }, 90_000);

  it('a bad kubeconfig or registration flag is a one-line error at start', async () => {
    const base = ['sync', '--manifest-dir', manifests, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
    let r = await runKlet([...base, '--kubeconfig', path.join(cluster.dir, 'missing.yaml')]);
    expect(r.code, explain(r)).toBe(2);
    expect(nonEmptyLines(r.stderr)).toEqual([`error: kubeconfig ${path.join(cluster.dir, 'missing.yaml')}: no such file`]);
    r = await runKlet([...base, '--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--register-with-taints', 'x:Bad']);
    expect(r.code, explain(r)).toBe(2);
    expect(nonEmptyLines(r.stderr)).toEqual(['error: --register-with-taints: taint "x:Bad": effect "Bad" is not one of NoSchedule, PreferNoSchedule, NoExecute']);
  });
});
