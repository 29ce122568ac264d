import { describe, expect, it } from 'vitest';
import type { V1Container, V1ObjectMeta, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import {
  computePodActions,
  isNoop,
  podSandboxChanged,
  shouldContainerBeRestarted,
  type PodActions,
} from '../../src/lib/kuberuntime/actions.js';
import { containerHash } from '../../src/lib/kuberuntime/hash.js';
import type {
  RuntimeContainerState,
  RuntimeContainerStatus,
  RuntimePodStatus,
  RuntimeSandboxStatus,
} from '../../src/lib/kuberuntime/runtime-status.js';

const SB = 'sb-1';

function ctr(name: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: 'busybox:1.36', ...extra };
}
function sidecar(name: string): V1Container {
  return ctr(name, { restartPolicy: 'Always' });
}
function mkPod(spec: Partial<V1PodSpec>, meta: Partial<V1ObjectMeta> = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1', ...meta },
    spec: { containers: [], ...spec },
  };
}
function sandbox(extra: Partial<RuntimeSandboxStatus> = {}): RuntimeSandboxStatus {
  return { id: SB, ready: true, attempt: 0, createdAt: 1000, ip: '10.88.0.5', additionalIps: [], hostNetwork: false, ...extra };
}

let seq = 0;
function cs(
  c: V1Container,
  state: RuntimeContainerState,
  extra: Partial<RuntimeContainerStatus> = {},
): RuntimeContainerStatus {
  seq++;
  return {
    id: `${c.name}-${seq}`,
    name: c.name,
    sandboxId: SB,
    state,
    createdAt: 2000 + seq,
    startedAt: state === 'created' ? 0 : 2000 + seq,
    finishedAt: state === 'exited' ? 3000 + seq : 0,
    exitCode: 0,
    reason: '',
    message: '',
    image: c.image ?? '',
    imageRef: 'sha256:abc',
    hash: containerHash(c),
    restartCount: 0,
    type: 'regular',
    logPath: `${c.name}/0.log`,
    ...extra,
  };
}
const running = (c: V1Container, extra: Partial<RuntimeContainerStatus> = {}) => cs(c, 'running', extra);
const exited = (c: V1Container, exitCode: number, extra: Partial<RuntimeContainerStatus> = {}) =>
  cs(c, 'exited', { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', ...extra });

/** Containers are given newest first, as getRuntimePodStatus sorts them. */
function rt(sandboxes: RuntimeSandboxStatus[], containers: RuntimeContainerStatus[] = []): RuntimePodStatus {
  return { uid: 'uid-1', name: 'web', namespace: 'default', sandboxes, containers };
}

/** The parts of a plan that say what happens to containers. */
function starts(a: PodActions) {
  return { init: a.initContainersToStart, app: a.containersToStart, kill: a.containersToKill.map((k) => k.name), killPod: a.killPod };
}

describe('computePodActions: sandbox', () => {
  it('creates the first sandbox (attempt 0) and starts every container when there is none', () => {
    const pod = mkPod({ containers: [ctr('a'), ctr('b')] });
    const a = computePodActions(pod, rt([]));
    expect(a).toEqual({
      killPod: true,
      createSandbox: true,
      sandboxId: null,
      attempt: 0,
      initContainersToStart: [],
      containersToStart: [0, 1],
      containersToKill: [],
    });
    expect(isNoop(a)).toBe(false);
  });

  it('starts only the first init container in a new sandbox', () => {
    const pod = mkPod({ initContainers: [ctr('init-a'), ctr('init-b')], containers: [ctr('a')] });
    const a = computePodActions(pod, rt([]));
    expect(a.createSandbox).toBe(true);
    expect(a.initContainersToStart).toEqual([0]);
    expect(a.containersToStart).toEqual([]);
  });

  it('is a no-op for a ready sandbox whose containers run with matching hashes', () => {
    const a1 = ctr('a');
    const b1 = ctr('b', { image: 'nginx:1.27' });
    const pod = mkPod({ containers: [a1, b1] });
    const a = computePodActions(pod, rt([sandbox()], [running(b1), running(a1)]));
    expect(isNoop(a)).toBe(true);
    expect(a.sandboxId).toBe(SB);
    expect(a.attempt).toBe(0);
  });

  it('replaces a sandbox that is not ready with attempt + 1, starting all containers again', () => {
    const a1 = ctr('a');
    const pod = mkPod({ containers: [a1] });
    const a = computePodActions(pod, rt([sandbox({ ready: false, attempt: 2 })], [exited(a1, 137)]));
    expect(a.killPod).toBe(true);
    expect(a.createSandbox).toBe(true);
    expect(a.attempt).toBe(3);
    expect(a.sandboxId).toBe(SB);
    expect(a.containersToStart).toEqual([0]);
  });

  it('does not start a Never pod again in a new sandbox after its containers ran', () => {
    const a1 = ctr('a');
    const pod = mkPod({ restartPolicy: 'Never', containers: [a1] });
    const a = computePodActions(pod, rt([sandbox({ ready: false })], [exited(a1, 0)]));
    expect(a.killPod).toBe(true);
    expect(a.createSandbox).toBe(false);
    expect(a.containersToStart).toEqual([]);
  });

  it('retries the sandbox of a Never pod whose containers never got created', () => {
    const pod = mkPod({ restartPolicy: 'Never', containers: [ctr('a')] });
    const a = computePodActions(pod, rt([sandbox({ ready: false })]));
    expect(a.createSandbox).toBe(true);
    expect(a.attempt).toBe(1);
    expect(a.containersToStart).toEqual([0]);
  });

  it('in a new sandbox of an OnFailure pod, starts only the containers that did not succeed', () => {
    const a1 = ctr('a');
    const b1 = ctr('b');
    const pod = mkPod({ restartPolicy: 'OnFailure', containers: [a1, b1] });
    const a = computePodActions(pod, rt([sandbox({ ready: false })], [exited(b1, 2), exited(a1, 0)]));
    expect(a.createSandbox).toBe(true);
    expect(a.containersToStart).toEqual([1]);
  });

  it('creates no new sandbox for an initialized OnFailure pod whose containers all succeeded, even with init containers', () => {
    const i1 = ctr('init');
    const a1 = ctr('a');
    const pod = mkPod({ restartPolicy: 'OnFailure', initContainers: [i1], containers: [a1] });
    const a = computePodActions(pod, rt([sandbox({ ready: false })], [exited(a1, 0), exited(i1, 0)]));
    expect(a.killPod).toBe(true);
    expect(a.createSandbox).toBe(false);
    expect(a.initContainersToStart).toEqual([]);
  });

  it('a pod being deleted gets no new sandbox', () => {
    const pod = mkPod({ containers: [ctr('a')] }, { deletionTimestamp: new Date() });
    const a = computePodActions(pod, rt([]));
    expect(a.createSandbox).toBe(false);
    expect(a.containersToStart).toEqual([]);
  });
});

describe('computePodActions: restart policy', () => {
  const cases: { policy: 'Always' | 'OnFailure' | 'Never'; exitCode: number; restart: boolean }[] = [
    { policy: 'Always', exitCode: 0, restart: true },
    { policy: 'Always', exitCode: 1, restart: true },
    { policy: 'OnFailure', exitCode: 0, restart: false },
    { policy: 'OnFailure', exitCode: 1, restart: true },
    { policy: 'Never', exitCode: 0, restart: false },
    { policy: 'Never', exitCode: 3, restart: false },
  ];
  it.each(cases)('$policy, exited $exitCode: restart=$restart', ({ policy, exitCode, restart }) => {
    const a1 = ctr('a');
    const pod = mkPod({ restartPolicy: policy, containers: [a1] });
    const a = computePodActions(pod, rt([sandbox()], [exited(a1, exitCode)]));
    expect(a.createSandbox).toBe(false);
    expect(a.containersToStart).toEqual(restart ? [0] : []);
    // Nothing left running and nothing to start: the pod is done.
    expect(a.killPod).toBe(!restart);
  });

  it('restarts only the container that exited, keeping the running ones', () => {
    const a1 = ctr('a');
    const b1 = ctr('b');
    const pod = mkPod({ containers: [a1, b1] });
    const a = computePodActions(pod, rt([sandbox()], [exited(b1, 1), running(a1)]));
    expect(starts(a)).toEqual({ init: [], app: [1], kill: [], killPod: false });
  });

  it('keeps a Never pod with one container still running', () => {
    const a1 = ctr('a');
    const b1 = ctr('b');
    const pod = mkPod({ restartPolicy: 'Never', containers: [a1, b1] });
    const a = computePodActions(pod, rt([sandbox()], [exited(b1, 1), running(a1)]));
    expect(isNoop(a)).toBe(true);
  });

  it('kills the pod of a Never pod when every container has exited', () => {
    const a1 = ctr('a');
    const b1 = ctr('b');
    const pod = mkPod({ restartPolicy: 'Never', containers: [a1, b1] });
    const a = computePodActions(pod, rt([sandbox()], [exited(b1, 1), exited(a1, 0)]));
    expect(starts(a)).toEqual({ init: [], app: [], kill: [], killPod: true });
  });

  it('starts a container that was never created and restarts one stuck in created', () => {
    const a1 = ctr('a');
    const b1 = ctr('b');
    const pod = mkPod({ restartPolicy: 'Never', containers: [a1, b1] });
    const a = computePodActions(pod, rt([sandbox()], [cs(b1, 'created')]));
    expect(a.containersToStart).toEqual([0, 1]);
  });

  it('kills a container in unknown state before restarting it', () => {
    const a1 = ctr('a');
    const pod = mkPod({ containers: [a1] });
    const st = cs(a1, 'unknown');
    const a = computePodActions(pod, rt([sandbox()], [st]));
    expect(a.containersToStart).toEqual([0]);
    expect(a.containersToKill).toEqual([{ id: st.id, name: 'a', message: expect.stringContaining('unknown state') }]);
  });
});

describe('computePodActions: spec changes', () => {
  it('kills and restarts only the container whose spec hash changed', () => {
    const a1 = ctr('a');
    const b1 = ctr('b');
    const pod = mkPod({ containers: [a1, b1] });
    const stale = running(a1, { hash: containerHash({ ...a1, image: 'busybox:1.35' }) });
    const a = computePodActions(pod, rt([sandbox()], [running(b1), stale]));
    expect(a.killPod).toBe(false);
    expect(a.createSandbox).toBe(false);
    expect(a.containersToStart).toEqual([0]);
    expect(a.containersToKill).toEqual([{ id: stale.id, name: 'a', message: 'Container a definition changed, will be restarted' }]);
  });

  it('restarts a changed container even under restartPolicy Never', () => {
    const a1 = ctr('a');
    const pod = mkPod({ restartPolicy: 'Never', containers: [a1] });
    const a = computePodActions(pod, rt([sandbox()], [running(a1, { hash: 'deadbeef' })]));
    expect(starts(a)).toEqual({ init: [], app: [0], kill: ['a'], killPod: false });
  });
});

describe('computePodActions: init containers', () => {
  const i1 = ctr('init-a');
  const i2 = ctr('init-b');
  const a1 = ctr('app');

  it('starts the next init container after a completed one', () => {
    const pod = mkPod({ initContainers: [i1, i2], containers: [a1] });
    const a = computePodActions(pod, rt([sandbox()], [exited(i1, 0)]));
    expect(starts(a)).toEqual({ init: [1], app: [], kill: [], killPod: false });
  });

  it('starts the first init container in a ready sandbox with nothing in it', () => {
    const pod = mkPod({ initContainers: [i1, i2], containers: [a1] });
    expect(computePodActions(pod, rt([sandbox()])).initContainersToStart).toEqual([0]);
  });

  it('starts the app containers once every init container completed', () => {
    const pod = mkPod({ initContainers: [i1, i2], containers: [a1, ctr('app2')] });
    const a = computePodActions(pod, rt([sandbox()], [exited(i2, 0), exited(i1, 0)]));
    expect(starts(a)).toEqual({ init: [], app: [0, 1], kill: [], killPod: false });
  });

  it('waits while an init container runs', () => {
    const pod = mkPod({ initContainers: [i1, i2], containers: [a1] });
    const a = computePodActions(pod, rt([sandbox()], [running(i2), exited(i1, 0)]));
    expect(isNoop(a)).toBe(true);
  });

  const failed: { policy: 'Always' | 'OnFailure' | 'Never'; killPod: boolean; init: number[] }[] = [
    { policy: 'Never', killPod: true, init: [] },
    { policy: 'OnFailure', killPod: false, init: [0] },
    { policy: 'Always', killPod: false, init: [0] },
  ];
  it.each(failed)('a failed init container under $policy: killPod=$killPod, restart $init', ({ policy, killPod, init }) => {
    const pod = mkPod({ restartPolicy: policy, initContainers: [i1, i2], containers: [a1] });
    const a = computePodActions(pod, rt([sandbox()], [exited(i1, 1)]));
    expect(starts(a)).toEqual({ init, app: [], kill: [], killPod });
  });

  it('treats an OOM-killed init container as failed even with exit code 0', () => {
    const pod = mkPod({ restartPolicy: 'Never', initContainers: [i1], containers: [a1] });
    const a = computePodActions(pod, rt([sandbox()], [exited(i1, 0, { reason: 'OOMKilled' })]));
    expect(a.killPod).toBe(true);
  });

  it('does not run regular init containers again once the app containers ran', () => {
    const pod = mkPod({ initContainers: [i1, i2], containers: [a1] });
    // The init containers' records were removed (garbage collected); the app runs.
    const a = computePodActions(pod, rt([sandbox()], [running(a1)]));
    expect(isNoop(a)).toBe(true);
    // A failed earlier attempt of an init container is no reason either.
    const b = computePodActions(pod, rt([sandbox()], [exited(a1, 1), exited(i2, 0), exited(i1, 1)]));
    expect(starts(b)).toEqual({ init: [], app: [0], kill: [], killPod: false });
  });

  it('runs the init containers again, in order, in a recreated sandbox', () => {
    const pod = mkPod({ initContainers: [i1, i2], containers: [a1] });
    const oldSb = sandbox({ id: 'sb-old', ready: false, attempt: 0, createdAt: 500 });
    const newSb = sandbox({ id: SB, attempt: 1, createdAt: 5000 });
    const old = [exited(a1, 137, { sandboxId: 'sb-old' }), exited(i2, 0, { sandboxId: 'sb-old' }), exited(i1, 0, { sandboxId: 'sb-old' })];
    // init-a runs in the new sandbox: wait for it, do not start the app.
    const waiting = computePodActions(pod, rt([newSb, oldSb], [running(i1, { restartCount: 1 }), ...old]));
    expect(isNoop(waiting)).toBe(true);
    // init-a completed in the new sandbox: init-b next, even though it completed in the old one.
    const next = computePodActions(pod, rt([newSb, oldSb], [exited(i1, 0, { restartCount: 1 }), ...old]));
    expect(starts(next)).toEqual({ init: [1], app: [], kill: [], killPod: false });
  });
});

describe('computePodActions: sidecars (restartable init containers)', () => {
  const side = sidecar('proxy');
  const setup = ctr('setup');
  const app = ctr('app');
  const pod = mkPod({ initContainers: [side, setup], containers: [app] });

  it('starts the sidecar first', () => {
    expect(starts(computePodActions(pod, rt([sandbox()])))).toEqual({ init: [0], app: [], kill: [], killPod: false });
  });

  it('starts the next init container once the sidecar runs', () => {
    const a = computePodActions(pod, rt([sandbox()], [running(side)]));
    expect(starts(a)).toEqual({ init: [1], app: [], kill: [], killPod: false });
  });

  it('starts the app containers once the regular init containers completed, keeping the sidecar', () => {
    const a = computePodActions(pod, rt([sandbox()], [exited(setup, 0), running(side)]));
    expect(starts(a)).toEqual({ init: [], app: [0], kill: [], killPod: false });
  });

  it('is a no-op with the sidecar and the app running', () => {
    const a = computePodActions(pod, rt([sandbox()], [running(app), exited(setup, 0), running(side)]));
    expect(isNoop(a)).toBe(true);
  });

  it('restarts a sidecar that exited after the app started, without touching the app or re-running init', () => {
    const a = computePodActions(pod, rt([sandbox()], [running(app), exited(side, 1), exited(setup, 0)]));
    expect(starts(a)).toEqual({ init: [0], app: [], kill: [], killPod: false });
  });

  it('restarts a sidecar that exited before the init containers after it ran', () => {
    const a = computePodActions(pod, rt([sandbox()], [exited(side, 0)]));
    expect(starts(a)).toEqual({ init: [0], app: [], kill: [], killPod: false });
  });

  it('kills and restarts a running sidecar whose definition changed', () => {
    const stale = running(side, { hash: 'deadbeef' });
    const a = computePodActions(pod, rt([sandbox()], [running(app), exited(setup, 0), stale]));
    expect(a.initContainersToStart).toEqual([0]);
    expect(a.containersToStart).toEqual([]);
    expect(a.containersToKill).toEqual([{ id: stale.id, name: 'proxy', message: 'Init container proxy definition changed' }]);
  });

  it('with a startup probe, a running sidecar holds the containers after it back until the probe passes; a failed one restarts it', () => {
    const probed = ctr('proxy', { restartPolicy: 'Always', startupProbe: { exec: { command: ['true'] } } });
    const gated = mkPod({ initContainers: [probed, setup], containers: [app] });
    const st = running(probed);
    const verdict = (v: 'Success' | 'Failure' | undefined) => ({ get: (type: 'Liveness' | 'Startup', id: string) => (type === 'Startup' && id === st.id ? v : undefined) });
    expect(starts(computePodActions(gated, rt([sandbox()], [st]), verdict(undefined)))).toEqual({ init: [], app: [], kill: [], killPod: false });
    expect(starts(computePodActions(gated, rt([sandbox()], [st]), verdict('Success')))).toEqual({ init: [1], app: [], kill: [], killPod: false });
    const failed = computePodActions(gated, rt([sandbox()], [st]), verdict('Failure'));
    expect(failed.initContainersToStart).toEqual([0]);
    expect(failed.containersToKill).toEqual([{ id: st.id, name: 'proxy', message: 'Init container proxy failed startup probe' }]);
    // Once the app has run, a restarted sidecar's startup probe holds nothing back.
    const later = computePodActions(gated, rt([sandbox()], [running(app), exited(setup, 0), st]), verdict(undefined));
    expect(isNoop(later)).toBe(true);
  });

  it('restarts a running sidecar that fails its liveness probe (with the probe\'s grace period), before and after the app started', () => {
    const probed = ctr('proxy', { restartPolicy: 'Always', livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 3 } });
    const live = mkPod({ initContainers: [probed, setup], containers: [app] });
    const st = running(probed);
    const verdict = (v: 'Success' | 'Failure' | undefined) => ({ get: (type: 'Liveness' | 'Startup', id: string) => (type === 'Liveness' && id === st.id ? v : undefined) });
    const kill = [{ id: st.id, name: 'proxy', message: 'Init container proxy failed liveness probe', gracePeriodSeconds: 3 }];
    // After the app started: the sidecar alone is restarted.
    const after = computePodActions(live, rt([sandbox()], [running(app), exited(setup, 0), st]), verdict('Failure'));
    expect(after.initContainersToStart).toEqual([0]);
    expect(after.containersToStart).toEqual([]);
    expect(after.containersToKill).toEqual(kill);
    expect(isNoop(computePodActions(live, rt([sandbox()], [running(app), exited(setup, 0), st]), verdict('Success')))).toBe(true);
    // While the init containers after it run: restarted too.
    const during = computePodActions(live, rt([sandbox()], [st]), verdict('Failure'));
    expect(during.containersToKill).toEqual(kill);
    expect(during.initContainersToStart).toContain(0);
    // A failed startup probe after the app started restarts it as well (the kubelet checks it at every sync).
    const startupProbed = ctr('proxy', { restartPolicy: 'Always', startupProbe: { exec: { command: ['true'] } } });
    const sp = mkPod({ initContainers: [startupProbed, setup], containers: [app] });
    const st2 = running(startupProbed);
    const failedStartup = computePodActions(sp, rt([sandbox()], [running(app), exited(setup, 0), st2]), { get: (t: 'Liveness' | 'Startup', id: string) => (t === 'Startup' && id === st2.id ? 'Failure' : undefined) });
    expect(failedStartup.containersToKill).toEqual([{ id: st2.id, name: 'proxy', message: 'Init container proxy failed startup probe' }]);
    expect(failedStartup.initContainersToStart).toEqual([0]);
  });

  it('does not keep a finished pod alive for its sidecar', () => {
    const never = mkPod({ restartPolicy: 'Never', initContainers: [side, setup], containers: [app] });
    const a = computePodActions(never, rt([sandbox()], [exited(app, 0), exited(side, 137), exited(setup, 0)]));
    expect(starts(a)).toEqual({ init: [], app: [], kill: [], killPod: true });
  });
});

describe('computePodActions: deletion', () => {
  it('starts nothing and stops what runs', () => {
    const a1 = ctr('a');
    const b1 = ctr('b');
    const pod = mkPod({ containers: [a1, b1] }, { deletionTimestamp: new Date() });
    const a = computePodActions(pod, rt([sandbox()], [running(b1), exited(a1, 1)]));
    expect(a.containersToStart).toEqual([]);
    expect(a.initContainersToStart).toEqual([]);
    expect(a.createSandbox).toBe(false);
    expect(a.containersToKill.map((k) => k.name)).toEqual(['b']);
    expect(a.killPod).toBe(true);
  });

  it('starts no init container and no changed container', () => {
    const i1 = ctr('init');
    const a1 = ctr('a');
    const deleting = { deletionTimestamp: new Date() };
    const withInit = mkPod({ initContainers: [i1], containers: [a1] }, deleting);
    expect(computePodActions(withInit, rt([sandbox()])).initContainersToStart).toEqual([]);
    const changed = mkPod({ containers: [a1] }, deleting);
    const a = computePodActions(changed, rt([sandbox()], [running(a1, { hash: 'deadbeef' })]));
    expect(a.containersToStart).toEqual([]);
    expect(a.containersToKill.map((k) => k.name)).toEqual(['a']);
    expect(a.killPod).toBe(true);
  });
});

describe('shouldContainerBeRestarted', () => {
  const a1 = ctr('a');
  const cases: { name: string; policy?: 'Always' | 'OnFailure' | 'Never'; st?: RuntimeContainerStatus; want: boolean; deleting?: boolean }[] = [
    { name: 'never started', policy: 'Never', st: undefined, want: true },
    { name: 'running', st: running(a1), want: false },
    { name: 'created', policy: 'Never', st: cs(a1, 'created'), want: true },
    { name: 'unknown', policy: 'Never', st: cs(a1, 'unknown'), want: true },
    { name: 'Never, exited 1', policy: 'Never', st: exited(a1, 1), want: false },
    { name: 'OnFailure, exited 0', policy: 'OnFailure', st: exited(a1, 0), want: false },
    { name: 'OnFailure, exited 2', policy: 'OnFailure', st: exited(a1, 2), want: true },
    { name: 'Always (default), exited 0', st: exited(a1, 0), want: true },
    { name: 'deleted pod', st: undefined, want: false, deleting: true },
  ];
  it.each(cases)('$name → $want', ({ policy, st, want, deleting }) => {
    const pod = mkPod({ restartPolicy: policy, containers: [a1] }, deleting ? { deletionTimestamp: new Date() } : {});
    expect(shouldContainerBeRestarted(pod, st)).toBe(want);
  });
});

describe('podSandboxChanged', () => {
  const pod = mkPod({ containers: [ctr('a')] });
  const cases: { name: string; pod?: V1Pod; sandboxes: RuntimeSandboxStatus[]; want: ReturnType<typeof podSandboxChanged> }[] = [
    { name: 'no sandbox', sandboxes: [], want: { changed: true, attempt: 0, sandboxId: null } },
    { name: 'ready with an IP', sandboxes: [sandbox({ attempt: 4 })], want: { changed: false, attempt: 4, sandboxId: SB } },
    { name: 'not ready', sandboxes: [sandbox({ ready: false, attempt: 1 })], want: { changed: true, attempt: 2, sandboxId: SB } },
    {
      name: 'two ready sandboxes',
      sandboxes: [sandbox({ attempt: 1 }), sandbox({ id: 'sb-0', attempt: 0 })],
      want: { changed: true, attempt: 2, sandboxId: SB },
    },
    { name: 'no IP', sandboxes: [sandbox({ ip: '' })], want: { changed: true, attempt: 1, sandboxId: SB } },
    {
      name: 'network namespace changed',
      sandboxes: [sandbox({ hostNetwork: true })],
      want: { changed: true, attempt: 1, sandboxId: null },
    },
    {
      name: 'host network without an IP',
      pod: mkPod({ hostNetwork: true, containers: [ctr('a')] }),
      sandboxes: [sandbox({ hostNetwork: true, ip: '' })],
      want: { changed: false, attempt: 0, sandboxId: SB },
    },
  ];
  it.each(cases)('$name', ({ pod: p, sandboxes, want }) => {
    expect(podSandboxChanged(p ?? pod, rt(sandboxes))).toEqual(want);
  });
});

describe('computePodActions: failed liveness and startup probes', () => {
  const verdicts = (failed: Record<string, 'Liveness' | 'Startup'>) => ({
    get: (type: 'Liveness' | 'Startup', id: string) => (failed[id] === type ? ('Failure' as const) : undefined),
  });

  it('kills and restarts a container whose liveness probe failed, with the kubelet message and the probe grace period', () => {
    const c = ctr('app', { livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 3 } });
    const other = ctr('side');
    const pod = mkPod({ containers: [c, other] });
    const st = cs(c, 'running');
    const status: RuntimePodStatus = { uid: 'uid-1', name: 'web', namespace: 'default', sandboxes: [sandbox()], containers: [st, cs(other, 'running')] };
    expect(isNoop(computePodActions(pod, status))).toBe(true);
    const a = computePodActions(pod, status, verdicts({ [st.id]: 'Liveness' }));
    expect(a.containersToStart).toEqual([0]);
    expect(a.containersToKill).toEqual([{ id: st.id, name: 'app', message: 'Container app failed liveness probe, will be restarted', gracePeriodSeconds: 3 }]);
    expect(a.killPod).toBe(false);
  });

  it('kills a container whose startup probe failed and, under Never, does not start it again', () => {
    const c = ctr('app', { startupProbe: { exec: { command: ['true'] } } });
    const pod = mkPod({ restartPolicy: 'Never', containers: [c] });
    const st = cs(c, 'running');
    const status: RuntimePodStatus = { uid: 'uid-1', name: 'web', namespace: 'default', sandboxes: [sandbox()], containers: [st] };
    const a = computePodActions(pod, status, verdicts({ [st.id]: 'Startup' }));
    expect(a.containersToStart).toEqual([]);
    expect(a.containersToKill).toEqual([{ id: st.id, name: 'app', message: 'Container app failed startup probe' }]);
  });
});

