/**
 * explainPod: each state a user asks "why?" about, from facts as the
 * explain-pod service gathers them (the pod's status generated from the
 * same runtime and sync state, as podWithStatus does).
 */
import { describe, expect, it } from 'vitest';
import type { CoreV1Event, V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { containerHash } from '../../src/lib/kuberuntime/hash.js';
import type { PodRecord, PodSyncState } from '../../src/lib/kuberuntime/poddir.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../../src/lib/kuberuntime/runtime-status.js';
import type { PodProbeResults } from '../../src/lib/prober/results.js';
import { explainPod, type ExplainFacts, type Explanation } from '../../src/lib/status/explain.js';
import { generatePodStatus } from '../../src/lib/status/pod-status.js';
import { formatExplanation } from '../../src/cli/explain.js';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const SB = 'sb1';
const busy = (name: string, extra: Partial<V1Container> = {}): V1Container => ({ name, image: 'busybox', ...extra });

function ctr(c: V1Container, state: RuntimeContainerStatus['state'], extra: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  return {
    id: `${c.name}-id`,
    name: c.name,
    sandboxId: SB,
    state,
    createdAt: NOW - 60_000,
    startedAt: NOW - 59_000,
    finishedAt: state === 'exited' ? NOW - 5_000 : 0,
    exitCode: 0,
    reason: state === 'exited' ? 'Completed' : '',
    message: '',
    image: 'busybox',
    imageRef: 'sha256:1',
    hash: containerHash(c),
    restartCount: 0,
    type: 'regular',
    logPath: '',
    ...extra,
  };
}

interface Case {
  spec: Partial<V1PodSpec>;
  containers?: (spec: V1PodSpec) => RuntimeContainerStatus[];
  noSandbox?: boolean;
  syncState?: PodSyncState;
  probes?: PodProbeResults;
  events?: CoreV1Event[];
  deletion?: PodRecord['deletion'];
  lastSync?: ExplainFacts['lastSync'];
  logs?: Record<string, string[]>;
}

function facts(c: Case): ExplainFacts {
  const pod: V1Pod = { metadata: { name: 'web', namespace: 'default', uid: 'u1' }, spec: { containers: [], ...c.spec } };
  const runtime: RuntimePodStatus = {
    uid: 'u1',
    name: 'web',
    namespace: 'default',
    sandboxes: c.noSandbox ? [] : [{ id: SB, ready: true, attempt: 0, createdAt: NOW - 61_000, ip: '10.0.0.2', additionalIps: [], hostNetwork: false }],
    containers: c.containers?.(pod.spec!) ?? [],
  };
  const syncState = c.syncState ?? { containers: {} };
  const record: PodRecord = { pod, source: 'test', firstSeen: new Date(NOW - 62_000).toISOString(), ...(c.deletion ? { deletion: c.deletion } : {}) };
  const status = generatePodStatus({ pod, runtime, syncState, runtimeName: 'containerd', hostIPs: ['10.0.0.1'], probes: c.probes, terminating: c.deletion !== undefined, startTime: new Date(record.firstSeen) });
  const metadata = { ...pod.metadata, ...(c.deletion ? { deletionTimestamp: new Date(c.deletion.at), deletionGracePeriodSeconds: c.deletion.gracePeriodSeconds } : {}) };
  return {
    now: NOW,
    pod: { ...pod, metadata, status },
    record,
    syncState,
    runtime,
    probes: c.probes ?? {},
    source: c.lastSync ? 'sync' : 'records',
    ...(c.lastSync ? { lastSync: c.lastSync } : {}),
    events: c.events ?? [],
    logs: c.logs ?? {},
  };
}

const unhealthy = (container: string, message: string, count: number): CoreV1Event => ({
  metadata: { name: 'e' },
  involvedObject: { kind: 'Pod', name: 'web', namespace: 'default', uid: 'u1', fieldPath: `spec.containers{${container}}` },
  type: 'Warning',
  reason: 'Unhealthy',
  message,
  count,
  lastTimestamp: new Date(NOW - 1000),
});

const app = busy('app');
const idle = { killPod: false, createSandbox: false, initContainersToStart: [], containersToStart: [], ephemeralContainersToStart: [], containersToKill: [] };

const cases: [string, Case, Omit<Partial<Explanation>, 'summary' | 'next'> & { summary: string | RegExp; next: string | RegExp; nextInMs?: number; plan?: string[] }][] = [
  [
    'CrashLoopBackOff, from the records: the exit code, the back-off and when it ends',
    {
      spec: { containers: [app] },
      containers: () => [ctr(app, 'exited', { exitCode: 3, reason: 'Error', restartCount: 2, finishedAt: NOW - 5_000 })],
      syncState: { containers: { app: { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container=app pod=web_default(u1)', backoffMs: 20_000 } } },
      logs: { app: ['crashing now'] },
    },
    {
      status: 'CrashLoopBackOff',
      reason: 'CrashLoopBackOff',
      summary:
        'Container app is in CrashLoopBackOff: it keeps exiting (last exit code 3, reason Error; restarted 2 times) and restartPolicy Always restarts it; klet waits 20s (back-off) before starting it again, 15s from now.',
      next: 'Start container app again when its back-off ends.',
      nextInMs: 15_000,
      plan: ['Start container app again: it exited with code 3 and restartPolicy Always restarts it.', 'app: CrashLoopBackOff: back-off 20s restarting failed container=app pod=web_default(u1)'],
    },
  ],
  [
    'a container that has just exited (Error), before the sync that backs off: restarted after its back-off',
    {
      spec: { containers: [app] },
      containers: () => [ctr(app, 'exited', { exitCode: 3, reason: 'Error', restartCount: 1, finishedAt: NOW - 1_000 })],
      syncState: { containers: { app: { backoffMs: 10_000 } } },
    },
    {
      status: 'Error',
      reason: 'Error',
      summary: 'Container app exited with exit code 3, reason Error (restarted 1 time) and restartPolicy Always restarts it; klet waits 10s (back-off) before starting it again, 9s from now.',
      next: 'Start container app again when its back-off ends.',
      nextInMs: 9_000,
    },
  ],
  [
    'ErrImageNeverPull',
    {
      spec: { containers: [busy('app', { image: 'absent:1', imagePullPolicy: 'Never' })] },
      syncState: { containers: { app: { reason: 'ErrImageNeverPull', message: 'Container image "absent:1" is not present with pull policy of Never' } } },
    },
    {
      status: 'ErrImageNeverPull',
      reason: 'ErrImageNeverPull',
      summary:
        'Container app cannot start (ErrImageNeverPull): its image is not present on the node and imagePullPolicy is Never, so klet will not pull it. Container image "absent:1" is not present with pull policy of Never',
      next: /^Look for the image again at the pod's next sync; it fails the same way until the image is on the node/,
      nextInMs: 60_000,
      plan: ['Start container app.', 'app: ErrImageNeverPull: Container image "absent:1" is not present with pull policy of Never'],
    },
  ],
  [
    'ImagePullBackOff: the pull back-off left',
    {
      spec: { containers: [busy('app', { image: 'nowhere/x:1' })] },
      syncState: { containers: { app: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "nowhere/x:1"', pullFailedAt: NOW - 4_000, pullBackoffMs: 10_000 } } },
    },
    { status: 'ImagePullBackOff', reason: 'ImagePullBackOff', summary: /^Container app cannot start \(ImagePullBackOff\): its image could not be pulled; klet tries again in 6s\./, next: 'Pull the image of app again.', nextInMs: 6_000 },
  ],
  [
    'a failing readiness probe, with its Unhealthy events',
    {
      spec: { containers: [busy('app', { readinessProbe: { exec: { command: ['false'] }, periodSeconds: 2 } })] },
      containers: (s) => [ctr(s.containers[0]!, 'running')],
      probes: { app: { containerId: 'app-id', readiness: 'Failure' } },
      events: [unhealthy('app', 'Readiness probe failed: not yet\n', 7)],
    },
    {
      status: 'Running',
      ready: '0/1',
      reason: 'Unhealthy',
      summary: 'Container app is running but not ready: its readiness probe fails (Unhealthy: Readiness probe failed: not yet), so the pod is not Ready.',
      next: 'Run the readiness probe of app again every 2s: the container and the pod become Ready once it succeeds.',
      plan: ['Nothing to change: the runtime matches the pod spec.'],
    },
  ],
  [
    'a startup probe still failing',
    {
      spec: { containers: [busy('app', { startupProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 30 } })] },
      containers: (s) => [ctr(s.containers[0]!, 'running')],
      probes: { app: { containerId: 'app-id', startup: 'Unknown' } },
      events: [unhealthy('app', 'Startup probe failed: starting\n', 4)],
    },
    {
      status: 'Running',
      reason: 'Unhealthy',
      summary:
        'Container app is running but has not started: its startup probe has not succeeded yet (Unhealthy: Startup probe failed: starting); liveness and readiness probes wait for it, and after 30 failures in a row klet kills and restarts the container.',
      next: /^Run the startup probe of app again every 1s: it starts once the probe succeeds; after 30 failures in a row klet restarts it\.$/,
    },
  ],
  [
    'a missing ConfigMap: retried every 10s',
    {
      spec: { containers: [app] },
      syncState: { containers: { app: { reason: 'CreateContainerConfigError', message: 'configmap "missing" not found' } } },
    },
    {
      status: 'CreateContainerConfigError',
      reason: 'CreateContainerConfigError',
      summary: 'Container app cannot be created (CreateContainerConfigError): configmap "missing" not found.',
      next: 'Try to create container app again (every 10s until what it refers to exists).',
      nextInMs: 10_000,
    },
  ],
  [
    'a pod rejected by admission',
    {
      spec: { containers: [app] },
      noSandbox: true,
      syncState: { containers: {}, rejected: true, reason: 'NodePorts', message: 'Pod was rejected: Predicate NodePorts failed: hostPort 80/TCP is held' },
    },
    {
      status: 'NodePorts',
      phase: 'Failed',
      reason: 'NodePorts',
      summary: 'The pod was rejected at admission (NodePorts): Pod was rejected: Predicate NodePorts failed: hostPort 80/TCP is held. It never runs: its phase is Failed.',
      next: /^Nothing: klet never runs a rejected pod\./,
      plan: ['Nothing: the pod was rejected at admission and never runs.'],
    },
  ],
  [
    'an init container failing: nothing else starts',
    {
      spec: { initContainers: [busy('init')], containers: [app] },
      containers: (s) => [ctr(s.initContainers![0]!, 'exited', { exitCode: 1, reason: 'Error', restartCount: 1, type: 'init' })],
      syncState: { containers: { init: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=init pod=web_default(u1)', backoffMs: 10_000 } } },
    },
    {
      status: 'Init:CrashLoopBackOff',
      phase: 'Pending',
      reason: 'CrashLoopBackOff',
      summary:
        'Init container init is in CrashLoopBackOff: it keeps exiting (last exit code 1, reason Error; restarted 1 time) and restartPolicy Always restarts it; klet waits 10s (back-off) before starting it again, 5s from now. No app container starts until it completes.',
      next: 'Start init container init again when its back-off ends.',
      nextInMs: 5_000,
      plan: ['Start init container init.', 'init: CrashLoopBackOff: back-off 10s restarting failed container=init pod=web_default(u1)'],
    },
  ],
  [
    'a Completed job',
    {
      spec: { restartPolicy: 'Never', containers: [app] },
      containers: () => [ctr(app, 'exited', { exitCode: 0 })],
      logs: { app: ['done'] },
    },
    {
      status: 'Completed',
      phase: 'Succeeded',
      reason: 'Completed',
      summary: 'The pod has completed: every container exited with code 0 and restartPolicy Never does not restart it (phase Succeeded).',
      next: 'Nothing: the pod has finished. klet keeps its containers and logs until it is deleted.',
      plan: ['Nothing: the pod has finished and is not synced again.'],
    },
  ],
  [
    'a pod terminated in its grace period: SIGKILL when it ends',
    {
      spec: { containers: [app] },
      containers: () => [ctr(app, 'running')],
      deletion: { at: new Date(NOW - 20_000).toISOString(), gracePeriodSeconds: 30 },
    },
    {
      status: 'Terminating',
      reason: 'Killing',
      summary: `The pod is being deleted (Terminating): klet asked its containers to stop at ${new Date(NOW - 20_000).toISOString()}, with a grace period of 30s; still running: app.`,
      next: 'Kill (SIGKILL) the containers still running when the grace period ends, then remove the pod.',
      nextInMs: 10_000,
      plan: ['Kill the pod: it is being deleted.', 'Stop container app: Pod is being deleted.'],
    },
  ],
  [
    'a running, ready pod: nothing to do',
    { spec: { containers: [app] }, containers: () => [ctr(app, 'running')] },
    { status: 'Running', ready: '1/1', summary: 'The pod is Running: its containers are running and the pod is Ready.', next: /^Nothing to change/ },
  ],
  [
    'a pod not started yet: the plan creates its sandbox',
    { spec: { containers: [app] }, noSandbox: true },
    { status: 'ContainerCreating', reason: 'ContainerCreating', summary: 'The pod is starting (ContainerCreating): no container has been created yet.', next: 'Create the pod sandbox and start the containers.', plan: ['Create the pod sandbox (attempt 0): the pod has none yet.', 'Start container app.'] },
  ],
];

describe('explainPod', () => {
  it.each(cases)('%s', (_name, c, want) => {
    const x = explainPod(facts(c));
    const { summary, next, nextInMs, plan, ...fields } = want;
    expect(x).toMatchObject(fields);
    if (want.reason === undefined) expect(x.reason).toBeUndefined();
    if (typeof summary === 'string') expect(x.summary).toBe(summary);
    else expect(x.summary).toMatch(summary);
    if (typeof next === 'string') expect(x.next.sentence).toBe(next);
    else expect(x.next.sentence).toMatch(next);
    if (nextInMs !== undefined) {
      expect(x.next.inMs).toBe(nextInMs);
      expect(x.next.at).toBe(new Date(NOW + nextInMs).toISOString());
    }
    if (plan !== undefined) expect(x.decision.sentences).toEqual(plan);
    expect(x.decision.from).toBe('computed');
    // The screen prints the same sentences.
    const text = formatExplanation(x, NOW);
    expect(text).toContain(`Why:  ${x.summary}`);
    expect(text).toContain(`Next: ${x.next.sentence}`);
  });

  it('a container\'s facts: exit codes, back-off, probes and log lines', () => {
    const x = explainPod(facts(cases[0]![1]));
    expect(x.containers).toEqual([
      expect.objectContaining({
        name: 'app',
        type: 'regular',
        state: 'waiting',
        reason: 'CrashLoopBackOff',
        restartCount: 2,
        lastTermination: expect.objectContaining({ exitCode: 3, reason: 'Error' }),
        backoff: { reason: 'CrashLoopBackOff', delayMs: 20_000, until: new Date(NOW + 15_000).toISOString(), remainingMs: 15_000 },
        log: ['crashing now'],
      }),
    ]);
    const probe = explainPod(facts(cases[4]![1])).containers[0]!.probes;
    expect(probe).toEqual([{ probe: 'Readiness', result: 'Failure', lastFailure: 'Readiness probe failed: not yet', failures: 7, periodSeconds: 2, failureThreshold: 3 }]);
  });

  it('with a running sync: its last plan, what blocked it and its failures; its back-off end wins', () => {
    const c = cases[0]![1];
    const lastSync: ExplainFacts['lastSync'] = {
      kind: 'PodSync',
      pod: 'default/web',
      uid: 'u1',
      time: new Date(NOW - 30_000).toISOString(),
      lastSyncAt: new Date(NOW - 2_000).toISOString(),
      plan: { ...idle, containersToStart: ['app'] },
      failures: [{ container: 'app', reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container=app pod=web_default(u1)', retryAt: new Date(NOW + 16_000).toISOString() }],
      nextSyncAt: new Date(NOW + 16_000).toISOString(),
    };
    const x = explainPod(facts({ ...c, lastSync }));
    expect(x.source).toBe('sync');
    expect(x.decision).toMatchObject({ from: 'sync', at: lastSync.time, lastSyncAt: lastSync.lastSyncAt, plan: lastSync.plan });
    expect(x.next.at).toBe(new Date(NOW + 16_000).toISOString());
    expect(formatExplanation(x, NOW)).toContain('Last plan of klet sync (decided 30s ago, last synced 2s ago):');

    const blocked = explainPod(
      facts({ spec: { containers: [app] }, noSandbox: true, syncState: { containers: {}, reason: 'FailedMount', message: 'configmap "cfg" not found' }, lastSync: { ...lastSync, plan: { ...idle, createSandbox: true, killPod: true, sandboxAttempt: 0, containersToStart: ['app'] }, failures: [], blocked: { reason: 'FailedMount', message: 'configmap "cfg" not found' }, nextSyncAt: new Date(NOW + 2_000).toISOString() } }),
    );
    expect(blocked).toMatchObject({ reason: 'FailedMount', summary: 'The pod\'s volumes cannot be set up (FailedMount): configmap "cfg" not found. No container starts until they are.' });
    expect(blocked.decision.sentences).toEqual(['Create the pod sandbox (attempt 0): the pod has none yet.', 'Start container app.', 'It was not carried out: FailedMount: configmap "cfg" not found.']);
    expect(blocked.next).toEqual({ sentence: 'Try to mount the volumes again.', at: new Date(NOW + 2_000).toISOString(), inMs: 2_000 });
    expect(blocked.problems).toEqual([{ reason: 'FailedMount', message: 'configmap "cfg" not found' }]);
  });
});
