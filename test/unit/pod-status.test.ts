import type { PodProbeResults } from '../../src/lib/prober/results.js';
import { describe, expect, it } from 'vitest';
import type { V1Container, V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodCondition, V1PodSpec, V1PodStatus } from '@kubernetes/client-node';
import { containerHash } from '../../src/lib/kuberuntime/hash.js';
import type { PodSyncState } from '../../src/lib/kuberuntime/poddir.js';
import type {
  RuntimeContainerState,
  RuntimeContainerStatus,
  RuntimePodStatus,
  RuntimeSandboxStatus,
} from '../../src/lib/kuberuntime/runtime-status.js';
import { generatePodStatus, getPhase, withServerConditions, type StatusInputs } from '../../src/lib/status/pod-status.js';

const SB = 'sb-1';
const START = new Date('2024-05-01T10:00:00Z');

function ctr(name: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: 'busybox:1.36', ...extra };
}
function mkPod(spec: Partial<V1PodSpec>, meta: Partial<V1ObjectMeta> = {}): V1Pod {
  return { metadata: { name: 'web', namespace: 'default', uid: 'uid-1', ...meta }, spec: { containers: [], ...spec } };
}
function sandbox(extra: Partial<RuntimeSandboxStatus> = {}): RuntimeSandboxStatus {
  return { id: SB, ready: true, attempt: 0, createdAt: START.getTime() + 1000, ip: '10.88.0.5', additionalIps: [], hostNetwork: false, ...extra };
}
let seq = 0;
function cs(c: V1Container, state: RuntimeContainerState, extra: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  seq++;
  const t = START.getTime() + 10_000 * seq;
  return {
    id: `${c.name}${seq}`,
    name: c.name,
    sandboxId: SB,
    state,
    createdAt: t,
    startedAt: state === 'created' ? 0 : t + 100,
    finishedAt: state === 'exited' ? t + 5000 : 0,
    exitCode: 0,
    reason: '',
    message: '',
    image: c.image ?? '',
    imageRef: 'sha256:1111',
    hash: containerHash(c),
    restartCount: 0,
    type: 'regular',
    logPath: `${c.name}/0.log`,
    ...extra,
  };
}
const running = (c: V1Container, extra: Partial<RuntimeContainerStatus> = {}) => cs(c, 'running', extra);
const exited = (c: V1Container, exitCode: number, extra: Partial<RuntimeContainerStatus> = {}) => cs(c, 'exited', { exitCode, ...extra });

function status(
  pod: V1Pod,
  containers: RuntimeContainerStatus[],
  opts: { sandboxes?: RuntimeSandboxStatus[]; sync?: PodSyncState; probes?: PodProbeResults; hostIPs?: string[] } = {},
): V1PodStatus {
  const runtime: RuntimePodStatus = { uid: 'uid-1', name: 'web', namespace: 'default', sandboxes: opts.sandboxes ?? [sandbox()], containers };
  const inputs: StatusInputs = {
    pod,
    runtime,
    syncState: opts.sync ?? { containers: {} },
    runtimeName: 'containerd',
    hostIPs: opts.hostIPs ?? ['192.168.1.10'],
    startTime: START,
    probes: opts.probes,
  };
  return generatePodStatus(inputs);
}
function cond(st: V1PodStatus, type: string): V1PodCondition {
  const c = st.conditions?.find((x) => x.type === type);
  if (!c) throw new Error(`no ${type} condition`);
  return c;
}
function app(st: V1PodStatus, name: string): V1ContainerStatus {
  const c = st.containerStatuses?.find((x) => x.name === name);
  if (!c) throw new Error(`no status for ${name}`);
  return c;
}

