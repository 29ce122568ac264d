/**
 * A real control plane for cluster tests: etcd (Debian's etcd-server) and
 * kube-apiserver (built by scripts/build-k8s.sh from test/cluster/go.mod)
 * on free loopback ports, under a temp dir, with the Node,RBAC authorizers
 * and the NodeRestriction admission plugin, a CA and serving certificate of
 * its own, service-account keys, and a token file holding one node identity
 * per requested node (system:node:<name>, group system:nodes) and an admin
 * identity (group system:masters) for kubectl. stop() ends both processes
 * and removes the dir.
 *
 * Cluster test files run only when this infrastructure exists (see
 * clusterInfraPresent and vitest.config.ts), and always in CI, which builds it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { X509Certificate, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const execFileP = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The Kubernetes version test/cluster/go.mod pins (v1.34.4). */
export function k8sVersion(): string {
  const mod = fs.readFileSync(path.join(ROOT, 'test', 'cluster', 'go.mod'), 'utf8');
  const m = /^require k8s\.io\/kubernetes (v\S+)/m.exec(mod);
  if (!m) throw new Error('test/cluster/go.mod: no "require k8s.io/kubernetes vX" line');
  return m[1]!;
}

/** Where scripts/build-k8s.sh puts kube-apiserver and kubelet. */
export function k8sBinDir(): string {
  return process.env.KLET_K8S_BIN_DIR ?? path.join(process.env.KLET_K8S_CACHE ?? '/var/cache/klet-k8s', k8sVersion());
}

