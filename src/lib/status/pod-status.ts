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
  V1ResourceRequirements,
} from '@kubernetes/client-node';
import { isRestartableInit, podSandboxChanged, restartPolicy, shouldContainerBeRestarted } from '../kuberuntime/actions.js';
import type { PodSyncState, ResizeCondition } from '../kuberuntime/poddir.js';
import { qosClass } from '../kuberuntime/resources.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../kuberuntime/runtime-status.js';
import { probedContainerState, type PodProbeResults } from '../prober/results.js';

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface StatusInputs {
  pod: V1Pod;
  runtime: RuntimePodStatus;
  syncState: PodSyncState;
  /** The pod is being terminated (it has a deletionTimestamp). */
  terminating?: boolean;
  /** Runtime name for container IDs (`containerd://<id>`). */
  runtimeName: string;
  hostIPs: string[];
  /** When klet first synced the pod. */
  startTime?: Date;
  /** The prober's results (probes.json): `started` and `ready` of probed containers. */
  probes?: PodProbeResults;
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
  // A sandbox the runtime refused leaves the containers ContainerCreating,
  // as the kubelet shows them: its reasonCache records only container start
  // results, and the refusal is the FailedCreatePodSandBox event (the sync
  // retries after a back-off).
  if (latest) st.containerID = `${inputs.runtimeName}://${latest.id}`;
  if (latest) {
    if (running) st.state = { running: { startedAt: date(latest.startedAt) } };
    else if (latest.state === 'created') st.state = { waiting: { reason: 'ContainerCreating' } };
    else st.state = terminatedState(latest, inputs.runtimeName);
    if (previous && previous.state !== 'created') st.lastState = terminatedState(previous, inputs.runtimeName);
    // InPlacePodVerticalScaling (on by default since 1.33): a container the runtime has reports its
    // resources and allocated requests, as the kubelet's convertToAPIContainerStatuses does: the
    // spec's here, replaced below by an API pod's allocated and actuated ones once it was resized.
    st.resources = structuredClone(c.resources ?? {});
    if (c.resources?.requests !== undefined) st.allocatedResources = structuredClone(c.resources.requests);
  }
  // The last start attempt failed: show why, with the last run as lastState;
  // only for a container the next sync would start again (the kubelet's
  // reasonCache is consulted only when ShouldContainerBeRestarted, and never
  // for an init container that completed).
  const completedInit = isInit && latest?.state === 'exited' && latest.exitCode === 0;
  if (cached?.reason && !running && !completedInit && shouldContainerBeRestarted(inputs.pod, latest)) {
    if (st.state?.terminated) st.lastState = st.state;
    st.state = { waiting: { reason: cached.reason, message: cached.message } };
  }
  if (running && latest && !(isInit && !isRestartableInit(c))) {
    // Probed: started once the startup probe passed, ready once the readiness probe passed (the prober manager's UpdatePodStatus).
    const probed = probedContainerState(c, { id: latest.id, running }, inputs.probes);
    st.started = probed.started;
    st.ready = probed.ready;
  }
  if (isInit && !isRestartableInit(c) && latest?.state === 'exited' && latest.exitCode === 0) st.ready = true;
  // In-place resize (an API pod's allocated resources): what is allocated, and what the container runs with.
  const allocated = inputs.syncState.allocated?.[c.name];
  if (allocated !== undefined && (allocated.requests !== undefined || allocated.limits !== undefined)) {
    if (allocated.requests !== undefined) st.allocatedResources = { ...allocated.requests };
    st.resources = JSON.parse(JSON.stringify(running && cached?.actuated !== undefined ? cached.actuated : allocated)) as V1ResourceRequirements;
  }
  return st;
}

/** The resize conditions the pod's sync state holds (the status manager's podResizeConditions). */
function resizeConditions(state: PodSyncState): V1PodCondition[] {
  const out: V1PodCondition[] = [];
  const add = (type: string, c: ResizeCondition | undefined) => {
    if (c === undefined) return;
    out.push({
      type,
      status: 'True',
      ...(c.observedGeneration !== undefined ? { observedGeneration: c.observedGeneration } : {}),
      lastProbeTime: new Date(c.lastProbeTime),
      lastTransitionTime: new Date(c.lastTransitionTime),
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
    });
  };
  add('PodResizePending', state.resize?.pending);
  add('PodResizeInProgress', state.resize?.inProgress);
  return out;
}

