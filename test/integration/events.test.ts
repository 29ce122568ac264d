/**
 * `klet events` on a real containerd, the BUILT CLI: with a running
 * `klet sync` (its local API's /events, counted as the kubelet's recorder
 * counts them) and without one (what the pods' records and the runtime
 * still tell). The pods: one crash-looping, one whose readiness probe fails
 * every second, one whose startup probe keeps failing, one that cannot
 * start because its ConfigMap is missing, one whose image is not present
 * with pull policy Never, one whose init container fails, a completed job,
 * one serving, and one terminated in a long grace period.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CoreV1Event } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { KLET_BIN, PROJECT_ROOT, cleanEnv, explain, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { eventually, killAllSyncs, startSync, type SyncProcess } from '../helpers/sync.js';

const NODE = 'evnode';
const NS = 'kev';
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";

let rt: TestRuntime;
let cri: CriClient;
let manifestDir: string;
let sync: SyncProcess | undefined;

function common(): string[] {
  return ['--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
}

function klet(args: string[]): Promise<CliResult> {
  return runKlet([...args, ...common()]);
}

function manifest(name: string, container: Record<string, unknown>, spec: Record<string, unknown> = {}): void {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image: rt.images.busybox, ...container }], ...spec },
  };
  fs.writeFileSync(path.join(manifestDir, `${name}.json`), JSON.stringify(pod));
}

/** `klet events ARGS -o json`: the EventList's items. */
async function eventsJson(args: string[] = []): Promise<{ r: CliResult; items: CoreV1Event[] }> {
  const r = await klet(['events', ...args, '-o', 'json']);
  expect(r.code, explain(r)).toBe(0);
  const list = JSON.parse(r.stdout) as { kind: string; items: CoreV1Event[] };
  expect(list.kind).toBe('EventList');
  return { r, items: list.items };
}

const find = (items: CoreV1Event[], pod: string, reason: string) => items.find((e) => e.involvedObject.name === `${pod}-${NODE}` && e.reason === reason);

/** `klet events ARGS` running: its stdout lines as they come. */
function streaming(args: string[]) {
  const child = spawn(process.execPath, [KLET_BIN, 'events', ...args, ...common()], { cwd: PROJECT_ROOT, env: cleanEnv() });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
  child.stderr.on('data', (b: Buffer) => (err += b.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, exited, out: () => out, err: () => err };
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  manifestDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-events-m-'));
  manifest('crash', { command: ['sh', '-c', 'sleep 0.5; exit 3'] });
  manifest('unready', { command: ['sh', '-c', SLEEP_FOREVER], readinessProbe: { exec: { command: ['sh', '-c', 'echo not yet; exit 1'] }, periodSeconds: 1 } });
  manifest('nocfg', { command: ['sh', '-c', SLEEP_FOREVER], env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing', key: 'x' } } }] });
  manifest('web', { command: ['sh', '-c', SLEEP_FOREVER] });
  manifest('never', { image: 'localhost/klet/absent:1', imagePullPolicy: 'Never' });
  manifest('initfail', { command: ['sh', '-c', SLEEP_FOREVER] }, { initContainers: [{ name: 'init', image: rt.images.busybox, command: ['sh', '-c', 'exit 1'] }] });
  manifest('job', { command: ['sh', '-c', 'echo done'] }, { restartPolicy: 'Never' });
  manifest('slowstart', { command: ['sh', '-c', SLEEP_FOREVER], startupProbe: { exec: { command: ['sh', '-c', 'echo starting; exit 1'] }, periodSeconds: 1, failureThreshold: 1000 } });
  // Ignores SIGTERM: once its manifest is gone it is terminated for its whole grace period.
  manifest('slowstop', { command: ['sh', '-c', "trap '' TERM; sleep 1000000 & wait"] }, { terminationGracePeriodSeconds: 600 });
  sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir, args: ['--crash-loop-backoff-initial', '1s'] });
}, 120_000);

afterAll(async () => {
  await killAllSyncs();
  if (cri !== undefined) await wipeNode(cri, rt.rootDir, NS).catch(() => undefined);
  cri?.close();
  await rt?.stop();
  if (manifestDir) fs.rmSync(manifestDir, { recursive: true, force: true });
}, 120_000);

