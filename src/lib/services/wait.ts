/**
 * The one-shot commands' wait (run-pod, runonce): sync a pod again and again
 * until it reaches its goal, cannot, or the deadline passes; and the policy
 * of what each restart policy waits for, what blocks it and which exit code
 * a pod ends with. Pure functions apart from syncUntil, unit-tested.
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import { isRestartableInit, restartPolicy } from '../kuberuntime/actions.js';
import type { PodRecord } from '../kuberuntime/poddir.js';
import { syncPod, type SyncContext } from '../kuberuntime/sync-pod.js';
import { createdPodStatus, type RuntimePodStatus } from '../kuberuntime/runtime-status.js';
import type { PodPhase } from '../status/pod-status.js';
import { podWithStatus } from '../status/pods.js';
import { hostIPs } from '../node/addresses.js';
import { containerLogDir, latestLogFile, podLogDirOf } from '../logs/paths.js';
import { readContainerLog } from '../logs/reader.js';
import { ProberManager } from '../prober/manager.js';
import { VolumeManager } from '../volume/manager.js';
import { sleep } from './deps.js';

export type WaitGoal = 'running' | 'ready' | 'completed' | 'none';

/**
 * Waiting reasons that no amount of retrying fixes without a change of spec
 * or node. A one-shot command has no image source but the registry: a pull
 * that failed (ErrImagePull, then ImagePullBackOff) means the image is not
 * present (or its policy is Always) and cannot be fetched, so waiting out
 * the timeout would only delay the same answer.
 */
const PERMANENT_REASONS = new Set(['ErrImageNeverPull', 'InvalidImageName', 'ErrImagePull', 'ImagePullBackOff', 'CreateContainerConfigError']);

/** How many of an exited container's last log lines a failure report carries. */
export const EXIT_LOG_LINES = 10;

export interface PodOutcome {
  pod: V1Pod;
  /** Did the pod reach the goal? */
  ok: boolean;
  /** Why not, in one line. */
  problem?: string;
  /** Why not, as a reason (the kubelet's waiting reason, PodFailed, Timeout, or the error's code) and its message. */
  reason?: string;
  message?: string;
  /** First non-zero exit code of a container, for --rm and --exit-code-from. */
  exitCode: number | null;
  /** The last lines of the log of the container whose exit failed the wait (settle window), else empty. */
  logTail?: string[];
  startedAt: number;
  finishedAt: number;
}

/** The goal runonce waits for: by restart policy. */
export function goalFor(pod: V1Pod, waitReady: boolean): WaitGoal {
  if (restartPolicy(pod) === 'Always') return waitReady ? 'ready' : 'running';
  return 'completed';
}

export function goalReached(pod: V1Pod, goal: WaitGoal): boolean {
  const st = pod.status;
  const phase = st?.phase as PodPhase | undefined;
  switch (goal) {
    case 'none':
      return true;
    case 'completed':
      return phase === 'Succeeded' || phase === 'Failed';
    case 'ready':
      return st?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    case 'running':
      return phase === 'Running' && (st?.containerStatuses ?? []).every((c) => c.state?.running !== undefined);
  }
}

export interface Blocker {
  reason: string;
  message: string;
  /** One line: what the user reads. */
  problem: string;
}

/** A reason to stop waiting before the goal: the pod ended, or cannot get there. */
export function blocker(pod: V1Pod, goal: WaitGoal): Blocker | null {
  const st = pod.status;
  const phase = st?.phase;
  if (phase === 'Failed' && goal !== 'completed') return failedBlocker(pod);
  if (phase === 'Succeeded' && goal !== 'completed') return { reason: 'PodCompleted', message: 'pod completed', problem: 'pod completed' };
  for (const cs of [...(st?.initContainerStatuses ?? []), ...(st?.containerStatuses ?? [])]) {
    const w = cs.state?.waiting;
    // For pods meant to keep running, a crash loop is a failure to start.
    const stuck = (w?.reason && PERMANENT_REASONS.has(w.reason)) || (w?.reason === 'CrashLoopBackOff' && goal !== 'completed');
    if (w?.reason && stuck) {
      return { reason: w.reason, message: w.message ?? '', problem: `container ${cs.name}: ${w.reason}: ${w.message ?? ''}`.trim() };
    }
  }
  return null;
}

/**
 * Why a Failed pod failed: the pod's own reason when klet ended it (NodePorts
 * at admission, DeadlineExceeded), else PodFailed with a container's exit code.
 */
