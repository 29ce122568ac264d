/**
 * `klet explain POD`: why a pod is in its state, in plain sentences, from
 * facts gathered elsewhere (services/explain-pod.ts). Pure: the same facts
 * and `now` give the same explanation, so each state has a table test.
 *
 * The kubelet's reason names (CrashLoopBackOff, ErrImageNeverPull,
 * CreateContainerConfigError, NodePorts, Unhealthy, …) are kept verbatim in
 * the sentences, so what a user reads can be searched for.
 */
import type { CoreV1Event, V1Container, V1ContainerStatus, V1Pod, V1Probe } from '@kubernetes/client-node';
import type { PodSyncEvent, PodSyncPlan } from '../events/types.js';
import { computePodActions, isRestartableInit, planByName, restartPolicy, type ProbeVerdicts } from '../kuberuntime/actions.js';
import type { PodRecord, PodSyncState } from '../kuberuntime/poddir.js';
import type { RuntimePodStatus } from '../kuberuntime/runtime-status.js';
import { CONFIG_ERROR_RETRY_MS } from '../kuberuntime/sync-pod.js';
import type { PodProbeResults } from '../prober/results.js';
import { formatDuration } from '../util/duration.js';
import { podSummary } from './format.js';

/** The sync loop's periodic resync of every pod (--sync-frequency's default). */
const RESYNC_MS = 60_000;

/** Everything `klet explain` knows of one pod. */
export interface ExplainFacts {
  /** ms since the epoch. */
  now: number;
  /** The pod with the status the kubelet would report (status/pods.ts podWithStatus). */
  pod: V1Pod;
  record: PodRecord;
  syncState: PodSyncState;
  runtime: RuntimePodStatus;
  probes: PodProbeResults;
  /** Where the events and the plan come from: a running `klet sync`, or the records and the runtime. */
  source: 'sync' | 'records';
  /** The running sync's last sync of the pod (its /plans), when one runs and has synced it. */
  lastSync?: PodSyncEvent & { time: string; lastSyncAt: string };
  /** The pod's events, oldest last seen first. */
  events: CoreV1Event[];
  /** The last lines of each container's newest log, by container name. */
  logs: Record<string, string[]>;
}

export type ProbeKind = 'Startup' | 'Liveness' | 'Readiness';

export interface ProbeExplanation {
  probe: ProbeKind;
  /** The current result for the running instance; NotRun before its first run (or while it waits for the startup probe). */
  result: 'Success' | 'Failure' | 'Unknown' | 'NotRun';
  /** The last failure's message (its Unhealthy event), when known. */
  lastFailure?: string;
  /** How many failures the events counted. */
  failures?: number;
  periodSeconds: number;
  failureThreshold: number;
}

export interface ContainerExplanation {
  name: string;
  type: 'init' | 'sidecar' | 'regular';
  /** waiting, running, terminated, or none (not created yet). */
  state: 'waiting' | 'running' | 'terminated' | 'none';
  /** The waiting or terminated reason (CrashLoopBackOff, ErrImageNeverPull, Completed, Error, …). */
  reason?: string;
  message?: string;
  exitCode?: number;
  restartCount: number;
  ready: boolean;
  started?: boolean;
  /** The previous instance's end, when it was restarted (or is in back-off). */
  lastTermination?: { exitCode: number; reason?: string; finishedAt?: string };
  /** A back-off in progress: CrashLoopBackOff or ImagePullBackOff, how long, and when it ends. */
  backoff?: { reason: string; delayMs: number; until: string; remainingMs: number };
  probes: ProbeExplanation[];
  /** The last lines of its newest log. */
  log: string[];
  /** One sentence on this container. */
  sentence: string;
}

export interface Explanation {
  kind: 'PodExplanation';
  pod: { namespace: string; name: string; uid: string };
  source: 'sync' | 'records';
  phase: string;
  /** kubectl's STATUS column (CrashLoopBackOff, Init:0/1, Terminating, Completed, …). */
  status: string;
  ready: string;
  /** The kubelet reason that explains the state best (the search key), when there is one. */
  reason?: string;
  /** Why the pod is in this state: one or two sentences. */
  summary: string;
  /** The sync loop's plan: the running sync's last one, or the one klet computes now from the same facts. */
  decision: {
    from: 'sync' | 'computed';
    /** When the running sync first came to this plan, and when it last synced the pod. */
    at?: string;
    lastSyncAt?: string;
    plan: PodSyncPlan;
    blocked?: { reason: string; message: string };
    failures: { container: string; reason: string; message: string; retryAt?: string }[];
    sentences: string[];
  };
  containers: ContainerExplanation[];
  /** Pod-level problems: admission, volumes, the sandbox, the deadline. */
  problems: { reason: string; message: string }[];
  /** The newest events (at most 10), oldest first. */
  events: { type: string; reason: string; message: string; count: number; lastSeen?: string; object?: string }[];
  /** What klet does next, and when. */
  next: { sentence: string; at?: string; inMs?: number };
}