describe('generatePodStatus: phase', () => {
  it("a pod rejected at admission has the kubelet's rejectPod shape: Failed, reason, message, no container statuses or conditions", () => {
    const pod = mkPod({ containers: [ctr('a')] });
    const message = "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports";
    const st = status(pod, [], { sandboxes: [], sync: { containers: {}, rejected: true, reason: 'NodePorts', message } });
    expect(st).toEqual({ phase: 'Failed', reason: 'NodePorts', message, startTime: START, qosClass: 'BestEffort' });
  });

  it('is Pending with ContainerCreating before anything runs', () => {
    const pod = mkPod({ containers: [ctr('a')] });
    const st = status(pod, [], { sandboxes: [] });
    expect(st.phase).toBe('Pending');
    expect(app(st, 'a')).toMatchObject({ ready: false, restartCount: 0, started: false, state: { waiting: { reason: 'ContainerCreating' } } });
    expect(app(st, 'a').containerID).toBeUndefined();
    expect(st.initContainerStatuses).toBeUndefined();
    expect(cond(st, 'PodReadyToStartContainers').status).toBe('False');
  });

  it('shows PodInitializing for every container of a pod with init containers', () => {
    const pod = mkPod({ initContainers: [ctr('init')], containers: [ctr('a')] });
    const st = status(pod, []);
    expect(st.phase).toBe('Pending');
    expect(st.initContainerStatuses?.[0]?.state).toEqual({ waiting: { reason: 'PodInitializing' } });
    expect(app(st, 'a').state).toEqual({ waiting: { reason: 'PodInitializing' } });
  });

  it('is Running when the containers run', () => {
    const a1 = ctr('a');
    const pod = mkPod({ containers: [a1] });
    const r = running(a1);
    const st = status(pod, [r]);
    expect(st.phase).toBe('Running');
    expect(app(st, 'a')).toMatchObject({
      name: 'a',
      image: 'busybox:1.36',
      imageID: 'sha256:1111',
      containerID: `containerd://${r.id}`,
      ready: true,
      started: true,
      state: { running: { startedAt: new Date(r.startedAt) } },
    });
    for (const t of ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled']) {
      expect(cond(st, t).status, t).toBe('True');
    }
  });

  it("reports a container's resources and allocated requests once the runtime has it, as the kubelet (InPlacePodVerticalScaling)", () => {
    const g = ctr('g', { resources: { limits: { cpu: '700m', memory: '200Mi' }, requests: { cpu: '700m', memory: '200Mi' } } });
    const be = ctr('be');
    const waiting = ctr('w', { resources: { requests: { memory: '50Mi' } } });
    const pod = mkPod({ containers: [g, be, waiting] });
    const st = status(pod, [running(g), exited(be, 1)]);
    expect(app(st, 'g').resources).toEqual({ limits: { cpu: '700m', memory: '200Mi' }, requests: { cpu: '700m', memory: '200Mi' } });
    expect(app(st, 'g').allocatedResources).toEqual({ cpu: '700m', memory: '200Mi' });
    // BestEffort: an empty object, no allocated resources (the kubelet's JSON: "resources": {}).
    expect(app(st, 'be').resources).toEqual({});
    expect(app(st, 'be').allocatedResources).toBeUndefined();
    // Not yet created: nothing, as the kubelet's default waiting status.
    expect(app(st, 'w').resources).toBeUndefined();
    expect(app(st, 'w').allocatedResources).toBeUndefined();
  });

  const terminal: { name: string; policy: 'Always' | 'OnFailure' | 'Never'; codes: number[]; phase: string }[] = [
    { name: 'Never, all succeeded', policy: 'Never', codes: [0, 0], phase: 'Succeeded' },
    { name: 'OnFailure, all succeeded', policy: 'OnFailure', codes: [0, 0], phase: 'Succeeded' },
    { name: 'Never, one failed', policy: 'Never', codes: [0, 3], phase: 'Failed' },
    { name: 'OnFailure, one failed (restarting)', policy: 'OnFailure', codes: [0, 3], phase: 'Running' },
    { name: 'Always, all succeeded (restarting)', policy: 'Always', codes: [0, 0], phase: 'Running' },
    { name: 'Always, crashed (restarting)', policy: 'Always', codes: [1, 1], phase: 'Running' },
  ];
  it.each(terminal)('$name → $phase', ({ policy, codes, phase }) => {
    const cs1 = ctr('a');
    const cs2 = ctr('b');
    const pod = mkPod({ restartPolicy: policy, containers: [cs1, cs2] });
    expect(status(pod, [exited(cs2, codes[1] as number), exited(cs1, codes[0] as number)]).phase).toBe(phase);
  });

  it('is Failed for a Never pod whose container exited 3, with the termination shown', () => {
    const a1 = ctr('a');
    const pod = mkPod({ restartPolicy: 'Never', containers: [a1] });
    const e = exited(a1, 3);
    const st = status(pod, [e]);
    expect(st.phase).toBe('Failed');
    expect(app(st, 'a').state?.terminated).toEqual({
      exitCode: 3,
      reason: 'Error',
      message: undefined,
      startedAt: new Date(e.startedAt),
      finishedAt: new Date(e.finishedAt),
      containerID: `containerd://${e.id}`,
    });
    expect(app(st, 'a').ready).toBe(false);
  });

  it('is Failed, Evicted, only once no container runs (the kubelet delays a terminal phase until then)', () => {
    const c = ctr('c');
    const pod = mkPod({ containers: [c] });
    const sync: PodSyncState = { containers: {}, reason: 'Evicted', message: 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi".' };
    const killing = status(pod, [running(c)], { sync });
    expect(killing.phase).toBe('Running');
    expect(killing.reason).toBeUndefined();
    const killed = status(pod, [exited(c, 137)], { sync });
    expect(killed.phase).toBe('Failed');
    expect(killed.reason).toBe('Evicted');
    expect(killed.message).toBe(sync.message);
  });

  it("adds the eviction manager's DisruptionTarget to a pod evicted for node pressure, with the Failed phase only; an emptyDir eviction has none", () => {
    const c = ctr('c');
    const pod = mkPod({ containers: [c] }, { generation: 3 });
    const message = 'The node was low on resource: ephemeral-storage. Threshold quantity: 38Mi, available: 20Mi. ';
    const at = '2024-05-01T10:05:00.000Z';
    const sync: PodSyncState = { containers: {}, reason: 'Evicted', message, evictionGracePeriodSeconds: 1, disruptionTargetAt: at };
    expect(status(pod, [running(c)], { sync }).conditions?.some((x) => x.type === 'DisruptionTarget')).toBe(false);
    const killed = status(pod, [exited(c, 137)], { sync });
    expect(cond(killed, 'DisruptionTarget')).toEqual({ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message, lastTransitionTime: new Date(at), observedGeneration: 3 });
    // The server's earlier DisruptionTarget (a status the pod already had) is replaced, not doubled.
    const again = status({ ...pod, status: killed }, [exited(c, 137)], { sync });
    expect(again.conditions?.filter((x) => x.type === 'DisruptionTarget')).toHaveLength(1);
    const emptyDir = status(pod, [exited(c, 137)], { sync: { containers: {}, reason: 'Evicted', message: 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi".' } });
    expect(emptyDir.conditions?.some((x) => x.type === 'DisruptionTarget')).toBe(false);
  });

  it('sends its DisruptionTarget over the one the server has, and keeps the server\'s when it sends none', () => {
    const server: V1Pod = { ...mkPod({}), status: { conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler' }, { type: 'example.com/gate', status: 'True' }] } };
    const mine: V1PodCondition = { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message: 'm' };
    const sent = withServerConditions(server, { phase: 'Failed', conditions: [mine] }, START);
    expect(sent.conditions?.filter((x) => x.type === 'DisruptionTarget')).toEqual([mine]);
    expect(sent.conditions?.map((x) => x.type)).toContain('example.com/gate');
    const kept = withServerConditions(server, { phase: 'Running', conditions: [] }, START);
    expect(kept.conditions?.find((x) => x.type === 'DisruptionTarget')?.reason).toBe('PreemptionByScheduler');
  });

  it('keeps the runtime reason and message of a termination', () => {
    const a1 = ctr('a');
    const pod = mkPod({ restartPolicy: 'Never', containers: [a1] });
    const st = status(pod, [exited(a1, 137, { reason: 'OOMKilled', message: 'out of memory' })]);
    expect(app(st, 'a').state?.terminated).toMatchObject({ exitCode: 137, reason: 'OOMKilled', message: 'out of memory' });
    expect(status(pod, [exited(a1, 0)]).containerStatuses?.[0]?.state?.terminated?.reason).toBe('Completed');
  });

  const initFailed: { policy: 'Always' | 'OnFailure' | 'Never'; phase: string }[] = [
    { policy: 'Never', phase: 'Failed' },
    { policy: 'OnFailure', phase: 'Pending' },
    { policy: 'Always', phase: 'Pending' },
  ];
  it.each(initFailed)('an init container that failed under $policy → $phase', ({ policy, phase }) => {
    const i1 = ctr('init');
    const pod = mkPod({ restartPolicy: policy, initContainers: [i1], containers: [ctr('a')] });
    const st = status(pod, [exited(i1, 1)]);
    expect(st.phase).toBe(phase);
    expect(st.initContainerStatuses?.[0]?.state?.terminated?.exitCode).toBe(1);
  });

  it('is Pending while an init container runs and Running once the app runs', () => {
    const i1 = ctr('init');
    const a1 = ctr('a');
    const pod = mkPod({ initContainers: [i1], containers: [a1] });
    const during = status(pod, [running(i1)]);
    expect(during.phase).toBe('Pending');
    expect(during.initContainerStatuses?.[0]).toMatchObject({ ready: false, started: true });
    const after = status(pod, [running(a1), exited(i1, 0)]);
    expect(after.phase).toBe('Running');
    expect(after.initContainerStatuses?.[0]).toMatchObject({ ready: true, started: false });
  });
});

describe('generatePodStatus: sidecars', () => {
  const side = ctr('proxy', { restartPolicy: 'Always' });
  const a1 = ctr('a');
  const pod = mkPod({ restartPolicy: 'Never', initContainers: [side], containers: [a1] });

  it('counts a running sidecar as running: the pod is not done until the sidecar stops', () => {
    const st = status(pod, [exited(a1, 0), running(side)]);
    expect(st.phase).toBe('Running');
    expect(st.initContainerStatuses?.[0]).toMatchObject({ ready: true, started: true });
  });

  it('ignores a stopped sidecar for the phase', () => {
    expect(status(pod, [exited(side, 137), exited(a1, 0)]).phase).toBe('Succeeded');
    expect(status(pod, [exited(side, 137), exited(a1, 1)]).phase).toBe('Failed');
  });

  it('lists an unready sidecar among the unready containers', () => {
    const probed = ctr('proxy', { restartPolicy: 'Always', readinessProbe: { exec: { command: ['true'] } } });
    const p = mkPod({ restartPolicy: 'Never', initContainers: [probed], containers: [a1] });
    const s1 = running(probed);
    const st = status(p, [running(a1), s1], { probes: { proxy: { containerId: s1.id, readiness: 'Failure' } } });
    expect(st.phase).toBe('Running');
    expect(cond(st, 'ContainersReady').message).toBe('containers with unready status: [proxy]');
  });

  it('stays Running while a sidecar restarts after the app started', () => {
    const always = mkPod({ initContainers: [side], containers: [a1] });
    const st = status(always, [running(a1), exited(side, 1)], {
      sync: { containers: { proxy: { reason: 'CrashLoopBackOff', message: 'back-off' } } },
    });
    expect(st.phase).toBe('Running');
    expect(cond(st, 'Initialized').status).toBe('True');
  });
});

describe('generatePodStatus: conditions', () => {
  it('lists the incomplete init containers in Initialized', () => {
    const i1 = ctr('init-a');
    const i2 = ctr('init-b');
    const i3 = ctr('init-c');
    const pod = mkPod({ initContainers: [i1, i2, i3], containers: [ctr('a')] });
    const st = status(pod, [running(i2), exited(i1, 0)]);
    expect(cond(st, 'Initialized')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [init-b init-c]',
    });
  });

  it('lists unready containers in Ready and ContainersReady', () => {
    const a1 = ctr('a', { readinessProbe: { exec: { command: ['true'] } } });
    const b1 = ctr('b');
    const c1 = ctr('c');
    const pod = mkPod({ containers: [a1, b1, c1] });
    const ra = running(a1);
    const st = status(pod, [cs(b1, 'created'), running(c1), ra], { probes: { a: { containerId: ra.id, readiness: 'Failure' } } });
    for (const t of ['Ready', 'ContainersReady']) {
      expect(cond(st, t)).toMatchObject({ status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [a b]' });
    }
    expect(app(st, 'a')).toMatchObject({ ready: false, started: true });
    expect(app(st, 'c').ready).toBe(true);
  });

  it('says PodCompleted for a succeeded pod', () => {
    const i1 = ctr('init');
    const a1 = ctr('a');
    const pod = mkPod({ restartPolicy: 'Never', initContainers: [i1], containers: [a1] });
    const st = status(pod, [exited(a1, 0), exited(i1, 0)]);
    expect(st.phase).toBe('Succeeded');
    expect(cond(st, 'Initialized')).toMatchObject({ status: 'True', reason: 'PodCompleted' });
    for (const t of ['Ready', 'ContainersReady']) {
      const c = cond(st, t);
      expect(c).toMatchObject({ status: 'False', reason: 'PodCompleted' });
      expect(c.message).toBeUndefined();
    }
  });

  it('says PodFailed for a failed pod, whose Initialized condition has no reason', () => {
    const i1 = ctr('init');
    const a1 = ctr('a');
    const pod = mkPod({ restartPolicy: 'Never', initContainers: [i1], containers: [a1] });
    const st = status(pod, [exited(a1, 2), exited(i1, 0)]);
    expect(st.phase).toBe('Failed');
    expect(cond(st, 'Ready')).toMatchObject({ status: 'False', reason: 'PodFailed' });
    expect(cond(st, 'ContainersReady')).toMatchObject({ status: 'False', reason: 'PodFailed' });
    expect(cond(st, 'Initialized').status).toBe('True');
    expect(cond(st, 'Initialized').reason).toBeUndefined();
  });

  it('has PodReadyToStartContainers false when the sandbox needs replacing', () => {
    const pod = mkPod({ containers: [ctr('a')] });
    expect(cond(status(pod, [], { sandboxes: [sandbox({ ready: false })] }), 'PodReadyToStartContainers').status).toBe('False');
    expect(cond(status(pod, [], { sandboxes: [sandbox({ ip: '' })] }), 'PodReadyToStartContainers').status).toBe('False');
    expect(cond(status(pod, []), 'PodReadyToStartContainers').status).toBe('True');
  });
});

describe('generatePodStatus: container details', () => {
  it('shows a sync failure without a status as waiting with its reason', () => {
    const a1 = ctr('a', { imagePullPolicy: 'Never' });
    const pod = mkPod({ containers: [a1] });
    const msg = 'Container image "busybox:1.36" is not present with pull policy of Never';
    const st = status(pod, [], { sync: { containers: { a: { reason: 'ErrImageNeverPull', message: msg } } } });
    expect(st.phase).toBe('Pending');
    expect(app(st, 'a').state).toEqual({ waiting: { reason: 'ErrImageNeverPull', message: msg } });
    expect(app(st, 'a').lastState).toBeUndefined();
  });

  it('shows CrashLoopBackOff as waiting with the last run as lastState', () => {
    const a1 = ctr('a');
    const pod = mkPod({ containers: [a1] });
    const e = exited(a1, 1, { restartCount: 4 });
    const st = status(pod, [e], { sync: { containers: { a: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' } } } });
    const a = app(st, 'a');
    expect(a.state).toEqual({ waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' } });
    expect(a.lastState?.terminated).toMatchObject({ exitCode: 1, reason: 'Error', containerID: `containerd://${e.id}` });
    expect(a.restartCount).toBe(4);
    expect(a.containerID).toBe(`containerd://${e.id}`);
    expect(st.phase).toBe('Running');
  });

  it('does not show a sync failure for a container that will not be started again', () => {
    const a1 = ctr('a');
    const i1 = ctr('init');
    const never = mkPod({ restartPolicy: 'Never', containers: [a1] });
    const sync = { containers: { a: { reason: 'CrashLoopBackOff', message: 'x' }, init: { reason: 'CrashLoopBackOff', message: 'x' } } };
    expect(app(status(never, [exited(a1, 1)], { sync }), 'a').state?.terminated?.exitCode).toBe(1);
    // A completed init container is never restarted either.
    const withInit = mkPod({ initContainers: [i1], containers: [a1] });
    expect(status(withInit, [running(a1), exited(i1, 0)], { sync }).initContainerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0);
  });

  it('takes restartCount from the runtime annotation and lastState from the previous instance', () => {
    const a1 = ctr('a');
    const pod = mkPod({ containers: [a1] });
    const older = exited(a1, 2, { restartCount: 1 });
    const prev = exited(a1, 137, { restartCount: 2, reason: 'OOMKilled' });
    const cur = running(a1, { restartCount: 3 });
    const a = app(status(pod, [cur, prev, older]), 'a');
    expect(a.restartCount).toBe(3);
    expect(a.state?.running).toBeDefined();
    expect(a.lastState?.terminated).toMatchObject({ exitCode: 137, reason: 'OOMKilled', containerID: `containerd://${prev.id}` });
  });

  it('shows a created container as waiting', () => {
    const a1 = ctr('a');
    const pod = mkPod({ containers: [a1] });
    const st = status(pod, [cs(a1, 'created')]);
    expect(app(st, 'a').state?.waiting).toBeDefined();
    expect(st.phase).toBe('Pending');
  });

  it('reports the QoS class', () => {
    const res = { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } };
    expect(status(mkPod({ containers: [ctr('a', { resources: res })] }), []).qosClass).toBe('Guaranteed');
    expect(status(mkPod({ containers: [ctr('a', { resources: { requests: { cpu: '100m' } } })] }), []).qosClass).toBe('Burstable');
    expect(status(mkPod({ containers: [ctr('a')] }), []).qosClass).toBe('BestEffort');
  });
});

describe('generatePodStatus: addresses', () => {
  const pod = mkPod({ containers: [ctr('a')] });

  it('takes the pod IPs from the latest sandbox when it is ready', () => {
    const st = status(pod, [], {
      sandboxes: [sandbox({ ip: '10.88.0.9', additionalIps: ['fd00::9'] }), sandbox({ id: 'old', ip: '10.88.0.5', ready: false })],
    });
    expect(st.podIP).toBe('10.88.0.9');
    expect(st.podIPs).toEqual([{ ip: '10.88.0.9' }, { ip: 'fd00::9' }]);
    expect(st.hostIP).toBe('192.168.1.10');
    expect(st.hostIPs).toEqual([{ ip: '192.168.1.10' }]);
    expect(st.startTime).toEqual(START);
  });

  it('has no pod IP when the latest sandbox is not ready', () => {
    const st = status(pod, [], { sandboxes: [sandbox({ ready: false, ip: '10.88.0.9' }), sandbox({ id: 'old', ip: '10.88.0.5' })] });
    expect(st.podIP).toBeUndefined();
    expect(st.podIPs).toEqual([]);
  });

  it('gives a host-network pod the host IPs', () => {
    const host = mkPod({ hostNetwork: true, containers: [ctr('a')] });
    const st = status(host, [], { sandboxes: [sandbox({ hostNetwork: true, ip: '' })], hostIPs: ['192.168.1.10', 'fd00::10'] });
    expect(st.podIP).toBe('192.168.1.10');
    expect(st.podIPs).toEqual([{ ip: '192.168.1.10' }, { ip: 'fd00::10' }]);
  });
});

describe('getPhase', () => {
  const waitingCreating: V1ContainerStatus = { name: 'a', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } };
  const run = (name: string): V1ContainerStatus => ({ name, image: 'x', imageID: '', ready: true, restartCount: 0, started: true, state: { running: {} } });
  const term = (name: string, exitCode: number): V1ContainerStatus => ({
    name,
    image: 'x',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { terminated: { exitCode } },
  });
  const backoff = (name: string, exitCode: number): V1ContainerStatus => ({
    name,
    image: 'x',
    imageID: '',
    ready: false,
    restartCount: 1,
    state: { waiting: { reason: 'CrashLoopBackOff' } },
    lastState: { terminated: { exitCode } },
  });

  it.each([
    { name: 'no statuses yet', policy: 'Always', app: [waitingCreating], want: 'Pending' },
    { name: 'one running one waiting', policy: 'Always', app: [run('a'), { ...waitingCreating, name: 'b' }], want: 'Pending' },
    { name: 'running and terminated', policy: 'Never', app: [run('a'), term('b', 1)], want: 'Running' },
    { name: 'crash looping under Always', policy: 'Always', app: [backoff('a', 1)], want: 'Running' },
    { name: 'crash looping under OnFailure', policy: 'OnFailure', app: [backoff('a', 1)], want: 'Running' },
    { name: 'all terminated 0 under Never', policy: 'Never', app: [term('a', 0), term('b', 0)], want: 'Succeeded' },
    { name: 'a failure under Never', policy: 'Never', app: [term('a', 0), term('b', 1)], want: 'Failed' },
    { name: 'no app status at all', policy: 'Never', app: [], want: 'Pending' },
  ] as { name: string; policy: 'Always' | 'OnFailure' | 'Never'; app: V1ContainerStatus[]; want: string }[])(
    '$name → $want',
    ({ policy, app: apps, want }) => {
      const pod = mkPod({ restartPolicy: policy, containers: apps.map((s) => ctr(s.name)) });
      expect(getPhase(pod, [], apps)).toBe(want);
    },
  );

  it('counts an init container in back-off after a failure as failed', () => {
    const pod = mkPod({ restartPolicy: 'Never', initContainers: [ctr('i')], containers: [ctr('a')] });
    expect(getPhase(pod, [backoff('i', 1)], [{ ...waitingCreating, state: { waiting: { reason: 'PodInitializing' } } }])).toBe('Failed');
  });
});

describe('generatePodStatus: probes and readiness gates', () => {
  const probe = { exec: { command: ['true'] } };

  it('holds a container with a startup probe not started (and not ready) until the probe passed', () => {
    const a = ctr('a', { startupProbe: probe });
    const pod = mkPod({ containers: [a] });
    const r = running(a);
    expect(app(status(pod, [r]), 'a')).toMatchObject({ started: false, ready: false });
    expect(app(status(pod, [r], { probes: { a: { containerId: r.id, startup: 'Unknown' } } }), 'a')).toMatchObject({ started: false, ready: false });
    const ok = status(pod, [r], { probes: { a: { containerId: r.id, startup: 'Success' } } });
    expect(app(ok, 'a')).toMatchObject({ started: true, ready: true });
    expect(cond(ok, 'Ready').status).toBe('True');
  });

  it('counts readiness only for the current container: a restarted one starts unready', () => {
    const a = ctr('a', { readinessProbe: probe });
    const pod = mkPod({ containers: [a] });
    const old = exited(a, 137);
    const now = running(a, { restartCount: 1 });
    const st = status(pod, [now, old], { probes: { a: { containerId: old.id, readiness: 'Success' } } });
    expect(app(st, 'a')).toMatchObject({ started: true, ready: false });
    expect(cond(st, 'Ready')).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
    const ready = status(pod, [now, old], { probes: { a: { containerId: now.id, readiness: 'Success' } } });
    expect(cond(ready, 'ContainersReady').status).toBe('True');
  });

  it('keeps Ready False with the kubelet message while a readiness gate has no True condition', () => {
    const a = ctr('a');
    const gated = mkPod({ containers: [a], readinessGates: [{ conditionType: 'example.com/lb' }] });
    const st = status(gated, [running(a)]);
    expect(cond(st, 'ContainersReady').status).toBe('True');
    expect(cond(st, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
    });
    const withFalse: V1Pod = { ...gated, status: { conditions: [{ type: 'example.com/lb', status: 'False' }] } };
    expect(cond(status(withFalse, [running(a)]), 'Ready').message).toBe('the status of pod readiness gate "example.com/lb" is not "True", but False');
    const withTrue: V1Pod = { ...gated, status: { conditions: [{ type: 'example.com/lb', status: 'True' }] } };
    expect(cond(status(withTrue, [running(a)]), 'Ready').status).toBe('True');
    // The gate's condition is carried over (a status patch must not drop it); the kubelet's own are computed anew.
    const carried: V1Pod = { ...gated, status: { conditions: [{ type: 'example.com/lb', status: 'True' }, { type: 'Ready', status: 'False' }] } };
    const st2 = status(carried, [running(a)]);
    expect(st2.conditions?.filter((c) => c.type === 'example.com/lb')).toEqual([{ type: 'example.com/lb', status: 'True' }]);
    expect(st2.conditions?.filter((c) => c.type === 'Ready')).toHaveLength(1);
  });
});

describe('generatePodStatus: in-place resize', () => {
  const res = (cpu: string) => ({ requests: { cpu: '100m' }, limits: { cpu } });
  it('shows the allocated requests and what a running container runs with; PodResizePending and PodResizeInProgress as the state has them', () => {
    const a = ctr('a', { resources: res('2') });
    const sync: PodSyncState = {
      containers: { a: { actuated: res('500m') } },
      allocated: { a: res('1') },
      resize: {
        pending: { reason: 'Infeasible', message: "Node didn't have enough capacity: cpu, requested: 2000, capacity: 1000", observedGeneration: 3, lastProbeTime: START.toISOString(), lastTransitionTime: START.toISOString() },
        inProgress: { observedGeneration: 2, lastProbeTime: START.toISOString(), lastTransitionTime: START.toISOString() },
      },
    };
    const st = status(mkPod({ containers: [a] }), [running(a)], { sync });
    expect(st.containerStatuses?.[0]).toMatchObject({ allocatedResources: { cpu: '100m' }, resources: res('500m') });
    expect(st.conditions?.filter((c) => c.type.startsWith('PodResize'))).toEqual([
      { type: 'PodResizePending', status: 'True', reason: 'Infeasible', message: "Node didn't have enough capacity: cpu, requested: 2000, capacity: 1000", observedGeneration: 3, lastProbeTime: START, lastTransitionTime: START },
      { type: 'PodResizeInProgress', status: 'True', observedGeneration: 2, lastProbeTime: START, lastTransitionTime: START },
    ]);
    // Not running: the allocated resources.
    expect(status(mkPod({ containers: [a] }), [], { sync }).containerStatuses?.[0]?.resources).toEqual(res('1'));
    // Nothing allocated (not resized): the spec's resources, as the kubelet shows them; no resize condition.
    const plain = status(mkPod({ containers: [a] }), [running(a)]);
    expect(plain.containerStatuses?.[0]).toMatchObject({ resources: res('2'), allocatedResources: res('2').requests });
    expect(plain.conditions?.some((c) => c.type.startsWith('PodResize'))).toBe(false);
  });
});

describe('generatePodStatus: observedGeneration (PodObservedGenerationTracking)', () => {
  it("is the pod's generation, on the status and the kubelet's conditions; absent without one", () => {
    const a = ctr('a');
    const st = status(mkPod({ containers: [a] }, { generation: 4 }), [running(a)]);
    expect(st.observedGeneration).toBe(4);
    expect(st.conditions?.map((c) => [c.type, c.observedGeneration])).toEqual([
      ['PodReadyToStartContainers', 4],
      ['Initialized', 4],
      ['Ready', 4],
      ['ContainersReady', 4],
      ['PodScheduled', 4],
    ]);
    const none = status(mkPod({ containers: [a] }), [running(a)]);
    expect(none).not.toHaveProperty('observedGeneration');
    expect(none.conditions?.some((c) => 'observedGeneration' in c)).toBe(false);
  });
});