function failedBlocker(pod: V1Pod): Blocker {
  const st = pod.status;
  if (st?.reason) return { reason: st.reason, message: st.message ?? '', problem: `pod failed: ${st.reason}: ${st.message ?? ''}`.trim() };
  const code = firstFailedExitCode(pod);
  const problem = `pod failed (exit code ${code ?? 'unknown'})`;
  return { reason: 'PodFailed', message: problem, problem };
}

/** The names of the pod's sidecars (restartable init containers). */
function sidecarNames(pod: V1Pod): Set<string> {
  return new Set((pod.spec?.initContainers ?? []).filter(isRestartableInit).map((c) => c.name));
}

/**
 * First failing exit code among the pod's containers (init first), or null.
 * Sidecars (restartable init containers) do not count: they are stopped
 * when the regular containers are done, often with 137 (KEP-753: the pod's
 * outcome is its regular containers').
 */
export function firstFailedExitCode(pod: V1Pod): number | null {
  const sidecars = sidecarNames(pod);
  const inits = (pod.status?.initContainerStatuses ?? []).filter((c) => !sidecars.has(c.name));
  for (const cs of [...inits, ...(pod.status?.containerStatuses ?? [])]) {
    const t = cs.state?.terminated ?? cs.lastState?.terminated;
    if (t && t.exitCode !== 0) return t.exitCode;
  }
  return null;
}

/**
 * The exit code a finished pod reports: its first failing container's, or 0
 * when every container ended with 0. Null while a container has not ended.
 */
export function podExitCode(pod: V1Pod): number | null {
  const failed = firstFailedExitCode(pod);
  if (failed !== null) return failed;
  const apps = pod.status?.containerStatuses ?? [];
  if (apps.length > 0 && apps.every((c) => c.state?.terminated?.exitCode === 0)) return 0;
  return null;
}

/**
 * A container that stopped running while the pod was settling (goal
 * `running` reached, the settle window not over): a regular container or a
 * sidecar (restartable init container) that is no longer running, or one
 * that was restarted since the window began. Null while all still run.
 */
export function exitedDuringSettle(pod: V1Pod, restartsAtStart: ReadonlyMap<string, number>): V1ContainerStatus | null {
  const sidecars = sidecarNames(pod);
  const watched = [...(pod.status?.initContainerStatuses ?? []).filter((c) => sidecars.has(c.name)), ...(pod.status?.containerStatuses ?? [])];
  return watched.find((c) => c.state?.running === undefined || c.restartCount > (restartsAtStart.get(c.name) ?? 0)) ?? null;
}

/** Each container's restart count (init containers included), by name. */
function restartCounts(pod: V1Pod): Map<string, number> {
  return new Map([...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].map((c) => [c.name, c.restartCount]));
}

/** Why the settle window failed, in the wait's terms: the container's own reason and exit code. */
export function settleBlocker(cs: V1ContainerStatus, settleMs: number): Blocker {
  const t = cs.state?.terminated ?? cs.lastState?.terminated;
  const reason = t?.reason ?? cs.state?.waiting?.reason ?? 'ContainerExited';
  const code = t ? `, exit code ${t.exitCode}` : '';
  const message = `container ${cs.name} exited within the ${settleMs / 1000}s settle window: ${reason}${code}${t?.message ? `: ${t.message.trim()}` : ''}`;
  return { reason, message, problem: message };
}

/**
 * Sync a pod again and again until it reaches the goal, cannot, or the
 * deadline passes. With a settle window, goal `running` counts only once
 * the pod has kept running for that long with no container exit; during
 * the window the pod is not synced, so a container that exits is reported
 * as it ended (not restarted first). Between syncs it polls the runtime (run-pod and runonce
 * have no PLEG of their own). Throws the signal's reason when it aborts.
 */