function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => {
    try {
      fs.accessSync(path.join(d, cmd), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** kubectl built by scripts/build-k8s.sh (Debian 12 has no kubectl package), else one on PATH. */
export function kubectlBin(): string {
  const built = path.join(k8sBinDir(), 'kubectl');
  return fs.existsSync(built) ? built : 'kubectl';
}

/** What is missing for cluster tests ([] when they can run). */
export function missingClusterInfra(): string[] {
  const missing: string[] = [];
  const apiserver = path.join(k8sBinDir(), 'kube-apiserver');
  if (!fs.existsSync(apiserver)) missing.push(`${apiserver} (run scripts/build-k8s.sh)`);
  const controllerManager = path.join(k8sBinDir(), 'kube-controller-manager');
  if (!fs.existsSync(controllerManager)) missing.push(`${controllerManager} (run scripts/build-k8s.sh)`);
  if (!fs.existsSync(path.join(k8sBinDir(), 'kubectl')) && !onPath('kubectl')) missing.push(`${path.join(k8sBinDir(), 'kubectl')} (run scripts/build-k8s.sh)`);
  for (const cmd of ['etcd', 'openssl']) if (!onPath(cmd)) missing.push(`${cmd} (scripts/install-deps.sh)`);
  return missing;
}

export function clusterInfraPresent(): boolean {
  return missingClusterInfra().length === 0;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface NodeIdentity {
  name: string;
  token: string;
  /** A kubeconfig for this node (token auth, the cluster's CA). */
  kubeconfig: string;
}

export interface TestCluster {
  dir: string;
  /** https://127.0.0.1:PORT */
  server: string;
  caFile: string;
  /** A CA that did not sign the server's certificate (for wrong-CA tests). */
  otherCaFile: string;
  adminKubeconfig: string;
  nodes: Record<string, NodeIdentity>;
  /** A token of user "nobody", who may do nothing (403 tests). */
  nobodyToken: string;
  /** The admin's token (group system:masters). */
  adminToken: string;
  /** Run kubectl as the admin; rejects with stderr on a non-zero exit. */
  kubectl(args: string[], opts?: { kubeconfig?: string; input?: string }): Promise<string>;
  /** kubectl ... -o json, parsed. */
  kubectlJson<T = Record<string, unknown>>(args: string[], opts?: { kubeconfig?: string }): Promise<T>;
  /** With `audit`: the API server's audit log (one JSON line per request, metadata level). */
  auditLog: string | undefined;
  /** Stop etcd (SIGTERM, wait); its data dir stays. */
  stopEtcd(): Promise<void>;
  /** Start etcd again on the same ports and data dir, and wait until it is healthy. */
  startEtcd(): Promise<void>;
  /** Stop kube-apiserver (SIGTERM, wait); etcd keeps the state. */
  stopApiServer(): Promise<void>;
  /** Start kube-apiserver again on the same port and etcd, and wait for /readyz. */
  startApiServer(): Promise<void>;
  /**
   * With `bootstrap`: what kubeadm sets up for nodes that join with a token
   * (see startTestCluster): a bootstrap token (ID.SECRET) that may sign and
   * authenticate, and the pin of the cluster CA (sha256:<hex>).
   */
  bootstrap: { token: string; caCertHash: string; controllerManagerLog: string } | undefined;
  /** With `bootstrap`: make another bootstrap token Secret (`expired`: its expiration is past; `group`: its auth-extra-groups). */
  createBootstrapToken(o?: { expired?: boolean; group?: string }): Promise<string>;
  /** Write a kubeconfig (token auth) to `file`. */
  writeKubeconfig(file: string, o: { token: string; caFile?: string; server?: string; user?: string }): Promise<void>;
  stop(): Promise<void>;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await execFileP('openssl', args, { cwd });
}

/** A CA and a serving certificate for 127.0.0.1/localhost signed by it; a second, unrelated CA. */
async function makeCerts(dir: string): Promise<void> {
  const days = ['-days', '2'];
  await openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=klet-test-ca', ...days], dir);
  await openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-subj', '/CN=klet-other-ca', ...days], dir);
  await fsp.writeFile(
    path.join(dir, 'san.cnf'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n',
  );
  await openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'serving.key', '-out', 'serving.csr', '-subj', '/CN=kube-apiserver'], dir);
  await openssl(['x509', '-req', '-in', 'serving.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'serving.crt', '-extfile', 'san.cnf', ...days], dir);
  // The API server's client certificate towards kubelets (kubeadm's apiserver-kubelet-client), signed by the CA nodes trust.
  await openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'kubelet-client.key', '-out', 'kubelet-client.csr', '-subj', '/O=system:masters/CN=kube-apiserver-kubelet-client'], dir);
  await fsp.writeFile(path.join(dir, 'client.cnf'), 'extendedKeyUsage=clientAuth\n');
  await openssl(['x509', '-req', '-in', 'kubelet-client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'kubelet-client.crt', '-extfile', 'client.cnf', ...days], dir);
  await openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  await openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
}

function kubeconfigYaml(server: string, caFile: string, user: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority: ${caFile}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: test',
    '  context:',
    '    cluster: test',
    `    user: ${user}`,
    'current-context: test',
    '',
  ].join('\n');
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>, proc?: ChildProcess, logFile?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc && proc.exitCode !== null) {
      const tail = logFile ? (await fsp.readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n') : '';
      throw new Error(`${what}: the process exited with ${proc.exitCode}\n${tail}`);
    }
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  const tail = logFile ? (await fsp.readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n') : '';
  throw new Error(`${what}: not ready after ${timeoutMs} ms\n${tail}`);
}

function stopProcess(p: ChildProcess | undefined, timeoutMs = 20_000): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    p.kill('SIGTERM');
  });
}

/** A bootstrap token Secret as kubeadm token create makes it (kube-system/bootstrap-token-<id>). */
function bootstrapTokenSecret(id: string, secret: string, expiration?: Date, group = 'system:bootstrappers:kubeadm:default-node-token'): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
    type: 'bootstrap.kubernetes.io/token',
    stringData: {
      'token-id': id,
      'token-secret': secret,
      'usage-bootstrap-authentication': 'true',
      'usage-bootstrap-signing': 'true',
      'auth-extra-groups': group,
      ...(expiration ? { expiration: expiration.toISOString().replace(/\.\d+Z$/, 'Z') } : {}),
    },
  };
}

/** A random token part of `n` characters of [a-z0-9]. */
function tokenPart(n: number): string {
  const abc = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(n)].map((b) => abc[b % abc.length]).join('');
}

/**
 * What kubeadm init sets up for token joins (its bootstrap-token phase):
 * the RBAC of bootstrap tokens (create and auto-approve node CSRs; nodes renew
 * their own), anonymous read of kube-public/cluster-info, and cluster-info
 * itself (the bootstrapsigner controller adds the tokens' signatures).
 */
