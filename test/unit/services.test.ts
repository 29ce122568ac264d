/**
 * The services (src/lib/services/) against an in-memory CRI runtime: the
 * one-shot policies (exit codes, goals, blockers) table by table, and the
 * runs themselves (reports, replacement of edited pods, fresh --rm runs,
 * per-pod runtime failures, interruption).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/client.js';
import type { KletEventBody } from '../../src/lib/events/types.js';
import { NodeCache, syncPod } from '../../src/lib/kuberuntime/sync-pod.js';
import { listPodRecords } from '../../src/lib/kuberuntime/poddir.js';
import type { ServiceDeps } from '../../src/lib/services/deps.js';
import { deletePods } from '../../src/lib/services/delete-pods.js';
import { podStatus } from '../../src/lib/services/pod-status.js';
import { formatRunOnceReport, runOnce, runOnceExitCode } from '../../src/lib/services/run-once.js';
import { runPod } from '../../src/lib/services/run-pod.js';
import { blocker, exitedDuringSettle, goalFor, podExitCode, settleBlocker } from '../../src/lib/services/wait.js';
import { BatchedLines, PlainProgress } from '../../src/ui/progress.js';
import { formatTable } from '../../src/lib/util/table.js';
import { FakeCri } from '../helpers/fake-cri.js';

const NODE = 'node1';
let tmp: string;
let fake: FakeCri;
let events: KletEventBody[];

function deps(extra: Partial<ServiceDeps> = {}): ServiceDeps {
  return {
    cri: fake.client(),
    rootDir: path.join(tmp, 'root'),
    nodeName: NODE,
    signal: new AbortController().signal,
    logRoot: path.join(tmp, 'logs'),
    cache: new NodeCache(),
    onEvent: (e) => events.push(e),
    ...extra,
  };
}

function pod(name: string, script: string, restartPolicy = 'Always'): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  restartPolicy: ${restartPolicy}
  containers:
    - name: c
      image: localhost/klet/busybox:1.36
      imagePullPolicy: IfNotPresent
      command: ["sh", "-c", "${script}"]
`;
}

function manifest(dir: string, file: string, text: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const p = path.join(dir, file);
  fs.writeFileSync(p, text);
  return p;
}

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-services-'));
  fake = new FakeCri();
  events = [];
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('runonce exit-code policy', () => {
  const cases: [string, boolean, { ok: boolean; exitCode: number | null } | undefined, boolean, number][] = [
    ['all ok', true, undefined, false, 0],
    ['something failed', false, undefined, false, 1],
    ['--exit-code-from: the pod failed with 3', false, { ok: false, exitCode: 3 }, true, 3],
    ['--exit-code-from: the pod failed without an exit code', false, { ok: false, exitCode: null }, true, 1],
    ['--exit-code-from: the pod ok, another failed', false, { ok: true, exitCode: null }, true, 1],
    ['--exit-code-from: the pod ok, all ok', true, { ok: true, exitCode: null }, true, 0],
    ['--exit-code-from: the pod failed, even if it was the only failure', false, { ok: false, exitCode: 42 }, true, 42],
  ];
  it.each(cases)('%s', (_name, ok, target, from, want) => {
    expect(runOnceExitCode(ok, target, from)).toBe(want);
  });
});

describe('goal and blocker per restart policy', () => {
  const withPolicy = (restartPolicy: string, status: V1Pod['status'] = {}): V1Pod => ({ spec: { restartPolicy, containers: [{ name: 'c' }] }, status });
  const waiting = (reason: string) => ({ containerStatuses: [{ name: 'c', image: '', imageID: '', ready: false, restartCount: 1, state: { waiting: { reason, message: 'm' } } }] });
  const cases: [string, string, boolean, V1Pod['status'], string, string | null][] = [
    ['Always waits for running', 'Always', false, {}, 'running', null],
    ['Always with --wait ready waits for ready', 'Always', true, {}, 'ready', null],
    ['Never waits for completion', 'Never', false, {}, 'completed', null],
    ['OnFailure waits for completion', 'OnFailure', true, {}, 'completed', null],
    ['Always in a crash loop is blocked', 'Always', false, waiting('CrashLoopBackOff'), 'running', 'CrashLoopBackOff'],
    ['OnFailure in a crash loop keeps waiting (it may still succeed)', 'OnFailure', false, waiting('CrashLoopBackOff'), 'completed', null],
    ['Never with an image that may not be pulled is blocked', 'Never', false, waiting('ErrImageNeverPull'), 'completed', 'ErrImageNeverPull'],
    ['a pull back-off is blocked: the image is nowhere to be had', 'Always', false, waiting('ImagePullBackOff'), 'running', 'ImagePullBackOff'],
    ['a failed pull blocks a job too', 'Never', false, waiting('ErrImagePull'), 'completed', 'ErrImagePull'],
    ['Always that completed is blocked', 'Always', false, { phase: 'Succeeded' }, 'running', 'PodCompleted'],
    ['Always that failed is blocked', 'Always', false, { phase: 'Failed' }, 'running', 'PodFailed'],
  ];
  it.each(cases)('%s', (_name, policy, waitReady, status, goal, blockedBy) => {
    const p = withPolicy(policy, status);
    expect(goalFor(p, waitReady)).toBe(goal);
    expect(blocker(p, goalFor(p, waitReady))?.reason ?? null).toBe(blockedBy);
  });

  it("a sidecar's exit code (137: stopped after the job) is not the pod's", () => {
    const t = (name: string, exitCode: number) => ({ name, image: '', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode } } });
    const job: V1Pod = {
      spec: { restartPolicy: 'Never', initContainers: [{ name: 'shipper', restartPolicy: 'Always' }, { name: 'setup' }], containers: [{ name: 'c' }] },
      status: { initContainerStatuses: [t('shipper', 137), t('setup', 0)], containerStatuses: [t('c', 0)] },
    };
    expect(podExitCode(job)).toBe(0);
    expect(podExitCode({ ...job, status: { ...job.status, initContainerStatuses: [t('shipper', 137), t('setup', 2)] } })).toBe(2);
  });

  it('a finished pod exits with its first failing exit code, or 0', () => {
    const term = (exitCode: number) => ({ name: 'c', image: '', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode } } });
    expect(podExitCode({ status: { containerStatuses: [term(0)] } })).toBe(0);
    expect(podExitCode({ status: { containerStatuses: [term(0), term(3)] } })).toBe(3);
    expect(podExitCode({ status: { containerStatuses: [{ ...term(0), state: { running: {} } }] } })).toBe(null);
  });
});

describe('the settle window', () => {
  const running = (name: string, restartCount = 0) => ({ name, image: '', imageID: '', ready: true, restartCount, state: { running: {} } });
  const exited = (name: string, exitCode: number, reason: string) => ({ ...running(name), ready: false, state: { terminated: { exitCode, reason } } });
  const pod = (init: V1Pod['status'], sidecar = true): V1Pod => ({
    spec: { initContainers: [{ name: 'init' }, { name: 'side', ...(sidecar ? { restartPolicy: 'Always' } : {}) }], containers: [{ name: 'a' }, { name: 'b' }] },
    status: init,
  });
  const atStart = new Map([['a', 0], ['b', 0], ['side', 0], ['init', 0]]);
  const cases: [string, V1Pod, string | null][] = [
    ['all running', pod({ initContainerStatuses: [exited('init', 0, 'Completed'), running('side')], containerStatuses: [running('a'), running('b')] }), null],
    ['an app container exited', pod({ containerStatuses: [running('a'), exited('b', 3, 'Error')] }), 'b'],
    ['a sidecar exited', pod({ initContainerStatuses: [exited('init', 0, 'Completed'), exited('side', 137, 'OOMKilled')], containerStatuses: [running('a')] }), 'side'],
    ['a finished init container is no exit', pod({ initContainerStatuses: [exited('init', 0, 'Completed')], containerStatuses: [running('a')] }), null],
    ['restarted since the window began (running again)', pod({ containerStatuses: [running('a', 1), running('b')] }), 'a'],
  ];
  it.each(cases)('%s', (_name, p, want) => {
    expect(exitedDuringSettle(p, atStart)?.name ?? null).toBe(want);
  });

  it("fails with the container's reason and exit code", () => {
    expect(settleBlocker(exited('b', 3, 'Error'), 3000)).toEqual({
      reason: 'Error',
      message: 'container b exited within the 3s settle window: Error, exit code 3',
      problem: 'container b exited within the 3s settle window: Error, exit code 3',
    });
    expect(settleBlocker({ ...running('a', 2), lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }, 500).reason).toBe('OOMKilled');
  });
});

describe('runOnce', () => {
  it('reports every pod with its exit code (EXIT 0 for a job that succeeded), and exits by policy', async () => {
    const dir = path.join(tmp, 'manifests');
    manifest(dir, 'a.yaml', pod('web', 'sleep 3600'));
    manifest(dir, 'b.yaml', pod('job', 'echo done; exit 0', 'Never'));
    manifest(dir, 'c.yaml', pod('fail', 'exit 3', 'Never'));
    const { report, exitCode } = await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps());
    const rows = Object.fromEntries(report.pods.map((p) => [p.name, p]));
    expect(rows[`web-${NODE}`]).toMatchObject({ ok: true, phase: 'Running', exitCode: null });
    expect(rows[`job-${NODE}`]).toMatchObject({ ok: true, phase: 'Succeeded', exitCode: 0 });
    expect(rows[`fail-${NODE}`]).toMatchObject({ ok: false, phase: 'Failed', exitCode: 3, reason: 'PodFailed' });
    expect(exitCode).toBe(1);
    const table = formatRunOnceReport(report, formatTable);
    expect(table).toMatch(new RegExp(`job-${NODE} +Never +ok +Succeeded +0 `));
    expect(table).toMatch(/\n2\/3 pods ok, 0 invalid, [0-9.]+s$/);
    expect(report.pods.every((p) => p.logTail.length === 0)).toBe(true);

    const again = await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: true, exitCodeFrom: 'fail' }, deps());
    expect(again.exitCode).toBe(3);
    expect(fake.sandboxes.size).toBe(0);
    expect(fake.containers.size).toBe(0);
  });

  it("one pod's runtime failure belongs to its row: reason, message, manifest path; the others' results stand", async () => {
    const dir = path.join(tmp, 'manifests');
    manifest(dir, 'a.yaml', pod('web', 'sleep 3600'));
    const broken = manifest(dir, 'b.yaml', pod('hostnet', 'sleep 3600'));
    fake.sandboxFailures.set('hostnet', 'runc create failed: unable to set hostname without a private UTS namespace');
    const { report, exitCode } = await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps());
    expect(exitCode).toBe(1);
    expect(report.pods).toHaveLength(2);
    const row = report.pods.find((p) => p.name === `hostnet-${NODE}`);
    expect(row).toMatchObject({ ok: false, source: broken, reason: 'CreatePodSandboxError' });
    expect(row?.message).toContain('Failed to create pod sandbox: rpc error: code = Unknown desc = runc create failed: unable to set hostname');
    expect(report.pods.find((p) => p.name === `web-${NODE}`)).toMatchObject({ ok: true, phase: 'Running' });
    // The kubelet's event for it.
    expect(events).toContainEqual(expect.objectContaining({ kind: 'Event', reason: 'FailedCreatePodSandBox', type: 'Warning', pod: `default/hostnet-${NODE}` }));
  });

  it('a runtime that cannot be reached: every pod fails in its own row with the error, after its admission', async () => {
    const dir = path.join(tmp, 'manifests');
    manifest(dir, 'a.yaml', pod('web', 'sleep 3600'));
    manifest(dir, 'b.yaml', pod('db', 'sleep 3600'));
    const cri = CriClient.connect(`unix://${path.join(tmp, 'no-runtime.sock')}`, { timeoutMs: 5000 });
    try {
      const { report, exitCode } = await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps({ cri }));
      expect(exitCode).toBe(1);
      expect(report.pods.map((p) => [p.name, p.ok, p.reason])).toEqual([
        [`web-${NODE}`, false, 'CRI_UNAVAILABLE'],
        [`db-${NODE}`, false, 'CRI_UNAVAILABLE'],
      ]);
      expect(report.pods[0]?.message).toContain('no-runtime.sock');
      // Admitted before the runtime was asked, as a pod whose own sync fails: `klet status` shows them.
      expect((await listPodRecords(path.join(tmp, 'root'), NODE)).map((r) => r.pod.metadata?.name).sort()).toEqual([`db-${NODE}`, `web-${NODE}`]);
    } finally {
      cri.close();
    }
  });

  it('only invalid manifests: the runtime is never asked (the command layer would start a managed one for it)', async () => {
    const dir = path.join(tmp, 'manifests');
    manifest(dir, 'a.yaml', 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers: []\n');
    const calls: string[] = [];
    const client = fake.client();
    const cri = new Proxy(client, {
      get: (target, method: string) => {
        const v = (target as unknown as Record<string, unknown>)[method];
        return typeof v === 'function' ? (...args: unknown[]) => (calls.push(method), (v as (...a: unknown[]) => unknown).apply(target, args)) : v;
      },
    });
    const { report, exitCode } = await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps({ cri }));
    expect(exitCode).toBe(1);
    expect(report.pods).toEqual([]);
    expect(report.invalid).toHaveLength(1);
    expect(calls).toEqual([]);
  });

  it('an edited manifest: the pod with the new UID replaces the old one of the same name', async () => {
    const dir = path.join(tmp, 'manifests');
    manifest(dir, 'etcd.yaml', pod('etcd', 'sleep 3600'));
    const first = await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps());
    const oldUid = first.report.pods[0]!.uid!;
    manifest(dir, 'etcd.yaml', pod('etcd', 'sleep 7200'));
    const second = await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps());
    const newUid = second.report.pods[0]!.uid!;
    expect(newUid).not.toBe(oldUid);
    expect(fake.podObjects(oldUid)).toEqual({ sandboxes: [], containers: [] });
    expect(fake.podObjects(newUid).containers).toHaveLength(1);
    const recs = await listPodRecords(path.join(tmp, 'root'), NODE);
    expect(recs.map((r) => r.pod.metadata?.uid)).toEqual([newUid]);
    const pods = await podStatus({}, deps());
    expect(pods.map((p) => p.metadata?.name)).toEqual([`etcd-${NODE}`]);
  });

  it('stops waiting when the signal aborts, and leaves the pods as they are', async () => {
    const dir = path.join(tmp, 'manifests');
    manifest(dir, 'slow.yaml', pod('slow', 'sleep 3600', 'Never'));
    const ac = new AbortController();
    const run = runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 60_000, cleanup: true }, deps({ signal: ac.signal }));
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    ac.abort(new Error('interrupted'));
    await expect(run).rejects.toThrow('interrupted');
    expect(Date.now() - t0).toBeLessThan(1000);
    // --cleanup did not run: the pod is still there, running.
    expect([...fake.containers.values()].map((c) => c.state)).toEqual([1]);
  });

  it("the pods' records are written while the runtime is first listed, not after its answer", async () => {
    const dir = path.join(tmp, 'manifests');
    for (let i = 0; i < 3; i++) manifest(dir, `p${i}.yaml`, pod(`p${i}`, 'sleep 3600'));
    const client = fake.client();
    const root = path.join(tmp, 'root');
    let recordedWhileListing: string[] | undefined;
    // The runtime's first list answers only once the test has looked at the root dir (at most 2 s).
    const cri = new Proxy(client, {
      get: (target, method: string) => {
        const v = (target as unknown as Record<string, unknown>)[method];
        if (typeof v !== 'function') return v;
        if (method !== 'listPodSandbox' || recordedWhileListing !== undefined) return (v as (...a: unknown[]) => unknown).bind(target);
        return async (...args: unknown[]) => {
          for (let t = 0; t < 40 && (await listPodRecords(root, NODE)).length < 3; t++) await new Promise((r) => setTimeout(r, 50));
          recordedWhileListing = (await listPodRecords(root, NODE)).map((r) => r.pod.metadata?.name ?? '').sort();
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const { report } = await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps({ cri }));
    expect(recordedWhileListing).toEqual([`p0-${NODE}`, `p1-${NODE}`, `p2-${NODE}`]);
    expect(report.pods.map((p) => p.ok)).toEqual([true, true, true]);
  });

  it('aborted while the runtime is first listed (the pods being admitted meanwhile): rejects with the reason, nothing unhandled', async () => {
    const dir = path.join(tmp, 'manifests');
    for (let i = 0; i < 5; i++) manifest(dir, `p${i}.yaml`, pod(`p${i}`, 'sleep 3600'));
    const ac = new AbortController();
    const client = fake.client();
    // The runtime's first list never answers; it is aborted as soon as it is asked.
    const cri = new Proxy(client, {
      get: (target, method: string) => {
        const v = (target as unknown as Record<string, unknown>)[method];
        if (method !== 'listPodSandbox') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        return (_req: unknown, opts?: { signal?: AbortSignal }) =>
          new Promise((_resolve, reject) => {
            opts?.signal?.addEventListener('abort', () => reject(opts.signal?.reason));
            ac.abort(new Error('interrupted'));
          });
      },
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await expect(runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps({ cri, signal: ac.signal }))).rejects.toThrow('interrupted');
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
      expect(fake.calls).not.toContain('runPodSandbox');
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('runPod', () => {
  it('--rm after a previous run: a fresh run, its output returned, its exit code, nothing left', async () => {
    const file = manifest(path.join(tmp, 'm'), 'job.yaml', pod('job', 'echo step 1; echo done; exit 0', 'Never'));
    const first = await runPod({ file, goal: 'completed', timeoutMs: 10_000, rm: false }, deps());
    expect(first).toMatchObject({ ok: true, exitCode: 0 });
    const started = fake.calls.filter((c) => c === 'startContainer').length;
    expect(started).toBe(1);

    const again = await runPod({ file, goal: 'completed', timeoutMs: 10_000, rm: true }, deps());
    expect(fake.calls.filter((c) => c === 'startContainer').length, 'the job ran again').toBe(2);
    expect(again).toMatchObject({ ok: true, exitCode: 0, output: 'step 1\ndone\n' });
    expect(fake.sandboxes.size).toBe(0);
    expect(await listPodRecords(path.join(tmp, 'root'), NODE)).toEqual([]);

    const failing = manifest(path.join(tmp, 'm'), 'fail.yaml', pod('fail', 'echo failing; exit 3', 'Never'));
    const f = await runPod({ file: failing, goal: 'completed', timeoutMs: 10_000, rm: true }, deps());
    expect(f).toMatchObject({ ok: false, exitCode: 3, output: 'failing\n' });
  });
});

describe('deletePods', () => {
  it('deletes a named pod: containers, sandbox, record', async () => {
    const file = manifest(path.join(tmp, 'm'), 'web.yaml', pod('web', 'sleep 3600'));
    await runPod({ file, goal: 'running', timeoutMs: 10_000, rm: false }, deps());
    const { deleted } = await deletePods({ refs: [`web-${NODE}`], all: false }, deps());
    expect(deleted.map((d) => d.name)).toEqual([`web-${NODE}`]);
    expect(fake.sandboxes.size + fake.containers.size).toBe(0);
  });

  it('delete --all: the runtime listed once for all pods, then per pod only StopContainer, StopPodSandbox and RemovePodSandbox', async () => {
    const dir = path.join(tmp, 'manifests');
    for (let i = 0; i < 5; i++) manifest(dir, `p${i}.yaml`, pod(`p${i}`, 'sleep 3600'));
    await runOnce({ manifestDir: dir, waitReady: false, timeoutMs: 10_000, cleanup: false }, deps());
    // Another owner's pod of another root dir on the same runtime: never touched.
    await runPod({ file: manifest(path.join(tmp, 'm'), 'other.yaml', pod('other', 'sleep 3600')), goal: 'running', timeoutMs: 10_000, rm: false }, deps({ rootDir: path.join(tmp, 'other-root') }));
    const before = fake.calls.length;
    const { deleted } = await deletePods({ refs: [], all: true }, deps());
    expect(deleted).toHaveLength(5);
    const calls = fake.calls.slice(before);
    const count = (m: string) => calls.filter((c) => c === m).length;
    expect(count('stopContainer')).toBe(5);
    expect(count('stopPodSandbox')).toBe(5);
    expect(count('removePodSandbox')).toBe(5);
    expect(count('listPodSandbox') + count('listContainers')).toBeLessThanOrEqual(3);
    expect(calls.filter((c) => !['stopContainer', 'stopPodSandbox', 'removePodSandbox', 'listPodSandbox', 'listContainers'].includes(c))).toEqual([]);
    expect([...fake.sandboxes.values()].map((sb) => sb.metadata.name)).toEqual([`other-${NODE}`]);
    expect(fake.containers.size).toBe(1);
    expect(await listPodRecords(path.join(tmp, 'root'), NODE)).toEqual([]);
    expect(events.filter((e) => e.kind === 'Event' && e.reason === 'Killing')).toHaveLength(5);
  });

  it('delete with a zero grace period leaves the kill to StopPodSandbox (no StopContainer)', async () => {
    const file = manifest(path.join(tmp, 'm'), 'web.yaml', pod('web', 'sleep 3600'));
    await runPod({ file, goal: 'running', timeoutMs: 10_000, rm: false }, deps());
    const before = fake.calls.length;
    await deletePods({ refs: [`web-${NODE}`], all: false, gracePeriodSeconds: 0 }, deps());
    expect(fake.calls.slice(before).filter((c) => c === 'stopContainer')).toEqual([]);
    expect(fake.sandboxes.size + fake.containers.size).toBe(0);
  });
});

describe('a sync stopped while it starts a container', () => {
  it('records no RunContainerError: klet stopping is not the container failing', async () => {
    const file = manifest(path.join(tmp, 'm'), 'stop.yaml', pod('stopped', 'sleep 3600'));
    const { loadManifests } = await import('../../src/lib/pod/index.js');
    const p = (await loadManifests({ files: [file], nodeName: NODE })).pods[0]!.pod;
    const stop = new AbortController();
    const d = deps({ signal: stop.signal });
    const { admitPod } = await import('../../src/lib/kuberuntime/lifecycle.js');
    await admitPod(d, p, file);
    let cancel: (err: Error) => void = () => undefined;
    fake.gates.set('startContainer', new Promise((_, reject) => (cancel = reject)));
    const sync = syncPod({ ...d, objects: { configMaps: [], secrets: [] } }, p);
    while (!fake.calls.includes('startContainer')) await new Promise((r) => setTimeout(r, 5));
    // As the CRI client rejects a call its signal aborted.
    stop.abort(new Error('klet sync is stopping'));
    cancel(new Error('The operation was aborted'));
    await expect(sync).rejects.toThrow('The operation was aborted');
    const { readSyncState } = await import('../../src/lib/kuberuntime/poddir.js');
    expect((await readSyncState(d.rootDir, p.metadata!.uid!)).containers.c?.reason).toBeUndefined();
    expect(events.filter((e) => e.kind === 'Event' && e.reason === 'Failed')).toEqual([]);
  });
});

describe('sync of a pod whose sandbox the runtime refuses', () => {
  it('status shows ContainerCreating, as the kubelet does; the FailedCreatePodSandBox event carries the reason as the kubelet prints the runtime\'s error', async () => {
    const file = manifest(path.join(tmp, 'm'), 'hn.yaml', pod('hostnet', 'sleep 3600'));
    fake.sandboxFailures.set('hostnet', 'unable to set hostname');
    const { loadManifests } = await import('../../src/lib/pod/index.js');
    const set = await loadManifests({ files: [file], nodeName: NODE });
    const p = set.pods[0]!.pod;
    const d = deps();
    const { admitPod } = await import('../../src/lib/kuberuntime/lifecycle.js');
    await admitPod(d, p, file);
    const res = await syncPod({ ...d, objects: { configMaps: [], secrets: [] } }, p);
    expect(res.sandboxError?.reason).toBe('CreatePodSandboxError');
    expect(res.requeueAfterMs).toBeGreaterThan(0);
    const [st] = await podStatus({ pod: `hostnet-${NODE}` }, d);
    expect(st?.status?.containerStatuses?.[0]?.state?.waiting).toEqual({ reason: 'ContainerCreating' });
    expect(events).toContainEqual(
      expect.objectContaining({ kind: 'Event', type: 'Warning', reason: 'FailedCreatePodSandBox', message: 'Failed to create pod sandbox: rpc error: code = Unknown desc = unable to set hostname' }),
    );
  });
});

describe('progress', () => {
  it('prints state changes, not the same back-off line on every poll; a repeated state is counted at close', async () => {
    const lines: string[] = [];
    let now = 0;
    const progress = new PlainProgress((l) => lines.push(l), { now: () => now });
    const backoff = { kind: 'Event', pod: 'default/p', uid: 'u', type: 'Warning', reason: 'BackOff', message: 'Back-off pulling image "x"', container: 'c', containerReason: 'ImagePullBackOff' } as const;
    const pull = { ...backoff, reason: 'Failed', message: 'failed to pull image "x"', containerReason: 'ErrImagePull' } as const;
    for (let i = 0; i < 95; i++, now += 100) progress.event(backoff);
    progress.event(pull);
    for (let i = 0; i < 10; i++, now += 100) progress.event(backoff);
    expect(lines).toEqual([
      'pod default/p: container c: ImagePullBackOff: Back-off pulling image "x"',
      'pod default/p: container c: ErrImagePull: failed to pull image "x"',
    ]);
    await progress.close();
    // Entered twice (the polls in between are the same back-off going on).
    expect(lines.slice(2)).toEqual(['pod default/p: container c: ImagePullBackOff (x2 over 10s)']);
  });

  it('a retry cycle (image check, create error, crash-loop back-off, again) prints each state once, then one count line per repeated state before the result', () => {
    const lines: string[] = [];
    let now = 0;
    const progress = new PlainProgress((l) => lines.push(l), { now: () => now });
    const pod = { kind: 'Event', pod: 'default/p', uid: 'u', container: 'c' } as const;
    progress.event({ kind: 'PodWaitStarted', pod: 'default/p', uid: 'u', goal: 'running', initContainers: [], containers: ['c'] });
    progress.event({ ...pod, type: 'Normal', reason: 'SandboxCreated', message: '', sandboxId: 'a'.repeat(64), ip: '10.0.0.2' });
    for (let i = 0; i < 12; i++, now += 5000) {
      progress.event({ ...pod, type: 'Normal', reason: 'Pulled', message: '', image: 'busybox', pulled: false });
      progress.event({ ...pod, type: 'Warning', reason: 'Failed', message: 'CreateContainer: mount failed', containerReason: 'CreateContainerError' });
      // Reported on every poll while it lasts; its delay grows; it is the same state.
      for (let poll = 0; poll < 20; poll++) {
        progress.event({ ...pod, type: 'Warning', reason: 'BackOff', message: `back-off ${10 * 2 ** Math.min(i, 4)}s restarting failed container=c`, containerReason: 'CrashLoopBackOff' });
      }
    }
    // A container started at last: a change, printed. A state seen once is not summarized.
    progress.event({ ...pod, type: 'Normal', reason: 'Started', message: '', containerId: 'b'.repeat(64) });
    progress.event({ kind: 'PodWaitDone', pod: 'default/p', uid: 'u', ok: false, summary: 'timed out after 1m0s' });
    expect(lines).toEqual([
      'pod default/p: syncing',
      'pod default/p: sandbox aaaaaaaaaaaaa created (IP 10.0.0.2)',
      'pod default/p: container c: image busybox already present',
      'pod default/p: container c: CreateContainerError: CreateContainer: mount failed',
      'pod default/p: container c: CrashLoopBackOff: back-off 10s restarting failed container=c',
      'pod default/p: container c started (bbbbbbbbbbbbb)',
      'pod default/p: container c: image busybox already present (x12 over 55s)',
      'pod default/p: container c: CreateContainerError (x12 over 55s)',
      'pod default/p: container c: CrashLoopBackOff (x12 over 55s)',
      'pod default/p: FAILED: timed out after 1m0s',
    ]);
  });

  it('states are per pod and per container; the same one again is neither printed nor counted; repeats within a second have no time span', async () => {
    const lines: string[] = [];
    const progress = new PlainProgress((l) => lines.push(l), { now: () => 0 });
    const failed = (pod: string, container: string, containerReason = 'RunContainerError') =>
      ({ kind: 'Event', pod, uid: 'u', type: 'Warning', reason: 'Failed', message: 'boom', container, containerReason }) as const;
    for (let i = 0; i < 3; i++) {
      progress.event(failed('default/a', 'c'));
      progress.event(failed('default/a', 'd'));
      progress.event(failed('default/b', 'c'));
    }
    progress.event(failed('default/a', 'c', 'CrashLoopBackOff'));
    progress.event(failed('default/a', 'c'));
    expect(lines).toEqual([
      'pod default/a: container c: RunContainerError: boom',
      'pod default/a: container d: RunContainerError: boom',
      'pod default/b: container c: RunContainerError: boom',
      'pod default/a: container c: CrashLoopBackOff: boom',
    ]);
    await progress.close();
    expect(lines.slice(4)).toEqual(['pod default/a: container c: RunContainerError (x2)']);
  });

  it('stderr lines of one turn of the event loop go out in one write, in order; close() writes the rest', async () => {
    const writes: string[] = [];
    const out = new BatchedLines((t) => writes.push(t));
    out.push('pod a: syncing');
    out.push('pod b: syncing');
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(['pod a: syncing\npod b: syncing\n']);
    out.push('pod a: Running');
    out.close();
    expect(writes).toEqual(['pod a: syncing\npod b: syncing\n', 'pod a: Running\n']);
    await new Promise((r) => setImmediate(r));
    expect(writes).toHaveLength(2);
  });

  it('a process that exits before the next turn of the event loop still prints its last progress lines', () => {
    // runonce's exit paths call process.exit() (oclif's this.exit): the line of the same turn must not be lost.
    const script = `import { PlainProgress } from ${JSON.stringify(path.resolve('src/ui/progress.ts'))};
const p = new PlainProgress();
p.event({ kind: 'PodWaitStarted', pod: 'default/web', uid: 'u', goal: 'running', initContainers: [], containers: ['c'] });
p.event({ kind: 'PodWaitDone', pod: 'default/web', uid: 'u', ok: false, summary: 'pod failed (exit code 3)' });
process.exit(3);`;
    const res = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(res.status).toBe(3);
    expect(res.stderr).toBe('pod default/web: syncing\npod default/web: FAILED: pod failed (exit code 3)\n');
  });
});

describe("a sync that creates all of a pod: its status without the lists", () => {
  async function load(name: string, text: string): Promise<V1Pod> {
    const file = manifest(path.join(tmp, 'm'), `${name}.yaml`, text);
    const { loadManifests } = await import('../../src/lib/pod/index.js');
    const p = (await loadManifests({ files: [file], nodeName: NODE })).pods[0]!.pod;
    const { admitPod } = await import('../../src/lib/kuberuntime/lifecycle.js');
    await admitPod(deps(), p, file);
    return p;
  }
  const id = (p: V1Pod) => ({ uid: p.metadata!.uid!, name: p.metadata!.name!, namespace: p.metadata!.namespace! });

  it.each([
    ['a running container', pod('run', 'sleep 3600')],
    ['a container that exited at once', pod('quick', 'echo bye; exit 3', 'Never')],
    [
      'an init container (the first sync starts only it)',
      `apiVersion: v1
kind: Pod
metadata:
  name: withinit
spec:
  initContainers:
    - name: init
      image: localhost/klet/busybox:1.36
      command: ["sh", "-c", "sleep 3600"]
  containers:
    - name: c
      image: localhost/klet/busybox:1.36
      command: ["sh", "-c", "sleep 3600"]
`,
    ],
  ])('%s: createdPodStatus is what getRuntimePodStatus reads, with one ContainerStatus per container and nothing else', async (_what, text) => {
    const { createdPodStatus, getRuntimePodStatus } = await import('../../src/lib/kuberuntime/runtime-status.js');
    const { instanceSelector } = await import('../../src/lib/kuberuntime/labels.js');
    const p = await load(text.match(/name: (\S+)/)![1]!, text);
    const d = deps();
    const res = await syncPod({ ...d, objects: { configMaps: [], secrets: [] } }, p);
    expect(res.created).toBeDefined();
    const before = fake.calls.length;
    const lean = await createdPodStatus(d.cri, id(p), res.created!);
    expect(fake.calls.slice(before)).toEqual(res.created!.containerIds.map(() => 'containerStatus'));
    const full = await getRuntimePodStatus(d.cri, id(p), { owner: instanceSelector(d) });
    expect(lean).toEqual(full);
  });

  it('is not offered when the pod had objects before the sync, or a container failed to start', async () => {
    const p = await load('again', pod('again', 'exit 1'));
    const d = deps();
    const first = await syncPod({ ...d, objects: { configMaps: [], secrets: [] } }, p);
    expect(first.created).toBeDefined();
    // The container exited: the next sync restarts it in the existing sandbox.
    const second = await syncPod({ ...d, objects: { configMaps: [], secrets: [] } }, p);
    expect(second.actions.createSandbox).toBe(false);
    expect(second.created).toBeUndefined();

    const q = await load('noimage', pod('noimage', 'sleep 3600').replace('localhost/klet/busybox:1.36', 'localhost/klet/absent:1').replace('IfNotPresent', 'Never'));
    const res = await syncPod({ ...d, objects: { configMaps: [], secrets: [] } }, q);
    expect(res.failures.length).toBeGreaterThan(0);
    expect(res.created).toBeUndefined();
  });
});

describe('a container that exits while containerd kills it', () => {
  it('delete succeeds when StopContainer fails but the container has exited (containerd 1.6: "ttrpc: closed")', async () => {
    const file = manifest(path.join(tmp, 'm'), 'racy.yaml', pod('racy', 'sleep 3600'));
    await runPod({ file, goal: 'running', timeoutMs: 10_000, rm: false }, deps());
    fake.stopFailure = { message: 'failed to kill container: ttrpc: closed: unknown', exits: true };
    const res = await deletePods({ refs: [`racy-${NODE}`], all: false }, deps());
    expect(res.deleted.map((p) => p.name)).toEqual([`racy-${NODE}`]);
    expect(fake.sandboxes.size + fake.containers.size).toBe(0);
  });

  it('delete fails with the runtime error when the container is still running after it', async () => {
    const file = manifest(path.join(tmp, 'm'), 'stuck.yaml', pod('stuck', 'sleep 3600'));
    await runPod({ file, goal: 'running', timeoutMs: 10_000, rm: false }, deps());
    fake.stopFailure = { message: 'failed to kill container: permission denied', exits: false };
    await expect(deletePods({ refs: [`stuck-${NODE}`], all: false }, deps())).rejects.toThrow(/StopContainer: failed to kill container: permission denied/);
    expect(fake.containers.size).toBe(1);
  });
});