export async function syncUntil(
  ctx: SyncContext,
  rec: PodRecord,
  goal: WaitGoal,
  opts: {
    timeoutMs: number;
    pollMs?: number;
    onStatus?: (pod: V1Pod) => void;
    /** The pod's runtime status read by the caller just before (runonce reads all pods' at once): the first sync uses it. */
    initialStatus?: RuntimePodStatus;
    /** Goal `running`: how long (ms) the pod must keep running with no container exit before the goal counts (0: at once). */
    settleMs?: number;
  },
): Promise<PodOutcome> {
  const startedAt = Date.now();
  const deadline = startedAt + opts.timeoutMs;
  const poll = opts.pollMs ?? 200;
  const uid = rec.pod.metadata?.uid ?? '';
  // The pod's probes run while we wait: readiness decides `ready`, liveness
  // restarts, and a startup probe that gives up fails the wait at once.
  // Their events (Unhealthy, ProbeResult) go where the sync's go.
  const prober = new ProberManager({ cri: ctx.cri, hostIPs, rootDir: ctx.rootDir, signal: ctx.signal, onEvent: ctx.onEvent });
  const pctx: SyncContext = { ...ctx, probes: prober };
  const done = (current: V1Pod, fields: Omit<PodOutcome, 'pod' | 'exitCode' | 'startedAt' | 'finishedAt'>): PodOutcome => ({
    pod: current,
    ...fields,
    exitCode: firstFailedExitCode(current),
    startedAt,
    finishedAt: Date.now(),
  });
  let current: V1Pod;
  let initialStatus = opts.initialStatus;
  // CreateContainerError by container: tried again after the pod worker's
  // back-off, and the same error on that retry makes the failure certain.
  const createErrors = new Map<string, string>();
  const settleMs = goal === 'running' ? (opts.settleMs ?? 0) : 0;
  try {
    for (;;) {
      ctx.signal?.throwIfAborted();
      // Reported as it is, before a sync would restart the container.
      const failedStartup = goal === 'completed' ? null : startupFailure(rec.pod, prober);
      if (failedStartup !== null) {
        return done(await podWithStatus(ctx, rec), { ok: false, problem: failedStartup, reason: 'StartupProbeFailed', message: failedStartup });
      }
      const res = await syncPod(pctx, rec.pod, { status: initialStatus });
      initialStatus = undefined;
      // Nor the back-off of a sandbox the runtime refused (the pod shows
      // ContainerCreating, as on the kubelet; the refusal is the answer).
      if (res.sandboxError !== undefined) {
        current = await podWithStatus(ctx, rec);
        opts.onStatus?.(current);
        const { reason, message } = res.sandboxError;
        return done(current, { ok: false, problem: `${reason}: ${message}`, reason, message });
      }
      // Volumes that cannot be set up yet are tried again with the volume manager's back-off (500 ms,
      // doubling), as the kubelet's reconciler does, until the deadline: a hostPath FileOrCreate whose
      // directory a sibling pod's DirectoryOrCreate makes a moment later. A failure no retry changes
      // (the spec's, or an object the one-shot's sources do not have: they are read once) is the answer now.
      if (res.mountFailed !== undefined) {
        current = await podWithStatus(ctx, rec);
        opts.onStatus?.(current);
        const retryable = ctx.volumes instanceof VolumeManager && ctx.volumes.lastFailure(uid)?.retryableWithSameObjects() === true;
        const left = deadline - Date.now();
        if (!retryable || left <= 0) {
          const after = retryable ? ` (still failing after ${Math.round((Date.now() - startedAt) / 1000)}s of retries)` : '';
          return done(current, { ok: false, problem: `FailedMount: ${res.mountFailed}${after}`, reason: 'FailedMount', message: res.mountFailed });
        }
        await sleep(Math.min(Math.max(res.requeueAfterMs ?? poll, poll), left), ctx.signal);
        continue;
      }
      prober.addPod(rec.pod);
      prober.updatePodStatus(uid, res.status);
      await prober.flush();
      // After a sync that created all the pod has, only its containers' states
      // are read again: the kubelet's runonce re-reads everything (two lists,
      // PodSandboxStatus, ContainerStatus), whose answers would be what the
      // sync just made (three CRI calls less per pod in a 30-pod burst).
      const md = rec.pod.metadata ?? {};
      const runtime = res.created
        ? await createdPodStatus(ctx.cri, { uid, name: md.name ?? '', namespace: md.namespace ?? 'default' }, res.created, { signal: ctx.signal })
        : undefined;
      // The prober sees the containers this sync made (its readiness worker probes a new one at once).
      if (runtime !== undefined) prober.updatePodStatus(uid, runtime);
      current = await podWithStatus(ctx, rec, runtime);
      const phase = current.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') {
        // The last container may have exited after the sync above planned:
        // sync once more, so that a finished pod is terminated (its sandbox
        // stopped) as the kubelet's pod worker does, before we stop waiting.
        await syncPod(pctx, rec.pod);
      }
      opts.onStatus?.(current);
      if (goalReached(current, goal) && settleMs > 0) {
        const settled = await settle(ctx, rec, current, settleMs);
        opts.onStatus?.(settled.pod);
        if (settled.exited === null) return done(settled.pod, { ok: true });
        const logTail = await lastLogLines(ctx, rec.pod, settled.exited.name);
        return { ...done(settled.pod, { ok: false, ...settleBlocker(settled.exited, settleMs) }), logTail };
      }
      if (goalReached(current, goal)) {
        const ok = goal !== 'completed' || current.status?.phase === 'Succeeded';
        return done(current, ok ? { ok } : { ok, ...failedBlocker(current) });
      }
      const why = blocker(current, goal) ?? repeatedCreateError(res.failures, createErrors);
      if (why !== null) return done(current, { ok: false, ...why });
      if (Date.now() >= deadline) {
        const problem = `timed out after ${Math.round(opts.timeoutMs / 1000)}s waiting for the pod to be ${goal} (phase ${current.status?.phase})`;
        return done(current, { ok: false, problem, reason: 'Timeout', message: problem });
      }
      const hold = Math.max(0, ...res.failures.filter((f) => f.reason === 'CreateContainerError').map((f) => f.retryInMs ?? 0));
      await sleep(Math.max(poll, Math.min(hold, deadline - Date.now())), ctx.signal);
    }
  } finally {
    prober.stop();
    await prober.flush();
  }
}

