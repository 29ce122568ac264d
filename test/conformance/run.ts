/**
 * Kubernetes' node conformance specs against klet and the kubelet:
 *
 *   npm run conformance -- [--agent klet|kubelet|both] [--focus REGEX] [--procs N] [--slow-serial]
 *
 * Builds (once, cached under /var/cache/klet-k8s) e2e.test, ginkgo,
 * kube-controller-manager, kube-scheduler and the test images; then for each
 * agent: a local registry serving the images under their registry.k8s.io
 * names, etcd + kube-apiserver + kube-controller-manager + kube-scheduler on
 * loopback ports, a containerd of its own (registry.k8s.io mirrored to the
 * local registry), the agent as the only node on a node IP of its own on lo
 * (port 10250), and `ginkgo --procs N e2e.test` over the set
 * (NodeConformance, and sig-node Conformance, less Serial/Disruptive/Slow/Flaky),
 * or with --slow-serial the next tier (SLOW_SERIAL below: the Slow ones at
 * --procs N, then the Serial ones at --procs 1).
 * Writes test/conformance/results/<date>[-slow-serial].json and .md. Everything it started
 * or created is stopped and removed at the end, on error and on SIGINT/SIGTERM.
 * See test/conformance/README.md.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { makeCgroupRoot, removeCgroupRoot } from '../../src/lib/cm/cgroup-root.js';
import { CriClient } from '../../src/lib/cri/client.js';
import { containerdConfig, cniConflist, CNI_CONFLIST } from '../../src/lib/runtime/containerd-config.js';
import { layoutFor, networkFor, stopManagedRuntime, type RuntimeTarget } from '../../src/lib/runtime/containerd.js';
import { mountsUnder } from '../../src/lib/util/mounts.js';
import { freePort, k8sBinDir, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { buildImages, conformanceImages, conformancePauseImage, pushImages } from './images.js';
import { countVerdicts, dryRunSpecs, readGinkgoReport, verdictsFor, writeResults, type Agent, type AgentRun } from './report.js';

const execFileP = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SET_FOCUS = String.raw`\[NodeConformance\]|\[sig-node\].*\[Conformance\]`;
export const SET_SKIP = String.raw`\[Serial\]|\[Disruptive\]|\[Slow\]|\[Flaky\]`;
/**
 * The next tier: the Slow and Serial specs of the same set, and the Serial
 * Conformance volume spec of sig-storage (the kubelet's volume manager: the
 * default set's sig-storage specs are its NodeConformance ones). Serial specs
 * may be Disruptive (the NoExecuteTaintManager ones taint the only node):
 * they run alone, one process, after the Slow ones. Not Flaky ones.
 */
export const SLOW_SERIAL = {
  focus: String.raw`\[NodeConformance\]|\[sig-node\].*\[Conformance\]|\[sig-storage\].*\[Serial\].*\[Conformance\]`,
  skip: String.raw`\[Flaky\]`,
  /** Of what focus and skip select, the tier's specs. */
  select: /\[Slow\]|\[Serial\]/,
};
/** A set of specs: e2e.test's focus and skip, narrowed by a regexp over the full texts. */
interface SpecSet {
  name: 'default' | 'slow-serial';
  focus: string;
  skip: string;
  select?: RegExp;
}
const DEFAULT_SET: SpecSet = { name: 'default', focus: SET_FOCUS, skip: SET_SKIP };
const SLOW_SERIAL_SET: SpecSet = { name: 'slow-serial', ...SLOW_SERIAL };
/** The framework hard-codes the kubelet port (node proxy, framework/kubelet). */
const NODE_PORT = 10250;
const NODE_IP = process.env.KLET_CONFORMANCE_NODE_IP ?? '10.92.0.2';
const NODE_NAME = 'conformance-node';
/** The pods' subnet on the run's bridge; two runs at once on one machine need two (KLET_CONFORMANCE_POD_SUBNET). */
const POD_SUBNET = process.env.KLET_CONFORMANCE_POD_SUBNET ?? '10.93.0.0/24';

const log = (s: string): void => void process.stderr.write(`conformance: ${s}\n`);

