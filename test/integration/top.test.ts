/**
 * `klet top`, the Summary API and /metrics/resource on a real containerd, the BUILT CLI: the
 * figures agree with what the kernel says for the same containers (/sys/fs/cgroup, read here
 * directly): the cumulative CPU counter exactly, the working set within 5 %, without and with a
 * running `klet sync` (its local API and its kubelet
 * server). The pods: one burning CPU under a 200m limit (its CFS quota keeps the load steady),
 * one holding 48 MiB in /dev/shm (shared memory is anonymous: working set), one idle.
 */
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { localApiRequest } from '../../src/lib/server/client.js';
import type { Summary } from '../../src/lib/stats/summary.js';
import { explain, runKlet, type CliResult } from '../helpers/cli.js';
import { freePort } from '../helpers/cluster.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { eventually, killAllSyncs, startSync } from '../helpers/sync.js';

const NODE = 'topnode';
const NS = 'ktop';
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";

let rt: TestRuntime;
let cri: CriClient;
let manifestDir: string;

function common(): string[] {
  return ['--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
}

function klet(args: string[]): Promise<CliResult> {
  return runKlet([...args, ...common()]);
}

function manifest(name: string, container: Record<string, unknown>): void {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: rt.images.busybox, ...container }] },
  };
  fs.writeFileSync(path.join(manifestDir, `${name}.json`), JSON.stringify(pod));
}

/** The v1 memory and cpuacct cgroup dirs of the pod's container `app`, from its process's /proc/PID/cgroup. */
async function cgroupOf(pod: string): Promise<{ memory: string; cpuacct: string }> {
  const { containers } = await cri.listContainers({ filter: { labelSelector: { 'io.kubernetes.pod.name': `${pod}-${NODE}`, 'io.kubernetes.container.name': 'app' }, state: { state: 1 } } });
  expect(containers).toHaveLength(1);
  const status = await cri.containerStatus({ containerId: containers[0]!.id, verbose: true });
  const pid = (JSON.parse(status.info.info ?? '{}') as { pid: number }).pid;
  const lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const dir = (controller: string) => {
    const line = lines.find((l) => l.split(':')[1]?.split(',').includes(controller));
    expect(line, `no ${controller} cgroup for ${pod}`).toBeDefined();
    const sub = line!.split(':')[2]!;
    const root = fs.existsSync(`/sys/fs/cgroup/${controller}`) ? `/sys/fs/cgroup/${controller}` : '/sys/fs/cgroup/cpu,cpuacct';
    return path.join(root, sub);
  };
  return { memory: dir('memory'), cpuacct: dir('cpuacct') };
}

/** The working set as the kubelet defines it: usage minus inactive file pages. */
function workingSet(memoryDir: string): number {
  const usage = Number(fs.readFileSync(path.join(memoryDir, 'memory.usage_in_bytes'), 'utf8'));
  const inactive = Number(/^total_inactive_file (\d+)$/m.exec(fs.readFileSync(path.join(memoryDir, 'memory.stat'), 'utf8'))?.[1] ?? 0);
  return usage - inactive;
}

const cpuNs = (cpuacctDir: string): number => Number(fs.readFileSync(path.join(cpuacctDir, 'cpuacct.usage'), 'utf8'));

/** Runs `fn` and measures the container's CPU rate (millicores) over the same time, from cpuacct.usage. */
async function measured<T>(cpuacctDir: string, fn: () => Promise<T>): Promise<{ result: T; millis: number }> {
  const u0 = cpuNs(cpuacctDir);
  const t0 = process.hrtime.bigint();
  const result = await fn();
  const u1 = cpuNs(cpuacctDir);
  const t1 = process.hrtime.bigint();
  return { result, millis: ((u1 - u0) / Number(t1 - t0)) * 1000 };
}

function within(actual: number, expected: number, fraction: number, slack = 0): void {
  expect(Math.abs(actual - expected), `${actual} vs ${expected}`).toBeLessThanOrEqual(expected * fraction + slack);
}

function topJson(r: CliResult): Summary {
  expect(r.code, explain(r)).toBe(0);
  return JSON.parse(r.stdout) as Summary;
}

