/**
 * computePodActions: what has to change for the runtime to match a pod's
 * spec, as a plan (the kubelet's kuberuntime_manager.go computePodActions).
 * Pure: the executor in sync-pod.ts carries the plan out.
 */
import type { V1Container, V1Pod, V1Probe, V1ResourceRequirements } from '@kubernetes/client-node';
import type { PodSyncPlan } from '../events/types.js';
import { containerHash } from './hash.js';
import { containerResources, type ContainerUpdate } from './resize.js';
import { findContainerStatus, type RuntimeContainerStatus, type RuntimePodStatus } from './runtime-status.js';

export interface ContainerToKill {
  id: string;
  name: string;
  /** Why, for events and logs ("Container spec hash changed", ...). */
  message: string;
  /** A failed liveness or startup probe's terminationGracePeriodSeconds, instead of the pod's. */
  gracePeriodSeconds?: number;
}

/**
 * The prober's cached liveness and startup results by container ID (the
 * kubelet's livenessManager / startupManager), as computePodActions reads them.
 */
export interface ProbeVerdicts {
  get(type: 'Liveness' | 'Startup', containerId: string): 'Success' | 'Failure' | 'Unknown' | undefined;
}

export interface PodActions {
  /** Stop every container and the sandbox. */
  killPod: boolean;
  /** Create a new sandbox (after killing the old one, when there is one). */
  createSandbox: boolean;
  /** The sandbox to create containers in, when it is kept. */
  sandboxId: string | null;
  /** Attempt number of the (new) sandbox. */
  attempt: number;
  /** Indexes into spec.initContainers to start now, in order. */
  initContainersToStart: number[];
  /** Indexes into spec.containers to start now. */
  containersToStart: number[];
  /** Indexes into spec.ephemeralContainers to start now (each runs once, never restarted). */
  ephemeralContainersToStart?: number[];
  containersToKill: ContainerToKill[];
  /**
   * In-place resize (computePodResizeAction): running containers whose
   * allocated resources differ from what they run with, per resource,
   * decreases first.
   */
  containersToUpdate?: { cpu: ContainerUpdate[]; memory: ContainerUpdate[] };
  /** A container is restarted for its resize (resizePolicy RestartContainer): the pod cgroup is resized too. */
  updatePodResources?: boolean;
}

/**
 * The resources each running container of the pod was last given (the
 * kubelet's actuated resources checkpoint), by container name; undefined
 * for one with no record. Given only for pods that can be resized in place.
 */
export type ActuatedResources = (containerName: string) => V1ResourceRequirements | undefined;

export function restartPolicy(pod: V1Pod): 'Always' | 'OnFailure' | 'Never' {
  const p = pod.spec?.restartPolicy;
  return p === 'OnFailure' || p === 'Never' ? p : 'Always';
}

function shouldRestartOnFailure(pod: V1Pod): boolean {
  return restartPolicy(pod) !== 'Never';
}

/** A sidecar: an init container with restartPolicy Always. */
export function isRestartableInit(c: V1Container | undefined): boolean {
  return c?.restartPolicy === 'Always';
}

function succeeded(status: RuntimeContainerStatus | undefined): boolean {
  return status !== undefined && status.state === 'exited' && status.exitCode === 0;
}

/** The kubelet's ShouldContainerBeRestarted. */
export function shouldContainerBeRestarted(pod: V1Pod, status: RuntimeContainerStatus | undefined): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  if (status === undefined) return true;
  if (status.state === 'running') return false;
  if (status.state === 'unknown' || status.state === 'created') return true;
  const policy = restartPolicy(pod);
  if (policy === 'Never') return false;
  if (policy === 'OnFailure' && status.exitCode === 0) return false;
  return true;
}

/** The kubelet's hasAnyRegularContainerCreated. */
function hasAnyRegularContainerCreated(pod: V1Pod, status: RuntimePodStatus): boolean {
  return (pod.spec?.containers ?? []).some((c) => {
    const st = findContainerStatus(status, c.name);
    return st !== undefined && st.state !== 'unknown';
  });
}

/** The kubelet's PodSandboxChanged: does the pod need a new sandbox? */
export function podSandboxChanged(
  pod: V1Pod,
  status: RuntimePodStatus,
): { changed: boolean; attempt: number; sandboxId: string | null } {
  const latest = status.sandboxes[0];
  if (latest === undefined) return { changed: true, attempt: 0, sandboxId: null };
  const ready = status.sandboxes.filter((s) => s.ready).length;
  const next = latest.attempt + 1;
  if (ready > 1) return { changed: true, attempt: next, sandboxId: latest.id };
  if (!latest.ready) return { changed: true, attempt: next, sandboxId: latest.id };
  const hostNetwork = pod.spec?.hostNetwork === true;
  if (latest.hostNetwork !== hostNetwork) return { changed: true, attempt: next, sandboxId: null };
  if (!hostNetwork && latest.ip === '') return { changed: true, attempt: next, sandboxId: latest.id };
  return { changed: false, attempt: latest.attempt, sandboxId: latest.id };
}

