// `klet dashboard` watching 110 pods that change state once a second.
//
// A local API (klet's own server, dist/lib/server/local-api.js, with klet's
// EventBus) serves 110 synthetic pods; every second each pod moves to its
// next state (Running ready → Running not ready → CrashLoopBackOff with a
// restart and a BackOff countdown → ContainerCreating → …), spread over the
// second, with the PLEG, pod-worker, kubelet-event and sync-loop events the
// real sync loop emits for such a change (~4 events per pod per second).
// No containerd: what is measured is the dashboard process, not the node.
//
// `klet dashboard` runs in a real terminal (tmux, 120x40, a private server)
// next to bench/dashboard-floor.js (the same feed and store, drawing
// nothing). Over the window: CPU of each (utime+stime from /proc), RSS every
// 10 s (first vs last minute: flat means within ±10 %), and every frame's
// time from the store's change to ink having written it to the terminal
// (React, layout, ink's output and the write; ink's own renderTime is given
// beside it, and the CPU time spent within the frame: its work without the
// wait for a core — the process's, all threads, and the main thread's
// alone, as V8's compiler and GC threads run beside the frame), via
// KLET_DASHBOARD_FRAME_STATS. Frames drawn for keys are not counted (none
// are sent). Every frame over 16 ms of CPU is listed (slowFrames) with the
// GC pauses that fell within it (perf_hooks 'gc' entries; `(idle)`: the
// dashboard's own collection between frames), and the GC totals by kind.
// BENCH_DASHBOARD_FRAMES_OUT=FILE keeps the raw per-frame figures.
//
// Usage: node bench/dashboard.js [seconds=600] [pods=110]
import { execFileSync } from 'node:child_process';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventBus } from '../dist/lib/events/bus.js';
import { KletMetrics } from '../dist/lib/metrics/metrics.js';
import { startLocalApi } from '../dist/lib/server/local-api.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const seconds = Number(process.argv[2] ?? 600);
const podCount = Number(process.argv[3] ?? 110);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-bench-dash-'));
const socket = path.join(dir, 'klet.sock');
const statsFile = path.join(dir, 'frames.json');
const tmuxServer = `klet-bench-dash-${process.pid}`;
const tmux = (...a) => execFileSync('tmux', ['-L', tmuxServer, ...a], { encoding: 'utf8' });
const HZ = 100; // USER_HZ
const startedAt = new Date();

const bus = new EventBus();
const STATES = ['ready', 'notready', 'crash', 'creating'];
const pods = Array.from({ length: podCount }, (_, i) => ({ i, name: `bench-${String(i).padStart(3, '0')}`, uid: `uid-${i}`, step: i % 4, restarts: 0 }));

function podObject(p) {
  const state = STATES[p.step];
  const cs = {
    name: 'app',
    image: 'busybox',
    imageID: 'sha256:x',
    restartCount: p.restarts,
    ready: state === 'ready',
    started: state === 'ready' || state === 'notready',
    state:
      state === 'crash'
        ? { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=app' } }
        : state === 'creating'
          ? { waiting: { reason: 'ContainerCreating' } }
          : { running: { startedAt: startedAt.toISOString() } },
    lastState: p.restarts > 0 ? { terminated: { exitCode: 1, reason: 'Error', finishedAt: new Date().toISOString() } } : {},
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: 'bench', uid: p.uid, creationTimestamp: startedAt.toISOString(), annotations: { 'kubernetes.io/config.source': 'file' } },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    status: {
      phase: 'Running',
      podIP: `10.88.${Math.floor(p.i / 250)}.${(p.i % 250) + 2}`,
      conditions: [{ type: 'Ready', status: state === 'ready' ? 'True' : 'False' }],
      containerStatuses: [cs],
    },
  };
}

function step(p) {
  p.step = (p.step + 1) % 4;
  const pod = `bench/${p.name}`;
  const cid = `${p.uid}-${p.restarts}`.padEnd(64, '0');
  const state = STATES[p.step];
  if (state === 'crash') {
    p.restarts++;
    bus.emit({ kind: 'PLEG', type: 'ContainerDied', podUid: p.uid, pod, containerId: cid });
    bus.emit({ kind: 'Event', pod, uid: p.uid, type: 'Warning', reason: 'BackOff', message: `back-off 10s restarting failed container=app pod=${p.name}_bench(${p.uid})`, container: 'app', retryAt: new Date(Date.now() + 10_000).toISOString() });
  } else if (state === 'ready') {
    bus.emit({ kind: 'PLEG', type: 'ContainerStarted', podUid: p.uid, pod, containerId: cid });
    bus.emit({ kind: 'Event', pod, uid: p.uid, type: 'Normal', reason: 'Started', message: 'Started container app', container: 'app' });
  } else {
    bus.emit({ kind: 'PodLifecycle', pod, uid: p.uid, state: 'SyncPod' });
  }
  bus.emit({ kind: 'SyncLoopIteration', trigger: 'pleg', durationMs: 0.2 + Math.random(), pods: [pod] });
}

