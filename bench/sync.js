// Benchmark: `klet sync` holding 110 pods (the kubelet's default max-pods),
// one container each, standalone, on a private containerd.
//  - steady-state CPU of the klet process over a window (budget <= 2% of one core)
//  - peak RSS (VmHWM; budget <= 120 MB)
//  - time from a container's exit to its new state being visible in klet's
//    view (local API /pods, polled every 50 ms), p50/p99 (budget p99 <= 1.2 s)
// Usage (root, after npm run build): node bench/sync.js [pods=110] [cpuWindowSeconds=60] [exits=20]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient } from '../dist/lib/cri/client.js';
import { startManagedRuntime, stopManagedRuntime } from '../dist/lib/runtime/containerd.js';
import { BUSYBOX_IMAGE } from '../dist/lib/runtime/containerd-config.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const pods = Number(process.argv[2] ?? 110);
const windowS = Number(process.argv[3] ?? 60);
const exits = Number(process.argv[4] ?? 20);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-bench-sync-'));
const target = { endpoint: `unix://${tmp}/containerd.sock`, rootDir: tmp, network: { bridge: 'kbsync0', subnet: '10.86.0.0/16', name: 'klet-bench-sync' } };
const manifests = path.join(tmp, 'manifests');
fs.mkdirSync(manifests);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const clkTck = 100; // USER_HZ on Linux

function cpuTicks(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}
function hwmKb(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}
function apiGet(socketPath, p) {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: p }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
    req.on('error', reject);
  });
}
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

await startManagedRuntime(target);
const cri = CriClient.connect(target.endpoint);
let klet;
try {
  for (let i = 0; i < pods; i++) {
    fs.writeFileSync(
      path.join(manifests, `p${String(i).padStart(3, '0')}.yaml`),
      `apiVersion: v1
kind: Pod
metadata: { name: bench-${i} }
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: app
      image: ${BUSYBOX_IMAGE}
      command: ["sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait"]
`,
    );
  }
  const t0 = Date.now();
  klet = spawn(process.execPath, [path.join(root, 'bin/run.js'), 'sync', '--manifest-dir', manifests, '--cgroups-per-qos=false', '--enforce-node-allocatable=none', '--root-dir', tmp, '--container-runtime-endpoint', target.endpoint, '--node-name', 'bench'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  klet.stderr.on('data', (d) => (stderr += d));
  for (;;) {
    const { containers } = await cri.listContainers({ filter: { state: { state: 1 } } });
    if (containers.length >= pods) break;
    if (Date.now() - t0 > 600_000) throw new Error(`only ${containers.length}/${pods} running after 10 min: ${stderr.slice(-400)}`);
    await sleep(500);
  }
  const startAllMs = Date.now() - t0;
  await sleep(10_000); // settle
  const c0 = cpuTicks(klet.pid);
  const w0 = Date.now();
  await sleep(windowS * 1000);
  const cpuPct = (((cpuTicks(klet.pid) - c0) / clkTck) * 1000 * 100) / (Date.now() - w0);
  const steadyHwmMB = hwmKb(klet.pid) / 1024;
  const steadyRssMB = Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${klet.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

  // Exit → visible in klet's view. Each round: kill one pod's container (its
  // shell exits 0 on TERM; restartPolicy Always restarts it), then poll /pods.
  const sock = path.join(tmp, 'klet.sock');
  const latencies = [];
  for (let i = 0; i < exits; i++) {
    const name = `bench-${i}-bench`;
    const { containers } = await cri.listContainers({ filter: { labelSelector: { 'io.kubernetes.pod.name': name }, state: { state: 1 } } });
    const c = containers[0];
    if (!c) continue;
    await cri.execSync({ containerId: c.id, cmd: ['kill', '-TERM', '1'], timeout: 5n }).catch(() => undefined);
    let finishedAt = 0;
    for (let k = 0; k < 100 && finishedAt === 0; k++) {
      const st = await cri.containerStatus({ containerId: c.id });
      if (st.status && st.status.finishedAt > 0n) finishedAt = Number(st.status.finishedAt / 1_000_000n);
      else await sleep(10);
    }
    for (;;) {
      const list = JSON.parse(await apiGet(sock, '/pods'));
      const pod = list.items.find((p) => p.metadata.name === name);
      const cs = pod?.status?.containerStatuses?.[0];
      if (cs && (cs.state?.terminated || cs.lastState?.terminated || cs.restartCount > 0 || cs.state?.waiting)) {
        latencies.push(Date.now() - finishedAt);
        break;
      }
      await sleep(50);
    }
    await sleep(300);
  }
  const rssMB = hwmKb(klet.pid) / 1024;
  const result = {
    pods,
    startAllMs,
    cpuWindowS: windowS,
    cpuPercentOfOneCore: Number(cpuPct.toFixed(2)),
    cpuBudget: 2,
    peakRssMB: Number(rssMB.toFixed(1)),
    peakRssBeforeExitsMB: Number(steadyHwmMB.toFixed(1)),
    steadyRssMB: Number(steadyRssMB.toFixed(1)),
    rssBudgetMB: 120,
    exitToViewP50Ms: pct(latencies, 50),
    exitToViewP99Ms: pct(latencies, 99),
    exitBudgetP99Ms: 1200,
    samples: latencies.length,
  };
  console.log(`klet sync holding ${pods} pods (all running ${(startAllMs / 1000).toFixed(1)} s after start)`);
  console.log(`steady-state CPU ${result.cpuPercentOfOneCore}% of one core over ${windowS}s (budget 2%)`);
  console.log(`peak RSS ${result.peakRssMB} MB over the whole run, ${result.peakRssBeforeExitsMB} MB up to the end of the CPU window; RSS at steady state ${result.steadyRssMB} MB (budget 120 MB)`);
  console.log(`container exit -> new state in klet's view: p50 ${result.exitToViewP50Ms} ms, p99 ${result.exitToViewP99Ms} ms over ${latencies.length} exits (budget p99 1200 ms)`);
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
} finally {
  klet?.kill('SIGTERM');
  await sleep(1000);
  const { items } = await cri.listPodSandbox({});
  await Promise.all(items.map(async (sb) => {
    await cri.stopPodSandbox({ podSandboxId: sb.id });
    await cri.removePodSandbox({ podSandboxId: sb.id });
  }));
  cri.close();
  await stopManagedRuntime(target);
  for (const d of fs.readdirSync('/var/log/pods')) if (d.startsWith('default_bench-')) fs.rmSync(path.join('/var/log/pods', d), { recursive: true, force: true });
  spawn('ip', ['link', 'del', 'kbsync0']);
  fs.rmSync(tmp, { recursive: true, force: true });
}
