/**
 * Pod status from the runtime's state, computed as the kubelet computes it
 * (kubelet_pods.go generateAPIPodStatus, getPhase,
 * convertToAPIContainerStatuses; status/generate.go for conditions).
 */
import type {
  V1Container,
  V1ContainerState,
  V1ContainerStatus,
  V1Pod,
  V1PodCondition,
  V1PodStatus,
} from '@kubernetes/client-node';
import { isRestartableInit, restartPolicy } from '../kuberuntime/actions.js';
import type { PodSyncState } from '../kuberuntime/poddir.js';
import { qosClass } from '../kuberuntime/resources.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../kuberuntime/runtime-status.js';

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface StatusInputs {
  pod: V1Pod;
  runtime: RuntimePodStatus;
  syncState: PodSyncState;
  /** Runtime name for container IDs (`containerd://<id>`). */
  runtimeName: string;
  hostIPs: string[];
  /** When klet first synced the pod. */
  startTime?: Date;
  /** Readiness probe results by container name (prober issue); absent means no probe. */
  readiness?: Record<string, boolean>;
}

const date = (ms: number): Date | undefined => (ms > 0 ? new Date(ms) : undefined);

function terminatedState(s: RuntimeContainerStatus, runtimeName: string): V1ContainerState {
  if (s.state === 'unknown') {
    return {
      terminated: {
        exitCode: 137,
        reason: 'ContainerStatusUnknown',
        message: 'The container could not be located when the pod was terminated',
        containerID: `${runtimeName}://${s.id}`,
      },
    };
  }
  return {
    terminated: {
      exitCode: s.exitCode,
      reason: s.reason || (s.exitCode === 0 ? 'Completed' : 'Error'),
      message: s.message || undefined,
      startedAt: date(s.startedAt),
      finishedAt: date(s.finishedAt),
      containerID: `${runtimeName}://${s.id}`,
    },
  };
}

function containerStatus(
  c: V1Container,
  history: RuntimeContainerStatus[],
  inputs: StatusInputs,
  defaultWaitingReason: string,
  isInit: boolean,
): V1ContainerStatus {
  const latest = history[0];
  const previous = history[1];
  const cached = inputs.syncState.containers[c.name];
  const running = latest?.state === 'running';
  const st: V1ContainerStatus = {
    name: c.name,
    image: c.image ?? '',
    imageID: latest?.imageRef ?? '',
    ready: false,
    restartCount: latest?.restartCount ?? 0,
    started: running,
    state: { waiting: { reason: defaultWaitingReason } },
  };
  if (latest) st.containerID = `${inputs.runtimeName}://${latest.id}`;
  if (cached?.reason && !running) {
    // The last start attempt failed: show why, with the last run as lastState.
    st.state = { waiting: { reason: cached.reason, message: cached.message } };
    if (latest && latest.state !== 'created') st.lastState = terminatedState(latest, inputs.runtimeName);
  } else if (latest) {
    if (running) st.state = { running: { startedAt: date(latest.startedAt) } };
    else if (latest.state === 'created') st.state = { waiting: { reason: 'ContainerCreating' } };
    else st.state = terminatedState(latest, inputs.runtimeName);
    if (previous && previous.state !== 'created') st.lastState = terminatedState(previous, inputs.runtimeName);
  }
  if (running) {
    const probe = inputs.readiness?.[c.name];
    st.ready = isInit && !isRestartableInit(c) ? false : (probe ?? true);
  }
  if (isInit && !isRestartableInit(c) && latest?.state === 'exited' && latest.exitCode === 0) st.ready = true;
  return st;
}