const iso = (ms: number) => new Date(ms).toISOString();
const inWords = (ms: number) => formatDuration(Math.max(0, Math.round(ms / 1000) * 1000));

function eventTime(e: CoreV1Event): number | undefined {
  const t = e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp;
  if (t === undefined || t === null) return undefined;
  const ms = t instanceof Date ? t.getTime() : Date.parse(String(t));
  return Number.isNaN(ms) ? undefined : ms;
}

/** The container an event is about, from its fieldPath (spec.containers{app}). */
function eventContainer(e: CoreV1Event): string | undefined {
  return /\{(.+)\}$/.exec(e.involvedObject.fieldPath ?? '')?.[1];
}

/** A probe's settings with the API defaults. */
function probeSettings(p: V1Probe): { periodSeconds: number; failureThreshold: number } {
  return { periodSeconds: p.periodSeconds ?? 10, failureThreshold: p.failureThreshold ?? 3 };
}

function probesOf(f: ExplainFacts, c: V1Container, containerId: string | undefined, running: boolean): ProbeExplanation[] {
  const current = containerId !== undefined && f.probes[c.name]?.containerId === containerId ? f.probes[c.name] : undefined;
  const out: ProbeExplanation[] = [];
  const kinds: [ProbeKind, V1Probe | undefined, 'startup' | 'liveness' | 'readiness'][] = [
    ['Startup', c.startupProbe, 'startup'],
    ['Liveness', c.livenessProbe, 'liveness'],
    ['Readiness', c.readinessProbe, 'readiness'],
  ];
  for (const [kind, spec, key] of kinds) {
    if (spec === undefined) continue;
    const unhealthy = f.events.filter((e) => e.reason === 'Unhealthy' && eventContainer(e) === c.name && (e.message ?? '').startsWith(`${kind} probe`));
    const last = unhealthy.at(-1);
    const result = running ? (current?.[key] ?? 'NotRun') : 'NotRun';
    out.push({
      probe: kind,
      result,
      ...(last !== undefined ? { lastFailure: (last.message ?? '').trimEnd(), failures: unhealthy.reduce((n, e) => n + (e.count ?? 1), 0) } : {}),
      ...probeSettings(spec),
    });
  }
  return out;
}

/**
 * The back-off a container is in, from the last sync's failure or from the
 * sync state and the runtime. A container that has just exited and will be
 * restarted waits for the same back-off as one in CrashLoopBackOff.
 */
function backoffOf(f: ExplainFacts, name: string, reason: string | undefined): ContainerExplanation['backoff'] {
  if (reason !== 'CrashLoopBackOff' && reason !== 'ImagePullBackOff') return undefined;
  const st = f.syncState.containers[name] ?? {};
  let until: number | undefined;
  let delayMs: number | undefined;
  if (reason === 'CrashLoopBackOff') {
    const newest = f.runtime.containers.find((c) => c.name === name);
    delayMs = st.backoffMs;
    if (newest !== undefined && newest.finishedAt > 0 && delayMs !== undefined) until = newest.finishedAt + delayMs;
  } else {
    delayMs = st.pullBackoffMs;
    if (st.pullFailedAt !== undefined && delayMs !== undefined) until = st.pullFailedAt + delayMs;
  }
  const fromSync = f.lastSync?.failures.find((x) => x.container === name && x.reason === reason)?.retryAt;
  if (fromSync !== undefined && (until === undefined || Date.parse(fromSync) > until)) until = Date.parse(fromSync);
  if (until === undefined || delayMs === undefined) return undefined;
  return { reason, delayMs, until: iso(until), remainingMs: Math.max(0, until - f.now) };
}