describe('computePodActions: ephemeral containers (kubectl debug)', () => {
  const dbg = { name: 'debugger', image: 'busybox:1.36', targetContainerName: 'a' };
  it('starts an ephemeral container that has no status yet, before initialization completes too', () => {
    const a1 = ctr('a');
    const pod = mkPod({ containers: [a1], ephemeralContainers: [dbg] });
    const plan = computePodActions(pod, rt([sandbox()], [running(a1)]));
    expect(plan.ephemeralContainersToStart).toEqual([0]);
    expect(isNoop(plan)).toBe(false);
    const initializing = mkPod({ initContainers: [ctr('init')], containers: [a1], ephemeralContainers: [dbg] });
    const init = ctr('init');
    expect(computePodActions(initializing, rt([sandbox()], [running(init)])).ephemeralContainersToStart).toEqual([0]);
  });
  it('never restarts one that ran, whatever its exit, and it does not keep a pod alive', () => {
    const a1 = ctr('a');
    const pod = mkPod({ containers: [a1], ephemeralContainers: [dbg] });
    const gone = computePodActions(pod, rt([sandbox()], [cs(ctr('debugger'), 'exited', { exitCode: 137, type: 'ephemeral' }), running(a1)]));
    expect(gone.ephemeralContainersToStart ?? []).toEqual([]);
    expect(isNoop(gone)).toBe(true);
    const done = mkPod({ restartPolicy: 'Never', containers: [a1], ephemeralContainers: [dbg] }, {});
    const finished = computePodActions(done, rt([sandbox()], [exited(a1, 0)]));
    expect(finished.killPod).toBe(true);
    expect(finished.ephemeralContainersToStart).toEqual([]);
  });
  it('none in a new sandbox or a pod being deleted', () => {
    const pod = mkPod({ containers: [ctr('a')], ephemeralContainers: [dbg] });
    expect(computePodActions(pod, rt([])).ephemeralContainersToStart ?? []).toEqual([]);
    const deleting = mkPod({ containers: [ctr('a')], ephemeralContainers: [dbg] }, { deletionTimestamp: new Date() });
    expect(computePodActions(deleting, rt([sandbox()], [running(ctr('a'))])).ephemeralContainersToStart).toEqual([]);
  });
});