const podOf = (s: Summary, name: string) => s.pods.find((p) => p.podRef.name === `${name}-${NODE}`);

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  manifestDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-top-m-'));
  manifest('burn', { command: ['sh', '-c', 'while :; do :; done'], resources: { requests: { cpu: '200m' }, limits: { cpu: '200m' } } });
  manifest('mem', { command: ['sh', '-c', `dd if=/dev/zero of=/dev/shm/fill bs=1M count=48 2>/dev/null; ${SLEEP_FOREVER}`] });
  manifest('idle', { command: ['sh', '-c', SLEEP_FOREVER] });
  const r = await klet(['runonce', '--manifest-dir', manifestDir, '--wait', 'running']);
  expect(r.code, explain(r)).toBe(0);
}, 180_000);

afterAll(async () => {
  await killAllSyncs();
  if (cri !== undefined) await wipeNode(cri, rt.rootDir, NS).catch(() => undefined);
  cri?.close();
  await rt?.stop();
  if (manifestDir) fs.rmSync(manifestDir, { recursive: true, force: true });
}, 120_000);

describe('klet top without a running klet sync', () => {
  it('reads the runtime twice, --window apart: CPU and working set as the cgroups say, within 5 %', async () => {
    const burn = await cgroupOf('burn');
    const mem = await cgroupOf('mem');
    // Until the filler has written its 48 MiB.
    await eventually(() => expect(workingSet(mem.memory)).toBeGreaterThan(48 << 20), 30_000);
    const { result, millis } = await measured(burn.cpuacct, () => klet(['top', '--window', '3s', '-o', 'json']));
    const s = topJson(result);
    expect(result.stderr).toContain('no klet sync serves');
    const b = podOf(s, 'burn')!;
    const cpu = b.containers[0]!.cpu!.usageNanoCores! / 1e6;
    // On the kernel's scale (millicores): the cgroup's own rate over the whole command, which is a
    // little longer than klet's window. Not closer: on a busy machine the burner gets less than its
    // 200m now and then, so the two windows differ; the counters themselves are compared exactly below.
    expect(cpu).toBeGreaterThan(millis / 1.5);
    expect(cpu).toBeLessThan(millis * 1.5);
    const m = podOf(s, 'mem')!;
    within(m.containers[0]!.memory!.workingSetBytes!, workingSet(mem.memory), 0.05);
    expect(m.memory?.workingSetBytes).toBe(m.containers[0]!.memory!.workingSetBytes);
    expect(s.pods.map((p) => p.podRef.name).sort()).toEqual([`burn-${NODE}`, `idle-${NODE}`, `mem-${NODE}`]);
    expect(s.node.cpu?.usageNanoCores).toBeGreaterThan(0);

    const table = await klet(['top', '--sort-by', 'memory']);
    expect(table.code, explain(table)).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]!.split(/\s+/)).toEqual(['NAMESPACE', 'NAME', 'CPU(cores)', 'MEMORY(bytes)']);
    expect(lines[1]).toMatch(new RegExp(`^${NS}\\s+mem-${NODE}\\s+\\d+m\\s+(4[89]|5\\d)Mi$`));
    expect(lines.slice(1).map((l) => l.split(/\s+/)[1])).toContain(`burn-${NODE}`);
  }, 60_000);

  it('one pod, per container; a pod that is not there is an error naming it', async () => {
    const r = await klet(['top', `${NS}/idle-${NODE}`, '--containers']);
    expect(r.code, explain(r)).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]!.split(/\s+/)).toEqual(['POD', 'NAME', 'CPU(cores)', 'MEMORY(bytes)']);
    expect(lines.slice(1)).toHaveLength(1);
    expect(lines[1]).toMatch(new RegExp(`^idle-${NODE}\\s+app\\s+[0-2]m\\s+\\d+Mi$`));
    const missing = await klet(['top', `${NS}/nope`]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('nope');
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
  }, 60_000);
});

