/**
 * Containers that fail to start, on a real containerd, the BUILT CLI: a
 * command that does not exist (the runtime's StartError, exit 128) and a
 * seccomp profile that does not exist (CreateContainerError). The kubelet
 * backs a StartError container off like one that crashed (restartCount 3
 * after 60 s, "back-off 40s", CrashLoopBackOff) and its pod container
 * deletor keeps one dead instance; runonce fails such pods as soon as the
 * failure is certain, not at its timeout.
 *
 * The kubelet's figures were measured with the kubelet v1.34.4 on this
 * machine's containerd 1.6 (the same manifest): after 60 s restartCount 3,
 * waiting CrashLoopBackOff "back-off 40s restarting failed container=…".
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { ContainerState } from '../../src/lib/cri/gen/api.js';
import { explain, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { teardown } from '../helpers/teardown.js';
import { eventually, startSync } from '../helpers/sync.js';

const NODE = 'sfnode';
const NS = 'ksf';

let rt: TestRuntime;
let cri: CriClient;
const dirs: string[] = [];

function klet(args: string[], timeoutMs = 60_000): Promise<CliResult> {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs });
}

function manifestDir(pods: Record<string, Record<string, unknown>>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-sf-'));
  dirs.push(dir);
  for (const [name, container] of Object.entries(pods)) {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS },
      spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: rt.images.busybox, ...container }] },
    };
    fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(pod));
  }
  return dir;
}

async function podJson(name: string): Promise<V1Pod> {
  const r = await klet(['status', `${NS}/${name}-${NODE}`, '-o', 'json']);
  expect(r.code, explain(r)).toBe(0);
  return JSON.parse(r.stdout) as V1Pod;
}

/** This pod's containers in the runtime, by state. */
async function instances(name: string): Promise<{ exited: number; all: number }> {
  const { containers } = await cri.listContainers({});
  const mine = containers.filter((c) => c.labels['io.kubernetes.pod.name'] === `${name}-${NODE}` && c.labels['io.kubernetes.pod.namespace'] === NS);
  return { exited: mine.filter((c) => c.state === ContainerState.CONTAINER_EXITED).length, all: mine.length };
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
}, 120_000);

afterAll(async () => {
  cri?.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  await teardown(rt);
}, 120_000);

describe('a container whose command does not exist (StartError)', () => {
  it('klet runonce fails its pod within 15 s, saying why, instead of restarting it until the timeout', async () => {
    const dir = manifestDir({ nobin: { command: ['/no/such/binary'] } });
    const r = await klet(['runonce', '--manifest-dir', dir, '-o', 'json'], 60_000);
    expect(r.code, explain(r)).not.toBe(0);
    expect(r.durationMs, explain(r)).toBeLessThan(15_000);
    const report = JSON.parse(r.stdout) as { pods: Array<{ name: string; ok: boolean; reason?: string; message?: string }> };
    const pod = report.pods.find((p) => p.name === `nobin-${NODE}`);
    expect(pod, r.stdout).toMatchObject({ ok: false, reason: 'CrashLoopBackOff' });
    const status = await podJson('nobin');
    const cs = status.status?.containerStatuses?.[0];
    // It was tried twice (the first restart is immediate), then held back.
    expect(cs?.restartCount, JSON.stringify(cs)).toBeLessThanOrEqual(1);
    expect(cs?.lastState?.terminated ?? cs?.state?.terminated, JSON.stringify(cs)).toMatchObject({ exitCode: 128, reason: 'StartError' });
    expect(JSON.stringify(cs)).toMatch(/no such file or directory|executable file not found/);
    const d = await klet(['delete', '--all', '--grace-period', '0']);
    expect(d.code, explain(d)).toBe(0);
  }, 90_000);

  it('under klet sync it is in CrashLoopBackOff with at most the kubelet\'s restarts after 60 s, and its dead instances are collected', async () => {
    const dir = manifestDir({ nobin: { command: ['/no/such/binary'] } });
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir: dir });
    const started = Date.now();
    // Running the 60 s through, sampling: the restart count never runs ahead of the kubelet's schedule (0 s, 10 s, 30 s, 70 s).
    let last: V1Pod | undefined;
    while (Date.now() - started < 60_000) {
      await new Promise((r) => setTimeout(r, 5000));
      last = await podJson('nobin');
      const cs = last.status?.containerStatuses?.[0];
      const elapsed = (Date.now() - started) / 1000;
      const allowed = elapsed < 10 ? 1 : elapsed < 30 ? 2 : 3;
      expect(cs?.restartCount ?? 0, `${elapsed}s: ${JSON.stringify(cs)}\n${sync.tail()}`).toBeLessThanOrEqual(allowed);
      // The pod container deletor keeps one dead instance (maximum-dead-containers-per-container 1), and the one being made.
      const n = await instances('nobin');
      expect(n.all, `${elapsed}s: ${JSON.stringify(n)}`).toBeLessThanOrEqual(2);
    }
    const cs = last?.status?.containerStatuses?.[0];
    expect(cs?.restartCount, JSON.stringify(cs)).toBe(3);
    expect(cs?.state?.waiting, JSON.stringify(cs)).toMatchObject({
      reason: 'CrashLoopBackOff',
      message: expect.stringMatching(/^back-off 40s restarting failed container=app pod=nobin-sfnode_ksf\(/),
    });
    expect(cs?.lastState?.terminated, JSON.stringify(cs)).toMatchObject({ exitCode: 128, reason: 'StartError' });
    await eventually(async () => expect(await instances('nobin')).toEqual({ exited: 1, all: 1 }), 20_000, 500);
    // Its BackOff events are few: one per hold, not one per poll.
    const ev = await klet(['events', `${NS}/nobin-${NODE}`, '-o', 'json']);
    expect(ev.code, explain(ev)).toBe(0);
    expect(sync.running, sync.tail()).toBe(true);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    const d = await klet(['delete', '--all', '--grace-period', '0']);
    expect(d.code, explain(d)).toBe(0);
  }, 150_000);
});