const t0 = Date.now();
const api = await startLocalApi({
  socketPath: socket,
  handlers: {
    healthz: () => ({ ok: true, checks: {} }),
    pods: async () => ({ apiVersion: 'v1', kind: 'PodList', metadata: {}, items: pods.map(podObject) }),
    node: async () => ({
      kind: 'KletNodeStatus',
      nodeName: 'bench',
      startedAt: startedAt.toISOString(),
      runtime: { name: 'containerd', version: 'bench', conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }], error: null },
      sources: [{ name: 'file', lastReadAt: new Date().toISOString(), errors: [] }],
      pleg: { healthy: true, message: 'ok', lastRelistAt: new Date().toISOString(), lastRelistDurationMs: 4.2, error: null },
      podWorkers: { counts: { SyncPod: podCount }, pending: 3, running: 1 },
      lastEventSeq: bus.lastSeq,
    }),
    events: bus,
    metrics: new KletMetrics(),
  },
});
// Each pod changes once a second, at its own offset within the second.
let next = 0;
const ticker = setInterval(() => {
  const slot = Math.floor(((Date.now() - t0) % 1000) / (1000 / podCount));
  while (next !== slot) {
    step(pods[next]);
    next = (next + 1) % podCount;
  }
}, 10);
const hk = setInterval(() => bus.emit({ kind: 'SyncLoopIteration', trigger: 'housekeeping', durationMs: 1.1, pods: [] }), 2000);

const env = `KLET_DASHBOARD_FRAME_STATS=${statsFile} ${process.env.BENCH_DASHBOARD_ENV ?? ""}`;
tmux('-f', '/dev/null', 'new-session', '-d', '-s', 'b', '-x', '120', '-y', '40', `env ${env} TERM=xterm-256color ${process.execPath} ${process.env.BENCH_DASHBOARD_NODE_ARGS ?? ''} ${path.join(root, 'bin/run.js')} dashboard --socket ${socket}`);
const floor = spawn(process.execPath, [path.join(root, 'bench/dashboard-floor.js'), socket], { stdio: 'inherit' });

function dashboardPid() {
  const pane = Number(tmux('display-message', '-p', '-t', 'b', '#{pane_pid}').trim());
  // `sh -c` may stand between tmux and node.
  try {
    const child = execFileSync('pgrep', ['-P', String(pane), 'node'], { encoding: 'utf8' }).trim().split('\n')[0];
    if (child) return Number(child);
  } catch {
    /* no child: the pane runs node itself */
  }
  return pane;
}
const cpuTicks = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
};
const rssMb = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

await sleep(10_000); // start-up and the first /pods are not the steady state
const pid = dashboardPid();
const screenCheck = tmux('capture-pane', '-p', '-t', 'b');
if (!/PODS \d+/.test(screenCheck)) throw new Error(`the dashboard is not showing pods:\n${screenCheck}`);
const samples = [];
const start = { t: Date.now(), dash: cpuTicks(pid), floor: cpuTicks(floor.pid), load: os.loadavg()[0] };
for (let s = 0; s < seconds; s += 10) {
  await sleep(10_000);
  samples.push({ t: Math.round((Date.now() - start.t) / 1000), dashRss: rssMb(pid), floorRss: rssMb(floor.pid) });
}
const end = { t: Date.now(), dash: cpuTicks(pid), floor: cpuTicks(floor.pid), load: os.loadavg()[0] };
const screen = tmux('capture-pane', '-p', '-t', 'b');
tmux('send-keys', '-t', 'b', 'q');
// Until the dashboard has exited (its frame stats, and a --cpu-prof profile when asked for, are written on exit).
for (let i = 0; i < 100 && fs.existsSync(`/proc/${pid}`); i++) await sleep(100);
try {
  tmux('kill-server');
} catch {
  // the server ends by itself when its one pane exits
}
floor.kill('SIGTERM');
clearInterval(ticker);
clearInterval(hk);
await api.close();