describe('with a running klet sync', () => {
  it('klet top, /stats/summary and /metrics/resource give the sync\'s figures', async () => {
    const port = await freePort();
    const sync = await startSync({
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      manifestDir,
      nodeName: NODE,
      args: ['--address', '127.0.0.1', '--port', String(port), '--anonymous-auth=true'],
    });
    const burn = await cgroupOf('burn');
    // The sync's first sample, then a rate against it.
    const s = await eventually(async () => {
      const r = await klet(['top', '--containers', '-o', 'json']);
      const got = topJson(r);
      expect(r.stderr, sync.tail()).toBe('');
      expect(podOf(got, 'burn')?.containers[0]?.cpu?.usageNanoCores).toBeGreaterThan(0);
      return got;
    }, 30_000);
    expect(podOf(s, 'burn')!.containers[0]!.cpu!.usageNanoCores).toBeGreaterThan(0);

    // The figures are the kernel's: the cumulative CPU counter read between two reads of cpuacct.usage
    // around one local API request, and the working set within 5 % of the memory cgroup's.
    const mem = await cgroupOf('mem');
    const u0 = cpuNs(burn.cpuacct);
    const res = await localApiRequest(sync.socketPath, '/stats/summary?only_cpu_and_memory=true');
    const u1 = cpuNs(burn.cpuacct);
    const ws = workingSet(mem.memory);
    expect(res.status, res.body).toBe(200);
    const now = JSON.parse(res.body) as Summary;
    const counter = podOf(now, 'burn')!.containers[0]!.cpu!.usageCoreNanoSeconds!;
    expect(counter).toBeGreaterThanOrEqual(u0);
    expect(counter).toBeLessThanOrEqual(u1);
    within(podOf(now, 'mem')!.containers[0]!.memory!.workingSetBytes!, ws, 0.05);
    expect(now.node.fs).toBeUndefined();

    const get = (p: string) =>
      new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        https
          .get({ host: '127.0.0.1', port, path: p, rejectUnauthorized: false }, (res) => {
            let body = '';
            res.on('data', (b: Buffer) => (body += b.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
          })
          .on('error', reject);
      });
    const summary = await get('/stats/summary');
    expect(summary.status, summary.body).toBe(200);
    const full = JSON.parse(summary.body) as Summary;
    expect(full.node.nodeName).toBe(NODE);
    expect(full.node.fs?.capacityBytes).toBeGreaterThan(0);
    expect(full.node.runtime?.imageFs?.capacityBytes).toBeGreaterThan(0);
    expect(full.node.runtime?.containerFs).toEqual(full.node.runtime?.imageFs);
    expect(full.node.rlimit?.maxpid).toBeGreaterThan(0);
    const idle = podOf(full, 'idle')!;
    expect(idle.podRef).toMatchObject({ namespace: NS, name: `idle-${NODE}` });
    expect(idle.containers[0]!.rootfs?.usedBytes).toBeGreaterThanOrEqual(0);
    expect(idle.containers[0]!.logs?.usedBytes).toBeGreaterThanOrEqual(0);
    expect(idle['ephemeral-storage']?.usedBytes).toBeGreaterThanOrEqual(0);

    const resource = await get('/metrics/resource');
    expect(resource.status).toBe(200);
    expect(resource.type).toContain('text/plain; version=0.0.4');
    const burnLabels = `{container="app",namespace="${NS}",pod="burn-${NODE}"}`;
    const cpuLine = resource.body.split('\n').find((l) => l.startsWith(`container_cpu_usage_seconds_total${burnLabels} `));
    expect(cpuLine, resource.body).toBeDefined();
    // The counter, in core-seconds, as cpuacct.usage has it (read after the scrape: at least as much).
    const seconds = Number(cpuLine!.split(' ')[1]);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThanOrEqual(cpuNs(burn.cpuacct) / 1e9);
    expect(resource.body).toMatch(/^node_memory_working_set_bytes \S+ \d+$/m);
    expect(resource.body).toMatch(new RegExp(`^pod_memory_working_set_bytes\\{namespace="${NS}",pod="mem-${NODE}"\\} \\S+ \\d+$`, 'm'));
    expect(resource.body).toContain('resource_scrape_error 0');
    await sync.kill();
  }, 90_000);
});