/** The kubelet's getPhase. */
export function getPhase(pod: V1Pod, init: V1ContainerStatus[], app: V1ContainerStatus[]): PodPhase {
  const policy = restartPolicy(pod);
  const inits = pod.spec?.initContainers ?? [];
  let pendingInit = 0;
  let failedInit = 0;
  inits.forEach((c, i) => {
    const s = init[i];
    if (isRestartableInit(c)) {
      if (!s?.started) pendingInit++;
      return;
    }
    if (!s || s.state?.running) pendingInit++;
    else if (s.state?.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInit++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated && s.lastState.terminated.exitCode !== 0) failedInit++;
      else pendingInit++;
    }
  });
  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const s of app) {
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }
  if (failedInit > 0 && policy === 'Never') return 'Failed';
  if (pendingInit > 0 || (failedInit > 0 && policy !== 'Never')) {
    // Init containers still to run (or being retried): Pending, unless the
    // app containers already run (a restarted sidecar after initialization).
    if (running === 0 && stopped === 0) return 'Pending';
  }
  if (waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

function condition(type: string, ok: boolean, reason?: string, message?: string, at?: Date): V1PodCondition {
  return {
    type,
    status: ok ? 'True' : 'False',
    lastTransitionTime: at,
    lastProbeTime: undefined,
    ...(ok ? {} : { reason, message }),
  };
}

export function generatePodStatus(inputs: StatusInputs): V1PodStatus {
  const { pod, runtime } = inputs;
  const inits = pod.spec?.initContainers ?? [];
  const containers = pod.spec?.containers ?? [];
  const byName = (name: string) => runtime.containers.filter((c) => c.name === name);
  const defaultReason = inits.length > 0 ? 'PodInitializing' : 'ContainerCreating';
  const initStatuses = inits.map((c) => containerStatus(c, byName(c.name), inputs, defaultReason, true));
  const appStatuses = containers.map((c) => containerStatus(c, byName(c.name), inputs, defaultReason, false));
  const phase = getPhase(pod, initStatuses, appStatuses);

  const sandbox = runtime.sandboxes[0];
  const hostNetwork = pod.spec?.hostNetwork === true;
  const podIPs = hostNetwork ? inputs.hostIPs : sandbox && sandbox.ready && sandbox.ip ? [sandbox.ip, ...sandbox.additionalIps] : [];
  const now = new Date();

  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const incompleteInit = inits.filter((c, i) => {
    const s = initStatuses[i];
    if (isRestartableInit(c)) return !s?.started;
    return !(s?.state?.terminated && s.state.terminated.exitCode === 0);
  });
  const initialized = incompleteInit.length === 0 || appStatuses.some((s) => s.state?.running || s.state?.terminated || s.lastState?.terminated);
  const unready = [...inits.filter((c) => isRestartableInit(c)).map((c) => initStatuses[inits.indexOf(c)]), ...appStatuses]
    .filter((s): s is V1ContainerStatus => s !== undefined && !s.ready)
    .map((s) => s.name);
  const containersReady = unready.length === 0 && !terminal;
  const readyReason = terminal ? 'PodCompleted' : 'ContainersNotReady';
  const readyMessage = terminal ? undefined : `containers with unready status: [${unready.join(' ')}]`;

  const conditions: V1PodCondition[] = [
    condition('PodReadyToStartContainers', sandbox?.ready === true, undefined, undefined, date(sandbox?.createdAt ?? 0) ?? now),
    condition(
      'Initialized',
      initialized,
      'ContainersNotInitialized',
      `containers with incomplete status: [${incompleteInit.map((c) => c.name).join(' ')}]`,
      inputs.startTime,
    ),
    condition('Ready', containersReady, readyReason, readyMessage, inputs.startTime),
    condition('ContainersReady', containersReady, readyReason, readyMessage, inputs.startTime),
    condition('PodScheduled', true, undefined, undefined, inputs.startTime),
  ];
  if (terminal && initialized) {
    // A completed pod's Initialized condition says so, as the kubelet's does.
    (conditions[1] as V1PodCondition).reason = 'PodCompleted';
  }

  const status: V1PodStatus = {
    phase,
    conditions,
    hostIP: inputs.hostIPs[0],
    hostIPs: inputs.hostIPs.map((ip) => ({ ip })),
    podIP: podIPs[0],
    podIPs: podIPs.map((ip) => ({ ip })),
    startTime: inputs.startTime,
    containerStatuses: appStatuses,
    qosClass: qosClass(pod),
  };
  if (inits.length > 0) status.initContainerStatuses = initStatuses;
  return status;
}