describe('a seccomp profile that does not exist (CreateContainerError)', () => {
  it('klet runonce fails its pod when the retry after the back-off fails the same way, within 15 s', async () => {
    const dir = manifestDir({
      noprofile: { command: ['sleep', '1000'], securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'no-such-profile.json' } } },
    });
    const r = await klet(['runonce', '--manifest-dir', dir, '-o', 'json'], 60_000);
    expect(r.code, explain(r)).not.toBe(0);
    expect(r.durationMs, explain(r)).toBeLessThan(15_000);
    const report = JSON.parse(r.stdout) as { pods: Array<{ name: string; ok: boolean; reason?: string; message?: string }> };
    const pod = report.pods.find((p) => p.name === `noprofile-${NODE}`);
    expect(pod, r.stdout).toMatchObject({ ok: false, reason: 'CreateContainerError', message: expect.stringContaining('no-such-profile.json') });
    // Tried twice, not hundreds of times: no container was ever made.
    expect((await instances('noprofile')).all).toBe(0);
    const d = await klet(['delete', '--all', '--grace-period', '0']);
    expect(d.code, explain(d)).toBe(0);
  }, 90_000);
});

describe('runAsNonRoot on an image that runs as root (CreateContainerConfigError)', () => {
  it("is refused before anything is created, in the kubelet's words, and runonce fails it at once", async () => {
    const dir = manifestDir({ rootimg: { command: ['sleep', '1000'], securityContext: { runAsNonRoot: true } } });
    const r = await klet(['runonce', '--manifest-dir', dir, '-o', 'json'], 60_000);
    expect(r.code, explain(r)).not.toBe(0);
    const report = JSON.parse(r.stdout) as { pods: Array<{ name: string; ok: boolean; reason?: string; message?: string; uid?: string }> };
    const pod = report.pods.find((p) => p.name === `rootimg-${NODE}`);
    expect(pod, r.stdout).toMatchObject({
      ok: false,
      reason: 'CreateContainerConfigError',
      message: `container has runAsNonRoot and image will run as root (pod: "rootimg-${NODE}_${NS}(${pod?.uid ?? ''})", container: app)`,
    });
    expect((await instances('rootimg')).all).toBe(0);
    const d = await klet(['delete', '--all', '--grace-period', '0']);
    expect(d.code, explain(d)).toBe(0);
  }, 90_000);
});
