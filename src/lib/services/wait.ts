/**
 * The one-shot commands' wait (run-pod, runonce): sync a pod again and again
 * until it reaches its goal, cannot, or the deadline passes; and the policy
 * of what each restart policy waits for, what blocks it and which exit code
 * a pod ends with. Pure functions apart from syncUntil, unit-tested.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import { restartPolicy } from '../kuberuntime/actions.js';
import type { PodRecord } from '../kuberuntime/poddir.js';
import { CREATE_POD_SANDBOX_ERROR, syncPod, type SyncContext } from '../kuberuntime/sync-pod.js';
import type { PodPhase } from '../status/pod-status.js';
import { podWithStatus } from '../status/pods.js';
import { sleep } from './deps.js';

export type WaitGoal = 'running' | 'ready' | 'completed' | 'none';

/** Waiting reasons that no amount of retrying fixes without a change of spec or node. */
const PERMANENT_REASONS = new Set(['ErrImageNeverPull', 'InvalidImageName', 'CreateContainerConfigError', CREATE_POD_SANDBOX_ERROR]);

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
  if ((phase === 'Failed' || phase === 'Succeeded') && goal !== 'completed') {
    const problem = `pod ${phase === 'Failed' ? 'failed' : 'completed'}`;
    return { reason: phase === 'Failed' ? 'PodFailed' : 'PodCompleted', message: problem, problem };
  }
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

/** First failing exit code among the pod's containers (init first), or null. */
export function firstFailedExitCode(pod: V1Pod): number | null {
  for (const cs of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
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
 * Sync a pod again and again until it reaches the goal, cannot, or the
 * deadline passes. Between syncs it polls the runtime (run-pod and runonce
 * have no PLEG of their own). Throws the signal's reason when it aborts.
 */
export async function syncUntil(
  ctx: SyncContext,
  rec: PodRecord,
  goal: WaitGoal,
  opts: { timeoutMs: number; pollMs?: number; onStatus?: (pod: V1Pod) => void },
): Promise<PodOutcome> {
  const startedAt = Date.now();
  const deadline = startedAt + opts.timeoutMs;
  const poll = opts.pollMs ?? 200;
  let current: V1Pod;
  for (;;) {
    ctx.signal?.throwIfAborted();
    const res = await syncPod(ctx, rec.pod);
    current = await podWithStatus(ctx, rec);
    // A one-shot command does not wait out mount retries: the volume problem is the answer.
    if (res.mountFailed !== undefined) {
      opts.onStatus?.(current);
      const problem = `FailedMount: ${res.mountFailed}`;
      return { pod: current, ok: false, problem, reason: 'FailedMount', message: res.mountFailed, exitCode: null, startedAt, finishedAt: Date.now() };
    }
    const phase = current.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') {
      // The last container may have exited after the sync above planned:
      // sync once more, so that a finished pod is terminated (its sandbox
      // stopped) as the kubelet's pod worker does, before we stop waiting.
      await syncPod(ctx, rec.pod);
    }
    opts.onStatus?.(current);
    if (goalReached(current, goal)) {
      const ok = goal !== 'completed' || current.status?.phase === 'Succeeded';
      const exitCode = firstFailedExitCode(current);
      const problem = ok ? undefined : `pod failed (exit code ${exitCode ?? 'unknown'})`;
      return { pod: current, ok, problem, reason: ok ? undefined : 'PodFailed', message: problem, exitCode, startedAt, finishedAt: Date.now() };
    }
    const why = blocker(current, goal);
    if (why !== null) {
      return { pod: current, ok: false, ...why, exitCode: firstFailedExitCode(current), startedAt, finishedAt: Date.now() };
    }
    if (Date.now() >= deadline) {
      const problem = `timed out after ${Math.round(opts.timeoutMs / 1000)}s waiting for the pod to be ${goal} (phase ${current.status?.phase})`;
      return { pod: current, ok: false, problem, reason: 'Timeout', message: problem, exitCode: firstFailedExitCode(current), startedAt, finishedAt: Date.now() };
    }
    await sleep(poll, ctx.signal);
  }
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