/** What to undo, last first; each step runs once, errors are logged and the rest still run. */
class Cleanup {
  private steps: { what: string; fn: () => Promise<void> }[] = [];
  add(what: string, fn: () => Promise<void>): void {
    this.steps.push({ what, fn });
  }
  async run(): Promise<void> {
    while (this.steps.length > 0) {
      const { what, fn } = this.steps.pop()!;
      try {
        await fn();
      } catch (err) {
        log(`cleanup: ${what}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
}

/** Spawn a long-running process in its own process group, output to `logFile`. */
function start(cmd: string, args: string[], logFile: string, opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  const out = fs.openSync(logFile, 'a');
  try {
    return spawn(cmd, args, { stdio: ['ignore', out, out], detached: true, cwd: opts.cwd, env: opts.env ?? process.env });
  } finally {
    fs.closeSync(out);
  }
}

/** SIGTERM the process group, SIGKILL after `graceMs`; resolves when the leader has exited. */
function stop(p: ChildProcess, graceMs = 15_000): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null || p.pid === undefined) return Promise.resolve();
  const pid = p.pid;
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, graceMs);
    p.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    try {
      process.kill(-pid, 'SIGTERM');
    } catch {
      clearTimeout(t);
      resolve();
    }
  });
}

async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>, proc?: ChildProcess, logFile?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc && proc.exitCode !== null) throw new Error(`${what}: the process exited with ${proc.exitCode}${logFile ? ` (see ${logFile})\n${tail(logFile)}` : ''}`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${what}: not ready after ${timeoutMs / 1000} s${logFile ? ` (see ${logFile})\n${tail(logFile)}` : ''}`);
}

function tail(file: string, n = 15): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-n).join('\n');
  } catch {
    return '';
  }
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await execFileP('openssl', args, { cwd });
}

/** A certificate signed by the cluster's CA (dir/ca.crt, ca.key). */
async function signedCert(dir: string, name: string, subj: string, ext: string): Promise<void> {
  await fsp.writeFile(path.join(dir, `${name}.ext`), ext);
  await openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj], dir);
  await openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-extfile', `${name}.ext`, '-days', '2'], dir);
}

// ---------------------------------------------------------------------------
// Builds