function stateOf(s: V1ContainerStatus | undefined): Pick<ContainerExplanation, 'state' | 'reason' | 'message' | 'exitCode'> {
  const st = s?.state;
  if (st?.waiting) return { state: 'waiting', reason: st.waiting.reason, ...(st.waiting.message ? { message: st.waiting.message } : {}) };
  if (st?.running) return { state: 'running' };
  if (st?.terminated) {
    return { state: 'terminated', reason: st.terminated.reason, exitCode: st.terminated.exitCode, ...(st.terminated.message ? { message: st.terminated.message.trimEnd() } : {}) };
  }
  return { state: 'none' };
}

function lastTerminationOf(s: V1ContainerStatus | undefined): ContainerExplanation['lastTermination'] {
  const t = s?.lastState?.terminated;
  if (t === undefined) return undefined;
  const at = t.finishedAt instanceof Date ? t.finishedAt.toISOString() : t.finishedAt === undefined ? undefined : String(t.finishedAt);
  return { exitCode: t.exitCode, ...(t.reason ? { reason: t.reason } : {}), ...(at ? { finishedAt: at } : {}) };
}

const times = (n: number) => `${n} time${n === 1 ? '' : 's'}`;

/** A message as the end of a sentence: with its full stop. */
const ended = (m: string) => (/[.!?]$/.test(m.trimEnd()) ? m.trimEnd() : `${m.trimEnd()}.`);

function exitWords(code: number | undefined, reason: string | undefined): string {
  return `exit code ${code ?? '?'}${reason ? `, reason ${reason}` : ''}`;
}

/** The sentence for one container. */
function containerSentence(c: ContainerExplanation, policy: string): string {
  const what = c.type === 'init' ? `Init container ${c.name}` : c.type === 'sidecar' ? `Sidecar ${c.name}` : `Container ${c.name}`;
  const last = c.lastTermination ?? (c.state === 'terminated' ? { exitCode: c.exitCode ?? 0, reason: c.reason } : undefined);
  switch (c.reason) {
    case 'CrashLoopBackOff': {
      const wait = c.backoff ? ` klet waits ${inWords(c.backoff.delayMs)} (back-off) before starting it again, ${inWords(c.backoff.remainingMs)} from now` : ' klet is backing off before starting it again';
      return `${what} is in CrashLoopBackOff: it keeps exiting (last ${exitWords(last?.exitCode, last?.reason)}; restarted ${times(c.restartCount)}) and restartPolicy ${policy} restarts it;${wait}.`;
    }
    case 'ErrImageNeverPull':
      return `${what} cannot start (ErrImageNeverPull): its image is not present on the node and imagePullPolicy is Never, so klet will not pull it. ${c.message ?? ''}`.trimEnd();
    case 'ErrImagePull':
    case 'ImagePullBackOff':
      return `${what} cannot start (${c.reason}): its image could not be pulled${c.backoff ? `; klet tries again in ${inWords(c.backoff.remainingMs)}` : ''}. ${c.message ?? ''}`.trimEnd();
    case 'CreateContainerConfigError':
      return `${what} cannot be created (CreateContainerConfigError): ${c.message ?? 'its configuration cannot be made'}.`;
    case 'CreateContainerError':
    case 'RunContainerError':
    case 'PostStartHookError':
      return `${what} failed to start (${c.reason}): ${c.message ?? ''}`.trimEnd();
    case 'ContainerCreating':
    case 'PodInitializing':
      return `${what} is not created yet (${c.reason}).`;
  }
  if (c.state === 'terminated') {
    if (c.exitCode === 0) return `${what} completed (exit code 0, reason ${c.reason ?? 'Completed'}).`;
    if (!willRestart(c, policy)) return `${what} exited with ${exitWords(c.exitCode, c.reason)} and restartPolicy ${policy} does not restart it.`;
    const wait = c.backoff && c.backoff.remainingMs > 0 ? `; klet waits ${inWords(c.backoff.delayMs)} (back-off) before starting it again, ${inWords(c.backoff.remainingMs)} from now` : '';
    return `${what} exited with ${exitWords(c.exitCode, c.reason)} (restarted ${times(c.restartCount)}) and restartPolicy ${policy} restarts it${wait}.`;
  }
  if (c.state === 'running') {
    const startup = c.probes.find((p) => p.probe === 'Startup');
    if (startup !== undefined && c.started !== true) {
      return `${what} is running but has not started: its startup probe has not succeeded yet${startup.lastFailure ? ` (Unhealthy: ${startup.lastFailure})` : ''}; liveness and readiness probes wait for it, and after ${startup.failureThreshold} failures in a row klet kills and restarts the container.`;
    }
    const readiness = c.probes.find((p) => p.probe === 'Readiness');
    if (!c.ready && readiness !== undefined) {
      return `${what} is running but not ready: its readiness probe ${readiness.result === 'Failure' ? 'fails' : 'has not succeeded yet'}${readiness.lastFailure ? ` (Unhealthy: ${readiness.lastFailure})` : ''}, so the pod is not Ready.`;
    }
    const restarted = c.lastTermination ? ` (restarted ${times(c.restartCount)}; last ${exitWords(c.lastTermination.exitCode, c.lastTermination.reason)})` : '';
    return `${what} is running${c.ready ? ' and ready' : ''}${restarted}.`;
  }
  if (c.state === 'waiting') return `${what} is waiting (${c.reason ?? 'unknown reason'})${c.message ? `: ${c.message}` : ''}.`;
  return `${what} has not been created yet.`;
}

