/**
 * `klet explain POD` on a real containerd, the BUILT CLI: with a running
 * `klet sync` (its last plan from the local API's /plans, its events) and
 * without one (the plan computed from the records and the runtime). One
 * sync runs every pod: one crash-looping, one whose image is not present
 * with pull policy Never, one whose readiness probe fails, one whose
 * startup probe keeps failing, one whose ConfigMap is missing, one rejected
 * at admission (its hostPort is held), one whose init container fails, a
 * completed job, and one terminated in a long grace period.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import type { Explanation } from '../../src/lib/status/explain.js';
import { explain as explainResult, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { eventually, killAllSyncs, startSync, type SyncProcess } from '../helpers/sync.js';

const NODE = 'exnode';
const NS = 'kex';
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";
const PORT = 36000 + Math.floor(Math.random() * 2000);

let rt: TestRuntime;
let cri: CriClient;
let manifestDir: string;
let sync: SyncProcess | undefined;

function klet(args: string[]): Promise<CliResult> {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE]);
}

function manifest(name: string, container: Record<string, unknown>, spec: Record<string, unknown> = {}, created?: string): void {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, ...(created ? { creationTimestamp: created } : {}) },
    spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'app', image: rt.images.busybox, ...container }], ...spec },
  };
  fs.writeFileSync(path.join(manifestDir, `${name}.json`), JSON.stringify(pod));
}

/** `klet explain NAME -o json`. */
async function explainJson(name: string): Promise<Explanation> {
  const r = await klet(['explain', `${NS}/${name}-${NODE}`, '-o', 'json']);
  expect(r.code, explainResult(r)).toBe(0);
  return JSON.parse(r.stdout) as Explanation;
}

/** Until `check` passes on the pod's explanation; returns the last one. */
function explained(name: string, check: (x: Explanation) => void, ms = 60_000): Promise<Explanation> {
  return eventually(
    async () => {
      const x = await explainJson(name);
      check(x);
      return x;
    },
    ms,
    500,
  );
}

const plan = { killPod: false, createSandbox: false, initContainersToStart: [], containersToStart: [], ephemeralContainersToStart: [], containersToKill: [] };

