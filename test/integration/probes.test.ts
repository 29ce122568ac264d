/**
 * Probes under `klet sync`, end to end: the BUILT CLI against a private
 * containerd with the local busybox image (httpd, nc), one sync for the
 * file watching one manifest directory, each test adding its pod and
 * watching the pod's status on the local API's /pods (computed from the
 * prober's results), its events on /events and its metrics on /metrics.
 * Tests change what a probe sees by exec'ing into the container through CRI.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1ContainerStatus, V1Pod, V1PodList } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { spawn } from 'node:child_process';
import { cleanEnv, explain, KLET_BIN, runKlet } from '../helpers/cli.js';
import { startHealthServer, type HealthServer } from '../helpers/grpc-health.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { apiEvents, apiGet, eventually, killAllSyncs, sleep, startSync, type SyncEvent, type SyncProcess } from '../helpers/sync.js';

const NODE = 'probenode';
const NS = 'kprobet';
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";

let rt: TestRuntime;
let cri: CriClient;
let sync: SyncProcess;
let dir: string;
let grpcServer: HealthServer | undefined;

function manifest(name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec: { terminationGracePeriodSeconds: 2, ...spec } }, null, 2);
}

function addPod(name: string, spec: Record<string, unknown>): void {
  const tmp = path.join(dir, `.${name}.tmp`);
  fs.writeFileSync(tmp, manifest(name, spec));
  fs.renameSync(tmp, path.join(dir, `${name}.json`));
}

function container(script: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'c', image: rt.images.busybox, command: ['sh', '-c', script], ...extra };
}

async function pod(name: string): Promise<V1Pod> {
  const res = await apiGet(sync.socketPath, '/pods');
  expect(res.status).toBe(200);
  const p = (JSON.parse(res.body) as V1PodList).items.find((x) => x.metadata?.name === `${name}-${NODE}` && x.metadata?.namespace === NS);
  if (!p) throw new Error(`pod ${name} not in /pods`);
  return p;
}

function cstatus(p: V1Pod, name = 'c'): V1ContainerStatus {
  const c = p.status?.containerStatuses?.find((x) => x.name === name);
  if (!c) throw new Error(`no status for container ${name}: ${JSON.stringify(p.status)}`);
  return c;
}

function condition(p: V1Pod, type: string): string | undefined {
  return p.status?.conditions?.find((c) => c.type === type)?.status;
}

/** The running container's CRI id (from the status). */
function containerId(p: V1Pod, name = 'c'): string {
  const id = cstatus(p, name).containerID ?? '';
  return id.replace(/^[a-z]+:\/\//, '');
}

async function exec(p: V1Pod, cmd: string): Promise<void> {
  const res = await cri.execSync({ containerId: containerId(p), cmd: ['sh', '-c', cmd], timeout: 5n });
  expect(res.exitCode, Buffer.from(res.stderr).toString()).toBe(0);
}

async function podEvents(name: string, pred: (e: SyncEvent) => boolean = () => true): Promise<SyncEvent[]> {
  return (await apiEvents(sync.socketPath)).filter((e) => e.pod === `${NS}/${name}-${NODE}` && pred(e));
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-probes-'));
  sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir: dir, fileCheckFrequency: '1s' });
}, 120_000);

afterAll(async () => {
  await grpcServer?.close();
  if (sync?.running) {
    // Remove every manifest and let the sync take the pods down.
    for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f));
    await eventually(async () => expect((await cri.listPodSandbox()).items).toEqual([]), 60_000, 500).catch(() => undefined);
    await sync.stop();
  }
  await killAllSyncs();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  for (const d of fs.readdirSync('/var/log/pods').filter((x) => x.startsWith(`${NS}_`))) fs.rmSync(path.join('/var/log/pods', d), { recursive: true, force: true });
  cri?.close();
  await rt?.stop();
}, 120_000);