/** The kubelet's getPhase (sidecar-aware). */
export function getPhase(pod: V1Pod, init: V1ContainerStatus[], app: V1ContainerStatus[]): PodPhase {
  const policy = restartPolicy(pod);
  const inits = pod.spec?.initContainers ?? [];
  let pendingInit = 0;
  let failedInit = 0;
  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  inits.forEach((c, i) => {
    const s = init[i];
    if (isRestartableInit(c)) {
      // A sidecar counts as a running container; a stopped one (exited, or
      // waiting to restart after a run) does not count at all.
      if (!s) unknown++;
      else if (s.state?.running) {
        if (!s.started) pendingInit++;
        running++;
      } else if (s.state?.terminated) {
        // not taken into account
      } else if (s.state?.waiting) {
        if (!s.lastState?.terminated) {
          pendingInit++;
          waiting++;
        }
      } else {
        pendingInit++;
        unknown++;
      }
      return;
    }
    if (!s || s.state?.running) pendingInit++;
    else if (s.state?.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInit++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) {
        if (s.lastState.terminated.exitCode !== 0) failedInit++;
      } else pendingInit++;
    } else pendingInit++;
  });
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
  // Init containers still to run: Pending, unless an app container already
  // ran (a sidecar restarting after initialization).
  if (pendingInit > 0 && !hasAnyRegularContainerStarted(app)) return 'Pending';
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