/** A container that exited with a failure and that its restart policy starts again. */
function willRestart(c: Pick<ContainerExplanation, 'state' | 'exitCode'>, policy: string): boolean {
  return c.state === 'terminated' && c.exitCode !== 0 && policy !== 'Never';
}

function explainContainers(f: ExplainFacts): ContainerExplanation[] {
  const spec = f.pod.spec;
  const policy = restartPolicy(f.pod);
  const statuses = [...(f.pod.status?.initContainerStatuses ?? []), ...(f.pod.status?.containerStatuses ?? [])];
  const all = [...(spec?.initContainers ?? []).map((c) => ({ c, init: true })), ...(spec?.containers ?? []).map((c) => ({ c, init: false }))];
  return all.map(({ c, init }) => {
    const s = statuses.find((x) => x.name === c.name);
    const newest = f.runtime.containers.find((x) => x.name === c.name);
    const st = stateOf(s);
    const type = !init ? 'regular' : isRestartableInit(c) ? 'sidecar' : 'init';
    const lastTermination = lastTerminationOf(s);
    const restarted = willRestart(st, type === 'sidecar' ? 'Always' : policy);
    const backoff = backoffOf(f, c.name, restarted ? 'CrashLoopBackOff' : st.reason);
    const out: ContainerExplanation = {
      name: c.name,
      type,
      ...st,
      restartCount: s?.restartCount ?? 0,
      ready: s?.ready ?? false,
      ...(s?.started !== undefined ? { started: s.started } : {}),
      ...(lastTermination ? { lastTermination } : {}),
      ...(backoff ? { backoff } : {}),
      probes: probesOf(f, c, newest?.id, st.state === 'running'),
      log: f.logs[c.name] ?? [],
      sentence: '',
    };
    out.sentence = containerSentence(out, type === 'sidecar' ? 'Always' : policy);
    return out;
  });
}

function problemsOf(f: ExplainFacts): Explanation['problems'] {
  const out: Explanation['problems'] = [];
  const s = f.syncState;
  if (s.reason !== undefined) out.push({ reason: s.reason, message: s.message ?? '' });
  if (s.sandboxError !== undefined) out.push({ reason: s.sandboxError.reason, message: s.sandboxError.message });
  const blocked = f.lastSync?.blocked;
  if (blocked !== undefined && !out.some((p) => p.reason === blocked.reason || (blocked.reason === 'Rejected' && s.rejected === true))) out.push(blocked);
  return out;
}

/** The pod has finished by itself (Succeeded, or Failed without being rejected). */
const finished = (f: ExplainFacts) => f.syncState.rejected !== true && (f.pod.status?.phase === 'Succeeded' || f.pod.status?.phase === 'Failed');