function buildAll(): { bin: string; k8sSrc: string } {
  for (const script of ['build-k8s.sh', 'build-conformance.sh']) {
    execFileSync('bash', [path.join(ROOT, 'scripts', script)], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const k8sSrc = execFileSync('go', ['list', '-mod=mod', '-m', '-f', '{{.Dir}}', 'k8s.io/kubernetes'], { cwd: path.join(ROOT, 'test', 'cluster'), encoding: 'utf8' }).trim();
  return { bin: k8sBinDir(), k8sSrc };
}

/** The set's specs, by full text, from a dry run of e2e.test (no cluster needed). */
async function listSpecs(bin: string, work: string, set: SpecSet): Promise<string[]> {
  const report = path.join(work, 'dry-run.json');
  await execFileP(
    path.join(bin, 'e2e.test'),
    [`--ginkgo.focus=${set.focus}`, `--ginkgo.skip=${set.skip}`, '--ginkgo.dry-run', `--ginkgo.json-report=${report}`, '--provider=skeleton', `--report-dir=${work}`],
    { cwd: work, maxBuffer: 64 << 20 },
  );
  return (await dryRunSpecs(report)).filter((n) => set.select?.test(n) ?? true);
}

/** A Go regexp matching exactly these texts (RE2 and JS escape the same characters). */
function exactly(names: string[]): string {
  return names.map((n) => n.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')).join('|');
}

// ---------------------------------------------------------------------------
// The node: its address, cgroups, containerd

async function addNodeIp(cleanup: Cleanup): Promise<void> {
  const { stdout } = await execFileP('ip', ['-o', 'addr', 'show']);
  if (stdout.includes(` ${NODE_IP}/`)) throw new Error(`${NODE_IP} is already configured on this machine (not ours to use or remove); set KLET_CONFORMANCE_NODE_IP`);
  // A route to the pod subnet already there is another run's bridge (or the host's network).
  const routes = (await execFileP('ip', ['-4', '-o', 'route', 'show'])).stdout;
  if (routes.split('\n').some((l) => l.startsWith(`${POD_SUBNET} `))) throw new Error(`${POD_SUBNET} is already routed on this machine (another run's pods?); set KLET_CONFORMANCE_POD_SUBNET`);
  await execFileP('ip', ['addr', 'add', `${NODE_IP}/32`, 'dev', 'lo']);
  cleanup.add(`ip addr del ${NODE_IP}/32 dev lo`, async () => void (await execFileP('ip', ['addr', 'del', `${NODE_IP}/32`, 'dev', 'lo'])));
}

/**
 * A private cgroup root (src/lib/cm/cgroup-root.ts: every v1 hierarchy with
 * cpuset's cpus and mems copied, or the v2 one), removed at the end with
 * everything under it, in every hierarchy (the kubelet also makes it in a
 * hybrid host's v2 hierarchy).
 */
async function makePrivateCgroupRoot(name: string, cleanup: Cleanup): Promise<void> {
  await makeCgroupRoot(`/${name}`);
  cleanup.add(`remove cgroup ${name}`, () => removeCgroupRoot(`/${name}`));
}

/**
 * A containerd of the run's own, laid out as klet's managed runtime (so
 * stopManagedRuntime stops its pods, shims, mounts and bridge), with
 * registry.k8s.io mirrored to the local registry and the conformance pause
 * image as the sandbox image.
 */
async function startContainerd(dir: string, registry: string, pauseImage: string, cleanup: Cleanup): Promise<string> {
  const target: RuntimeTarget = { endpoint: `unix://${path.join(dir, 'containerd', 'containerd.sock')}`, rootDir: dir, network: networkFor(dir, POD_SUBNET) };
  const layout = layoutFor(target);
  if (fs.existsSync(`/sys/class/net/${layout.network.bridge}`)) throw new Error(`bridge ${layout.network.bridge} exists already (not ours)`);
  for (const d of [layout.dir, layout.rootDir, layout.stateDir, layout.cniConfDir, layout.cniDataDir]) await fsp.mkdir(d, { recursive: true, mode: 0o700 });
  const hosts = path.join(layout.dir, 'certs.d', 'registry.k8s.io');
  await fsp.mkdir(hosts, { recursive: true });
  await fsp.writeFile(path.join(hosts, 'hosts.toml'), `server = "https://registry.k8s.io"\n\n[host."http://${registry}"]\n  capabilities = ["pull", "resolve"]\n`);
  const config = containerdConfig(layout).replace(/^(\s*sandbox_image = ).*$/m, `$1${JSON.stringify(pauseImage)}`) +
    `\n[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = ${JSON.stringify(path.join(layout.dir, 'certs.d'))}\n`;
  await fsp.writeFile(layout.configFile, config);
  await fsp.writeFile(path.join(layout.cniConfDir, CNI_CONFLIST), cniConflist(layout));
  const child = start('containerd', ['--config', layout.configFile], layout.logFile);
  child.unref();
  await fsp.writeFile(layout.pidFile, `${child.pid}\n`);
  cleanup.add('stop containerd', async () => {
    await stopManagedRuntime(target, { timeoutMs: 120_000 });
  });
  await waitUntil('containerd', 60_000, async () => {
    const c = CriClient.connect(target.endpoint, { timeoutMs: 2000 });
    try {
      await c.version({});
      return true;
    } finally {
      c.close();
    }
  }, child, layout.logFile);
  return target.endpoint;
}

/** Unmount what is left under `dir` (volume tmpfs, subPath binds) so it can be removed. */
async function unmountUnder(dir: string): Promise<void> {
  for (const m of (await mountsUnder(dir)).sort().reverse()) await execFileP('umount', ['-l', m]).catch(() => undefined);
}

// ---------------------------------------------------------------------------
// The agents

interface AgentProcess {
  proc: ChildProcess;
  logFile: string;
  version: string;
}

async function startKubelet(o: { dir: string; bin: string; endpoint: string; kubeconfig: string; certs: string; cgroupRoot: string }): Promise<AgentProcess> {
  const config = path.join(o.dir, 'kubelet-config.yaml');
  await fsp.mkdir(path.join(o.dir, 'pod-logs'), { recursive: true });
  await fsp.writeFile(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `address: ${NODE_IP}`,
      `port: ${NODE_PORT}`,
      'readOnlyPort: 0',
      'healthzBindAddress: 127.0.0.1',
      `healthzPort: ${await freePort()}`,
      `tlsCertFile: ${path.join(o.certs, 'node.crt')}`,
      `tlsPrivateKeyFile: ${path.join(o.certs, 'node.key')}`,
      'authentication:',
      '  anonymous: {enabled: false}',
      '  webhook: {enabled: true}',
      `  x509: {clientCAFile: ${path.join(o.certs, 'ca.crt')}}`,
      'authorization: {mode: Webhook}',
      'cgroupDriver: cgroupfs',
      'cgroupsPerQOS: true',
      `cgroupRoot: /${o.cgroupRoot}`,
      'failSwapOn: false',
      'failCgroupV1: false',
      `containerRuntimeEndpoint: ${o.endpoint}`,
      `podLogsDir: ${path.join(o.dir, 'pod-logs')}`,
      `volumePluginDir: ${path.join(o.dir, 'volume-plugins')}`,
      'clusterDomain: cluster.local',
      'resolvConf: /etc/resolv.conf',
      'evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}',
      'serializeImagePulls: false',
      '',
    ].join('\n'),
  );
  const logFile = path.join(o.dir, 'kubelet.log');
  const proc = start(
    path.join(o.bin, 'kubelet'),
    [`--config=${config}`, `--kubeconfig=${o.kubeconfig}`, `--root-dir=${path.join(o.dir, 'root')}`, `--hostname-override=${NODE_NAME}`, `--node-ip=${NODE_IP}`],
    logFile,
  );
  const version = (await execFileP(path.join(o.bin, 'kubelet'), ['--version'])).stdout.trim();
  return { proc, logFile, version };
}

async function startKlet(o: { dir: string; endpoint: string; kubeconfig: string; certs: string; cgroupRoot: string }): Promise<AgentProcess> {
  const klet = path.join(ROOT, 'bin', 'run.js');
  if (!fs.existsSync(path.join(ROOT, 'dist', 'cli', 'sync-entry.js'))) throw new Error('klet is not built: run npm run build first');
  const help = (await execFileP(process.execPath, [klet, 'sync', '--help'])).stdout;
  await fsp.mkdir(path.join(o.dir, 'manifests'), { recursive: true });
  // Pod logs in a dir of the run's own, as the kubelet's podLogsDir here: /var/log/pods is shared, and a
  // kubelet using it (another test's) removes every pod log dir there it does not know, once a minute.
  const config = path.join(o.dir, 'klet-config.yaml');
  await fsp.writeFile(config, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: ${path.join(o.dir, 'pod-logs')}\n`);
  const args = [
    klet,
    'sync',
    `--config=${config}`,
    `--root-dir=${path.join(o.dir, 'root')}`,
    `--container-runtime-endpoint=${o.endpoint}`,
    `--node-name=${NODE_NAME}`,
    `--kubeconfig=${o.kubeconfig}`,
    `--node-ip=${NODE_IP}`,
    `--manifest-dir=${path.join(o.dir, 'manifests')}`,
  ];
  // Pod and QoS cgroups as the kubelet's here (cgroupsPerQOS under a private cgroupRoot), once klet has them.
  if (help.includes('--cgroup-root')) args.push(`--cgroup-root=/${o.cgroupRoot}`);
  // The same hard eviction thresholds as the kubelet's config here (a shared machine's disk must not put the node under pressure).
  if (help.includes('--eviction-hard')) args.push('--eviction-hard=memory.available<100Mi,nodefs.available<1%,imagefs.available<1%');
  // The kubelet server (logs, exec, port-forward through the API server) with the kubelet's flags, once klet has it.
  if (help.includes('--client-ca-file')) {
    args.push(
      `--address=${NODE_IP}`,
      `--port=${NODE_PORT}`,
      `--tls-cert-file=${path.join(o.certs, 'node.crt')}`,
      `--tls-private-key-file=${path.join(o.certs, 'node.key')}`,
      `--client-ca-file=${path.join(o.certs, 'ca.crt')}`,
      '--anonymous-auth=false',
      '--authentication-token-webhook',
      '--authorization-mode=Webhook',
    );
  } else {
    log('klet sync has no --client-ca-file yet: klet runs without the kubelet server on port 10250');
  }
  const logFile = path.join(o.dir, 'klet.log');
  const proc = start(process.execPath, args, logFile);
  const commit = await execFileP('git', ['-C', ROOT, 'describe', '--always', '--dirty']).then((r) => r.stdout.trim(), () => 'unknown');
  return { proc, logFile, version: commit };
}

/** Peak RSS and CPU of a process and its descendants, sampled every few seconds. */
class Sampler {
  peakRssKiB = 0;
  hwmKiB = 0;
  private cpuStart = 0;
  private cpuLast = 0;
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly pid: number) {}
  private tree(): number[] {
    const parent = new Map<number, number>();
    for (const e of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(e)) continue;
      try {
        const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
        parent.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      } catch {
        /* gone */
      }
    }
    const out = [this.pid];
    for (let i = 0; i < out.length; i++) for (const [p, pp] of parent) if (pp === out[i] && !out.includes(p)) out.push(p);
    return out;
  }
  private sample(): void {
    let rss = 0;
    let cpu = 0;
    for (const p of this.tree()) {
      try {
        const status = fs.readFileSync(`/proc/${p}/status`, 'utf8');
        rss += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
        if (p === this.pid) this.hwmKiB = Math.max(this.hwmKiB, Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? 0));
        const f = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
        const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
        // utime, stime (fields 14, 15); the leader also counts its reaped children (16, 17).
        cpu += Number(fields[11]) + Number(fields[12]) + (p === this.pid ? Number(fields[13]) + Number(fields[14]) : 0);
      } catch {
        /* gone */
      }
    }
    this.peakRssKiB = Math.max(this.peakRssKiB, rss);
    this.cpuLast = cpu;
  }
  begin(): void {
    this.sample();
    this.cpuStart = this.cpuLast;
    this.timer = setInterval(() => this.sample(), 3000);
  }
  end(): { peakRssMiB: number; vmHwmMiB: number; cpuSeconds: number } {
    this.sample();
    clearInterval(this.timer);
    const ticks = 100; // USER_HZ
    return { peakRssMiB: Math.round(this.peakRssKiB / 1024), vmHwmMiB: Math.round(this.hwmKiB / 1024), cpuSeconds: Math.round((this.cpuLast - this.cpuStart) / ticks * 10) / 10 };
  }
}

// ---------------------------------------------------------------------------
// One agent's run

interface RunOptions {
  agent: Agent;
  bin: string;
  archives: Map<string, string>;
  /** The sandbox image of the run's containerd (the newest pause e2e.test names). */
  pauseImage: string;
  set: string[];
  specSet: SpecSet;
  focus: string;
  procs: number;
  keep: boolean;
  signal: AbortSignal;
}

async function runAgent(o: RunOptions): Promise<{ run: AgentRun; verdicts: Map<string, import('./report.js').SpecVerdict>; dir: string }> {
  const cleanup = new Cleanup();
  const date = new Date().toISOString();
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `klet-conformance-${o.agent}-`));
  cleanup.add(`remove ${dir}`, async () => {
    if (o.keep) return log(`kept ${dir}`);
    await unmountUnder(dir);
    const left = await mountsUnder(dir);
    if (left.length > 0) throw new Error(`mounts left under ${dir}, not removed: ${left.join(' ')}`);
    await fsp.rm(dir, { recursive: true, force: true });
  });
  const abort = new Promise<never>((_, reject) => {
    if (o.signal.aborted) reject(new Error('interrupted'));
    o.signal.addEventListener('abort', () => reject(new Error('interrupted')), { once: true });
  });
  abort.catch(() => undefined);
  /** Wait for `p` unless interrupted first (what `p` starts registers its own cleanup). */
  const step = <T>(p: Promise<T>): Promise<T> => Promise.race([p, abort]);
  try {
    log(`${o.agent}: working in ${dir}`);
    // The local registry and the images.
    const crane = path.join(o.bin, 'crane');
    const regPort = await freePort();
    const registry = `127.0.0.1:${regPort}`;
    const regProc = start(crane, ['registry', 'serve', '--address', registry], path.join(dir, 'registry.log'));
    cleanup.add('stop the registry', () => stop(regProc));
    await step(waitUntil('registry', 30_000, async () => (await fetch(`http://${registry}/v2/`)).ok, regProc, path.join(dir, 'registry.log')));
    await step(pushImages(crane, registry, o.archives, path.join(dir, 'push')));

    // The control plane.
    await addNodeIp(cleanup);
    const starting = startTestCluster({
        nodes: [NODE_NAME],
        apiServerArgs: async (cdir) => {
          await signedCert(cdir, 'kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', 'extendedKeyUsage=clientAuth\n');
          await signedCert(cdir, 'node', `/CN=${NODE_NAME}`, `subjectAltName=IP:${NODE_IP},DNS:${NODE_NAME}\nextendedKeyUsage=serverAuth\n`);
          return [
            `--kubelet-client-certificate=${path.join(cdir, 'kubelet-client.crt')}`,
            `--kubelet-client-key=${path.join(cdir, 'kubelet-client.key')}`,
            '--kubelet-preferred-address-types=InternalIP,Hostname',
            `--client-ca-file=${path.join(cdir, 'ca.crt')}`,
            '--allow-privileged=true',
          ];
        },
    });
    cleanup.add('stop etcd and kube-apiserver', async () => (await starting.catch(() => undefined))?.stop());
    const c: TestCluster = await step(starting);
    const kcm = start(
      path.join(o.bin, 'kube-controller-manager'),
      [
        `--kubeconfig=${c.adminKubeconfig}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${await freePort()}`,
        '--leader-elect=false',
        `--root-ca-file=${c.caFile}`,
        `--service-account-private-key-file=${path.join(c.dir, 'sa.key')}`,
        `--cluster-signing-cert-file=${c.caFile}`,
        `--cluster-signing-key-file=${path.join(c.dir, 'ca.key')}`,
        '--use-service-account-credentials=false',
      ],
      path.join(dir, 'kube-controller-manager.log'),
    );
    cleanup.add('stop kube-controller-manager', () => stop(kcm));
    const sched = start(
      path.join(o.bin, 'kube-scheduler'),
      [`--kubeconfig=${c.adminKubeconfig}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--leader-elect=false'],
      path.join(dir, 'kube-scheduler.log'),
    );
    cleanup.add('stop kube-scheduler', () => stop(sched));
    await step(waitUntil('the default ServiceAccount', 120_000, async () => (await c.kubectl(['get', 'serviceaccount', 'default', '-o', 'name'])).trim() !== '', kcm, path.join(dir, 'kube-controller-manager.log')));

    // The node. Cleanup runs last-added first: the agent stops, then containerd
    // (its pods), then the cgroups they used are removed (the pod logs are in the temp dir).
    const nodeDir = path.join(dir, o.agent);
    await fsp.mkdir(nodeDir, { recursive: true });
    const cgroupRoot = `klet-conformance-${randomBytes(3).toString('hex')}`;
    // Both agents make their pod and QoS cgroups under a private cgroup root, never the host's /kubepods.
    await makePrivateCgroupRoot(cgroupRoot, cleanup);
    const endpoint = await step(startContainerd(path.join(dir, 'runtime'), registry, o.pauseImage, cleanup));
    const kubeconfig = c.nodes[NODE_NAME]!.kubeconfig;
    const agent =
      o.agent === 'kubelet'
        ? await startKubelet({ dir: nodeDir, bin: o.bin, endpoint, kubeconfig, certs: c.dir, cgroupRoot })
        : await startKlet({ dir: nodeDir, endpoint, kubeconfig, certs: c.dir, cgroupRoot });
    cleanup.add(`stop ${o.agent}`, async () => {
      await stop(agent.proc, 30_000);
    });
    await step(waitUntil(
      `node ${NODE_NAME} Ready`,
      180_000,
      async () => (await c.kubectl(['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])).trim() === 'True',
      agent.proc,
      agent.logFile,
    ));
    log(`${o.agent}: node ${NODE_NAME} is Ready (${agent.version})`);

    // The specs.
    const reportDir = path.join(dir, 'report');
    await fsp.mkdir(reportDir, { recursive: true });
    // The Serial specs of a set run alone: one process, after the others.
    const serial = o.set.filter((n) => /\[Serial\]/.test(n));
    const phases = [
      { specs: o.set.filter((n) => !/\[Serial\]/.test(n)), procs: o.procs },
      { specs: serial, procs: 1 },
    ].filter((p) => p.specs.length > 0);
    const ginkgoLog = path.join(dir, 'ginkgo.log');
    const sampler = new Sampler(agent.proc.pid!);
    sampler.begin();
    const t0 = Date.now();
    const loadStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
    const report = new Map<string, import('./report.js').SpecVerdict>();
    let error: string | undefined;
    for (const [i, phase] of phases.entries()) {
      const reportJson = `report-${i + 1}.json`;
      // The default set, unnarrowed, by its own focus; any other by the exact texts.
      const focusArg = o.focus === '' && o.specSet.name === 'default' ? SET_FOCUS : exactly(phase.specs);
      const ginkgoArgs = [
        `--procs=${phase.procs}`,
        '--timeout=3h',
        '--no-color',
        `--output-dir=${reportDir}`,
        `--json-report=${reportJson}`,
        `--focus=${focusArg}`,
        `--skip=${o.specSet.skip}`,
        path.join(o.bin, 'e2e.test'),
        '--',
        `--kubeconfig=${c.adminKubeconfig}`,
        '--provider=skeleton',
        `--report-dir=${reportDir}`,
      ];
      log(`${o.agent}: running ${phase.specs.length} specs with --procs=${phase.procs}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (log ${ginkgoLog})`);
      const t1 = Date.now();
      fs.appendFileSync(ginkgoLog, `# ginkgo ${ginkgoArgs.join(' ')}\n`);
      const g = start(path.join(o.bin, 'ginkgo'), ginkgoArgs, ginkgoLog, { cwd: o.bin });
      cleanup.add('stop ginkgo', () => stop(g, 5000));
      const progress = setInterval(() => {
        // ginkgo prints one • per finished spec (passed or not); S for the skipped ones.
        const done = (fs.readFileSync(ginkgoLog, 'utf8').match(/•/g) ?? []).length;
        log(`${o.agent}: ${Math.round((Date.now() - t0) / 60000)} min, ${done} of ${o.set.length} specs done, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
      }, 60_000);
      const code = await Promise.race([new Promise<number | null>((resolve) => g.once('exit', (code) => resolve(code))), abort]).finally(() => clearInterval(progress));
      log(`${o.agent}: ginkgo exited ${code} after ${Math.round((Date.now() - t1) / 1000)} s`);
      try {
        // Each phase's report lists every spec, the other phases' as skipped: keep this phase's.
        const mine = new Set(phase.specs);
        for (const [name, v] of await readGinkgoReport(path.join(reportDir, reportJson))) if (mine.has(name)) report.set(name, v);
      } catch (err) {
        error = `no ginkgo report (${err instanceof Error ? err.message : String(err)}); see ${ginkgoLog}:\n${tail(ginkgoLog)}`;
        log(error);
      }
    }
    const wallSeconds = Math.round((Date.now() - t0) / 1000);
    const figures = sampler.end();
    const loadAverage = os.loadavg().map((l) => Math.round(l * 100) / 100);
    const verdicts = verdictsFor(o.set, report, new Set(o.set));
    const run: AgentRun = {
      date,
      procs: o.procs,
      ...(serial.length > 0 ? { serialProcs: 1 } : {}),
      ...(o.focus ? { focus: o.focus } : {}),
      wallSeconds,
      ...countVerdicts(verdicts),
      ...figures,
      loadAverage: { start: loadStart, end: loadAverage },
      version: agent.version,
      ...(error ? { error } : {}),
    };
    // Keep the logs worth reading after the temp dir is gone.
    const keepDir = path.join(ROOT, 'test', 'conformance', 'logs', o.agent);
    await fsp.rm(keepDir, { recursive: true, force: true });
    await fsp.mkdir(keepDir, { recursive: true });
    for (const f of [ginkgoLog, agent.logFile, ...phases.map((_, i) => path.join(reportDir, `report-${i + 1}.json`))]) await fsp.copyFile(f, path.join(keepDir, path.basename(f))).catch(() => undefined);
    return { run, verdicts, dir };
  } finally {
    await cleanup.run();
  }
}

// ---------------------------------------------------------------------------

/** CI's smoke subset (README "The CI smoke subset"): 15 specs across the areas a node must get right. */
const SMOKE_FOCUS = [
  'should get a host IP',
  'Pods should be submitted and removed',
  'should be restarted with a /healthz http liveness probe',
  'should not be ready before initial delay and never restart',
  'Downward API volume should provide podname only',
  'provide pod name, namespace and IP address as env vars',
  'ConfigMap should be consumable via environment variable',
  'Secrets should be consumable from pods in volume \\[',
  'invoke init containers on a RestartNever pod',
  'fail the pod if init containers fail on a RestartNever pod',
  'run the container with uid 65534',
  'readonly rootfs when readOnlyRootFilesystem=true',
  'execute prestop exec hook properly',
  'report termination message if TerminationMessagePath is set \\[',
  'intra-pod communication: http',
].join('|');

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      agent: { type: 'string', default: 'both' },
      focus: { type: 'string', default: '' },
      procs: { type: 'string', default: '6' },
      keep: { type: 'boolean', default: false },
      'require-pass': { type: 'boolean', default: false },
      smoke: { type: 'boolean', default: false },
      'slow-serial': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write('usage: npm run conformance -- [--agent klet|kubelet|both] [--focus REGEX] [--procs N] [--keep] [--require-pass] [--smoke] [--slow-serial]\nSee test/conformance/README.md.\n');
    return 0;
  }
  const agents: Agent[] = values.agent === 'both' ? ['kubelet', 'klet'] : values.agent === 'klet' || values.agent === 'kubelet' ? [values.agent] : [];
  if (agents.length === 0) throw new Error(`--agent: "${values.agent}": expected klet, kubelet or both`);
  const procs = Number(values.procs);
  if (!Number.isInteger(procs) || procs < 1 || procs > 32) throw new Error(`--procs: "${values.procs}": expected an integer from 1 to 32`);
  if (process.getuid?.() !== 0) throw new Error('the conformance run needs root (a node IP on lo, containerd, cgroups, mounts)');

  const ac = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      log(`${sig}: stopping and cleaning up`);
      ac.abort();
    });
  }
  if (values.smoke && values.focus !== '') throw new Error('--smoke is a focus of its own: give --smoke or --focus, not both');
  if (values.smoke && values['slow-serial']) throw new Error('--smoke is a subset of the default set: give --smoke or --slow-serial, not both');
  const specSet = values['slow-serial'] ? SLOW_SERIAL_SET : DEFAULT_SET;
  try {
    return await runAll({ ...values, focus: values.smoke ? SMOKE_FOCUS : values.focus }, specSet, agents, procs, ac.signal);
  } catch (err) {
    if (!ac.signal.aborted) throw err;
    log('interrupted; everything started was stopped and removed');
    return 130;
  }
}

async function runAll(values: { focus: string; keep: boolean; 'require-pass': boolean }, specSet: SpecSet, agents: Agent[], procs: number, signal: AbortSignal): Promise<number> {
  let incomplete = 0;
  const t0 = Date.now();
  const { bin, k8sSrc } = buildAll();
  log(`builds ready in ${bin} (${Math.round((Date.now() - t0) / 1000)} s)`);
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'klet-conformance-'));
  try {
    const fullSet = await listSpecs(bin, work, specSet);
    log(`the set: ${fullSet.length} specs`);
    let set = fullSet;
    if (values.focus !== '') {
      const re = new RegExp(values.focus);
      set = fullSet.filter((n) => re.test(n));
      if (set.length === 0) throw new Error(`--focus: "${values.focus}" matches none of the set's specs`);
      log(`--focus: ${set.length} specs`);
    }
    // The images under the names this e2e.test asks for (each release moves its test images on).
    const listed = execFileSync(path.join(bin, 'e2e.test'), ['--list-images'], { encoding: 'utf8', maxBuffer: 16 << 20 }).split('\n').filter((l) => l.trim() !== '');
    const archives = await buildImages(await conformanceImages(bin, k8sSrc, listed), path.join(bin, 'images'), log);
    const pauseImage = conformancePauseImage(listed);
    const resultsDir = path.join(ROOT, 'test', 'conformance', 'results');
    for (const agent of agents) {
      if (signal.aborted) break;
      const { run, verdicts } = await runAgent({ agent, bin, archives, pauseImage, set, specSet, focus: values.focus, procs, keep: values.keep, signal });
      const file = await writeResults(resultsDir, {
        agent,
        set: fullSet,
        focus: specSet.focus,
        skip: specSet.skip,
        ...(specSet.select ? { select: specSet.select.source } : {}),
        ...(specSet.name === 'default' ? {} : { tier: specSet.name }),
        run,
        verdicts,
      });
      log(`${agent}: ${run.passed} passed, ${run.failed} failed, ${run.skipped} skipped, ${run.notRun} not run of ${set.length}, ${run.wallSeconds} s; ${file}`);
      // The plain closing line CI reads, per agent.
      process.stdout.write(`${agent}: ${run.passed} passed, ${run.failed + run.notRun} failed\n`);
      incomplete += run.failed + run.notRun;
    }
  } finally {
    await fsp.rm(work, { recursive: true, force: true });
  }
  // --require-pass (CI's smoke run): a spec that failed or did not run fails the run.
  return signal.aborted ? 130 : values['require-pass'] && incomplete > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
