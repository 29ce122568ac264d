/**
 * `klet join` and the TLS bootstrap against a real kube-apiserver and a real
 * kube-controller-manager (CSR signing and approving, the bootstrap signer
 * and the token cleaner) set up as kubeadm init leaves a cluster for token
 * joins: from a bootstrap token to a Ready node with its own client
 * certificate; wrong CA hashes, bad or expired tokens and an unreachable
 * server are one-line errors; the token's secret is written nowhere else than
 * bootstrap-kubelet.conf.
 */
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { poll } from '../helpers/poll.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureNamespace, freePort, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { KLET_BIN, PROJECT_ROOT, cleanEnv, explain, nonEmptyLines, runKlet } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, startSync } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';

let cluster: TestCluster;
let rt: TestRuntime;
let token: string;
let hash: string;
let server: string;

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ bootstrap: true })]);
  token = cluster.bootstrap!.token;
  hash = cluster.bootstrap!.caCertHash;
  server = cluster.server.replace(/^https:\/\//, '');
}, 240_000);

afterAll(async () => {
  await teardown(rt, cluster);
}, 60_000);

afterEach(async () => {
  await killAllSyncs();
});

/** Files under `dir` (klet's own: not the test runtime's containerd dir) whose content holds `text`. */
function filesHolding(dir: string, text: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (p !== path.join(rt.rootDir, 'containerd')) walk(p);
      } else if (e.isFile() && fs.statSync(p).size < 10_000_000 && fs.readFileSync(p).includes(text)) {
        found.push(p);
      }
    }
  };
  walk(dir);
  return found;
}

async function nodeReady(name: string): Promise<void> {
  await poll(`node ${name} Ready`, 60_000, async () => {
    const node = await cluster.kubectlJson<{ status: { conditions?: Array<{ type: string; status: string }> } }>(['get', 'node', name]);
    return node.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
  });
}

/** The node's stored pair: 0600, behind the kubelet-client-current.pem link, a certificate for CN system:node:<name> issued by the cluster CA. */
function checkPair(rootDir: string, name: string): void {
  const link = path.join(rootDir, 'pki', 'kubelet-client-current.pem');
  expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
  const target = fs.readlinkSync(link);
  expect(path.basename(target)).toMatch(/^kubelet-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem$/);
  expect(fs.statSync(target).mode & 0o777).toBe(0o600);
  const pem = fs.readFileSync(target, 'utf8');
  expect(pem).toMatch(/-----BEGIN EC PRIVATE KEY-----/);
  const cert = new X509Certificate(pem);
  expect(cert.subject.split('\n').sort()).toEqual([`CN=system:node:${name}`, 'O=system:nodes']);
  expect(cert.verify(new X509Certificate(fs.readFileSync(cluster.caFile)).publicKey)).toBe(true);
  expect(fs.existsSync(path.join(rootDir, 'pki', 'kubelet-client.key.tmp'))).toBe(false);
  const kubeconfig = fs.readFileSync(path.join(rootDir, 'kubelet.conf'), 'utf8');
  expect(kubeconfig).toContain(`client-certificate: ${link}`);
  expect(kubeconfig).toContain(`client-key: ${link}`);
  expect(fs.statSync(path.join(rootDir, 'kubelet.conf')).mode & 0o777).toBe(0o600);
  expect(fs.statSync(path.join(rootDir, 'bootstrap-kubelet.conf')).mode & 0o777).toBe(0o600);
}