/** The plan, in sentences. */
function planSentences(f: ExplainFacts, plan: PodSyncPlan): string[] {
  const out: string[] = [];
  const sb = f.runtime.sandboxes[0];
  if (plan.killPod && plan.createSandbox) {
    out.push(
      sb === undefined
        ? `Create the pod sandbox (attempt ${plan.sandboxAttempt ?? 0}): the pod has none yet.`
        : `Kill the pod and create a new sandbox (attempt ${plan.sandboxAttempt ?? 0}): its sandbox changed (${sb.ready ? 'its network changed' : 'it is not ready'}).`,
    );
  } else if (plan.killPod) {
    out.push(
      f.record.deletion !== undefined || f.pod.metadata?.deletionTimestamp
        ? 'Kill the pod: it is being deleted.'
        : `Kill the pod: no container is left to run (restartPolicy ${restartPolicy(f.pod)}).`,
    );
  }
  for (const k of plan.containersToKill) out.push(`Stop container ${k.name}: ${k.message}.`);
  for (const n of plan.initContainersToStart) out.push(`Start init container ${n}.`);
  for (const n of plan.containersToStart) {
    // The instance the plan replaces: the newest that exited (a sync's plan may have been carried out since).
    const exited = f.runtime.containers.find((c) => c.name === n && c.state === 'exited');
    const killed = plan.containersToKill.some((k) => k.name === n);
    out.push(
      exited !== undefined && !killed
        ? `Start container ${n} again: it exited with code ${exited.exitCode} and restartPolicy ${restartPolicy(f.pod)} restarts it.`
        : `Start container ${n}.`,
    );
  }
  for (const n of plan.ephemeralContainersToStart) out.push(`Start ephemeral container ${n}.`);
  if (out.length === 0 && finished(f)) out.push('Nothing: the pod has finished and is not synced again.');
  if (out.length === 0) out.push(f.syncState.rejected === true ? 'Nothing: the pod was rejected at admission and never runs.' : 'Nothing to change: the runtime matches the pod spec.');
  return out;
}

/** The plan of the next sync, computed now from the same facts the sync loop reads. */
function computedPlan(f: ExplainFacts): PodSyncPlan {
  const idle: PodSyncPlan = { killPod: false, createSandbox: false, initContainersToStart: [], containersToStart: [], ephemeralContainersToStart: [], containersToKill: [] };
  if (f.syncState.rejected === true) return idle;
  if (f.record.deletion !== undefined) {
    return { ...idle, killPod: true, containersToKill: f.runtime.containers.filter((c) => c.state === 'running').map((c) => ({ name: c.name, message: 'Pod is being deleted' })) };
  }
  // A finished pod's worker does not sync it again.
  if (finished(f)) return idle;
  const verdicts: ProbeVerdicts = {
    get: (type, id) => {
      const r = Object.values(f.probes).find((x) => x.containerId === id);
      return type === 'Liveness' ? r?.liveness : r?.startup;
    },
  };
  return planByName(f.pod, computePodActions(f.pod, f.runtime, verdicts));
}

function decisionOf(f: ExplainFacts): Explanation['decision'] {
  if (f.lastSync !== undefined) {
    const s = f.lastSync;
    const sentences = planSentences(f, s.plan);
    if (s.blocked !== undefined) sentences.push(`It was not carried out: ${s.blocked.reason}${s.blocked.message ? `: ${s.blocked.message}` : ''}.`);
    for (const x of s.failures) sentences.push(`${x.container}: ${x.reason}: ${x.message}`);
    return { from: 'sync', at: s.time, lastSyncAt: s.lastSyncAt, plan: s.plan, ...(s.blocked ? { blocked: s.blocked } : {}), failures: s.failures, sentences };
  }
  const plan = computedPlan(f);
  const failures = Object.entries(f.syncState.containers)
    .filter(([, c]) => c.reason !== undefined)
    .map(([container, c]) => ({ container, reason: c.reason as string, message: c.message ?? '' }));
  const sentences = planSentences(f, plan);
  for (const x of failures) sentences.push(`${x.container}: ${x.reason}: ${x.message}`);
  return { from: 'computed', plan, failures, sentences };
}

interface Verdict {
  reason?: string;
  summary: string;
  next: Explanation['next'];
}

const nextAt = (f: ExplainFacts, at: number, sentence: string): Explanation['next'] => ({ sentence, at: iso(at), inMs: Math.max(0, at - f.now) });

/** When the running sync syncs the pod again at the latest, or the periodic resync. */
function nextSync(f: ExplainFacts, fallbackMs = RESYNC_MS): number {
  const at = f.lastSync?.nextSyncAt === undefined ? undefined : Date.parse(f.lastSync.nextSyncAt);
  if (at !== undefined && at > f.now) return at;
  return f.now + fallbackMs;
}

/** Not created yet, and nothing went wrong with it. */
const notCreated = (c: ContainerExplanation) => c.state === 'none' || (c.state === 'waiting' && (c.reason === 'ContainerCreating' || c.reason === 'PodInitializing'));