const wall = (end.t - start.t) / 1000;
const pct = (ticks) => Number(((ticks / HZ / wall) * 100).toFixed(2));
const stats = JSON.parse(fs.readFileSync(statsFile, 'utf8'));
if (process.env.BENCH_DASHBOARD_FRAMES_OUT) fs.copyFileSync(statsFile, process.env.BENCH_DASHBOARD_FRAMES_OUT);
// The frames over 16 ms of CPU, broken down: the GC pauses that fell within
// each (perf_hooks 'gc' entries: 1 minor/scavenge, 4 major, 8 incremental
// marking, 16 weak callbacks; flag 4: forced, i.e. the dashboard's idle GC), and where in the run it was (frame index).
const GC_KINDS = { 1: 'minor', 2: 'minor-ms', 4: 'major', 8: 'incremental', 16: 'weakcb' };
const slow = [];
for (let i = 0; i < stats.latency.length; i++) {
  if (!(stats.cpu[i] > 16 || stats.mainCpu[i] > 16)) continue;
  const s0 = stats.start[i];
  const s1 = s0 + stats.latency[i];
  const gcs = stats.gc.filter((g) => g.startMs < s1 && g.startMs + g.durationMs > s0);
  const gcMs = gcs.reduce((n, g) => n + Math.min(s1, g.startMs + g.durationMs) - Math.max(s0, g.startMs), 0);
  slow.push({
    frame: i,
    cpuMs: Number(stats.cpu[i].toFixed(1)),
    mainCpuMs: Number(stats.mainCpu[i].toFixed(1)),
    latencyMs: Number(stats.latency[i].toFixed(1)),
    gcMs: Number(gcMs.toFixed(1)),
    gc: gcs.map((g) => `${GC_KINDS[g.kind] ?? g.kind}${g.flags & 4 ? '(idle)' : ''}:${g.durationMs.toFixed(1)}`).join(' '),
  });
}
const inFrames = (kind, forced) => {
  let n = 0;
  let ms = 0;
  for (const g of stats.gc.filter((x) => x.kind === kind && ((x.flags & 4) !== 0) === forced)) {
    n++;
    ms += g.durationMs;
  }
  return { count: n, totalMs: Number(ms.toFixed(1)) };
};
// The first frames (the first paint, then code not yet optimised by V8) apart from the rest.
const STARTUP_FRAMES = 10;
const steadyCpu = stats.cpu.slice(STARTUP_FRAMES).sort((a, b) => a - b);
const steadyMainCpu = stats.mainCpu.slice(STARTUP_FRAMES).sort((a, b) => a - b);
const startupFrames = stats.cpu.slice(0, STARTUP_FRAMES).map((c, i) => `${c.toFixed(1)}/${stats.mainCpu[i].toFixed(1)}`).join(' ');
const frames = stats.latency.sort((a, b) => a - b);
const inkRender = stats.inkRender.sort((a, b) => a - b);
const frameCpu = stats.cpu.sort((a, b) => a - b);
const frameMainCpu = stats.mainCpu.sort((a, b) => a - b);
const quantile = (xs, p) => Number((xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN).toFixed(2));
const q = (p) => quantile(frames, p);
const minuteS = Math.min(60, Math.floor(seconds / 3));
const avg = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const firstRss = avg(samples.filter((s) => s.t <= minuteS).map((s) => s.dashRss));
const lastRss = avg(samples.filter((s) => s.t > (samples.at(-1)?.t ?? 0) - minuteS).map((s) => s.dashRss));
const dashCpu = pct(end.dash - start.dash);
const floorCpu = pct(end.floor - start.floor);
const result = {
  node: process.version,
  pods: podCount,
  windowS: Math.round(wall),
  loadavg1: { start: start.load, end: end.load },
  events: bus.lastSeq,
  dashboardCpuPct: dashCpu,
  floorCpuPct: floorCpu,
  screenCostPct: Number((dashCpu - floorCpu).toFixed(2)),
  frames: frames.length,
  fps: Number((frames.length / (wall + 10)).toFixed(2)),
  frameMs: { p50: q(0.5), p99: q(0.99), max: q(1), over16: frames.filter((ms) => ms > 16).length },
  frameCpuMs: { p50: quantile(frameCpu, 0.5), p99: quantile(frameCpu, 0.99), max: quantile(frameCpu, 1), over16: frameCpu.filter((ms) => ms > 16).length },
  frameMainThreadCpuMs: { p50: quantile(frameMainCpu, 0.5), p99: quantile(frameMainCpu, 0.99), max: quantile(frameMainCpu, 1), over16: frameMainCpu.filter((ms) => ms > 16).length },
  afterFirstFrames: {
    frames: steadyCpu.length,
    frameCpuMs: { p50: quantile(steadyCpu, 0.5), p99: quantile(steadyCpu, 0.99), max: quantile(steadyCpu, 1), over16: steadyCpu.filter((ms) => ms > 16).length },
    frameMainThreadCpuMs: { p50: quantile(steadyMainCpu, 0.5), p99: quantile(steadyMainCpu, 0.99), max: quantile(steadyMainCpu, 1), over16: steadyMainCpu.filter((ms) => ms > 16).length },
  },
  firstFramesCpuMs: startupFrames,
  gc: {
    minor: inFrames(1, false),
    major: inFrames(4, false),
    incremental: inFrames(8, false),
    weakcb: inFrames(16, false),
    idleMinor: inFrames(1, true),
    idleMajor: inFrames(4, true),
  },
  slowFrames: slow,
  inkRenderMs: { p50: quantile(inkRender, 0.5), p99: quantile(inkRender, 0.99), max: quantile(inkRender, 1) },
  floorRssMb: samples.map((s) => Number(s.floorRss.toFixed(1))),
  rssMb: { first: Number(firstRss.toFixed(1)), last: Number(lastRss.toFixed(1)), changePct: Number((((lastRss - firstRss) / firstRss) * 100).toFixed(1)), samples: samples.map((s) => Number(s.dashRss.toFixed(1))) },
  budgets: { cpuPct: 5, frameP99Ms: 16, rssChangePct: 10 },
};
console.log(JSON.stringify(result, null, 2));
console.log(screen.split('\n').slice(0, 12).join('\n'));
fs.rmSync(dir, { recursive: true, force: true });
