/**
 * The first use case of `runonce`: bootstrapping a control plane from
 * kubeadm-shaped static pods. examples/control-plane/etcd.yaml (hostNetwork,
 * `host: 127.0.0.1` probes, hostPath DirectoryOrCreate, priorityClassName
 * system-node-critical, seccomp RuntimeDefault) runs Debian's real etcd
 * binary (package etcd-server) from a locally built image, through
 * `runonce` and then `sync`, reaching Running and serving on its loopback
 * port; its data survives in the hostPath between the two.
 *
 * Probes are not evaluated by klet yet: this asserts Running and the port
 * serving, not readiness.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { buildOciImage, hostBinaryImageSpec } from '../../src/lib/runtime/oci-image.js';
import { PROJECT_ROOT, explain, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { eventually, killAllSyncs, startSync } from '../helpers/sync.js';

const NODE = 'cpnode';
const EXAMPLE = path.join(PROJECT_ROOT, 'examples', 'control-plane', 'etcd.yaml');
const EXAMPLE_DATA_DIR = '/var/lib/klet-control-plane/etcd';
const CLIENT = 'http://127.0.0.1:22379';

let rt: TestRuntime;
let cri: CriClient;
let tmp: string;
let manifestDir: string;
let dataDir: string;

function klet(args: string[], timeoutMs = 120_000): Promise<CliResult> {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs });
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

async function etcdPut(key: string, value: string): Promise<void> {
  const res = await fetch(`${CLIENT}/v3/kv/put`, { method: 'POST', body: JSON.stringify({ key: b64(key), value: b64(value) }) });
  expect(res.status).toBe(200);
}

async function etcdGet(key: string): Promise<string | null> {
  const res = await fetch(`${CLIENT}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: b64(key) }) });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { kvs?: { value: string }[] };
  const v = body.kvs?.[0]?.value;
  return v === undefined ? null : Buffer.from(v, 'base64').toString();
}

/** etcd answers /health with {"health":"true"} on its loopback client port. */
async function expectServing(): Promise<void> {
  const body = await eventually(async () => {
    const res = await fetch(`${CLIENT}/health`);
    const json = (await res.json()) as { health?: string };
    if (json.health !== 'true') throw new Error(`etcd /health: ${JSON.stringify(json)}`);
    return json;
  }, 60_000, 500);
  expect(body.health).toBe('true');
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-cp-'));
  // The real etcd from the etcd-server package, in a locally built image.
  const image = await buildOciImage({
    ...(await hostBinaryImageSpec({ name: 'localhost/klet/etcd:3.4.23', binary: '/usr/bin/etcd' })),
    outFile: path.join(tmp, 'etcd.tar'),
  });
  const imp = await klet(['images', 'import', image.file]);
  expect(imp.code, explain(imp)).toBe(0);
  // The example as shipped, with only its data dir moved under this test's temp dir.
  const text = fs.readFileSync(EXAMPLE, 'utf8');
  expect(text).toContain(EXAMPLE_DATA_DIR);
  dataDir = path.join(tmp, 'etcd-data');
  manifestDir = path.join(tmp, 'manifests');
  fs.mkdirSync(manifestDir);
  fs.writeFileSync(path.join(manifestDir, 'etcd.yaml'), text.replace(EXAMPLE_DATA_DIR, dataDir));
}, 180_000);

afterAll(async () => {
  await killAllSyncs();
  if (rt) await klet(['delete', '--all', '--force']).catch(() => undefined);
  cri?.close();
  await rt?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
}, 120_000);

describe('kubeadm-shaped control plane', () => {
  it('etcd runs through runonce, then sync: Running, serving on 127.0.0.1:22379, data kept in its hostPath', async () => {
    expect(fs.existsSync(dataDir)).toBe(false);
    const r = await klet(['runonce', '--manifest-dir', manifestDir, '-o', 'json']);
    expect(r.code, explain(r)).toBe(0);
    const report = JSON.parse(r.stdout) as { pods: { name: string; phase: string; ok: boolean }[] };
    expect(report.pods.map((p) => [p.name, p.phase, p.ok])).toEqual([[`etcd-${NODE}`, 'Running', true]]);
    await expectServing();
    // DirectoryOrCreate made the data dir, and etcd writes into it.
    expect(fs.existsSync(path.join(dataDir, 'member'))).toBe(true);
    await etcdPut('/klet/test', 'from-runonce');

    const st = await klet(['status', `kube-system/etcd-${NODE}`, '-o', 'json']);
    expect(st.code, explain(st)).toBe(0);
    const pod = JSON.parse(st.stdout) as V1Pod;
    expect(pod.status?.phase).toBe('Running');
    expect(pod.spec?.hostNetwork).toBe(true);
    expect(pod.spec?.priorityClassName).toBe('system-node-critical');
    // On the host network the pod's IP is the node's.
    expect(pod.status?.podIP).toBe(pod.status?.hostIP);
    // kubeadm's probes (httpGet host 127.0.0.1 on the metrics port) pass against the real etcd.
    const probe = await klet(['probe', `kube-system/etcd-${NODE}`, '-o', 'json']);
    expect(probe.code, explain(probe)).toBe(0);
    const probed = JSON.parse(probe.stdout) as { results: { probe: string; result: string; detail: { statusCode: number } }[] };
    expect(probed.results.map((x) => [x.probe, x.result, x.detail.statusCode])).toEqual([
      ['Startup', 'success', 200],
      ['Liveness', 'success', 200],
    ]);

    // Removed and brought back by sync: same data.
    const del = await klet(['delete', '--all']);
    expect(del.code, explain(del)).toBe(0);
    await eventually(async () => {
      await expect(fetch(`${CLIENT}/health`)).rejects.toThrow();
    }, 30_000, 250);
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir });
    await expectServing();
    expect(await etcdGet('/klet/test')).toBe('from-runonce');
    const st2 = await klet(['status', `kube-system/etcd-${NODE}`, '-o', 'json']);
    expect((JSON.parse(st2.stdout) as V1Pod).status?.phase).toBe('Running');
    expect((await sync.stop()).code, sync.tail()).toBe(0);
    // sync leaves the pod running when it exits, as the kubelet does.
    await expectServing();
    const del2 = await klet(['delete', '--all']);
    expect(del2.code, explain(del2)).toBe(0);
  }, 300_000);
});