/** The kubelet's HasAnyRegularContainerStarted. */
function hasAnyRegularContainerStarted(app: V1ContainerStatus[]): boolean {
  return app.some((s) => s.state?.running !== undefined || s.state?.terminated !== undefined);
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

/**
 * The pod's Ready condition (status.GeneratePodReadyCondition): its
 * containers ready, and every readinessGates condition True among the
 * conditions the pod's source gave (a static pod's gates have nobody to
 * set them, so they hold the pod unready, as on the kubelet).
 */
function readyCondition(pod: V1Pod, containersReady: boolean, reason: string, message: string | undefined, at?: Date, have: V1PodCondition[] = pod.status?.conditions ?? []): V1PodCondition {
  if (!containersReady) return condition('Ready', false, reason, message, at);
  const unready: string[] = [];
  for (const gate of pod.spec?.readinessGates ?? []) {
    const c = have.find((x) => x.type === gate.conditionType);
    if (c === undefined) unready.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    else if (c.status !== 'True') unready.push(`the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`);
  }
  if (unready.length > 0) return condition('Ready', false, 'ReadinessGatesNotReady', unready.join(', '), at);
  return condition('Ready', true, undefined, undefined, at);
}

/** The conditions the kubelet owns (types.PodConditionsByKubelet, PodReadyToStartContainers on in 1.34). */
const KUBELET_CONDITIONS = new Set(['PodScheduled', 'Ready', 'Initialized', 'ContainersReady', 'PodResizeInProgress', 'PodResizePending', 'PodReadyToStartContainers']);
/** The condition the kubelet shares with the API server (types.PodConditionSharedByKubelet): it replaces the server's when it sends one. */
const DISRUPTION_TARGET = 'DisruptionTarget';

/**
 * An API pod's status to write, given the pod as the server has it now: the
 * conditions the kubelet does not own are the server's (a readiness gate's,
 * set through pods/status by someone else), and the Ready condition is
 * computed again over them (the status manager's mergePodStatus and
 * NeedToReconcilePodReadiness: a gate set True makes the pod Ready without
 * any change on the node). A Ready condition that changed gets `now` as its
 * lastTransitionTime, one that did not keeps the server's.
 */
export function withServerConditions(server: V1Pod, status: V1PodStatus, now: Date): V1PodStatus {
  const sendsShared = (status.conditions ?? []).some((c) => c.type === DISRUPTION_TARGET);
  const owned = (type: string) => KUBELET_CONDITIONS.has(type) || (sendsShared && type === DISRUPTION_TARGET);
  const own = (status.conditions ?? []).filter((c) => owned(c.type));
  const foreign = (server.status?.conditions ?? []).filter((c) => !owned(c.type));
  const conditions = [...own, ...foreign];
  const containersReady = own.find((c) => c.type === 'ContainersReady')?.status === 'True';
  const i = conditions.findIndex((c) => c.type === 'Ready');
  if (containersReady && i !== -1 && (server.spec?.readinessGates ?? []).length > 0) {
    const ready = readyCondition(server, true, '', undefined, undefined, conditions);
    const old = server.status?.conditions?.find((c) => c.type === 'Ready');
    ready.lastTransitionTime = old !== undefined && old.status === ready.status && old.lastTransitionTime ? old.lastTransitionTime : now;
    if (conditions[i]?.observedGeneration !== undefined) ready.observedGeneration = conditions[i]!.observedGeneration;
    conditions[i] = ready;
  }
  return { ...status, conditions };
}

export function generatePodStatus(inputs: StatusInputs): V1PodStatus {
  const { pod, runtime } = inputs;
  // Rejected at admission (NodePorts): the kubelet's rejectPod sets only the
  // phase, reason and message (and the status manager a startTime); the pod
  // never reaches a pod worker, so it has no container statuses or
  // conditions, and nothing of it ran.
  if (inputs.syncState.rejected === true && runtime.sandboxes.length === 0 && runtime.containers.length === 0) {
    return { phase: 'Failed', reason: inputs.syncState.reason, message: inputs.syncState.message, startTime: inputs.startTime, qosClass: qosClass(pod) };
  }
  const inits = pod.spec?.initContainers ?? [];
  const containers = pod.spec?.containers ?? [];
  const byName = (name: string) => runtime.containers.filter((c) => c.name === name);
  const defaultReason = inits.length > 0 ? 'PodInitializing' : 'ContainerCreating';
  const initStatuses = inits.map((c) => containerStatus(c, byName(c.name), inputs, defaultReason, true));
  const appStatuses = containers.map((c) => containerStatus(c, byName(c.name), inputs, defaultReason, false));
  // Ended by klet itself: activeDeadlineSeconds, evicted (an emptyDir over its sizeLimit), or rejected at admission (e.g. NodePorts).
  // Not reported as such while a container still runs: the kubelet's status
  // manager (mergePodStatus) delays a transition to a terminal phase while
  // the pod could have running containers, keeping the old phase, reason and
  // message, so Failed means the containers are stopped.
  const endedByKlet =
    inputs.syncState.reason === 'DeadlineExceeded' || inputs.syncState.reason === 'Evicted' || inputs.syncState.rejected === true;
  const deadlineExceeded = endedByKlet && !runtime.containers.some((c) => c.state === 'running');
  const phase = deadlineExceeded ? 'Failed' : getPhase(pod, initStatuses, appStatuses);

  const sandbox = runtime.sandboxes[0];
  const hostNetwork = pod.spec?.hostNetwork === true;
  let podIPs = hostNetwork ? inputs.hostIPs : sandbox && sandbox.ready && sandbox.ip ? [sandbox.ip, ...sandbox.additionalIps] : [];
  // A pod being terminated keeps the IPs it had (the kubelet keeps the old
  // status's podIPs): its sandbox stops before the pod is gone.
  if (podIPs.length === 0 && inputs.terminating === true) podIPs = inputs.syncState.podIPs ?? [];
  const now = new Date();

  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const incompleteInit = inits.filter((c, i) => {
    const s = initStatuses[i];
    if (isRestartableInit(c)) return !s?.started;
    return !(s?.state?.terminated && s.state.terminated.exitCode === 0);
  });
  const initialized = incompleteInit.length === 0 || hasAnyRegularContainerStarted(appStatuses);
  const unready = [...inits.filter((c) => isRestartableInit(c)).map((c) => initStatuses[inits.indexOf(c)]), ...appStatuses]
    .filter((s): s is V1ContainerStatus => s !== undefined && !s.ready)
    .map((s) => s.name);
  const containersReady = unready.length === 0 && !terminal;
  const readyReason = phase === 'Succeeded' ? 'PodCompleted' : phase === 'Failed' ? 'PodFailed' : 'ContainersNotReady';
  const readyMessage = terminal ? undefined : `containers with unready status: [${unready.join(' ')}]`;

  const conditions: V1PodCondition[] = [
    condition('PodReadyToStartContainers', !podSandboxChanged(pod, runtime).changed, undefined, undefined, date(sandbox?.createdAt ?? 0) ?? now),
    condition(
      'Initialized',
      initialized,
      'ContainersNotInitialized',
      `containers with incomplete status: [${incompleteInit.map((c) => c.name).join(' ')}]`,
      inputs.startTime,
    ),
    readyCondition(pod, containersReady, readyReason, readyMessage, inputs.startTime),
    condition('ContainersReady', containersReady, readyReason, readyMessage, inputs.startTime),
    condition('PodScheduled', true, undefined, undefined, inputs.startTime),
  ];
  // PodObservedGenerationTracking (beta, on in 1.34): the kubelet's own conditions and the status carry the generation they saw.
  const generation = pod.metadata?.generation;
  if (generation !== undefined) for (const c of conditions) c.observedGeneration = generation;
  conditions.push(...resizeConditions(inputs.syncState));
  // Conditions the kubelet does not own (a readiness gate's, set through the API) are carried over, as its
  // generateAPIPodStatus keeps them: a status patch without them would remove them from the server.
  for (const c of pod.status?.conditions ?? []) if (!KUBELET_CONDITIONS.has(c.type)) conditions.push(c);
  // Evicted for node pressure: the eviction manager's DisruptionTarget, a
  // condition the kubelet shares with the API server (replaced, not owned),
  // sent only with the Failed phase once no container runs (mergePodStatus).
  const disruptionAt = inputs.syncState.disruptionTargetAt;
  if (deadlineExceeded && inputs.syncState.reason === 'Evicted' && disruptionAt !== undefined) {
    const target: V1PodCondition = {
      type: DISRUPTION_TARGET,
      status: 'True',
      reason: 'TerminationByKubelet',
      message: inputs.syncState.message,
      lastTransitionTime: new Date(disruptionAt),
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
    const i = conditions.findIndex((c) => c.type === DISRUPTION_TARGET);
    if (i === -1) conditions.push(target);
    else conditions[i] = target;
  }
  if (phase === 'Succeeded') {
    // A succeeded pod's Initialized condition says so, as the kubelet's does
    // (a failed pod's does not).
    (conditions[1] as V1PodCondition).status = 'True';
    (conditions[1] as V1PodCondition).reason = 'PodCompleted';
    delete (conditions[1] as V1PodCondition).message;
  }

  const status: V1PodStatus = {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    phase,
    conditions,
    hostIP: inputs.hostIPs[0],
    hostIPs: inputs.hostIPs.map((ip) => ({ ip })),
    podIP: podIPs[0],
    podIPs: podIPs.map((ip) => ({ ip })),
    startTime: inputs.startTime,
    // The kubelet sorts container statuses by name so clients see a stable order.
    containerStatuses: [...appStatuses].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    qosClass: qosClass(pod),
  };
  if (inits.length > 0) status.initContainerStatuses = initStatuses;
  const ephemerals = pod.spec?.ephemeralContainers ?? [];
  if (ephemerals.length > 0) {
    // Debug containers: no probes, so never ready and no `started`, as the kubelet reports them; they count for neither phase nor conditions.
    status.ephemeralContainerStatuses = ephemerals.map((c) => {
      const st = containerStatus(c as V1Container, byName(c.name), inputs, defaultReason, false);
      delete st.started;
      return { ...st, ready: false };
    });
  }
  if (deadlineExceeded) {
    status.reason = inputs.syncState.reason;
    status.message = inputs.syncState.message;
  }
  return status;
}