describe('computePodActions: an API pod the server says has finished', () => {
  it('is never started again, even with nothing left of it in the runtime', () => {
    const api = (phase: string): V1Pod => ({ ...mkPod({ restartPolicy: 'Never', containers: [ctr('a')] }, { annotations: { 'kubernetes.io/config.source': 'api' } }), status: { phase } });
    for (const phase of ['Succeeded', 'Failed']) {
      const none = computePodActions(api(phase), rt([]));
      expect(none.createSandbox, phase).toBe(false);
      expect(starts(none).app).toEqual([]);
    }
    // A static pod whose manifest carries a status (dumped with kubectl) is still run.
    const stat: V1Pod = { ...mkPod({ containers: [ctr('a')] }), status: { phase: 'Succeeded' } };
    expect(computePodActions(stat, rt([])).createSandbox).toBe(true);
  });
});

describe('computePodActions: in-place resize (computePodResizeAction)', () => {
  const api = { annotations: { 'kubernetes.io/config.source': 'api' } };
  const res = (cpu?: string, mem?: string) => ({
    ...(cpu || mem ? { limits: { ...(cpu ? { cpu } : {}), ...(mem ? { memory: mem } : {}) } } : {}),
    ...(cpu || mem ? { requests: { ...(cpu ? { cpu } : {}), ...(mem ? { memory: mem } : {}) } } : {}),
  });
  type Row = [
    string,
    { spec: ReturnType<typeof res>; actuated: ReturnType<typeof res> | undefined; policy?: { cpu?: string; memory?: string } },
    { cpu: string[]; memory: string[]; restart: boolean },
  ];
  const rows: Row[] = [
    ['nothing changed: no update', { spec: res('500m', '64Mi'), actuated: res('500m', '64Mi') }, { cpu: [], memory: [], restart: false }],
    ['"1" equals "1000m": no update', { spec: res('1', '64Mi'), actuated: res('1000m', '67108864') }, { cpu: [], memory: [], restart: false }],
    ['CPU limit up: updated in place', { spec: res('1', '64Mi'), actuated: res('500m', '64Mi') }, { cpu: ['a'], memory: [], restart: false }],
    ['memory down: updated in place', { spec: res('500m', '32Mi'), actuated: res('500m', '64Mi') }, { cpu: [], memory: ['a'], restart: false }],
    ['both: one update per resource', { spec: res('1', '128Mi'), actuated: res('500m', '64Mi') }, { cpu: ['a'], memory: ['a'], restart: false }],
    ['memory with RestartContainer: restarted', { spec: res('500m', '128Mi'), actuated: res('500m', '64Mi'), policy: { memory: 'RestartContainer' } }, { cpu: [], memory: [], restart: true }],
    ['CPU with NotRequired beside memory RestartContainer: in place', { spec: res('1', '64Mi'), actuated: res('500m', '64Mi'), policy: { memory: 'RestartContainer', cpu: 'NotRequired' } }, { cpu: ['a'], memory: [], restart: false }],
    ['CPU with RestartContainer: restarted', { spec: res('1', '64Mi'), actuated: res('500m', '64Mi'), policy: { cpu: 'RestartContainer' } }, { cpu: [], memory: [], restart: true }],
    ['no actuated record counts as none: updated', { spec: res('500m'), actuated: undefined }, { cpu: ['a'], memory: [], restart: false }],
  ];
  it.each(rows)('%s', (_name, input, want) => {
    const resizePolicy = Object.entries(input.policy ?? {}).map(([resourceName, restartPolicy]) => ({ resourceName, restartPolicy }));
    const a = ctr('a', { resources: input.spec, ...(resizePolicy.length > 0 ? { resizePolicy } : {}) });
    const st = running(a);
    const plan = computePodActions(mkPod({ containers: [a] }, api), rt([sandbox()], [st]), undefined, () => input.actuated);
    expect({
      cpu: (plan.containersToUpdate?.cpu ?? []).map((u) => u.name),
      memory: (plan.containersToUpdate?.memory ?? []).map((u) => u.name),
      restart: plan.containersToKill.some((k) => k.id === st.id && k.message === 'Container a resize requires restart') && plan.containersToStart.includes(0),
    }).toEqual(want);
    expect(plan.updatePodResources === true).toBe(want.restart);
    expect(isNoop(plan)).toBe(want.cpu.length === 0 && want.memory.length === 0 && !want.restart);
  });

  it('puts decreases before increases', () => {
    const up = ctr('up', { resources: res('1') });
    const down = ctr('down', { resources: res('200m') });
    const actual: Record<string, ReturnType<typeof res>> = { up: res('500m'), down: res('500m') };
    const plan = computePodActions(mkPod({ containers: [up, down] }, api), rt([sandbox()], [running(up), running(down)]), undefined, (n) => actual[n]);
    expect(plan.containersToUpdate?.cpu.map((u) => u.name)).toEqual(['down', 'up']);
  });

  it('resizes a running sidecar; never a container that is not running', () => {
    const sc = ctr('sc', { restartPolicy: 'Always', resources: res('1') });
    const a = ctr('a', { resources: res('1') });
    const plan = computePodActions(mkPod({ initContainers: [sc], containers: [a] }, api), rt([sandbox()], [exited(a, 1), running(sc)]), undefined, () => res('500m'));
    expect(plan.containersToUpdate?.cpu.map((u) => u.name)).toEqual(['sc']);
  });

  it('without actuated resources (not resizable in place) plans nothing for resources', () => {
    const a = ctr('a', { resources: res('1') });
    expect(isNoop(computePodActions(mkPod({ containers: [a] }, api), rt([sandbox()], [running(a)])))).toBe(true);
  });
});