/**
 * The kubelet's computePodResizeAction for one running container: its
 * allocated resources (the spec given here) against the actuated ones. A
 * changed resource whose resizePolicy is RestartContainer restarts the
 * container ("Container c resize requires restart"); otherwise each changed
 * resource (the limit, else the request) is updated in place, decreases
 * before increases. Returns false when the container is restarted.
 */
export function computePodResizeAction(
  c: V1Container,
  idx: number,
  sidecar: boolean,
  st: RuntimeContainerStatus,
  actuated: ActuatedResources,
  changes: PodActions,
): boolean {
  if (st.state !== 'running') return true;
  // A missing record counts as no resources, as the kubelet's zero value does.
  const current = containerResources(actuated(c.name));
  const desired = containerResources(c.resources);
  const policy = (r: 'cpu' | 'memory') => c.resizePolicy?.find((p) => p.resourceName === r)?.restartPolicy ?? 'NotRequired';
  const differs = {
    memLim: desired.memoryLimit !== current.memoryLimit,
    memReq: desired.memoryRequest !== current.memoryRequest,
    cpuLim: desired.cpuLimit !== current.cpuLimit,
    cpuReq: desired.cpuRequest !== current.cpuRequest,
  };
  if (!differs.memLim && !differs.memReq && !differs.cpuLim && !differs.cpuReq) return true;
  const restart =
    ((differs.memLim || differs.memReq) && policy('memory') === 'RestartContainer') ||
    ((differs.cpuLim || differs.cpuReq) && policy('cpu') === 'RestartContainer');
  if (restart) {
    changes.containersToKill.push({ id: st.id, name: c.name, message: `Container ${c.name} resize requires restart` });
    if (sidecar) changes.initContainersToStart.push(idx);
    else changes.containersToStart.push(idx);
    changes.updatePodResources = true;
    return false;
  }
  const updates = (changes.containersToUpdate ??= { cpu: [], memory: [] });
  const mark = (r: 'cpu' | 'memory', want: number, have: number) => {
    const u: ContainerUpdate = { name: c.name, id: st.id, current, desired };
    if (want > have) updates[r].push(u);
    else if (want < have) updates[r].unshift(u);
  };
  if (differs.memLim) mark('memory', desired.memoryLimit, current.memoryLimit);
  else if (differs.memReq) mark('memory', desired.memoryRequest, current.memoryRequest);
  if (differs.cpuLim) mark('cpu', desired.cpuLimit, current.cpuLimit);
  else if (differs.cpuReq) mark('cpu', desired.cpuRequest, current.cpuRequest);
  return true;
}

/**
 * Init containers, sidecar-aware: decides which init container runs next
 * and whether the pod counts as initialized. Returns true when every regular
 * init container has completed and every sidecar has started: is running
 * and, with a startup probe, has passed it (KEP-753, as the kubelet's
 * computeInitContainerActions: until then the containers after it wait; a
 * failed startup probe restarts it).
 */