describe('probes under klet sync', () => {
  it('an httpGet readiness probe flips the pod Ready when the file appears and un-Ready when it goes', async () => {
    addPod('ready', {
      containers: [
        container(`mkdir -p /www && httpd -p 8080 -h /www && ${SLEEP_FOREVER}`, {
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1, failureThreshold: 1 },
        }),
      ],
    });
    const running = await eventually(async () => {
      const p = await pod('ready');
      expect(cstatus(p).state?.running, JSON.stringify(p.status)).toBeDefined();
      return p;
    }, 30_000);
    // Running, probed and failing (404): not ready.
    await eventually(async () => {
      const ev = await podEvents('ready', (e) => e.kind === 'Event' && e.reason === 'Unhealthy');
      expect(ev[0]?.message).toBe('Readiness probe failed: HTTP probe failed with statuscode: 404');
    }, 15_000);
    let p = await pod('ready');
    expect(cstatus(p).ready).toBe(false);
    expect(condition(p, 'Ready')).toBe('False');
    expect(condition(p, 'ContainersReady')).toBe('False');

    await exec(running, 'echo ok > /www/ready');
    p = await eventually(async () => {
      const x = await pod('ready');
      expect(condition(x, 'Ready')).toBe('True');
      return x;
    }, 10_000);
    expect(cstatus(p).ready).toBe(true);
    expect(condition(p, 'ContainersReady')).toBe('True');

    await exec(running, 'rm /www/ready');
    await eventually(async () => {
      const x = await pod('ready');
      expect(condition(x, 'Ready')).toBe('False');
      expect(cstatus(x).ready).toBe(false);
    }, 10_000);
    const results = await podEvents('ready', (e) => e.kind === 'ProbeResult');
    expect(results.map((e) => e.result)).toEqual(['Failure', 'Success', 'Failure']);
    // Each readiness change had the pod's worker sync it (the kubelet's readiness manager updates).
    const probeSyncs = (await apiEvents(sync.socketPath)).filter((e) => e.kind === 'SyncLoopIteration' && e.trigger === 'probe' && ((e.pods as string[] | undefined) ?? []).includes(`${NS}/ready-${NODE}`));
    expect(probeSyncs.length).toBeGreaterThanOrEqual(3);
    // The kubelet's metrics, with its labels.
    const metrics = (await apiGet(sync.socketPath, '/metrics')).body;
    expect(metrics).toMatch(new RegExp(`prober_probe_total\\{probe_type="Readiness",result="successful",container="c",pod="ready-${NODE}",namespace="${NS}",pod_uid="[0-9a-f-]+"\\} [1-9]`));
    expect(metrics).toMatch(new RegExp(`prober_probe_duration_seconds_count\\{probe_type="Readiness",container="c",pod="ready-${NODE}",namespace="${NS}"\\} [1-9]`));
  }, 90_000);

  it('a liveness exec probe failing 3 times restarts the container, with the kubelet events', async () => {
    addPod('live', {
      containers: [
        container(`touch /tmp/healthy && ${SLEEP_FOREVER}`, {
          livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 3 },
        }),
      ],
    });
    const first = await eventually(async () => {
      const p = await pod('live');
      expect(cstatus(p).state?.running).toBeDefined();
      return p;
    }, 30_000);
    // Healthy for a while: no restart.
    await sleep(3000);
    expect(cstatus(await pod('live')).restartCount).toBe(0);
    await exec(first, 'rm /tmp/healthy');
    const after = await eventually(async () => {
      const p = await pod('live');
      expect(cstatus(p).restartCount).toBe(1);
      expect(cstatus(p).state?.running).toBeDefined();
      return p;
    }, 30_000);
    expect(containerId(after)).not.toBe(containerId(first));
    const events = await podEvents('live', (e) => e.kind === 'Event' && (e.reason === 'Unhealthy' || e.reason === 'Killing'));
    const msg = "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory\n";
    expect(events.slice(0, 4).map((e) => [e.reason, e.message])).toEqual([
      ['Unhealthy', msg],
      ['Unhealthy', msg],
      ['Unhealthy', msg],
      ['Killing', 'Container c failed liveness probe, will be restarted'],
    ]);
    // The new container is healthy again (its script recreated the file): it stays.
    await sleep(4000);
    expect(cstatus(await pod('live')).restartCount).toBe(1);
  }, 90_000);

  it('a startup probe holds off liveness and readiness until it passes', async () => {
    addPod('startup', {
      containers: [
        container(SLEEP_FOREVER, {
          startupProbe: { exec: { command: ['cat', '/tmp/started'] }, periodSeconds: 1, failureThreshold: 60 },
          // Were these run before startup passes, liveness would restart the container at once.
          livenessProbe: { exec: { command: ['cat', '/tmp/started'] }, periodSeconds: 1, failureThreshold: 1 },
          readinessProbe: { exec: { command: ['cat', '/tmp/started'] }, periodSeconds: 1 },
        }),
      ],
    });
    const p0 = await eventually(async () => {
      const p = await pod('startup');
      expect(cstatus(p).state?.running).toBeDefined();
      return p;
    }, 30_000);
    await sleep(4000);
    let p = await pod('startup');
    expect(cstatus(p)).toMatchObject({ started: false, ready: false, restartCount: 0 });
    const early = await podEvents('startup', (e) => e.kind === 'Event' && e.reason === 'Unhealthy');
    expect(early.length).toBeGreaterThanOrEqual(2);
    expect(early.every((e) => String(e.message).startsWith('Startup probe failed: '))).toBe(true);

    await exec(p0, 'touch /tmp/started');
    p = await eventually(async () => {
      const x = await pod('startup');
      expect(cstatus(x)).toMatchObject({ started: true, ready: true });
      return x;
    }, 10_000);
    expect(condition(p, 'Ready')).toBe('True');
    expect(cstatus(p).restartCount).toBe(0);
    expect((await podEvents('startup', (e) => e.kind === 'Event' && /^(Liveness|Readiness) probe/.test(String(e.message)))).length).toBe(0);
  }, 90_000);

  it('a tcpSocket probe to a closed port fails with the connect error', async () => {
    addPod('tcp', {
      containers: [container(SLEEP_FOREVER, { readinessProbe: { tcpSocket: { port: 9999 }, periodSeconds: 1 } })],
    });
    const ev = await eventually(async () => {
      const e = await podEvents('tcp', (x) => x.kind === 'Event' && x.reason === 'Unhealthy');
      expect(e.length).toBeGreaterThan(0);
      return e;
    }, 30_000);
    const p = await pod('tcp');
    expect(ev[0]?.message).toBe(`Readiness probe failed: dial tcp ${p.status?.podIP}:9999: connect: connection refused`);
    expect(condition(p, 'Ready')).toBe('False');
  }, 60_000);

  it('a grpc probe passes against a health server (hostNetwork pod, server on the node)', async () => {
    grpcServer = await startHealthServer('0.0.0.0', { '': 'SERVING', db: 'NOT_SERVING' });
    addPod('grpc', {
      hostNetwork: true,
      containers: [
        container(SLEEP_FOREVER, {
          readinessProbe: { grpc: { port: grpcServer.port }, periodSeconds: 1 },
          livenessProbe: { grpc: { port: grpcServer.port, service: 'db' }, periodSeconds: 1, failureThreshold: 1000 },
        }),
      ],
    });
    await eventually(async () => {
      const p = await pod('grpc');
      expect(condition(p, 'Ready'), JSON.stringify(p.status)).toBe('True');
    }, 30_000);
    const ev = await eventually(async () => {
      const e = await podEvents('grpc', (x) => x.kind === 'Event' && x.reason === 'Unhealthy');
      expect(e.length).toBeGreaterThan(0);
      return e;
    }, 15_000);
    expect(ev[0]?.message).toBe('Liveness probe failed: service unhealthy (responded with "NOT_SERVING")');
  }, 60_000);

  it('a hostNetwork pod with httpGet host 127.0.0.1 probes (the kubeadm shape)', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const probe = (extra: Record<string, unknown>) => ({
      httpGet: { host: '127.0.0.1', path: '/healthz', port, scheme: 'HTTP' },
      initialDelaySeconds: 1,
      periodSeconds: 1,
      timeoutSeconds: 15,
      ...extra,
    });
    addPod('kubeadm', {
      hostNetwork: true,
      priorityClassName: 'system-node-critical',
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        container(`mkdir -p /www && echo ok > /www/healthz && httpd -p 127.0.0.1:${port} -h /www && ${SLEEP_FOREVER}`, {
          startupProbe: probe({ failureThreshold: 24 }),
          livenessProbe: probe({ failureThreshold: 8 }),
          readinessProbe: probe({ failureThreshold: 3 }),
        }),
      ],
    });
    const p = await eventually(async () => {
      const x = await pod('kubeadm');
      expect(condition(x, 'Ready'), JSON.stringify(x.status)).toBe('True');
      return x;
    }, 40_000);
    expect(cstatus(p)).toMatchObject({ started: true, ready: true, restartCount: 0 });
  }, 60_000);
});

