/**
 * The kubelet server's certificate from the API server (klet sync
 * --rotate-server-certificates, the kubelet's serverTLSBootstrap) against the
 * real kube-apiserver and kube-controller-manager, whose certificates here
 * last 3 minutes (--cluster-signing-duration; the signer backdates notBefore
 * by 5 minutes, so the 70–90 % deadline falls 36–132 s after issue): the node
 * asks for a kubernetes.io/kubelet-serving certificate for its addresses,
 * serves no TLS until `kubectl certificate approve`, then serves the issued
 * certificate (openssl s_client sees the cluster CA as issuer and the SANs),
 * and renews it, new connections getting the new one without a restart while
 * an open one keeps going.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostIPs } from '../../src/lib/node/addresses.js';
import { freePort, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { poll } from '../helpers/poll.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { startSync } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';

const NODE = 'klet-serving-node';
let cluster: TestCluster;
let rt: TestRuntime;
const nodeIP = hostIPs()[0] ?? '127.0.0.1';

/** What `openssl s_client -connect 127.0.0.1:PORT` gets: the server's certificate, or the failed handshake's output. */
function sClient(port: number): Promise<{ cert?: X509Certificate; output: string }> {
  return new Promise((resolve) => {
    const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${port}`], { encoding: 'utf8', timeout: 10_000 }, (_err, stdout, stderr) => {
      const pem = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(stdout)?.[0];
      resolve({ ...(pem ? { cert: new X509Certificate(pem) } : {}), output: stdout + stderr });
    });
    child.stdin?.end();
  });
}

/** GET a followed log straight from the kubelet server (bearer token): the text so far, the server's certificate serial. Rejects unless 200. */
function followLog(port: number, urlPath: string, token: string): Promise<{ serial: string; text(): string; ended(): boolean; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path: urlPath, headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`GET ${urlPath}: ${res.statusCode}`));
      }
      let text = '';
      let ended = false;
      res.on('data', (b: Buffer) => (text += b.toString()));
      res.once('close', () => (ended = true));
      const serial = (res.socket as tls.TLSSocket).getPeerX509Certificate()?.serialNumber ?? '';
      resolve({ serial, text: () => text, ended: () => ended, close: () => req.destroy() });
    });
    req.once('error', reject);
  });
}

interface Csr {
  metadata: { name: string; creationTimestamp: string };
  spec: { signerName: string; username: string; usages: string[]; request: string };
  status?: { conditions?: Array<{ type: string }>; certificate?: string };
}

async function servingCsrs(): Promise<Csr[]> {
  const list = await cluster.kubectlJson<{ items: Csr[] }>(['get', 'csr']);
  return list.items.filter((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving' && c.spec.username === `system:node:${NODE}`);
}

/** The CSR asked for that no one approved yet. */
function pendingCsr(what: string, timeoutMs: number): Promise<Csr> {
  return poll(what, timeoutMs, async () => (await servingCsrs()).find((c) => !(c.status?.conditions ?? []).some((x) => x.type === 'Approved')));
}

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE], bootstrap: true, signingDuration: '3m' })]);
}, 240_000);

afterAll(async () => {
  await teardown(rt, cluster);
}, 60_000);

describe('serving certificate (--rotate-server-certificates)', () => {
  it('asks for a kubelet-serving certificate, serves nothing until it is approved, then serves and renews it without a restart', async () => {
    const port = await freePort();
    // A static pod that prints a line a second: its log, followed through the kubelet server, is the open connection.
    const manifestDir = fs.mkdtempSync(path.join(cluster.dir, 'manifests-'));
    fs.writeFileSync(
      path.join(manifestDir, 'ticker.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'ticker', namespace: 'default' },
        spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/klet/busybox:1.36', command: ['sh', '-c', 'while true; do date +%s; sleep 1; done'] }] },
      }),
    );
    const sync = await startSync({
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      nodeName: NODE,
      manifestDir,
      args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--port', String(port), '--node-ip', nodeIP, '--rotate-server-certificates'],
      readyTimeoutMs: 60_000,
    });

    // The request: the node's subject and addresses, the kubelet's usages for an ECDSA key.
    const first = await pendingCsr('a kubelet-serving CSR', 60_000);
    expect(first.spec.usages).toEqual(['digital signature', 'server auth']);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-serving-'));
    fs.writeFileSync(path.join(dir, 'r.csr'), Buffer.from(first.spec.request, 'base64'));
    const req = await new Promise<string>((resolve, reject) =>
      execFile('openssl', ['req', '-in', path.join(dir, 'r.csr'), '-noout', '-text', '-nameopt', 'RFC2253'], { encoding: 'utf8' }, (err, out) => (err ? reject(err) : resolve(out))),
    );
    fs.rmSync(dir, { recursive: true, force: true });
    expect(req).toContain(`Subject: CN=system:node:${NODE},O=system:nodes`);
    expect(req).toContain(`DNS:${os.hostname().toLowerCase()}`);
    expect(req).toContain(`IP Address:${nodeIP}`);

    // Not approved (kube-controller-manager never approves kubelet-serving): the server listens but no handshake succeeds.
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await servingCsrs()).every((c) => !c.status?.certificate)).toBe(true);
    const before = await sClient(port);
    expect(before.cert, before.output).toBeUndefined();
    expect(before.output).toMatch(/handshake failure|alert/);
    expect(sync.running).toBe(true);

    await cluster.kubectl(['certificate', 'approve', first.metadata.name]);
    await sync.waitForStderr(/serving certificate issued: /, 60_000);
    const served = await sClient(port);
    expect(served.cert, served.output).toBeDefined();
    const ca = new X509Certificate(fs.readFileSync(cluster.caFile));
    expect(served.cert!.checkIssued(ca)).toBe(true);
    expect(served.cert!.verify(ca.publicKey)).toBe(true);
    expect(served.cert!.subject.split('\n').sort()).toEqual([`CN=system:node:${NODE}`, 'O=system:nodes']);
    expect(served.cert!.subjectAltName).toContain(`DNS:${os.hostname().toLowerCase()}`);
    expect(served.cert!.subjectAltName).toContain(`IP Address:${nodeIP}`);
    // Stored as the kubelet stores it: kubelet-server-<time>.pem (0600) behind kubelet-server-current.pem.
    const link = path.join(rt.rootDir, 'pki', 'kubelet-server-current.pem');
    const pairFile = fs.readlinkSync(link);
    expect(path.basename(pairFile)).toMatch(/^kubelet-server-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/);
    expect(fs.statSync(pairFile).mode & 0o777).toBe(0o600);
    expect(new X509Certificate(fs.readFileSync(pairFile)).serialNumber).toBe(served.cert!.serialNumber);
    expect(sync.stderr).not.toContain('PRIVATE KEY');

    // A connection opened now (kubectl logs -f through the kubelet server) keeps going after the rotation.
    const follow = await poll('the static pod’s log followed', 60_000, () => followLog(port, `/containerLogs/default/ticker-${NODE}/main?follow=true`, cluster.adminToken));
    expect(follow.serial).toBe(served.cert!.serialNumber);

    // Renewed at 70–90 % of its lifetime: a new request, approved, served to new connections.
    const second = await pendingCsr('the renewal CSR', 170_000);
    expect(second.metadata.name).not.toBe(first.metadata.name);
    await cluster.kubectl(['certificate', 'approve', second.metadata.name]);
    await poll('the renewed certificate served', 60_000, async () => {
      const now = await sClient(port);
      return now.cert && now.cert.serialNumber !== served.cert!.serialNumber ? true : undefined;
    });
    expect(fs.readlinkSync(link)).not.toBe(pairFile);
    const seen = follow.text().length;
    await poll('more log lines on the connection opened before the rotation', 15_000, () => (follow.text().length > seen && !follow.ended() ? true : undefined));
    follow.close();
    expect(sync.running).toBe(true);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 420_000);
});