describe('klet events with a running klet sync', () => {
  it('lists the node\'s events as kubectl does, repeated ones counted: a crash loop, a failing readiness probe, a missing ConfigMap', async () => {
    // Until the crash loop has restarted twice and the probe has failed a few times.
    const { items } = await eventually(
      async () => {
        const got = await eventsJson();
        expect(find(got.items, 'crash', 'Started')?.count).toBeGreaterThanOrEqual(3);
        expect(find(got.items, 'crash', 'BackOff')).toBeDefined();
        expect(find(got.items, 'unready', 'Unhealthy')?.count).toBeGreaterThanOrEqual(3);
        expect(find(got.items, 'initfail', 'BackOff')).toBeDefined();
        expect(find(got.items, 'slowstart', 'Unhealthy')).toBeDefined();
        expect(find(got.items, 'never', 'ErrImageNeverPull')).toBeDefined();
        return got;
      },
      60_000,
      500,
    );
    const unhealthy = find(items, 'unready', 'Unhealthy')!;
    expect(unhealthy).toMatchObject({
      type: 'Warning',
      // The exec probe's output as it was, newline included (the table trims it, as kubectl does).
      message: 'Readiness probe failed: not yet\n',
      involvedObject: { kind: 'Pod', namespace: NS, name: `unready-${NODE}`, fieldPath: 'spec.containers{app}' },
      source: { component: 'kubelet', host: NODE },
    });
    expect(Date.parse(String(unhealthy.lastTimestamp))).toBeGreaterThan(Date.parse(String(unhealthy.firstTimestamp)));
    const crashUid = find(items, 'crash', 'Started')!.involvedObject.uid;
    expect(find(items, 'crash', 'BackOff')?.message).toBe(`Back-off restarting failed container app in pod crash-${NODE}_${NS}(${crashUid})`);
    expect(find(items, 'nocfg', 'Failed')).toMatchObject({ type: 'Warning', message: 'Error: configmap "missing" not found' });
    // An image not present with pull policy Never, a failing init container, a completed job, a startup probe still failing.
    expect(find(items, 'never', 'ErrImageNeverPull')).toMatchObject({ type: 'Warning', message: 'Container image "localhost/klet/absent:1" is not present with pull policy of Never' });
    const initUid = find(items, 'initfail', 'Started')?.involvedObject.uid;
    expect(find(items, 'initfail', 'BackOff')).toMatchObject({
      message: `Back-off restarting failed container init in pod initfail-${NODE}_${NS}(${initUid})`,
      involvedObject: { fieldPath: 'spec.initContainers{init}' },
    });
    expect(find(items, 'job', 'Started')).toMatchObject({ count: 1, message: 'Started container app' });
    expect(find(items, 'slowstart', 'Unhealthy')).toMatchObject({ message: 'Startup probe failed: starting\n' });
    // klet's own sandbox events are not the kubelet's: not listed.
    expect(items.map((e) => e.reason)).not.toContain('SandboxCreated');

    const table = await klet(['events']);
    expect(table.code, explain(table)).toBe(0);
    expect(table.stderr).toBe('');
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAMESPACE +LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$/);
    expect(table.stdout).toMatch(new RegExp(`^${NS} +\\d+s \\(x\\d+ over \\d+s\\) +Warning +Unhealthy +Pod/unready-${NODE} +Readiness probe failed: not yet$`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^${NS} +\\d+s \\(x\\d+ over \\d+s\\) +Normal +Started +Pod/crash-${NODE} +Started container app$`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^${NS} +\\S+.* +Warning +Failed +Pod/nocfg-${NODE} +Error: configmap "missing" not found$`, 'm'));

    // One pod: its events only, without the NAMESPACE column.
    const web = await klet(['events', `${NS}/web-${NODE}`]);
    expect(web.code, explain(web)).toBe(0);
    const webLines = web.stdout.trimEnd().split('\n');
    expect(webLines[0]).toMatch(/^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$/);
    expect(webLines.slice(1).length).toBeGreaterThanOrEqual(2);
    for (const l of webLines.slice(1)) expect(l).toMatch(new RegExp(` Pod/web-${NODE} `));
    expect(web.stdout).toMatch(/Normal +Started +Pod\/web-evnode +Started container app$/m);

    // A pod that is not there: one line, non-zero.
    const none = await klet(['events', `${NS}/nope`]);
    expect(none.code).not.toBe(0);
    expect(none.stderr.trim().split('\n')).toHaveLength(1);
    expect(none.stderr).toMatch(/nope/);
  }, 90_000);

  it('--watch prints the events so far, then each one as it happens (a repeated one with its new count); Ctrl-C exits 130', async () => {
    const w = streaming([`${NS}/unready-${NODE}`, '--watch']);
    await eventually(() => expect(w.out()).toMatch(/Unhealthy +Pod\/unready-evnode +Readiness probe failed: not yet\n/), 20_000);
    const count = (s: string) => [...s.matchAll(/\(x(\d+) over \S+\) +Warning +Unhealthy/g)].map((m) => Number(m[1]));
    const first = Math.max(...count(w.out()));
    // The probe fails every second: the row comes again, counted higher.
    await eventually(() => expect(Math.max(...count(w.out()))).toBeGreaterThanOrEqual(first + 2), 20_000);
    expect(w.out().match(/^LAST SEEN/gm)).toHaveLength(1);
    w.child.kill('SIGINT');
    expect(await w.exited).toBe(130);
    expect(w.err()).toBe('');

    const j = streaming([`${NS}/unready-${NODE}`, '--watch', '-o', 'json']);
    await eventually(() => expect(j.out()).toMatch(/"type":"MODIFIED"/), 20_000);
    j.child.kill('SIGINT');
    expect(await j.exited).toBe(130);
    const changes = j.out().trim().split('\n').map((l) => JSON.parse(l) as { type: string; object: CoreV1Event });
    expect(changes[0]?.type).toBe('ADDED');
    const modified = changes.find((c) => c.type === 'MODIFIED');
    expect(modified?.object.reason).toBe('Unhealthy');
    expect(modified?.object.count).toBeGreaterThan(1);
  }, 60_000);
});