async function setUpTokenJoin(apply: (o: unknown) => Promise<unknown>, server: string, caFile: string): Promise<void> {
  const group = (name: string) => ({ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name });
  const crb = (name: string, role: string, subject: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [group(subject)],
  });
  await apply(crb('kubeadm:kubelet-bootstrap', 'system:node-bootstrapper', 'system:bootstrappers:kubeadm:default-node-token'));
  await apply(crb('kubeadm:node-autoapprove-bootstrap', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient', 'system:bootstrappers:kubeadm:default-node-token'));
  await apply(crb('kubeadm:node-autoapprove-certificate-rotation', 'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', 'system:nodes'));
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'kubeadm:bootstrap-signer-clusterinfo', namespace: 'kube-public' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['cluster-info'], verbs: ['get'] }],
  });
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'kubeadm:bootstrap-signer-clusterinfo', namespace: 'kube-public' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kubeadm:bootstrap-signer-clusterinfo' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'system:anonymous' }],
  });
  const kubeconfig = [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${fs.readFileSync(caFile).toString('base64')}`,
    `    server: ${server}`,
    '  name: ""',
    'contexts: null',
    'current-context: ""',
    'kind: Config',
    'preferences: {}',
    'users: null',
    '',
  ].join('\n');
  await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cluster-info', namespace: 'kube-public' }, data: { kubeconfig } });
}

/**
 * Options: `nodes` (token identities), `audit` (an audit log), `bootstrap`
 * (for token joins and the TLS bootstrap: the API server also takes client
 * certificates of the CA, bootstrap tokens and anonymous requests, and
 * kube-controller-manager runs its CSR signing and approving, bootstrap
 * signer and token cleaner controllers; see setUpTokenJoin), and
 * `signingDuration` (kube-controller-manager's --cluster-signing-duration:
 * how long the certificates it issues last), `apiServerArgs` (more
 * kube-apiserver flags; a later flag wins over the defaults).
 */
export async function startTestCluster(
  opts: {
    nodes?: string[];
    audit?: boolean;
    bootstrap?: boolean;
    signingDuration?: string;
    /** More kube-apiserver flags, made once the dir holds ca.crt/ca.key (e.g. a kubelet client certificate signed by it). */
    apiServerArgs?: (dir: string) => Promise<string[]>;
  } = {},
): Promise<TestCluster> {
  const missing = missingClusterInfra();
  if (missing.length > 0) throw new Error(`cluster tests need: ${missing.join(', ')}`);
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'klet-cluster-'));
  let etcd: ChildProcess | undefined;
  let apiserver: ChildProcess | undefined;
  let controllerManager: ChildProcess | undefined;
  try {
    await makeCerts(dir);
    const [clientPort, peerPort, securePort] = [await freePort(), await freePort(), await freePort()];
    const adminToken = randomBytes(16).toString('hex');
    const nodes: Record<string, NodeIdentity> = {};
    const nobodyToken = randomBytes(16).toString('hex');
    const lines = [`${adminToken},admin,admin-uid,"system:masters"`, `${nobodyToken},nobody,nobody-uid`];
    for (const name of opts.nodes ?? []) {
      const token = randomBytes(16).toString('hex');
      nodes[name] = { name, token, kubeconfig: path.join(dir, `${name}.kubeconfig`) };
      lines.push(`${token},system:node:${name},node-${name},"system:nodes"`);
    }
    await fsp.writeFile(path.join(dir, 'tokens.csv'), lines.join('\n') + '\n', { mode: 0o600 });

    const etcdLog = path.join(dir, 'etcd.log');
    const etcdHealthy = () => waitFor('etcd', 60_000, async () => (await fetch(`http://127.0.0.1:${clientPort}/health`)).ok, procs.etcd, etcdLog);
    const spawnEtcd = (): ChildProcess => {
      const etcdOut = fs.openSync(etcdLog, 'a');
      const child = spawn(
        'etcd',
        [
          '--name=test',
          `--data-dir=${path.join(dir, 'etcd')}`,
          `--listen-client-urls=http://127.0.0.1:${clientPort}`,
          `--advertise-client-urls=http://127.0.0.1:${clientPort}`,
          `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
          `--initial-cluster=test=http://127.0.0.1:${peerPort}`,
        ],
        { stdio: ['ignore', etcdOut, etcdOut] },
      );
      fs.closeSync(etcdOut);
      return child;
    };
    const procs: { etcd?: ChildProcess; apiserver?: ChildProcess; controllerManager?: ChildProcess } = {};
    etcd = procs.etcd = spawnEtcd();
    await etcdHealthy();

    const apiLog = path.join(dir, 'kube-apiserver.log');
    const extraApiServerArgs = opts.apiServerArgs ? await opts.apiServerArgs(dir) : [];
    const spawnApiServer = (): ChildProcess => {
    const apiOut = fs.openSync(apiLog, 'a');
    const child = spawn(
      path.join(k8sBinDir(), 'kube-apiserver'),
      [
        `--etcd-servers=http://127.0.0.1:${clientPort}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        // Since 1.37 the endpoint reconciler refuses a loopback advertise address; nothing here
        // routes to the kubernetes Service (no kube-proxy), so its endpoints are not kept.
        '--endpoint-reconciler-type=none',
        `--secure-port=${securePort}`,
        `--cert-dir=${path.join(dir, 'certs')}`,
        `--tls-cert-file=${path.join(dir, 'serving.crt')}`,
        `--tls-private-key-file=${path.join(dir, 'serving.key')}`,
        `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
        '--authorization-mode=Node,RBAC',
        '--enable-admission-plugins=NodeRestriction',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${path.join(dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
        '--service-cluster-ip-range=10.96.0.0/24',
        // Token joins read cluster-info anonymously (kubeadm's RBAC allows exactly that); nodes authenticate with certificates.
        ...(opts.bootstrap ? ['--anonymous-auth=true', '--enable-bootstrap-token-auth', `--client-ca-file=${path.join(dir, 'ca.crt')}`] : ['--anonymous-auth=false']),
        // Logs, exec and port-forward reach the node's kubelet server with this client certificate, at its InternalIP.
        `--kubelet-client-certificate=${path.join(dir, 'kubelet-client.crt')}`,
        `--kubelet-client-key=${path.join(dir, 'kubelet-client.key')}`,
        '--kubelet-preferred-address-types=InternalIP,Hostname',
        ...extraApiServerArgs,
        ...(opts.audit ? [`--audit-policy-file=${path.join(dir, 'audit-policy.yaml')}`, `--audit-log-path=${path.join(dir, 'audit.log')}`, '--audit-log-maxsize=1000'] : []),
      ],
      { stdio: ['ignore', apiOut, apiOut] },
    );
    fs.closeSync(apiOut);
    return child;
    };
    if (opts.audit) {
      // One line per request (stage ResponseComplete), metadata only: who, which verb, which resource.
      await fsp.writeFile(path.join(dir, 'audit-policy.yaml'), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n');
    }
    apiserver = procs.apiserver = spawnApiServer();
    const server = `https://127.0.0.1:${securePort}`;
    const caFile = path.join(dir, 'ca.crt');
    const adminKubeconfig = path.join(dir, 'admin.kubeconfig');
    await fsp.writeFile(adminKubeconfig, kubeconfigYaml(server, caFile, 'admin', adminToken), { mode: 0o600 });
    for (const n of Object.values(nodes)) {
      await fsp.writeFile(n.kubeconfig, kubeconfigYaml(server, caFile, `system:node:${n.name}`, n.token), { mode: 0o600 });
    }

    const kubectl = async (args: string[], o: { kubeconfig?: string; input?: string } = {}): Promise<string> => {
      return new Promise((resolve, reject) => {
        const child = spawn(kubectlBin(), [`--kubeconfig=${o.kubeconfig ?? adminKubeconfig}`, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        child.stdout.on('data', (b: Buffer) => (out += b.toString()));
        child.stderr.on('data', (b: Buffer) => (err += b.toString()));
        child.once('error', reject);
        child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl ${args.join(' ')}: exit ${code}: ${err.trim()}`))));
        child.stdin.end(o.input ?? '');
      });
    };

    await waitFor('kube-apiserver /readyz', 120_000, async () => (await kubectl(['get', '--raw', '/readyz'])).trim() === 'ok', apiserver, apiLog);
    // The system namespaces controller creates kube-node-lease shortly after start.
    await waitFor('namespace kube-node-lease', 60_000, async () => (await kubectl(['get', 'namespace', 'kube-node-lease', '-o', 'name'])).trim() !== '');

    let bootstrap: TestCluster['bootstrap'];
    const apply = (o: unknown) => kubectl(['apply', '-f', '-'], { input: JSON.stringify(o) });
    const createBootstrapToken = async (o: { expired?: boolean; group?: string } = {}): Promise<string> => {
      const [id, secret] = [tokenPart(6), tokenPart(16)];
      await apply(bootstrapTokenSecret(id, secret, o.expired ? new Date(Date.now() - 3600_000) : new Date(Date.now() + 3600_000), o.group));
      return `${id}.${secret}`;
    };
    if (opts.bootstrap) {
      await setUpTokenJoin(apply, server, caFile);
      const controllerManagerLog = path.join(dir, 'kube-controller-manager.log');
      const out = fs.openSync(controllerManagerLog, 'a');
      controllerManager = spawn(
        path.join(k8sBinDir(), 'kube-controller-manager'),
        [
          `--kubeconfig=${adminKubeconfig}`,
          '--controllers=certificatesigningrequest-signing-controller,certificatesigningrequest-approving-controller,bootstrap-signer-controller,token-cleaner-controller',
          `--cluster-signing-cert-file=${caFile}`,
          `--cluster-signing-key-file=${path.join(dir, 'ca.key')}`,
          '--use-service-account-credentials=false',
          '--leader-elect=false',
          '--secure-port=0',
          ...(opts.signingDuration ? [`--cluster-signing-duration=${opts.signingDuration}`] : []),
        ],
        { stdio: ['ignore', out, out] },
      );
      fs.closeSync(out);
      procs.controllerManager = controllerManager;
      const token = await createBootstrapToken();
      // The bootstrapsigner controller signs cluster-info for the token: then joins can start.
      const id = token.split('.')[0]!;
      await waitFor('cluster-info signed for the bootstrap token', 60_000, async () => {
        const cm = JSON.parse(await kubectl(['get', 'configmap', '-n', 'kube-public', 'cluster-info', '-o', 'json'])) as { data?: Record<string, string> };
        return Boolean(cm.data?.[`jws-kubeconfig-${id}`]);
      }, controllerManager, controllerManagerLog);
      const spki = new X509Certificate(fs.readFileSync(caFile)).publicKey.export({ type: 'spki', format: 'der' });
      bootstrap = { token, caCertHash: `sha256:${createHash('sha256').update(spki).digest('hex')}`, controllerManagerLog };
    }

    const ready = () => waitFor('kube-apiserver /readyz', 120_000, async () => (await kubectl(['get', '--raw', '/readyz'])).trim() === 'ok', procs.apiserver, apiLog);
    return {
      dir,
      server,
      caFile,
      otherCaFile: path.join(dir, 'other-ca.crt'),
      adminKubeconfig,
      nodes,
      nobodyToken,
      adminToken,
      kubectl,
      async kubectlJson<T>(args: string[], o: { kubeconfig?: string } = {}) {
        return JSON.parse(await kubectl([...args, '-o', 'json'], o)) as T;
      },
      auditLog: opts.audit ? path.join(dir, 'audit.log') : undefined,
      bootstrap,
      createBootstrapToken,
      async stopEtcd() {
        await stopProcess(procs.etcd);
      },
      async startEtcd() {
        procs.etcd = spawnEtcd();
        await etcdHealthy();
      },
      async stopApiServer() {
        await stopProcess(procs.apiserver);
      },
      async startApiServer() {
        procs.apiserver = spawnApiServer();
        await ready();
      },
      async writeKubeconfig(file, o) {
        await fsp.writeFile(file, kubeconfigYaml(o.server ?? server, o.caFile ?? caFile, o.user ?? 'klet', o.token), { mode: 0o600 });
      },
      async stop() {
        await stopProcess(procs.controllerManager);
        await stopProcess(procs.apiserver);
        await stopProcess(procs.etcd);
        await fsp.rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopProcess(controllerManager);
    await stopProcess(apiserver);
    await stopProcess(etcd);
    await fsp.rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * A namespace as kube-controller-manager would leave it (none runs in the
 * tests): with its `default` ServiceAccount (the ServiceAccount admission
 * plugin refuses pods without it) and the `kube-root-ca.crt` ConfigMap the
 * root CA publisher writes (the kube-api-access-* volume reads its ca.crt).
 */
export async function ensureNamespace(cluster: TestCluster, ns: string): Promise<void> {
  const apply = (o: unknown) => cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(o) });
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns } });
  await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kube-root-ca.crt', namespace: ns }, data: { 'ca.crt': fs.readFileSync(cluster.caFile, 'utf8') } });
}