/** What each state's explanation must say, with a sync running or not. */
const STATES: Record<string, (x: Explanation, online: boolean) => void> = {
  crash: (x, online) => {
    // Without a sync the last one may have stopped between the exit and the sync that backs off: Error, restarted after the back-off.
    if (!online && x.status === 'Error') {
      expect(x.summary).toMatch(/^Container app exited with exit code 3, reason Error \(restarted \d+ times\) and restartPolicy Always restarts it/);
      expect(x.next.sentence).toMatch(/^Start container app again( when its back-off ends)?\.$/);
      return;
    }
    expect(x).toMatchObject({ status: 'CrashLoopBackOff', reason: 'CrashLoopBackOff', phase: 'Running' });
    expect(x.summary).toMatch(/^Container app is in CrashLoopBackOff: it keeps exiting \(last exit code 3, reason Error; restarted \d+ times\) and restartPolicy Always restarts it; klet waits \S+ \(back-off\) before starting it again/);
    const app = x.containers[0]!;
    expect(app).toMatchObject({ name: 'app', state: 'waiting', reason: 'CrashLoopBackOff', lastTermination: { exitCode: 3, reason: 'Error' } });
    expect(app.backoff?.reason).toBe('CrashLoopBackOff');
    expect(app.log).toContain('crashing now');
    expect(x.next.sentence).toBe('Start container app again when its back-off ends.');
    expect(Date.parse(x.next.at!)).toBe(Date.parse(app.backoff!.until));
    expect(x.decision.plan).toEqual({ ...plan, containersToStart: ['app'] });
    expect(x.decision.sentences[0]).toBe('Start container app again: it exited with code 3 and restartPolicy Always restarts it.');
    expect(x.decision.failures).toEqual([expect.objectContaining({ container: 'app', reason: 'CrashLoopBackOff', message: expect.stringMatching(/^back-off \S+ restarting failed container=app pod=crash-exnode_kex/) })]);
  },
  never: (x) => {
    expect(x).toMatchObject({ status: 'ErrImageNeverPull', reason: 'ErrImageNeverPull' });
    expect(x.summary).toBe(
      'Container app cannot start (ErrImageNeverPull): its image is not present on the node and imagePullPolicy is Never, so klet will not pull it. Container image "localhost/klet/absent:1" is not present with pull policy of Never',
    );
    expect(x.next.sentence).toMatch(/^Look for the image again at the pod's next sync/);
    expect(x.decision.plan.containersToStart).toEqual(['app']);
    expect(x.decision.failures).toEqual([expect.objectContaining({ container: 'app', reason: 'ErrImageNeverPull' })]);
  },
  unready: (x, online) => {
    expect(x).toMatchObject({ status: 'Running', ready: '0/1', reason: 'Unhealthy', phase: 'Running' });
    const probe = x.containers[0]!.probes[0]!;
    expect(probe).toMatchObject({ probe: 'Readiness', result: 'Failure', periodSeconds: 1, failureThreshold: 3 });
    if (online) {
      // The probe's message, from its Unhealthy events.
      expect(x.summary).toBe('Container app is running but not ready: its readiness probe fails (Unhealthy: Readiness probe failed: not yet), so the pod is not Ready.');
      expect(probe.lastFailure).toBe('Readiness probe failed: not yet');
    } else {
      expect(x.summary).toBe('Container app is running but not ready: its readiness probe fails, so the pod is not Ready.');
    }
    expect(x.next.sentence).toBe('Run the readiness probe of app again every 1s: the container and the pod become Ready once it succeeds.');
    expect(x.decision.plan).toEqual(plan);
    expect(x.decision.sentences).toEqual(['Nothing to change: the runtime matches the pod spec.']);
  },
  slowstart: (x, online) => {
    expect(x).toMatchObject({ status: 'Running', ready: '0/1', reason: 'Unhealthy' });
    expect(x.containers[0]).toMatchObject({ state: 'running', started: false });
    expect(x.summary).toMatch(
      online
        ? /^Container app is running but has not started: its startup probe has not succeeded yet \(Unhealthy: Startup probe failed: starting\); .* after 1000 failures in a row klet kills and restarts the container\.$/
        : /^Container app is running but has not started: its startup probe has not succeeded yet; liveness and readiness probes wait for it/,
    );
    expect(x.next.sentence).toMatch(/^Run the startup probe of app again every 1s/);
  },
  nocfg: (x) => {
    expect(x).toMatchObject({ status: 'CreateContainerConfigError', reason: 'CreateContainerConfigError' });
    expect(x.summary).toBe('Container app cannot be created (CreateContainerConfigError): configmap "missing" not found.');
    expect(x.next.sentence).toBe('Try to create container app again (every 10s until what it refers to exists).');
    expect(x.next.at).toBeDefined();
  },
  portb: (x) => {
    expect(x).toMatchObject({ status: 'NodePorts', reason: 'NodePorts', phase: 'Failed' });
    expect(x.summary).toBe(
      `The pod was rejected at admission (NodePorts): Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports (hostPort ${PORT}/TCP is held by pod ${NS}/porta-${NODE}). It never runs: its phase is Failed.`,
    );
    expect(x.next.sentence).toMatch(/^Nothing: klet never runs a rejected pod/);
    expect(x.problems[0]).toMatchObject({ reason: 'NodePorts' });
    expect(x.decision.plan).toEqual(plan);
  },
  initfail: (x, online) => {
    if (!online && x.status === 'Init:Error') {
      expect(x.summary).toMatch(/^Init container init exited with exit code 1, reason Error \(restarted \d+ times?\) and restartPolicy Always restarts it.*\. No app container starts until it completes\.$/);
      expect(x.next.sentence).toMatch(/^Start init container init again( when its back-off ends)?\.$/);
      return;
    }
    expect(x).toMatchObject({ status: 'Init:CrashLoopBackOff', reason: 'CrashLoopBackOff', phase: 'Pending' });
    expect(x.summary).toMatch(/^Init container init is in CrashLoopBackOff: it keeps exiting \(last exit code 1, reason Error; .* No app container starts until it completes\.$/);
    expect(x.containers.map((c) => [c.name, c.type, c.state])).toEqual([
      ['init', 'init', 'waiting'],
      ['app', 'regular', 'waiting'],
    ]);
    expect(x.next.sentence).toBe('Start init container init again when its back-off ends.');
    expect(x.decision.plan.initContainersToStart).toEqual(['init']);
  },
  job: (x) => {
    expect(x).toMatchObject({ status: 'Completed', reason: 'Completed', phase: 'Succeeded' });
    expect(x.summary).toBe('The pod has completed: every container exited with code 0 and restartPolicy Never does not restart it (phase Succeeded).');
    expect(x.containers[0]).toMatchObject({ state: 'terminated', exitCode: 0, reason: 'Completed', log: ['done'] });
    expect(x.next).toEqual({ sentence: 'Nothing: the pod has finished. klet keeps its containers and logs until it is deleted.' });
  },
};

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  manifestDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-explain-m-'));
  manifest('crash', { command: ['sh', '-c', 'echo crashing now; sleep 0.5; exit 3'] });
  manifest('never', { image: 'localhost/klet/absent:1', imagePullPolicy: 'Never' });
  manifest('unready', { command: ['sh', '-c', SLEEP_FOREVER], readinessProbe: { exec: { command: ['sh', '-c', 'echo not yet; exit 1'] }, periodSeconds: 1 } });
  manifest('slowstart', { command: ['sh', '-c', SLEEP_FOREVER], startupProbe: { exec: { command: ['sh', '-c', 'echo starting; exit 1'] }, periodSeconds: 1, failureThreshold: 1000 } });
  manifest('nocfg', { command: ['sh', '-c', SLEEP_FOREVER], env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing', key: 'x' } } }] });
  // The older pod holds the hostPort; the newer one is rejected (NodePorts).
  const withPort = { command: ['sh', '-c', SLEEP_FOREVER], ports: [{ containerPort: 80, hostPort: PORT }] };
  manifest('porta', withPort, {}, '2025-01-01T00:00:00Z');
  manifest('portb', withPort, {}, '2025-06-01T00:00:00Z');
  manifest('initfail', { command: ['sh', '-c', SLEEP_FOREVER] }, { initContainers: [{ name: 'init', image: rt.images.busybox, command: ['sh', '-c', 'echo init fails; exit 1'] }] });
  manifest('job', { command: ['sh', '-c', 'echo done'] }, { restartPolicy: 'Never' });
  // Ignores SIGTERM: once its manifest is gone it is terminated for its whole grace period.
  manifest('slowstop', { command: ['sh', '-c', "trap '' TERM; sleep 1000000 & wait"] }, { terminationGracePeriodSeconds: 600 });
  sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir, args: ['--crash-loop-backoff-initial', '2s'] });
}, 120_000);