describe('klet probe', () => {
  const probeCli = (args: string[]) =>
    runKlet(['probe', ...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs: 60_000 });
  interface Out {
    exitCode: number;
    results: { container: string; probe: string; handler: string; result: string; message: string; durationMs: number; detail: Record<string, unknown> | null }[];
  }
  const json = (r: { stdout: string }) => JSON.parse(r.stdout) as Out;

  it('runs each configured handler and ad-hoc probes, with exit codes 0, 1 and 2', async () => {
    grpcServer ??= await startHealthServer('0.0.0.0', { '': 'SERVING', db: 'NOT_SERVING' });
    addPod('cli', {
      containers: [
        container(`mkdir -p /www && echo fine > /www/ok && httpd -p 8080 -h /www && ${SLEEP_FOREVER}`, {
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/ok', port: 'http' }, periodSeconds: 5 },
          livenessProbe: { exec: { command: ['cat', '/tmp/missing'] }, periodSeconds: 3600, initialDelaySeconds: 3600 },
          startupProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
        }),
      ],
    });
    addPod('cli-grpc', { hostNetwork: true, containers: [container(SLEEP_FOREVER, { readinessProbe: { grpc: { port: grpcServer.port } } })] });
    addPod('cli-done', { restartPolicy: 'Never', containers: [container('exit 0', { readinessProbe: { exec: { command: ['true'] } } })] });
    const ref = `${NS}/cli-${NODE}`;
    await eventually(async () => {
      expect(cstatus(await pod('cli')).state?.running).toBeDefined();
      expect(cstatus(await pod('cli-grpc')).state?.running).toBeDefined();
      expect(cstatus(await pod('cli-done')).state?.terminated).toBeDefined();
    }, 30_000);

    let r = await probeCli([ref, '--type', 'readiness', '-o', 'json']);
    expect(r.code, explain(r)).toBe(0);
    expect(json(r).results).toMatchObject([{ container: 'c', probe: 'Readiness', handler: 'httpGet', result: 'success', message: 'fine\n', detail: { statusCode: 200, body: 'fine\n' } }]);

    r = await probeCli([ref, '--type', 'startup', '-o', 'json']);
    expect(r.code, explain(r)).toBe(0);
    expect(json(r).results[0]).toMatchObject({ probe: 'Startup', handler: 'tcpSocket', result: 'success' });

    r = await probeCli([ref, '--type', 'liveness']);
    expect(r.code, explain(r)).toBe(1);
    expect(r.stdout).toMatch(/c\s+Liveness\s+exec\s+failure\s+\d+ms\s+exit 1: cat: can't open '\/tmp\/missing': No such file or directory/);

    r = await probeCli([ref, '-o', 'json']);
    expect(r.code, explain(r)).toBe(1);
    expect(json(r).results.map((x) => `${x.probe}:${x.result}`)).toEqual(['Startup:success', 'Liveness:failure', 'Readiness:success']);

    r = await probeCli([ref, '--http', '8080/nope', '-o', 'json']);
    expect(r.code, explain(r)).toBe(1);
    expect(json(r).results[0]).toMatchObject({ probe: 'AdHoc', result: 'failure', message: 'HTTP probe failed with statuscode: 404' });

    r = await probeCli([ref, '--tcp', '9999', '-o', 'json']);
    expect(r.code, explain(r)).toBe(1);
    expect(json(r).results[0]?.message).toMatch(/^dial tcp 10\.89\.\d+\.\d+:9999: connect: connection refused$/);

    r = await probeCli([ref, '--exec', 'test -f /www/ok']);
    expect(r.code, explain(r)).toBe(0);

    r = await probeCli([`${NS}/cli-grpc-${NODE}`, '-o', 'json']);
    expect(r.code, explain(r)).toBe(0);
    expect(json(r).results[0]).toMatchObject({ handler: 'grpc', result: 'success', detail: { status: 'SERVING' } });
    r = await probeCli([`${NS}/cli-grpc-${NODE}`, '--grpc', `${grpcServer.port}/db`, '-o', 'json']);
    expect(r.code, explain(r)).toBe(1);
    expect(json(r).results[0]?.message).toBe('service unhealthy (responded with "NOT_SERVING")');

    // Could not be run: exit 2 with one line naming what is missing.
    r = await probeCli([`${NS}/nosuch`]);
    expect(r.code, explain(r)).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    r = await probeCli([ref, '-c', 'nope']);
    expect(r.code, explain(r)).toBe(2);
    expect(r.stderr).toContain('has no container "nope"');
    r = await probeCli([`${NS}/cli-done-${NODE}`]);
    expect(r.code, explain(r)).toBe(2);
    expect(r.stderr).toContain('is not running');
    r = await probeCli([ref, '--http', 'abc']);
    expect(r.code, explain(r)).toBe(2);
    expect(r.stderr).toMatch(/^error: --http "abc": not \[SCHEME:\/\/\]PORT\/PATH/);
  }, 120_000);

  it('--watch repeats at the probe period until interrupted', async () => {
    const child = spawn(process.execPath, [KLET_BIN, 'probe', `${NS}/cli-${NODE}`, '--exec', 'true', '--watch', '-o', 'json', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { env: cleanEnv() });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    await eventually(() => expect(out.trim().split('\n').length).toBeGreaterThanOrEqual(5), 20_000);
    child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => child.once('close', r));
    expect(code).toBe(0);
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as { result: string; time: string; durationMs: number });
    expect(lines.every((l) => l.result === 'success')).toBe(true);
    // Start to start: never sooner than the 1 s period, and on time whenever the previous run took less than the period.
    for (let i = 1; i < lines.length; i++) {
      const gap = Date.parse(lines[i]!.time) - Date.parse(lines[i - 1]!.time);
      expect(gap).toBeGreaterThanOrEqual(990);
      if (lines[i - 1]!.durationMs < 800) expect(gap).toBeLessThan(1500);
    }
  }, 60_000);
});

