// Benchmark: klet's prober alone at the scale, without a container
// runtime paying for the exec'd processes: the ProberManager (as `klet
// sync` runs it: jitter at start, metrics) probing PODS pods, each with a
// 1 s exec readiness probe through a real gRPC ExecSync call to a stub CRI
// server (its own process, answering exit 0 at once) and a 1 s httpGet
// liveness probe to busybox httpd on 127.0.0.1 (its own process).
// Measured in this process only (user + sys from process.cpuUsage, so the
// stub, httpd and their CPU are not in it): CPU per probe run and as % of
// one core, and the exact lateness of every run vs its schedule, next to a
// bare Node process's timer lateness on the same grid meanwhile (the
// machine's own scheduling delay).
// Usage (after npm run build): node bench/prober-stub.js [pods=110] [windowSeconds=60] [--dist DIR] [--slot-ms MS] [--json]
//   --slot-ms MS: the prober's slot grid (default 100; 1 is about one wake-up per run).
//   --dist DIR: the build to measure (default ./dist; another checkout's dist for a before/after pair).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { timerFloor } from './timer-floor.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const argv = process.argv.slice(2);
const distIdx = argv.indexOf('--dist');
const dist = path.resolve(distIdx >= 0 ? argv[distIdx + 1] : path.join(root, 'dist'));
if (distIdx >= 0) argv.splice(distIdx, 2);
const slotIdx = argv.indexOf('--slot-ms');
const slotMs = slotIdx >= 0 ? Number(argv[slotIdx + 1]) : undefined;
if (slotIdx >= 0) argv.splice(slotIdx, 2);
const args = argv.filter((a) => !a.startsWith('--'));
const pods = Number(args[0] ?? 110);
const windowS = Number(args[1] ?? 60);
const imp = (p) => import(pathToFileURL(path.join(dist, p)).href);
const { ProberManager } = await imp('lib/prober/manager.js');
const { CriClient } = await imp('lib/cri/client.js');
const { KletMetrics } = await imp('lib/metrics/metrics.js');
const { instrumentCri } = await imp('lib/metrics/instrument-cri.js');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-bench-prober-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const children = [];
const freePort = () => new Promise((r) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => r(port));
  });
});

// The stub CRI server: every RuntimeService method, ExecSync answering exit 0.
const STUB = `
const { Server, ServerCredentials } = require(${JSON.stringify(path.join(root, 'node_modules/@grpc/grpc-js'))});
import(${JSON.stringify(pathToFileURL(path.join(dist, 'lib/cri/gen/api.js')).href)}).then(({ RuntimeServiceDefinition: d }) => {
  // grpc-js's service definition from ts-proto's generic one.
  const service = {};
  for (const [k, m] of Object.entries(d.methods)) {
    service[k] = {
      path: '/' + d.fullName + '/' + m.name,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
      requestSerialize: (v) => Buffer.from(m.requestType.encode(v).finish()),
      requestDeserialize: (b) => m.requestType.decode(b),
      responseSerialize: (v) => Buffer.from(m.responseType.encode(m.responseType.fromPartial(v)).finish()),
      responseDeserialize: (b) => m.responseType.decode(b),
    };
  }
  const s = new Server();
  const impl = {};
  for (const k of Object.keys(service)) impl[k] = (_c, cb) => cb({ code: 12, details: 'stub' });
  impl.execSync = (_c, cb) => cb(null, { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 });
  s.addService(service, impl);
  s.bindAsync('unix://' + process.argv[1], ServerCredentials.createInsecure(), () => console.log('ready'));
});
`;
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : null;
};

