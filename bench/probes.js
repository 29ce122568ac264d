// Benchmark: `klet sync` probing pods: each pod has a 1 s readiness exec
// probe (`true`, through CRI ExecSync) and a 1 s liveness httpGet probe
// (busybox httpd in the pod), the shape (110 pods).
//  - klet's own CPU (utime+stime of the klet process; the exec'd processes
//    run under containerd's shims and runc, which are measured apart)
//    (budget <= 15% of one core)
//  - probe scheduling lateness: how long after its tick each run started,
//    from klet_prober_probe_lateness_seconds (budget p99 <= 50 ms)
//  - RSS growth of klet over the window (budget <= 5%)
//  - probes run vs due, and failures (a loaded runtime makes exec probes time out)
// Usage (root, after npm run build): node bench/probes.js [pods=110] [windowSeconds=600] [--json] [--cpu-prof DIR] [--no-probes]
// --no-probes: the same pods without probes, for klet's own cost of running them (the baseline).
// --runtime-nice N: containerd (and so its shims, runc and the exec'd processes, which inherit it) at
// nice N: on a machine with fewer cores than the runtime needs for the probes (110 exec probes a
// second take ~3.3 cores here), klet then still gets a core when it wakes, so its lateness is its own.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient } from '../dist/lib/cri/client.js';
import { layoutFor, managedPid, shimPids, startManagedRuntime, stopManagedRuntime } from '../dist/lib/runtime/containerd.js';
import { BUSYBOX_IMAGE } from '../dist/lib/runtime/containerd-config.js';
import { timerFloor } from './timer-floor.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const argv = process.argv.slice(2);
const profIdx = argv.indexOf('--cpu-prof');
const cpuProfDir = profIdx >= 0 ? path.resolve(argv[profIdx + 1] ?? '') : undefined;
if (profIdx >= 0) argv.splice(profIdx, 2);
const withProbes = !argv.includes('--no-probes');
const niceIdx = argv.indexOf('--runtime-nice');
const runtimeNice = niceIdx >= 0 ? Number(argv[niceIdx + 1]) : undefined;
if (runtimeNice !== undefined && !(Number.isInteger(runtimeNice) && runtimeNice >= -20 && runtimeNice <= 19)) {
  console.error(`bench/probes.js: --runtime-nice: expected an integer from -20 to 19, got ${JSON.stringify(argv[niceIdx + 1] ?? '')}`);
  process.exit(1);
}
if (niceIdx >= 0) argv.splice(niceIdx, 2);
const args = argv.filter((a) => !a.startsWith('--'));
const pods = Number(args[0] ?? 110);
const windowS = Number(args[1] ?? 600);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-bench-probes-'));
const target = { endpoint: `unix://${tmp}/containerd.sock`, rootDir: tmp, network: { bridge: 'kbprobe0', subnet: '10.85.0.0/16', name: 'klet-bench-probes' } };
const manifests = path.join(tmp, 'manifests');
fs.mkdirSync(manifests);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const clkTck = 100; // USER_HZ on Linux

function cpuTicks(pid) {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
    // utime + stime + cutime + cstime: a shim's reaped children (runc, the exec'd processes) count for it.
    return Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  } catch {
    return 0;
  }
}
function ownTicks(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}
function rssKb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
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
/** Sum of a metric's samples matching `filter` (a substring of the label set), by `le` for histograms. */
function scrape(text, name, filter = '') {
  const out = new Map();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\S+?)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name || !(m[2] ?? '').includes(filter)) continue;
    const le = /le="([^"]+)"/.exec(m[2] ?? '')?.[1] ?? '';
    out.set(le, (out.get(le) ?? 0) + Number(m[3]));
  }
  return out;
}
/** The upper bound of the bucket holding quantile q, from cumulative bucket deltas. */
function bucketQuantile(before, after, q) {
  const les = [...after.keys()].filter((k) => k !== '+Inf').map(Number).sort((a, b) => a - b);
  const total = (after.get('+Inf') ?? 0) - (before.get('+Inf') ?? 0);
  for (const le of les) {
    const n = (after.get(String(le)) ?? 0) - (before.get(String(le)) ?? 0);
    if (n >= q * total) return le;
  }
  return Infinity;
}

const PROBES = `      readinessProbe:
        exec: { command: ["true"] }
        periodSeconds: 1
      livenessProbe:
        httpGet: { path: /, port: 8080 }
        periodSeconds: 1
        failureThreshold: 30
`;