afterAll(async () => {
  await killAllSyncs();
  if (cri !== undefined) await wipeNode(cri, rt.rootDir, NS).catch(() => undefined);
  cri?.close();
  await rt?.stop();
  if (manifestDir) fs.rmSync(manifestDir, { recursive: true, force: true });
}, 120_000);

function terminating(x: Explanation): void {
  expect(x).toMatchObject({ status: 'Terminating', reason: 'Killing' });
  expect(x.summary).toMatch(/^The pod is being deleted \(Terminating\): klet asked its containers to stop at \S+, with a grace period of 600s; still running: app\.$/);
  expect(x.next.sentence).toBe('Kill (SIGKILL) the containers still running when the grace period ends, then remove the pod.');
  expect(x.next.inMs).toBeGreaterThan(500_000);
  // The sync's plan for it (its worker's), or the one computed from its record: kill it.
  expect(x.decision.plan).toMatchObject({ killPod: true, containersToKill: [{ name: 'app', message: 'Pod is being deleted' }] });
  expect(x.decision.sentences).toEqual(['Kill the pod: it is being deleted.', 'Stop container app: Pod is being deleted.']);
}

describe('klet explain with a running klet sync', () => {
  it('explains each state from the sync\'s last plan and events: the reason, why, what klet does next', async () => {
    for (const [name, check] of Object.entries(STATES)) {
      const x = await explained(name, (e) => check(e, true));
      expect(x.source, name).toBe('sync');
      expect(x.decision.from, name).toBe('sync');
      expect(Date.parse(x.decision.lastSyncAt!), name).toBeGreaterThanOrEqual(Date.parse(x.decision.at!));
    }
    // The crash loop's events, as klet events lists them.
    const crash = await explainJson('crash');
    expect(crash.events.map((e) => e.reason)).toEqual(expect.arrayContaining(['Started', 'BackOff']));

    // The screen, while the container is backing off.
    const table = await eventually(async () => {
      const r = await klet(['explain', `${NS}/crash-${NODE}`]);
      expect(r.code, explainResult(r)).toBe(0);
      expect(r.stdout).toMatch(/^Why: {2}Container app is in CrashLoopBackOff: /m);
      return r;
    }, 60_000, 500);
    expect(table.stderr).toBe('');
    expect(table.stdout).toMatch(new RegExp(`^Pod ${NS}/crash-${NODE} \\(uid [0-9a-f-]+\\): CrashLoopBackOff, phase Running, 0/1 ready; reason CrashLoopBackOff$`, 'm'));
    expect(table.stdout).toMatch(/^Why: {2}Container app is in CrashLoopBackOff: /m);
    expect(table.stdout).toMatch(/^Next: Start container app again when its back-off ends\. \(at \S+, in \S+\)$/m);
    expect(table.stdout).toMatch(/^Last plan of klet sync \(decided \S+ ago, last synced \S+ ago\):$/m);
    expect(table.stdout).toMatch(/^ {2}- Start container app again: it exited with code 3 and restartPolicy Always restarts it\.$/m);
    expect(table.stdout).toMatch(/^ {6}\| crashing now$/m);
    expect(table.stdout).toMatch(/^ {2}LAST SEEN +TYPE +REASON +CONTAINER +MESSAGE$/m);
    expect(table.stdout).toMatch(/Warning +BackOff +app +Back-off restarting failed container app in pod crash-exnode/);

    // A pod being terminated in its grace period.
    fs.rmSync(path.join(manifestDir, 'slowstop.json'));
    await explained('slowstop', terminating, 30_000);

    // A pod that is not there: one line, non-zero.
    const none = await klet(['explain', `${NS}/nope`]);
    expect(none.code).not.toBe(0);
    expect(none.stderr.trim().split('\n')).toHaveLength(1);
    expect(none.stderr).toMatch(/nope/);
  }, 240_000);
});