function computeInitContainerActions(pod: V1Pod, status: RuntimePodStatus, changes: PodActions, probes?: ProbeVerdicts, actuated?: ActuatedResources): boolean {
  const inits = pod.spec?.initContainers ?? [];
  // Only this sandbox's containers count: the kubelet purges init containers
  // when it creates a new sandbox (SyncPod's purgeInitContainers), so after
  // a sandbox is recreated initialization starts over instead of being taken
  // as done from the old sandbox's completed init and app containers.
  const current: RuntimePodStatus = { ...status, containers: status.containers.filter((c) => c.sandboxId === changes.sandboxId) };
  // Once an app container has run, the pod was initialized: regular init
  // containers never run again (only sidecars are kept alive).
  const appStarted = (pod.spec?.containers ?? []).some((c) => findContainerStatus(current, c.name) !== undefined);
  let initialized = true;
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i] as V1Container;
    const st = findContainerStatus(current, c.name);
    if (isRestartableInit(c)) {
      if (st !== undefined && st.state === 'running' && st.hash !== containerHash(c)) {
        // A running sidecar whose definition changed is restarted in place.
        changes.containersToKill.push({ id: st.id, name: c.name, message: `Init container ${c.name} definition changed` });
        changes.initContainersToStart.push(i);
      }
      if (st === undefined || st.state !== 'running') {
        if (st !== undefined && st.state !== 'exited') {
          changes.containersToKill.push({ id: st.id, name: c.name, message: 'Init container is in unknown state, it will be restarted' });
        }
        if (!pod.metadata?.deletionTimestamp) changes.initContainersToStart.push(i);
        // A sidecar must be running before the init containers after it start.
        if (!appStarted) return false;
        initialized = false;
      } else if (c.startupProbe !== undefined && probes?.get('Startup', st.id) !== 'Success') {
        // Running, but started only once its startup probe passes; one that fails it is restarted.
        const startup = probes?.get('Startup', st.id);
        if (startup === 'Failure') {
          changes.containersToKill.push({ id: st.id, name: c.name, message: `Init container ${c.name} failed startup probe`, ...probeGrace(c.startupProbe) });
          if (!pod.metadata?.deletionTimestamp) changes.initContainersToStart.push(i);
        }
        if (!appStarted) return false;
      } else if (c.livenessProbe !== undefined && st.hash === containerHash(c) && probes?.get('Liveness', st.id) === 'Failure') {
        // A sidecar that fails its liveness probe is restarted, as an app container is (the kubelet's computeInitContainerActions).
        changes.containersToKill.push({ id: st.id, name: c.name, message: `Init container ${c.name} failed liveness probe`, ...probeGrace(c.livenessProbe) });
        if (!pod.metadata?.deletionTimestamp) changes.initContainersToStart.push(i);
      } else if (actuated !== undefined && st.hash === containerHash(c) && !pod.metadata?.deletionTimestamp) {
        computePodResizeAction(c, i, true, st, actuated, changes);
      }
      continue;
    }
    if (appStarted) continue;
    if (st === undefined) {
      changes.initContainersToStart.push(i);
      return false;
    }
    switch (st.state) {
      case 'running':
        return false;
      case 'exited':
        // The kubelet's isInitContainerFailed: a non-zero exit, or OOMKilled.
        if (st.exitCode === 0 && st.reason !== 'OOMKilled') continue;
        if (!shouldRestartOnFailure(pod)) {
          changes.killPod = true;
          return false;
        }
        changes.initContainersToStart.push(i);
        return false;
      default:
        // An init container in unknown state counts as failed.
        if (st.state === 'unknown' && !shouldRestartOnFailure(pod)) {
          changes.killPod = true;
          return false;
        }
        // created or unknown: kill it and run it again.
        changes.containersToKill.push({ id: st.id, name: c.name, message: 'Init container is in unknown state, it will be restarted' });
        changes.initContainersToStart.push(i);
        return false;
    }
  }
  return initialized || appStarted;
}

/** A probe's own terminationGracePeriodSeconds, for the kill it causes. */
function probeGrace(probe: V1Probe | undefined): { gracePeriodSeconds?: number } {
  return probe?.terminationGracePeriodSeconds !== undefined ? { gracePeriodSeconds: probe.terminationGracePeriodSeconds } : {};
}

/** An API pod the server says has finished (Succeeded/Failed): kept for its logs and status, never run again. */
function finishedOnServer(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return pod.metadata?.annotations?.['kubernetes.io/config.source'] === 'api' && (phase === 'Succeeded' || phase === 'Failed');
}

/**
 * The plan for `pod` (with its allocated resources). `actuated`, for a pod
 * that can be resized in place (an API pod), adds the resize of its running
 * containers.
 */
export function computePodActions(pod: V1Pod, status: RuntimePodStatus, probes?: ProbeVerdicts, actuated?: ActuatedResources): PodActions {
  const changes = computeActions(pod, status, probes, actuated);
  if (finishedOnServer(pod)) {
    // The kubelet's pod workers never start a pod whose phase is terminal: its containers only stop.
    changes.createSandbox = false;
    changes.initContainersToStart = [];
    changes.containersToStart = [];
    changes.ephemeralContainersToStart = [];
  }
  if (pod.metadata?.deletionTimestamp) {
    // A pod being deleted only has containers stopped, never started.
    changes.initContainersToStart = [];
    changes.containersToStart = [];
    changes.ephemeralContainersToStart = [];
  }
  return changes;
}

