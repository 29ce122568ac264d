// Where klet sync --kubeconfig spends its CPU: one private containerd, one
// real kube-apiserver + etcd (test/helpers/cluster.ts), and klet builds run
// one after the other (never two at once) on the same workload:
//
//   burst: N pods created through the API at once, each with a ConfigMap
//          volume, a Secret env var and the default kube-api-access projected
//          token (its own ConfigMap and Secret per pod, or --shared-objects),
//          until all are Ready on the server;
//   hold:  those pods held for --hold seconds (after a 10 s settle).
//
// Per run: the agent's CPU seconds (utime+stime from /proc/PID/stat) over the
// burst and over the hold window, RSS at the end of the hold, and the load
// average. --klet A.js,B.js alternates builds round by round (ABAB...), so a
// before/after comparison shares the machine's noise. Not a budget; see
// bench/cluster-cpu.md for what it found.
//
//   node bench/profile-cluster.js [--pods 110] [--hold 120] [--rounds 3]
//        [--klet bin/run.js[,OTHER/bin/run.js]] [--klet-flags "NODE FLAGS;NODE FLAGS"]
//        [--cpu-prof DIR] [--trace-gc]
//        [--shared-objects] [--out FILE]
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient } from '../dist/lib/cri/client.js';
import { startManagedRuntime, stopManagedRuntime } from '../dist/lib/runtime/containerd.js';
import { BUSYBOX_IMAGE } from '../dist/lib/runtime/containerd-config.js';
import { mountsUnder, unmountAll } from '../dist/lib/util/mounts.js';
import { median } from './stats.js';

const repo = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const o = { pods: 110, hold: 120, rounds: 3, klets: [path.join(repo, 'bin/run.js')], kletFlags: [], cpuProf: null, traceGc: false, shared: false, out: null };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const v = () => process.argv[++i];
  if (a === '--pods') o.pods = Number(v());
  else if (a === '--hold') o.hold = Number(v());
  else if (a === '--rounds') o.rounds = Number(v());
  else if (a === '--klet') o.klets = v().split(',').map((p) => path.resolve(p));
  else if (a === '--klet-flags') o.kletFlags = v().split(';').map((f) => f.split(' ').filter(Boolean));
  else if (a === '--cpu-prof') o.cpuProf = path.resolve(v());
  else if (a === '--trace-gc') o.traceGc = true;
  else if (a === '--shared-objects') o.shared = true;
  else if (a === '--out') o.out = path.resolve(v());
  else {
    process.stderr.write(`profile-cluster: unknown argument ${a}\n`);
    process.exit(2);
  }
}

const NODE_NAME = 'kprof';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
const cpuSeconds = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const v = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(v[11]) + Number(v[12])) / CLK_TCK;
};
const rssMB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
const round = (x, d = 2) => Number(x.toFixed(d));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-prof-'));
const tag = String(process.pid % 1000).padStart(3, '0');
const target = {
  endpoint: `unix://${tmp}/containerd.sock`,
  rootDir: tmp,
  network: { bridge: `kpr${tag}`, subnet: `10.85.${process.pid % 250}.0/24`, name: `klet-prof-${tag}` },
};
const KROOT = path.join(tmp, 'klet');
const MANIFESTS = path.join(tmp, 'manifests');
fs.mkdirSync(MANIFESTS, { recursive: true });
const PREFIX = `kpr${tag}-`;

async function waitFor(what, pred, timeoutMs, proc) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await pred()) return;
    if (proc && proc.exitCode !== null) throw new Error(`${what}: klet exited ${proc.exitCode}`);
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