describe('runonce --wait ready', () => {
  let mdir: string;
  beforeAll(async () => {
    // runonce's pods would be orphans to the sync: stop it first, with the node empty.
    for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f));
    await eventually(async () => expect((await cri.listPodSandbox()).items).toEqual([]), 60_000, 500);
    await sync.stop();
    mdir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-probes-once-'));
  }, 120_000);
  afterAll(() => fs.rmSync(mdir, { recursive: true, force: true }));

  const runonce = (extra: string[]) =>
    runKlet(['runonce', '--manifest-dir', mdir, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json', '--cleanup', ...extra], {
      timeoutMs: 120_000,
    });

  it('waits for the readiness probe, not just for the container to run', async () => {
    for (const f of fs.readdirSync(mdir)) fs.rmSync(path.join(mdir, f));
    fs.writeFileSync(
      path.join(mdir, 'slow.json'),
      manifest('slow', {
        containers: [
          container(`mkdir -p /www && httpd -p 8080 -h /www && sleep 3 && echo ok > /www/ready && ${SLEEP_FOREVER}`, {
            readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1 },
          }),
        ],
      }),
    );
    const t0 = Date.now();
    const r = await runonce(['--wait', 'ready', '--timeout', '60s']);
    expect(r.code, explain(r)).toBe(0);
    expect(Date.now() - t0).toBeGreaterThan(3000);
    const report = JSON.parse(r.stdout) as { pods: { ok: boolean; waitedFor: string; durationMs: number }[] };
    expect(report.pods[0]).toMatchObject({ ok: true, waitedFor: 'ready' });
    expect(report.pods[0]!.durationMs).toBeGreaterThan(3000);
  }, 120_000);

  it('fails at once when a startup probe exhausts its threshold, with the probe message', async () => {
    for (const f of fs.readdirSync(mdir)) fs.rmSync(path.join(mdir, f));
    fs.writeFileSync(
      path.join(mdir, 'never.json'),
      manifest('never', {
        containers: [container(SLEEP_FOREVER, { startupProbe: { exec: { command: ['cat', '/nope'] }, periodSeconds: 1, failureThreshold: 2 } })],
      }),
    );
    const t0 = Date.now();
    const r = await runonce(['--wait', 'ready', '--timeout', '120s']);
    expect(r.code, explain(r)).toBe(1);
    expect(Date.now() - t0).toBeLessThan(30_000);
    const report = JSON.parse(r.stdout) as { pods: { ok: boolean; problem: string }[] };
    expect(report.pods[0]?.problem).toBe("container c: startup probe failed 2 times: cat: can't open '/nope': No such file or directory");
  }, 120_000);
});