function computeActions(pod: V1Pod, status: RuntimePodStatus, probes: ProbeVerdicts | undefined, actuated: ActuatedResources | undefined): PodActions {
  const sb = podSandboxChanged(pod, status);
  const changes: PodActions = {
    killPod: sb.changed,
    createSandbox: sb.changed,
    sandboxId: sb.sandboxId,
    attempt: sb.attempt,
    initContainersToStart: [],
    containersToStart: [],
    containersToKill: [],
  };
  const containers = pod.spec?.containers ?? [];
  const inits = pod.spec?.initContainers ?? [];

  if (sb.changed) {
    if (pod.metadata?.deletionTimestamp) {
      changes.createSandbox = false;
      return changes;
    }
    // A Never pod whose sandbox died after its containers ran is finished:
    // it is not started again in a new sandbox.
    if (!shouldRestartOnFailure(pod) && sb.attempt !== 0 && status.containers.length !== 0) {
      changes.createSandbox = false;
      return changes;
    }
    const toStart: number[] = [];
    containers.forEach((c, idx) => {
      if (restartPolicy(pod) === 'OnFailure' && succeeded(findContainerStatus(status, c.name))) return;
      toStart.push(idx);
    });
    // Nothing left to start and the pod was initialized before (an app
    // container ran): no new sandbox, init containers are not run again.
    if (toStart.length === 0 && hasAnyRegularContainerCreated(pod, status)) {
      changes.createSandbox = false;
      return changes;
    }
    if (inits.length > 0) {
      changes.initContainersToStart = [0];
      return changes;
    }
    changes.containersToStart = toStart;
    return changes;
  }

  // Ephemeral containers start even before initialization completes, once each: never restarted
  // (the kubelet's computePodActions).
  const ephemeral = (pod.spec?.ephemeralContainers ?? []).flatMap((c, i) => (findContainerStatus(status, c.name) === undefined ? [i] : []));
  if (ephemeral.length > 0) changes.ephemeralContainersToStart = ephemeral;

  const initialized = computeInitContainerActions(pod, status, changes, probes, actuated);
  if (changes.killPod || !initialized) return changes;

  let keepCount = 0;
  containers.forEach((c, idx) => {
    const st = findContainerStatus(status, c.name);
    if (st === undefined || st.state !== 'running') {
      if (shouldContainerBeRestarted(pod, st)) {
        changes.containersToStart.push(idx);
        if (st !== undefined && st.state === 'unknown') {
          changes.containersToKill.push({ id: st.id, name: c.name, message: 'Container is in unknown state, try killing it before restart' });
        }
      }
      return;
    }
    if (pod.metadata?.deletionTimestamp) {
      changes.containersToKill.push({ id: st.id, name: c.name, message: 'Pod is being deleted' });
      return;
    }
    if (st.hash !== containerHash(c)) {
      changes.containersToStart.push(idx);
      changes.containersToKill.push({ id: st.id, name: c.name, message: `Container ${c.name} definition changed, will be restarted` });
      return;
    }
    // A failed liveness or startup probe kills the container; the restart policy says whether it starts again.
    const failed =
      probes?.get('Liveness', st.id) === 'Failure' ? 'liveness' : probes?.get('Startup', st.id) === 'Failure' ? 'startup' : null;
    if (failed !== null) {
      const restart = shouldRestartOnFailure(pod);
      if (restart) changes.containersToStart.push(idx);
      const probe = failed === 'liveness' ? c.livenessProbe : c.startupProbe;
      changes.containersToKill.push({
        id: st.id,
        name: c.name,
        message: `Container ${c.name} failed ${failed} probe${restart ? ', will be restarted' : ''}`,
        ...(probe?.terminationGracePeriodSeconds !== undefined ? { gracePeriodSeconds: probe.terminationGracePeriodSeconds } : {}),
      });
      return;
    }
    if (actuated !== undefined && !computePodResizeAction(c, idx, false, st, actuated, changes)) return;
    keepCount++;
  });
  if (keepCount === 0 && changes.containersToStart.length === 0) {
    changes.killPod = true;
    // Sidecars do not keep a finished pod alive, nor do debug containers start in it.
    changes.initContainersToStart = [];
    changes.ephemeralContainersToStart = [];
  }
  return changes;
}

/** True when the plan changes nothing. */
export function isNoop(a: PodActions): boolean {
  return (
    !a.killPod &&
    !a.createSandbox &&
    a.initContainersToStart.length === 0 &&
    a.containersToStart.length === 0 &&
    (a.ephemeralContainersToStart?.length ?? 0) === 0 &&
    a.containersToKill.length === 0 &&
    (a.containersToUpdate?.cpu.length ?? 0) === 0 &&
    (a.containersToUpdate?.memory.length ?? 0) === 0 &&
    a.updatePodResources !== true
  );
}

/** The plan with its containers by name, as the PodSync event and `klet explain` carry it. */
export function planByName(pod: V1Pod, a: PodActions): PodSyncPlan {
  const names = (list: { name: string }[] | undefined, idx: number[] | undefined) => (idx ?? []).map((i) => list?.[i]?.name ?? `#${i}`);
  return {
    killPod: a.killPod,
    createSandbox: a.createSandbox,
    ...(a.createSandbox ? { sandboxAttempt: a.attempt } : {}),
    initContainersToStart: names(pod.spec?.initContainers, a.initContainersToStart),
    containersToStart: names(pod.spec?.containers, a.containersToStart),
    ephemeralContainersToStart: names(pod.spec?.ephemeralContainers, a.ephemeralContainersToStart),
    containersToKill: a.containersToKill.map((k) => ({ name: k.name, message: k.message })),
  };
}