const { startTestCluster, ensureNamespace, freePort } = await import('../test/helpers/cluster.ts');
const k8s = await import('@kubernetes/client-node');
await startManagedRuntime(target, { timeoutMs: 120_000 });
const cri = CriClient.connect(target.endpoint, { timeoutMs: 120_000 });
const cluster = await startTestCluster({ nodes: [NODE_NAME] });
const results = { date: new Date().toISOString(), options: o, runs: [] };
try {
  await ensureNamespace(cluster, 'default');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cluster.adminKubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const objName = (i) => (o.shared ? `${PREFIX}shared` : `${PREFIX}${String(i).padStart(3, '0')}`);
  for (let i = 0; i < (o.shared ? 1 : o.pods); i++) {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: objName(i) }, data: { 'app.conf': `pod ${i}\n` } } });
    await core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: objName(i) }, stringData: { password: `secret-${i}` } } });
  }
  const podBody = (i) => ({
    metadata: { name: `${PREFIX}${String(i).padStart(3, '0')}`, namespace: 'default' },
    spec: {
      nodeName: NODE_NAME,
      volumes: [{ name: 'conf', configMap: { name: objName(i) } }],
      containers: [
        {
          name: 'app',
          image: BUSYBOX_IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', "trap 'exit 0' TERM; sleep 2147483647 & wait"],
          env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: objName(i), key: 'password' } } }],
          volumeMounts: [{ name: 'conf', mountPath: '/etc/app' }],
        },
      ],
    },
  });
  const listMine = async () => (await core.listNamespacedPod({ namespace: 'default', fieldSelector: `spec.nodeName=${NODE_NAME}` })).items;
  const nodeReady = async () => {
    const node = await core.readNode({ name: NODE_NAME }).catch(() => null);
    return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  };
  const runOne = async (klet, label, round_, flags = []) => {
    fs.rmSync(KROOT, { recursive: true, force: true });
    const env = process.env;
    const nodeOpts = [...flags];
    if (o.cpuProf) nodeOpts.push('--cpu-prof', `--cpu-prof-dir=${path.join(o.cpuProf, `${label}-r${round_}`)}`);
    if (o.traceGc) nodeOpts.push('--trace-gc');
    const log = path.join(tmp, `klet-${label}-r${round_}.log`);
    const out = fs.openSync(log, 'w');
    const child = spawn(
      process.execPath,
      [...nodeOpts, klet, 'sync', '--manifest-dir', MANIFESTS, '--cgroups-per-qos=false', '--enforce-node-allocatable=none', '--kubeconfig', cluster.nodes[NODE_NAME].kubeconfig, '--root-dir', KROOT, '--container-runtime-endpoint', target.endpoint, '--node-name', NODE_NAME, '--address', '127.0.0.1', '--port', String(await freePort())],
      { stdio: ['ignore', out, out], env },
    );
    fs.closeSync(out);
    const exited = new Promise((r) => child.on('exit', r));
    try {
      await waitFor('node Ready', nodeReady, 120_000, child);
      await sleep(3000);
      const load0 = os.loadavg()[0];
      const c0 = cpuSeconds(child.pid);
      const t0 = Date.now();
      await Promise.all(Array.from({ length: o.pods }, (_, i) => core.createNamespacedPod({ namespace: 'default', body: podBody(i) })));
      await waitFor(
        `${o.pods} pods Ready`,
        async () => (await listMine()).filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length >= o.pods,
        300_000,
        child,
      );
      const burstMs = Date.now() - t0;
      await sleep(2000);
      const burstCpu = cpuSeconds(child.pid) - c0;
      await sleep(10_000);
      const rss0 = rssMB(child.pid);
      const h0 = cpuSeconds(child.pid);
      await sleep(o.hold * 1000);
      const holdCpu = cpuSeconds(child.pid) - h0;
      const r = { klet: label, round: round_, burstMs, burstCpuS: round(burstCpu), holdCpuS: round(holdCpu), holdCpuPct: round((100 * holdCpu) / o.hold), rssStartMB: round(rss0, 1), rssEndMB: round(rssMB(child.pid), 1), load1: [round(load0), round(os.loadavg()[0])] };
      process.stderr.write(`${JSON.stringify(r)}\n`);
      results.runs.push(r);
    } finally {
      await core.deleteCollectionNamespacedPod({ namespace: 'default', fieldSelector: `spec.nodeName=${NODE_NAME}` }).catch(() => undefined);
      await waitFor('pods gone', async () => (await listMine()).length === 0, 180_000, child).catch((e) => process.stderr.write(`${e.message}\n`));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      await core.deleteNode({ name: NODE_NAME }).catch(() => undefined);
      await coordination.deleteNamespacedLease({ name: NODE_NAME, namespace: 'kube-node-lease' }).catch(() => undefined);
      const { items } = await cri.listPodSandbox({});
      for (const sb of items) {
        await cri.stopPodSandbox({ podSandboxId: sb.id });
        await cri.removePodSandbox({ podSandboxId: sb.id });
      }
      await unmountAll(KROOT);
      for (const d of fs.existsSync('/var/log/pods') ? fs.readdirSync('/var/log/pods') : []) if (d.startsWith(`default_${PREFIX}`)) fs.rmSync(path.join('/var/log/pods', d), { recursive: true, force: true });
      if (o.traceGc) fs.copyFileSync(log, path.join(o.cpuProf ?? tmp, `gc-${label}-r${round_}.log`));
    }
  };
  for (let r = 0; r < o.rounds; r++) {
    const order = r % 2 === 0 ? o.klets.map((k, i) => [k, i]) : o.klets.map((k, i) => [k, i]).reverse();
    for (const [k, i] of order) await runOne(k, String.fromCharCode(65 + i), r, o.kletFlags[i]);
  }
  const summary = {};
  for (let i = 0; i < o.klets.length; i++) {
    const runs = results.runs.filter((x) => x.klet === String.fromCharCode(65 + i));
    const s = (key) => ({ median: round(median(runs.map((x) => x[key]))), min: Math.min(...runs.map((x) => x[key])), max: Math.max(...runs.map((x) => x[key])) });
    summary[`${String.fromCharCode(65 + i)} ${o.klets[i]}${o.kletFlags[i]?.length ? ` ${o.kletFlags[i].join(' ')}` : ''}`] = { burstCpuS: s('burstCpuS'), holdCpuPct: s('holdCpuPct'), rssEndMB: s('rssEndMB'), burstMs: s('burstMs') };
  }
  results.summary = summary;
  console.log(JSON.stringify(summary, null, 2));
} finally {
  await cluster.stop().catch(() => undefined);
  cri.close();
  await stopManagedRuntime(target).catch(() => undefined);
  spawnSync('ip', ['link', 'del', target.network.bridge]);
  if (o.out) fs.writeFileSync(o.out, JSON.stringify(results, null, 2) + '\n');
  if ((await mountsUnder(tmp)).length === 0 && !o.traceGc) fs.rmSync(tmp, { recursive: true, force: true });
}