/** The container that explains a pod not running as it should: the first init container not done, else the first unhealthy app container. */
function culprit(containers: ContainerExplanation[]): ContainerExplanation | undefined {
  const init = containers.find((c) => c.type === 'init' && !(c.state === 'terminated' && c.exitCode === 0));
  if (init !== undefined && init.state !== 'none') return init;
  if (init !== undefined) return undefined;
  const bad = (c: ContainerExplanation) =>
    c.type !== 'init' &&
    ((c.state === 'waiting' && !notCreated(c)) || (c.state === 'running' && (!c.ready || c.started === false)) || (c.state === 'terminated' && c.exitCode !== 0));
  return containers.find(bad);
}

function verdictOf(f: ExplainFacts, containers: ContainerExplanation[], status: string): Verdict {
  const s = f.syncState;
  const phase = f.pod.status?.phase ?? 'Unknown';
  const policy = restartPolicy(f.pod);
  if (s.rejected === true) {
    return {
      reason: s.reason,
      summary: `The pod was rejected at admission (${s.reason}): ${ended(s.message ?? '')} It never runs: its phase is Failed.`,
      next: { sentence: 'Nothing: klet never runs a rejected pod. Free what it asked for and create it again (a new manifest, or delete it and add it back).' },
    };
  }
  if (f.record.deletion !== undefined) {
    const d = f.record.deletion;
    const deadline = Date.parse(d.at) + d.gracePeriodSeconds * 1000;
    const running = containers.filter((c) => c.state === 'running').map((c) => c.name);
    return {
      reason: 'Killing',
      summary: `The pod is being deleted (Terminating): klet asked its containers to stop at ${d.at}, with a grace period of ${d.gracePeriodSeconds}s${running.length > 0 ? `; still running: ${running.join(', ')}` : ''}.`,
      next:
        running.length > 0
          ? nextAt(f, deadline, `Kill (SIGKILL) the containers still running when the grace period ends, then remove the pod.`)
          : { sentence: 'Remove the pod (its sandbox, its directory and its logs) now that its containers have stopped.' },
    };
  }
  if (s.reason === 'DeadlineExceeded' || s.reason === 'Evicted') {
    return { reason: s.reason, summary: `The pod was stopped by klet (${s.reason}): ${ended(s.message ?? '')}`, next: { sentence: 'Nothing: the pod has ended and is not started again.' } };
  }
  if (phase === 'Succeeded') {
    return {
      reason: 'Completed',
      summary: `The pod has completed: every container exited with code 0 and restartPolicy ${policy} does not restart it (phase Succeeded).`,
      next: { sentence: 'Nothing: the pod has finished. klet keeps its containers and logs until it is deleted.' },
    };
  }
  if (phase === 'Failed') {
    const bad = containers.filter((c) => c.state === 'terminated' && c.exitCode !== 0);
    return {
      reason: bad[0]?.reason ?? f.pod.status?.reason ?? 'Error',
      summary: `The pod has failed (phase Failed): ${bad.map((c) => c.sentence).join(' ') || (f.pod.status?.message ?? '')}`,
      next: { sentence: 'Nothing: the pod has finished. klet keeps its containers and logs until it is deleted.' },
    };
  }
  if (s.reason === 'FailedMount') {
    return {
      reason: 'FailedMount',
      summary: `The pod's volumes cannot be set up (FailedMount): ${s.message ?? ''}. No container starts until they are.`,
      next: nextAt(f, nextSync(f, CONFIG_ERROR_RETRY_MS), 'Try to mount the volumes again.'),
    };
  }
  if (s.sandboxError !== undefined) {
    return {
      reason: 'FailedCreatePodSandBox',
      summary: `The runtime refused the pod's sandbox (FailedCreatePodSandBox): ${s.sandboxError.message}`,
      next: nextAt(f, nextSync(f, s.sandboxError.backoffMs), 'Try to create the pod sandbox again, after its back-off.'),
    };
  }
  const c = culprit(containers);
  if (c === undefined) {
    if (containers.every(notCreated)) {
      return { reason: status, summary: `The pod is starting (${status}): no container has been created yet.`, next: nextAt(f, nextSync(f, 1000), 'Create the pod sandbox and start the containers.') };
    }
    return { summary: `The pod is ${status}: its containers are running${f.pod.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ? ' and the pod is Ready' : ''}.`, next: { sentence: 'Nothing to change: klet keeps probing its containers and syncs it again on the next change or resync.' } };
  }
  const where = c.type === 'init' ? ' No app container starts until it completes.' : '';
  const summary = `${c.sentence}${where}`;
  const again = `Start ${c.type === 'init' ? 'init container' : 'container'} ${c.name} again`;
  if (willRestart(c, c.type === 'sidecar' ? 'Always' : policy)) {
    // Exited, and the sync that sees it has not run yet: it restarts the container, after the back-off.
    return {
      ...(c.reason !== undefined ? { reason: c.reason } : {}),
      summary,
      next: c.backoff && c.backoff.remainingMs > 0 ? nextAt(f, Date.parse(c.backoff.until), `${again} when its back-off ends.`) : nextAt(f, nextSync(f, 1000), `${again}.`),
    };
  }
  switch (c.reason) {
    case 'CrashLoopBackOff':
      return {
        reason: 'CrashLoopBackOff',
        summary,
        next: c.backoff ? nextAt(f, Date.parse(c.backoff.until), `Start ${c.type === 'init' ? 'init container' : 'container'} ${c.name} again when its back-off ends.`) : { sentence: `Start ${c.name} again when its back-off ends.` },
      };
    case 'ImagePullBackOff':
    case 'ErrImagePull':
      return { reason: c.reason, summary, next: c.backoff ? nextAt(f, Date.parse(c.backoff.until), `Pull the image of ${c.name} again.`) : nextAt(f, nextSync(f), `Pull the image of ${c.name} again.`) };
    case 'ErrImageNeverPull':
      return {
        reason: 'ErrImageNeverPull',
        summary,
        next: nextAt(f, nextSync(f), `Look for the image again at the pod's next sync; it fails the same way until the image is on the node (klet images import, or imagePullPolicy IfNotPresent).`),
      };
    case 'CreateContainerConfigError':
      return { reason: c.reason, summary, next: nextAt(f, nextSync(f, CONFIG_ERROR_RETRY_MS), `Try to create container ${c.name} again (every ${formatDuration(CONFIG_ERROR_RETRY_MS)} until what it refers to exists).`) };
  }
  if (c.state === 'running') {
    const startup = c.probes.find((p) => p.probe === 'Startup');
    if (startup !== undefined && c.started !== true) {
      return { reason: 'Unhealthy', summary, next: { sentence: `Run the startup probe of ${c.name} again every ${startup.periodSeconds}s: it starts once the probe succeeds; after ${startup.failureThreshold} failures in a row klet restarts it.` } };
    }
    const readiness = c.probes.find((p) => p.probe === 'Readiness');
    if (readiness !== undefined) {
      return { reason: readiness.result === 'Failure' || readiness.lastFailure !== undefined ? 'Unhealthy' : undefined, summary, next: { sentence: `Run the readiness probe of ${c.name} again every ${readiness.periodSeconds}s: the container and the pod become Ready once it succeeds.` } };
    }
  }
  return { reason: c.reason, summary, next: nextAt(f, nextSync(f), `Sync the pod again.`) };
}

/** Why the pod is in its state, and what klet does next. */
export function explainPod(f: ExplainFacts): Explanation {
  const md = f.pod.metadata ?? {};
  const sum = podSummary(f.pod, new Date(f.now));
  const containers = explainContainers(f);
  const verdict = verdictOf(f, containers, sum.status);
  const events = f.events.slice(-10).map((e) => {
    const t = eventTime(e);
    const container = eventContainer(e);
    return {
      type: e.type ?? 'Normal',
      reason: e.reason ?? '',
      message: (e.message ?? '').trimEnd(),
      count: e.count ?? 1,
      ...(t !== undefined ? { lastSeen: iso(t) } : {}),
      ...(container !== undefined ? { object: container } : {}),
    };
  });
  return {
    kind: 'PodExplanation',
    pod: { namespace: md.namespace ?? 'default', name: md.name ?? '', uid: md.uid ?? '' },
    source: f.source,
    phase: f.pod.status?.phase ?? 'Unknown',
    status: sum.status,
    ready: sum.ready,
    ...(verdict.reason !== undefined ? { reason: verdict.reason } : {}),
    summary: verdict.summary,
    decision: decisionOf(f),
    containers,
    problems: problemsOf(f),
    events,
    next: verdict.next,
  };
}
