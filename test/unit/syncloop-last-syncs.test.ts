/** podSyncEvent: one sync's result as the PodSync event /plans serves (containers by name, relative times as timestamps). */
import { expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import type { SyncPodResult } from '../../src/lib/kuberuntime/sync-pod.js';
import { podSyncEvent, rejectedSyncEvent } from '../../src/lib/syncloop/last-syncs.js';

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'ns', uid: 'u1' },
  spec: { initContainers: [{ name: 'init' }], containers: [{ name: 'a' }, { name: 'b' }] },
};
const NOW = Date.parse('2024-05-01T10:00:00Z');
const runtime = { uid: 'u1', name: 'web', namespace: 'ns', sandboxes: [], containers: [] };
const actions = { killPod: true, createSandbox: true, sandboxId: null, attempt: 2, initContainersToStart: [], containersToStart: [0, 1], containersToKill: [{ id: 'c1', name: 'a', message: 'Container a definition changed, will be restarted' }] };

it('names the containers of the plan, and turns back-offs into timestamps', () => {
  const res: SyncPodResult = {
    actions,
    status: runtime,
    failures: [{ container: 'b', reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=b', retryInMs: 4000 }],
    requeueAfterMs: 4000,
  };
  expect(podSyncEvent(pod, res, NOW)).toEqual({
    kind: 'PodSync',
    pod: 'ns/web',
    uid: 'u1',
    plan: {
      killPod: true,
      createSandbox: true,
      sandboxAttempt: 2,
      initContainersToStart: [],
      containersToStart: ['a', 'b'],
      ephemeralContainersToStart: [],
      containersToKill: [{ name: 'a', message: 'Container a definition changed, will be restarted' }],
    },
    failures: [{ container: 'b', reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container=b', retryAt: '2024-05-01T10:00:04.000Z' }],
    nextSyncAt: '2024-05-01T10:00:04.000Z',
  });
});

it('says what blocked the plan: admission, volumes, the sandbox', () => {
  const base = { actions, status: runtime, failures: [] };
  expect(podSyncEvent(pod, { ...base, rejected: true }, NOW).blocked).toEqual({ reason: 'Rejected', message: '' });
  expect(podSyncEvent(pod, { ...base, mountFailed: 'configmap "c" not found' }, NOW).blocked).toEqual({ reason: 'FailedMount', message: 'configmap "c" not found' });
  const sandbox = { reason: 'CreatePodSandboxError', message: 'Failed to create pod sandbox: boom' };
  expect(podSyncEvent(pod, { ...base, sandboxError: sandbox, failures: [{ container: '', reason: sandbox.reason, message: sandbox.message }] }, NOW)).toMatchObject({ blocked: sandbox, failures: [] });
});

it('an API pod admission rejected: nothing planned, blocked by the admission\'s reason and message', () => {
  const r = { namespace: 'apps', name: 'small', uid: 'u2', reason: 'OutOfcpu', message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 200, used: 1900, capacity: 2000" };
  expect(rejectedSyncEvent(r)).toEqual({
    kind: 'PodSync',
    pod: 'apps/small',
    uid: 'u2',
    plan: { killPod: false, createSandbox: false, initContainersToStart: [], containersToStart: [], ephemeralContainersToStart: [], containersToKill: [] },
    blocked: { reason: 'OutOfcpu', message: r.message },
    failures: [],
  });
});