describe('klet explain without a running klet sync', () => {
  it('explains each state from the records and the runtime, the plan computed as the next sync would', async () => {
    // Stopped between two starts of the crash-looping containers: a SIGTERM that cancels a
    // StartContainer in flight makes containerd record that start as exit code 128, StartError.
    await eventually(
      async () => {
        for (const name of ['crash', 'initfail']) expect((await explainJson(name)).next.inMs ?? 0, name).toBeGreaterThan(3000);
      },
      90_000,
      250,
    );
    await sync!.stop();
    sync = undefined;
    const all: typeof STATES = { ...STATES, slowstop: terminating };
    for (const [name, check] of Object.entries(all)) {
      const x = await explainJson(name);
      check(x, false);
      expect(x.source, name).toBe('records');
      expect(x.decision.from, name).toBe('computed');
      expect(x.decision.at, name).toBeUndefined();
    }
    const table = await klet(['explain', `${NS}/never-${NODE}`]);
    expect(table.code, explainResult(table)).toBe(0);
    expect(table.stdout).toMatch(/^Plan of the next sync \(no klet sync runs: computed from the records and the runtime\):$/m);
    expect(table.stdout).toMatch(/^Events \(from the records and the runtime; no klet sync runs\):$/m);
  }, 240_000);
});