const sock = path.join(tmp, 'cri.sock');
let manager;
try {
  const stub = spawn(process.execPath, ['-e', STUB, sock], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(stub);
  await new Promise((r) => stub.stdout.once('data', r));
  fs.mkdirSync(path.join(tmp, 'www'));
  fs.writeFileSync(path.join(tmp, 'www', 'index.html'), 'ok\n');
  const port = await freePort();
  const httpd = spawn('busybox', ['httpd', '-f', '-p', `127.0.0.1:${port}`, '-h', path.join(tmp, 'www')], { stdio: 'ignore' });
  children.push(httpd);
  await sleep(300);

  const metrics = new KletMetrics();
  const cri = instrumentCri(CriClient.connect(`unix://${sock}`), metrics);
  const runs = [];
  let counting = false;
  manager = new ProberManager({ cri, hostIPs: () => ['127.0.0.1'], metrics, jitterAtStart: true, ...(slotMs !== undefined ? { slotMs } : {}), onRun: (r) => counting && runs.push(r) });
  const now = Date.now();
  for (let i = 0; i < pods; i++) {
    const uid = `uid-${i}`;
    manager.addPod({
      metadata: { name: `probe-${i}`, namespace: 'default', uid },
      spec: {
        hostNetwork: true,
        containers: [{
          name: 'app', image: 'busybox',
          readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
          livenessProbe: { httpGet: { host: '127.0.0.1', path: '/', port }, periodSeconds: 1, failureThreshold: 30 },
        }],
      },
    });
    manager.updatePodStatus(uid, {
      uid, name: `probe-${i}`, namespace: 'default', sandboxes: [],
      containers: [{ id: `c${i}`, name: 'app', sandboxId: 'sb', state: 'running', createdAt: now, startedAt: now, finishedAt: 0, exitCode: 0, reason: '', message: '', image: 'busybox', imageRef: 'x', hash: 'h', restartCount: 0, type: 'regular', logPath: '' }],
    });
  }
  await sleep(10_000); // warm-up
  const floor = timerFloor(windowS * 1000);
  children.push(floor.child);
  counting = true;
  const c0 = process.cpuUsage();
  const t0 = Date.now();
  await sleep(windowS * 1000);
  const c = process.cpuUsage(c0);
  const elapsedS = (Date.now() - t0) / 1000;
  counting = false;
  const floorMs = await floor.done;
  const failed = runs.filter((r) => r.outcome !== 'success').length;
  const cpuMs = (c.user + c.system) / 1000;
  const result = {
    dist,
    slotMs: slotMs ?? 100,
    pods,
    windowS: Math.round(elapsedS),
    runs: runs.length,
    due: 2 * pods * Math.round(elapsedS),
    failed,
    cpuPercentOfOneCore: Number(((cpuMs / 1000 / elapsedS) * 100).toFixed(2)),
    cpuMsPerRun: Number((cpuMs / Math.max(1, runs.length)).toFixed(3)),
    userMsPerRun: Number((c.user / 1000 / Math.max(1, runs.length)).toFixed(3)),
    latenessMs: { p50: quantile(runs.map((r) => r.startedAt - r.dueAt), 0.5), p99: quantile(runs.map((r) => r.startedAt - r.dueAt), 0.99) },
    handlerMs: { p50: quantile(runs.map((r) => r.endedAt - r.startedAt), 0.5), p99: quantile(runs.map((r) => r.endedAt - r.startedAt), 0.99) },
    timerFloorMs: floorMs,
    loadavg: os.loadavg().map((x) => Number(x.toFixed(2))),
  };
  console.log(`prober (${dist}) probing ${pods} pods against a stub CRI server and busybox httpd: ${result.runs} runs of ${result.due} due, ${failed} failed`);
  console.log(`CPU ${result.cpuPercentOfOneCore}% of one core, ${result.cpuMsPerRun} ms per run (user ${result.userMsPerRun})`);
  console.log(`lateness p50 ${result.latenessMs.p50} ms, p99 ${result.latenessMs.p99} ms; a bare Node timer meanwhile: p50 ${result.timerFloorMs.p50} ms, p99 ${result.timerFloorMs.p99} ms; handler p50 ${result.handlerMs.p50} ms, p99 ${result.handlerMs.p99} ms; load ${result.loadavg.join(' ')}`);
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
} finally {
  manager?.stop();
  for (const ch of children) ch.kill('SIGTERM');
  await sleep(200);
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}
