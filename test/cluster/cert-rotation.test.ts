/**
 * Client certificate rotation of a joined node against the real
 * kube-controller-manager, whose certificates here last 3 minutes
 * (--cluster-signing-duration; the signer backdates notBefore by 5 minutes,
 * so the kubelet's 70–90 % deadline falls 36–132 s after issue): the
 * certificate is renewed with the node's own identity (selfnodeclient
 * auto-approval) while the sync runs, and after the first certificate has
 * expired the node still renews its Lease and runs a pod created then — the
 * API connections and the pod watch moved to the new certificate without a
 * restart.
 */
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { poll } from '../helpers/poll.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNamespace, freePort, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { startSync } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';

const NODE = 'klet-rotating-node';
const NS = 'rotation';
let cluster: TestCluster;
let rt: TestRuntime;

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ bootstrap: true, signingDuration: '3m' })]);
  await ensureNamespace(cluster, NS);
}, 240_000);

afterAll(async () => {
  await teardown(rt, cluster);
}, 60_000);

describe('client certificate rotation', () => {
  it('renews the certificate with the node identity and keeps the node and its pod watch working past the first one’s expiry', async () => {
    const sync = await startSync({
      command: ['join', cluster.server.replace(/^https:\/\//, '')],
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      nodeName: NODE,
      manifestDir: fs.mkdtempSync(path.join(cluster.dir, 'manifests-')),
      args: ['--token', cluster.bootstrap!.token, '--discovery-token-ca-cert-hash', cluster.bootstrap!.caCertHash, '--port', String(await freePort())],
      readyTimeoutMs: 90_000,
    });
    const link = path.join(rt.rootDir, 'pki', 'kubelet-client-current.pem');
    const first = fs.readlinkSync(link);
    const firstCert = new X509Certificate(fs.readFileSync(first));
    const firstExpiry = Date.parse(firstCert.validTo);
    expect(firstExpiry - Date.now()).toBeLessThan(200_000);
    const kubeconfig = fs.readFileSync(path.join(rt.rootDir, 'kubelet.conf'), 'utf8');

    const line = await sync.waitForStderr(/client certificate rotated: /, 170_000);
    const csrName = /\((csr-\w+)\)/.exec(line)![1]!;
    const second = fs.readlinkSync(link);
    expect(second).not.toBe(first);
    expect(fs.statSync(second).mode & 0o777).toBe(0o600);
    const cert = new X509Certificate(fs.readFileSync(second));
    expect(cert.subject.split('\n').sort()).toEqual([`CN=system:node:${NODE}`, 'O=system:nodes']);
    expect(cert.publicKey.export({ type: 'spki', format: 'der' })).not.toEqual(firstCert.publicKey.export({ type: 'spki', format: 'der' }));
    // Asked with the node's own certificate, auto-approved as a renewal.
    const csr = await cluster.kubectlJson<{ spec: { username: string; signerName: string; usages: string[] }; status: { conditions: Array<{ type: string; reason: string }> } }>(['get', 'csr', csrName]);
    expect(csr.spec).toMatchObject({ username: `system:node:${NODE}`, signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'client auth'] });
    expect(csr.status.conditions[0]).toMatchObject({ type: 'Approved', reason: 'AutoApproved' });
    // The kubeconfig still names the link.
    expect(fs.readFileSync(path.join(rt.rootDir, 'kubelet.conf'), 'utf8')).toBe(kubeconfig);

    // Past the first certificate's end: the lease is renewed, and a pod created now is run (the watch works).
    await new Promise((r) => setTimeout(r, Math.max(0, firstExpiry + 5_000 - Date.now())));
    await cluster.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'after-rotation', namespace: NS },
        spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/klet/busybox:1.36', command: ['sleep', '3600'] }] },
      }),
    });
    await poll('pod after-rotation Running', 60_000, async () => {
      const p = await cluster.kubectlJson<{ status: { phase?: string } }>(['get', 'pod', '-n', NS, 'after-rotation']);
      return p.status.phase === 'Running' ? true : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    await poll('lease renewed after the first certificate expired', 30_000, async () => {
      const lease = await cluster.kubectlJson<{ spec: { renewTime: string } }>(['get', 'lease', '-n', 'kube-node-lease', NODE]);
      return Date.parse(lease.spec.renewTime) > firstExpiry ? true : undefined;
    });
    expect(sync.running).toBe(true);
    expect(sync.stderr).not.toMatch(/401 Unauthorized/);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'after-rotation', '--wait=true', '--timeout=60s']);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 420_000);
});