describe('klet events without a running klet sync', () => {
  it('tells what the records and the runtime still know: Created and Started counted, the back-off and the missing ConfigMap; says where they come from', async () => {
    // A pod in its grace period: Killing, while the sync runs and after it stopped.
    fs.rmSync(path.join(manifestDir, 'slowstop.json'));
    const killing = await eventually(async () => {
      const k = find((await eventsJson()).items, 'slowstop', 'Killing');
      expect(k).toBeDefined();
      return k!;
    }, 30_000);
    expect(killing).toMatchObject({ type: 'Normal', message: 'Stopping container app', involvedObject: { fieldPath: 'spec.containers{app}' } });
    const before = (await eventsJson()).items;
    await sync!.stop();
    sync = undefined;
    // The pods keep running; the containers the sync created are still in the runtime.
    const { r, items } = await eventsJson();
    expect(r.stderr.trim()).toBe(
      `klet events: no klet sync serves ${path.join(rt.rootDir, 'klet.sock')}: showing what the pods' records and the runtime still tell (see klet events --help)`,
    );
    const crashStarted = find(items, 'crash', 'Started')!;
    expect(crashStarted).toMatchObject({ type: 'Normal', message: 'Started container app', involvedObject: { fieldPath: 'spec.containers{app}', name: `crash-${NODE}` } });
    // The crash loop ran as often as the sync saw it start (its restart count); never fewer.
    expect(crashStarted.count).toBeGreaterThanOrEqual(find(before, 'crash', 'Started')!.count!);
    expect(find(items, 'crash', 'Created')?.count).toBeGreaterThanOrEqual(crashStarted.count!);
    expect(find(items, 'web', 'Started')).toMatchObject({ count: 1, message: 'Started container app' });
    // The last failures, with the same reason and message as the sync's own events.
    expect(find(items, 'crash', 'BackOff')?.message).toBe(find(before, 'crash', 'BackOff')?.message);
    expect(find(items, 'nocfg', 'Failed')?.message).toBe('Error: configmap "missing" not found');
    expect(find(items, 'nocfg', 'Failed')?.lastTimestamp).toBeUndefined();
    // Probe failures are not kept: no Unhealthy.
    expect(find(items, 'unready', 'Unhealthy')).toBeUndefined();
    // The other states, told alike.
    for (const [pod, reason] of [['never', 'ErrImageNeverPull'], ['initfail', 'BackOff'], ['slowstop', 'Killing']]) {
      const offline = find(items, pod!, reason!);
      const online = find(before, pod!, reason!);
      expect(offline, `${pod} ${reason}`).toMatchObject({ type: online?.type, message: online?.message, involvedObject: online?.involvedObject });
    }
    expect(find(items, 'job', 'Started')).toMatchObject({ count: 1, message: 'Started container app' });
    expect(find(items, 'slowstop', 'Killing')?.lastTimestamp).toBeDefined();

    const table = await klet(['events']);
    expect(table.code, explain(table)).toBe(0);
    expect(table.stdout).toMatch(/^NAMESPACE +LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$/m);
    expect(table.stdout).toMatch(new RegExp(`^${NS} +\\d+s \\(x\\d+ over \\d+s\\) +Normal +Started +Pod/crash-${NODE} +Started container app$`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^${NS} +<unknown> +Warning +Failed +Pod/nocfg-${NODE} +Error: configmap "missing" not found$`, 'm'));
  }, 60_000);

  it('--watch reads them again: a pod started meanwhile shows up; Ctrl-C exits 130', async () => {
    const w = streaming(['--watch', '--interval', '300ms']);
    await eventually(() => expect(w.out()).toMatch(/Started +Pod\/web-evnode/), 20_000);
    expect(w.out()).not.toMatch(/Pod\/late-evnode/);
    const file = path.join(manifestDir, '..', `klet-events-late-${process.pid}.json`);
    fs.writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'late', namespace: NS },
        spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image: rt.images.busybox, command: ['sh', '-c', SLEEP_FOREVER] }] },
      }),
    );
    try {
      const run = await klet(['run-pod', file]);
      expect(run.code, explain(run)).toBe(0);
      await eventually(() => expect(w.out()).toMatch(/Normal +Started +Pod\/late-evnode +Started container app/), 20_000);
    } finally {
      fs.rmSync(file, { force: true });
    }
    expect(w.out().match(/^NAMESPACE/gm)).toHaveLength(1);
    w.child.kill('SIGINT');
    expect(await w.exited).toBe(130);
  }, 60_000);
});