await startManagedRuntime(target);
/**
 * containerd and every process below it at `nice`, every thread of each:
 * its shims, runc, the pods' processes. Repeated every
 * 2 s while the bench runs, for what starts later (runc exec for each exec
 * probe inherits it from its shim).
 */
function reniceRuntime(rootPid, nice) {
  const parent = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited meanwhile
    }
  }
  // Shims are re-parented to init (or a subreaper) once started: they are found by their -address.
  const shims = new Set();
  for (const pid of parent.keys()) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`-address\0${target.endpoint.replace('unix://', '')}`)) shims.add(pid);
    } catch {
      // exited meanwhile
    }
  }
  for (const pid of parent.keys()) {
    let p = pid;
    let ours = false;
    for (let hops = 0; p > 1 && hops < 64 && !ours; hops++) {
      ours = p === rootPid || shims.has(p);
      p = parent.get(p) ?? 0;
    }
    if (!ours) continue;
    // A nice value is per thread on Linux: every thread of a Go process (containerd, a shim) is set, or
    // what a thread at 0 forks (runc, from a shim) starts at 0.
    let tasks = [];
    try {
      tasks = fs.readdirSync(`/proc/${pid}/task`).map(Number);
    } catch {
      // exited meanwhile
    }
    for (const tid of tasks) {
      try {
        if (os.getPriority(tid) !== nice) os.setPriority(tid, nice);
      } catch {
        // exited meanwhile
      }
    }
  }
}
let reniceTimer;
if (runtimeNice !== undefined) {
  const pid = await managedPid(layoutFor(target));
  if (!pid) throw new Error('--runtime-nice: no containerd pid');
  reniceRuntime(pid, runtimeNice);
  reniceTimer = setInterval(() => reniceRuntime(pid, runtimeNice), 2000);
}
const cri = CriClient.connect(target.endpoint);
const sock = path.join(tmp, 'klet.sock');
let klet;
try {
  for (let i = 0; i < pods; i++) {
    fs.writeFileSync(
      path.join(manifests, `p${String(i).padStart(3, '0')}.yaml`),
      `apiVersion: v1
kind: Pod
metadata: { name: probe-${i} }
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: app
      image: ${BUSYBOX_IMAGE}
      command: ["sh", "-c", "mkdir -p /www && echo ok > /www/index.html && httpd -p 8080 -h /www && trap 'exit 0' TERM; sleep 2147483647 & wait"]
${withProbes ? PROBES : ''}`,
    );
  }
  const t0 = Date.now();
  const nodeFlags = cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : [];
  klet = spawn(process.execPath, [...nodeFlags, path.join(root, 'bin/run.js'), 'sync', '--manifest-dir', manifests, '--cgroups-per-qos=false', '--enforce-node-allocatable=none', '--root-dir', tmp, '--container-runtime-endpoint', target.endpoint, '--node-name', 'bench'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  klet.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  let ready = 0;
  for (;;) {
    await sleep(1000);
    if (!fs.existsSync(sock)) continue;
    const list = JSON.parse(await apiGet(sock, '/pods').catch(() => '{"items":[]}'));
    ready = list.items.filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
    if (ready >= pods) break;
    if (Date.now() - t0 > 900_000) throw new Error(`only ${ready}/${pods} Ready after 15 min: ${stderr.slice(-400)}`);
  }
  const allReadyMs = Date.now() - t0;
  await sleep(20_000); // settle

  const runtimePids = async () => [await managedPid(layoutFor(target)), ...(await shimPids(layoutFor(target).socketPath))].filter((p) => p);
  const rtPids0 = await runtimePids();
  const rt0 = rtPids0.reduce((a, p) => a + cpuTicks(p), 0);
  const c0 = ownTicks(klet.pid);
  const rss0 = rssKb(klet.pid);
  const m0 = await apiGet(sock, '/metrics');
  // The machine's own timer lateness over the window: a bare Node process waking
  // on the same 100 ms grid (what any process here gets, klet or not).
  const floor = timerFloor(windowS * 1000);
  const w0 = Date.now();
  const rssSamples = [];
  while (Date.now() - w0 < windowS * 1000) {
    await sleep(Math.min(30_000, windowS * 1000 - (Date.now() - w0)));
    rssSamples.push(rssKb(klet.pid));
  }
  const elapsedS = (Date.now() - w0) / 1000;
  const floorMs = await floor.done;
  const kletTicks = ownTicks(klet.pid) - c0;
  const kletCpuPct = (kletTicks / clkTck / elapsedS) * 100;
  const rt1 = (await runtimePids()).reduce((a, p) => a + cpuTicks(p), 0);
  const rss1 = rssKb(klet.pid);
  const m1 = await apiGet(sock, '/metrics');

  const late0 = scrape(m0, 'klet_prober_probe_lateness_seconds_bucket');
  const late1 = scrape(m1, 'klet_prober_probe_lateness_seconds_bucket');
  const runs = (m, f) => [...scrape(m, 'prober_probe_total', f).values()].reduce((a, b) => a + b, 0);
  const ran = runs(m1, '') - runs(m0, '');
  const failed = runs(m1, 'result="failed"') - runs(m0, 'result="failed"');
  const durP99 = (t) => bucketQuantile(scrape(m0, 'prober_probe_duration_seconds_bucket', `probe_type="${t}"`), scrape(m1, 'prober_probe_duration_seconds_bucket', `probe_type="${t}"`), 0.99);
  const result = {
    pods,
    allReadyMs,
    windowS: Math.round(elapsedS),
    kletCpuPercentOfOneCore: Number(kletCpuPct.toFixed(2)),
    cpuBudget: 15,
    kletCpuMsPerProbeRun: 0,
    runtimeCpuPercentOfOneCore: Number((((rt1 - rt0) / clkTck / elapsedS) * 100).toFixed(1)),
    probesRun: ran,
    probesDue: withProbes ? Math.round(2 * pods * elapsedS) : 0,
    probesFailed: failed,
    latenessP50S: bucketQuantile(late0, late1, 0.5),
    latenessP99S: bucketQuantile(late0, late1, 0.99),
    latenessBudgetP99S: 0.05,
    handlerP99S: { exec: durP99('Readiness'), httpGet: durP99('Liveness') },
    timerFloorMs: floorMs,
    rssStartMB: Number((rss0 / 1024).toFixed(1)),
    rssEndMB: Number((rss1 / 1024).toFixed(1)),
    rssMaxMB: Number((Math.max(rss0, ...rssSamples) / 1024).toFixed(1)),
    rssGrowthPercent: Number((((rss1 - rss0) / rss0) * 100).toFixed(1)),
    rssBudgetPercent: 5,
    loadavg: os.loadavg().map((x) => Number(x.toFixed(2))),
    ...(runtimeNice !== undefined ? { runtimeNice } : {}),
  };
  result.kletCpuMsPerProbeRun = ran > 0 ? Number(((kletTicks * 1000) / clkTck / ran).toFixed(3)) : null;
  console.log(`klet sync ${withProbes ? 'probing' : 'running (no probes)'} ${pods} pods (1 s exec readiness + 1 s httpGet liveness each; all Ready ${(allReadyMs / 1000).toFixed(1)} s after start)`);
  console.log(`klet CPU ${result.kletCpuPercentOfOneCore}% of one core over ${result.windowS}s (budget 15%), ${result.kletCpuMsPerProbeRun ?? 'n/a'} ms per probe run; containerd + shims (with runc and the exec'd processes) ${result.runtimeCpuPercentOfOneCore}%`);
  console.log(`probes run ${ran} of ${result.probesDue} due, ${failed} failed; lateness p50 <= ${result.latenessP50S * 1000} ms, p99 <= ${result.latenessP99S * 1000} ms (budget 50 ms); a bare Node timer on this machine meanwhile: p50 ${floorMs.p50} ms, p99 ${floorMs.p99} ms late; handler p99 exec <= ${result.handlerP99S.exec} s, httpGet <= ${result.handlerP99S.httpGet} s`);
  console.log(`RSS ${result.rssStartMB} MB -> ${result.rssEndMB} MB (${result.rssGrowthPercent}%, max ${result.rssMaxMB} MB; budget 5%); load average ${result.loadavg.join(' ')}`);
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
} finally {
  clearInterval(reniceTimer);
  klet?.kill('SIGTERM');
  await sleep(1500);
  const { items } = await cri.listPodSandbox({});
  await Promise.all(items.map(async (sb) => {
    await cri.stopPodSandbox({ podSandboxId: sb.id });
    await cri.removePodSandbox({ podSandboxId: sb.id });
  }));
  cri.close();
  await stopManagedRuntime(target);
  for (const d of fs.readdirSync('/var/log/pods')) if (d.startsWith('default_probe-')) fs.rmSync(path.join('/var/log/pods', d), { recursive: true, force: true });
  spawn('ip', ['link', 'del', 'kbprobe0']);
  fs.rmSync(tmp, { recursive: true, force: true });
}