/**
 * A CreateContainerError that the retry after the back-off gave again, word
 * for word: the runtime refuses the container's config itself (a seccomp
 * profile that does not exist, say), and waiting longer would only repeat
 * it. Records this sync's errors in `seen` for the next look.
 */
export function repeatedCreateError(failures: readonly { container: string; reason: string; message: string }[], seen: Map<string, string>): Blocker | null {
  const errors = failures.filter((f) => f.reason === 'CreateContainerError');
  const again = errors.find((f) => seen.get(f.container) === f.message);
  seen.clear();
  for (const f of errors) seen.set(f.container, f.message);
  if (again === undefined) return null;
  return { reason: again.reason, message: again.message, problem: `container ${again.container}: ${again.reason}: ${again.message}` };
}

/**
 * Let a running pod settle for `settleMs`, then look at it once: nothing
 * syncs it meanwhile (nothing restarts a container), so a container that
 * exited in the window is still seen exited, with its reason and code. One
 * look rather than a poll: pods settle while others of the same runonce are
 * still being created, and a poll would add CRI calls to that burst. The
 * window runs in full even past the wait's deadline: a pod is never called
 * settled early. The first container seen to have exited, or null.
 */
async function settle(ctx: SyncContext, rec: PodRecord, running: V1Pod, settleMs: number): Promise<{ pod: V1Pod; exited: V1ContainerStatus | null }> {
  const restarts = restartCounts(running);
  await sleep(settleMs, ctx.signal);
  const current = await podWithStatus(ctx, rec);
  return { pod: current, exited: exitedDuringSettle(current, restarts) };
}

/**
 * The last EXIT_LOG_LINES lines of a container's latest log file; empty when
 * it has none or it cannot be read (the report's exit reason and code stand
 * without them).
 */
async function lastLogLines(ctx: SyncContext, pod: V1Pod, container: string): Promise<string[]> {
  try {
    const file = await latestLogFile(containerLogDir(podLogDirOf(pod, ctx.logRoot), container));
    if (file === null) return [];
    let text = '';
    for await (const chunk of readContainerLog(file, { tail: EXIT_LOG_LINES, signal: ctx.signal })) text += chunk;
    return text.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
  } catch {
    return [];
  }
}

/** A container whose startup probe exhausted its failureThreshold: why, in one line, with the probe's last message. */
function startupFailure(pod: V1Pod, prober: ProberManager): string | null {
  const st = prober.podStatus(pod.metadata?.uid ?? '');
  for (const c of pod.spec?.containers ?? []) {
    if (!c.startupProbe) continue;
    const latest = st?.containers.find((x) => x.name === c.name);
    if (latest === undefined || prober.get('Startup', latest.id) !== 'Failure') continue;
    return `container ${c.name}: startup probe failed ${c.startupProbe.failureThreshold ?? 3} times: ${(prober.output('Startup', latest.id) ?? '').trim()}`;
  }
  return null;
}

/** An outcome for a pod whose sync itself threw (a runtime error): the pod's own failure, not the run's. */
export function failedOutcome(pod: V1Pod, err: unknown, startedAt: number): PodOutcome {
  const reason = (err as { code?: unknown }).code;
  const message = errorMessage(err);
  return {
    pod,
    ok: false,
    problem: message,
    reason: typeof reason === 'string' ? reason : 'SyncError',
    message,
    exitCode: null,
    startedAt,
    finishedAt: Date.now(),
  };
}