describe('klet join', () => {
  it('takes a bare node to a Ready one from a bootstrap token: discovery, TLS bootstrap, then the sync', async () => {
    const NODE = 'klet-join-node';
    const port = await freePort();
    const sync = await startSync({
      command: ['join', server],
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      nodeName: NODE,
      manifestDir: fs.mkdtempSync(path.join(cluster.dir, 'manifests-')),
      args: ['--token', token, '--discovery-token-ca-cert-hash', hash, '--port', String(port)],
      readyTimeoutMs: 90_000,
    });
    await nodeReady(NODE);
    checkPair(rt.rootDir, NODE);
    // One progress line for the wait, then the certificate.
    expect(sync.stderr.match(/waiting for certificate signing request node-csr-[\w-]+ to be approved and issued/g)).toHaveLength(1);
    const csrName = /node-csr-[\w-]+/.exec(sync.stderr)![0];
    const csr = await cluster.kubectlJson<{ spec: { username: string; signerName: string; usages: string[] }; status: { conditions: Array<{ type: string; reason: string }> } }>(['get', 'csr', csrName]);
    expect(csr.spec).toMatchObject({ signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'client auth'] });
    expect(csr.spec.username).toBe(`system:bootstrap:${token.split('.')[0]}`);
    expect(csr.status.conditions[0]).toMatchObject({ type: 'Approved', reason: 'AutoApproved' });
    // The node is its own certificate's identity, not the token's.
    const node = await cluster.kubectlJson<{ metadata: { name: string } }>(['get', 'node', NODE]);
    expect(node.metadata.name).toBe(NODE);
    // As kubeadm join: the cluster's CA is written to pki/ca.crt and the kubelet server takes client certificates
    // against it, so kubectl logs reaches the joined node (the API server's kubelet client certificate).
    expect(fs.readFileSync(path.join(rt.rootDir, 'pki', 'ca.crt'), 'utf8')).toBe(fs.readFileSync(cluster.caFile, 'utf8'));
    await ensureNamespace(cluster, 'joined');
    await cluster.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hello', namespace: 'joined' }, spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: 'localhost/klet/busybox:1.36', command: ['sh', '-c', 'echo hello-from-joined-node; sleep 3600'] }] } }),
    });
    const logs = await (async () => {
      const deadline = Date.now() + 90_000;
      let last = '';
      while (Date.now() < deadline) {
        last = await cluster.kubectl(['logs', '-n', 'joined', 'hello']).catch((e: Error) => e.message);
        if (last.includes('hello-from-joined-node')) return last;
        await new Promise((r) => setTimeout(r, 1000));
      }
      return last;
    })();
    expect(logs, sync.tail()).toContain('hello-from-joined-node');
    await cluster.kubectl(['delete', 'pod', '-n', 'joined', 'hello', '--wait=true', '--timeout=60s']);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    const secret = token.split('.')[1]!;
    expect(sync.stderr).not.toContain(secret);
    expect(sync.stdout).not.toContain(secret);
    expect(filesHolding(rt.rootDir, secret)).toEqual([path.join(rt.rootDir, 'bootstrap-kubelet.conf')]);
  }, 180_000);

  it('--no-sync writes the files and stops; klet sync --kubeconfig <root-dir>/kubelet.conf then needs no token', async () => {
    const NODE = 'klet-join-nosync';
    const rootDir = fs.mkdtempSync(path.join(cluster.dir, 'root-'));
    const r = await runKlet(['join', server, '--token', token, '--discovery-token-ca-cert-hash', hash, '--no-sync', '--root-dir', rootDir, '--node-name', NODE], { timeoutMs: 60_000 });
    expect(r.code, explain(r)).toBe(0);
    expect(r.stderr).toMatch(/client certificate .*kubelet-client-[\d-]+\.pem issued \(node-csr-/);
    checkPair(rootDir, NODE);
    const secret = token.split('.')[1]!;
    expect(r.stdout + r.stderr).not.toContain(secret);
    expect(filesHolding(rootDir, secret)).toEqual([path.join(rootDir, 'bootstrap-kubelet.conf')]);
    // The token is gone; the node's certificate is all the sync needs.
    fs.rmSync(path.join(rootDir, 'bootstrap-kubelet.conf'));
    const sync = await startSync({
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      nodeName: NODE,
      manifestDir: fs.mkdtempSync(path.join(cluster.dir, 'manifests-')),
      args: ['--kubeconfig', path.join(rootDir, 'kubelet.conf')],
    });
    await nodeReady(NODE);
    expect((await sync.stop()).code, sync.tail()).toBe(0);
  }, 180_000);

  it('klet sync --bootstrap-kubeconfig bootstraps a missing --kubeconfig, and leaves a valid one alone', async () => {
    const NODE = 'klet-bootstrap-sync';
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'bootstrap-'));
    const bootstrap = path.join(dir, 'bootstrap.conf');
    await cluster.writeKubeconfig(bootstrap, { token });
    const kubeconfig = path.join(dir, 'kubelet.conf');
    const opts = {
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      nodeName: NODE,
      manifestDir: fs.mkdtempSync(path.join(cluster.dir, 'manifests-')),
      args: ['--bootstrap-kubeconfig', bootstrap, '--kubeconfig', kubeconfig],
      readyTimeoutMs: 90_000,
    };
    let sync = await startSync(opts);
    await nodeReady(NODE);
    expect(sync.stderr).toMatch(/klet sync: waiting for certificate signing request node-csr-/);
    expect(fs.readFileSync(kubeconfig, 'utf8')).toContain(`client-certificate: ${path.join(rt.rootDir, 'pki', 'kubelet-client-current.pem')}`);
    const pair = fs.readlinkSync(path.join(rt.rootDir, 'pki', 'kubelet-client-current.pem'));
    expect((await sync.stop()).code, sync.tail()).toBe(0);
    // Again: the kubeconfig's certificate is valid, no new request.
    sync = await startSync(opts);
    expect(sync.stderr).not.toMatch(/certificate signing request/);
    expect(fs.readlinkSync(path.join(rt.rootDir, 'pki', 'kubelet-client-current.pem'))).toBe(pair);
    expect((await sync.stop()).code, sync.tail()).toBe(0);
  }, 180_000);

  it('waits for a request no controller approves: kubectl certificate deny is a one-line error naming it, approve completes the join', async () => {
    // Tokens of this group may ask for certificates (system:node-bootstrapper) but are not auto-approved.
    const group = 'system:bootstrappers:klet:manual';
    await cluster.kubectl(['create', 'clusterrolebinding', 'klet-manual-bootstrap', '--clusterrole=system:node-bootstrapper', `--group=${group}`]);
    const manual = await cluster.createBootstrapToken({ group });
    await poll('cluster-info signed for the new token', 30_000, async () => {
      const cm = await cluster.kubectlJson<{ data: Record<string, string> }>(['get', 'configmap', '-n', 'kube-public', 'cluster-info']);
      return cm.data[`jws-kubeconfig-${manual.split('.')[0]}`] ? true : undefined;
    });
    const joinOnce = async (node: string, answer: 'deny' | 'approve') => {
      const rootDir = fs.mkdtempSync(path.join(cluster.dir, 'manual-'));
      const child = spawn(process.execPath, [KLET_BIN, 'join', server, '--token', manual, '--discovery-token-ca-cert-hash', hash, '--no-sync', '--root-dir', rootDir, '--node-name', node], {
        cwd: PROJECT_ROOT,
        env: cleanEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      let stdout = '';
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
      const name = await poll('the wait line', 30_000, async () => /waiting for certificate signing request (node-csr-[\w-]+) to be approved and issued/.exec(stderr)?.[1]);
      await cluster.kubectl(['certificate', answer, name]);
      const code = await exited;
      expect(stdout + stderr).not.toContain(manual.split('.')[1]!);
      return { code, stderr, name, rootDir };
    };
    const denied = await joinOnce('klet-join-denied', 'deny');
    expect(denied.code, denied.stderr).toBe(1);
    expect(nonEmptyLines(denied.stderr).filter((l) => l.startsWith('error:'))).toEqual([`error: certificate signing request ${denied.name} is denied, reason: KubectlDeny, message: This CSR was denied by kubectl certificate deny.`]);
    expect(fs.existsSync(path.join(denied.rootDir, 'kubelet.conf'))).toBe(false);
    const approved = await joinOnce('klet-join-approved', 'approve');
    expect(approved.code, approved.stderr).toBe(0);
    checkPair(approved.rootDir, 'klet-join-approved');
  }, 120_000);

  describe('bad input is a one-line error naming it, with nothing written and the secret never shown', () => {
    const joinArgs = (rootDir: string, ...more: string[]) => ['join', '--root-dir', rootDir, '--node-name', 'klet-join-bad', '--no-sync', ...more];
    const check = async (args: string[], rootDir: string, line: RegExp, secret: string) => {
      const r = await runKlet(args, { timeoutMs: 60_000 });
      expect(r.code, explain(r)).not.toBe(0);
      const lines = nonEmptyLines(r.stderr);
      expect(lines, explain(r)).toHaveLength(1);
      expect(lines[0]).toMatch(line);
      expect(r.stdout + r.stderr).not.toContain(secret);
      expect(fs.readdirSync(rootDir)).toEqual([]);
    };

    it('a wrong CA hash', async () => {
      const rootDir = fs.mkdtempSync(path.join(cluster.dir, 'bad-'));
      const wrong = `sha256:${'ab'.repeat(32)}`;
      await check(
        [...joinArgs(rootDir, server, '--token', token, '--discovery-token-ca-cert-hash', wrong)],
        rootDir,
        new RegExp(`^error: --discovery-token-ca-cert-hash the cluster CA of ${cluster.server.replace(/\./g, '\\.')} \\(public key ${hash}\\) is not pinned: it does not match ${wrong}$`),
        token.split('.')[1]!,
      );
    });

    it('a token whose secret is wrong, an unknown token, an expired one', async () => {
      const rootDir = fs.mkdtempSync(path.join(cluster.dir, 'bad-'));
      const [id] = token.split('.') as [string, string];
      const badSecret = 'zzzzzzzzzzzzzzzz';
      await check(
        joinArgs(rootDir, server, '--token', `${id}.${badSecret}`, '--discovery-token-ca-cert-hash', hash),
        rootDir,
        new RegExp(`^error: --token the cluster-info ConfigMap of .* is not signed with token "${id}" \\(its JWS signature does not verify\\)`),
        badSecret,
      );
      await check(
        joinArgs(rootDir, server, '--token', 'unknwn.0123456789abcdef', '--discovery-token-ca-cert-hash', hash, '--discovery-timeout', '2s'),
        rootDir,
        /^error: --token token id "unknwn" is invalid for this cluster or it has expired: the cluster-info ConfigMap of https:\/\/127\.0\.0\.1:\d+ holds no signature for it$/,
        '0123456789abcdef',
      );
      const expired = await cluster.createBootstrapToken({ expired: true });
      await check(
        joinArgs(rootDir, server, '--token', expired, '--discovery-token-ca-cert-hash', hash, '--discovery-timeout', '6s'),
        rootDir,
        new RegExp(`^error: --token token id "${expired.split('.')[0]}" is invalid for this cluster or it has expired`),
        expired.split('.')[1]!,
      );
    }, 60_000);

    it('an unreachable server', async () => {
      const rootDir = fs.mkdtempSync(path.join(cluster.dir, 'bad-'));
      const port = await freePort();
      await check(
        joinArgs(rootDir, `127.0.0.1:${port}`, '--token', token, '--discovery-token-ca-cert-hash', hash, '--discovery-timeout', '2s'),
        rootDir,
        new RegExp(`^error: API server https://127\\.0\\.0\\.1:${port}: reading the cluster-info ConfigMap of kube-public: connection refused$`),
        token.split('.')[1]!,
      );
    });
  });
});
