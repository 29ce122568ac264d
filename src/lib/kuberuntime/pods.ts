/**
 * Pod-level operations the commands share: sync a pod until it reaches a
 * goal (run-pod, runonce), compute the API status of known pods (status),
 * and delete pods (delete, run-pod --rm, runonce --cleanup).
 */
import fsp from 'node:fs/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import { errorMessage } from '../errors.js';
import { hostIPs } from '../node/addresses.js';
import { generatePodStatus, type PodPhase } from '../status/pod-status.js';
import { restartPolicy } from './actions.js';
import {
  listPodRecords,
  podLogDir,
  readPodRecord,
  readSyncState,
  removePodDir,
  writePodRecord,
  type PodRecord,
} from './poddir.js';
import { getRuntimePodStatus, getRuntimePodStatuses, listRuntimePods, type RuntimePodStatus } from './runtime-status.js';
import { killPod, syncPod, type SyncContext } from './sync-pod.js';
import { KLET_INSTANCE_LABEL, POD_UID_LABEL, instanceSelector, kletInstance } from './labels.js';

export type WaitGoal = 'running' | 'ready' | 'completed' | 'none';

/** Waiting reasons that no amount of retrying fixes without a change of spec or node. */
const PERMANENT_REASONS = new Set(['ErrImageNeverPull', 'InvalidImageName', 'CreateContainerConfigError']);

export interface PodOutcome {
  pod: V1Pod;
  /** Did the pod reach the goal? */
  ok: boolean;
  /** Why not, in one line. */
  problem?: string;
  /** First non-zero exit code of a container, for --rm and --exit-code-from. */
  exitCode: number | null;
  startedAt: number;
  finishedAt: number;
}

let runtimeNameCache: string | undefined;
export async function runtimeName(cri: CriClient): Promise<string> {
  runtimeNameCache ??= (await cri.version({})).runtimeName || 'cri';
  return runtimeNameCache;
}

/** The pod with its status as the kubelet would report it. */
export async function podWithStatus(ctx: SyncContext, rec: PodRecord, runtime?: RuntimePodStatus): Promise<V1Pod> {
  const md = rec.pod.metadata ?? {};
  const rt =
    runtime ??
    (await getRuntimePodStatus(
      ctx.cri,
      { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? 'default' },
      { signal: ctx.signal, owner: instanceSelector(ctx) },
    ));
  const status = generatePodStatus({
    pod: rec.pod,
    runtime: rt,
    syncState: await readSyncState(ctx.rootDir, md.uid ?? ''),
    runtimeName: await runtimeName(ctx.cri),
    hostIPs: hostIPs(),
    startTime: new Date(rec.firstSeen),
  });
  // Static pods have no API server to stamp creation: klet's first sync is their birth.
  const metadata = { ...rec.pod.metadata, creationTimestamp: rec.pod.metadata?.creationTimestamp ?? new Date(rec.firstSeen) };
  return { ...rec.pod, apiVersion: 'v1', kind: 'Pod', metadata, status };
}

function goalReached(pod: V1Pod, goal: WaitGoal): boolean {
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

/** A reason to stop waiting before the goal: the pod ended, or cannot get there. */
function blocker(pod: V1Pod, goal: WaitGoal): string | null {
  const st = pod.status;
  const phase = st?.phase;
  if ((phase === 'Failed' || phase === 'Succeeded') && goal !== 'completed') return `pod ${phase === 'Failed' ? 'failed' : 'completed'}`;
  for (const cs of [...(st?.initContainerStatuses ?? []), ...(st?.containerStatuses ?? [])]) {
    const w = cs.state?.waiting;
    if (w?.reason && PERMANENT_REASONS.has(w.reason)) return `container ${cs.name}: ${w.reason}: ${w.message ?? ''}`.trim();
    // For pods meant to keep running, a crash loop is a failure to start.
    if (w?.reason === 'CrashLoopBackOff' && goal !== 'completed') return `container ${cs.name}: CrashLoopBackOff: ${w.message ?? ''}`.trim();
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

/** Record the pod under the root dir (first time only keeps firstSeen). */
export async function admitPod(ctx: SyncContext, pod: V1Pod, source: string): Promise<PodRecord> {
  const uid = pod.metadata?.uid ?? '';
  const prev = await readPodRecord(ctx.rootDir, uid);
  const rec: PodRecord = { pod, source, firstSeen: prev?.firstSeen ?? new Date().toISOString() };
  await writePodRecord(ctx.rootDir, rec);
  return rec;
}

/**
 * Sync a pod again and again until it reaches the goal, cannot, or the
 * deadline passes. Between syncs it polls the runtime (run-pod and runonce
 * have no PLEG of their own).
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
    await syncPod(ctx, rec.pod);
    current = await podWithStatus(ctx, rec);
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
      return {
        pod: current,
        ok,
        problem: ok ? undefined : `pod failed (exit code ${firstFailedExitCode(current) ?? 'unknown'})`,
        exitCode: firstFailedExitCode(current),
        startedAt,
        finishedAt: Date.now(),
      };
    }
    const why = blocker(current, goal);
    if (why !== null) {
      return { pod: current, ok: false, problem: why, exitCode: firstFailedExitCode(current), startedAt, finishedAt: Date.now() };
    }
    if (Date.now() >= deadline) {
      return {
        pod: current,
        ok: false,
        problem: `timed out after ${Math.round(opts.timeoutMs / 1000)}s waiting for the pod to be ${goal} (phase ${current.status?.phase})`,
        exitCode: firstFailedExitCode(current),
        startedAt,
        finishedAt: Date.now(),
      };
    }
    await new Promise((r) => setTimeout(r, poll));
  }
}

/** The goal runonce waits for: by restart policy. */
export function goalFor(pod: V1Pod, waitReady: boolean): WaitGoal {
  if (restartPolicy(pod) === 'Always') return waitReady ? 'ready' : 'running';
  return 'completed';
}

/** Every pod klet knows (records under the root dir), with status. Pods only the runtime knows are included bare. */
export async function listPodsWithStatus(ctx: SyncContext): Promise<V1Pod[]> {
  const recs = await listPodRecords(ctx.rootDir);
  const runtime = await getRuntimePodStatuses(
    ctx.cri,
    recs.map((r) => ({ uid: r.pod.metadata?.uid ?? '', name: r.pod.metadata?.name ?? '', namespace: r.pod.metadata?.namespace ?? 'default' })),
    { signal: ctx.signal, owner: instanceSelector(ctx) },
  );
  const pods = await Promise.all(recs.map((r) => podWithStatus(ctx, r, runtime.get(r.pod.metadata?.uid ?? ''))));
  const known = new Set(recs.map((r) => r.pod.metadata?.uid));
  for (const rp of await listRuntimePods(ctx.cri, { signal: ctx.signal, owner: instanceSelector(ctx) })) {
    if (known.has(rp.uid)) continue;
    // A pod this klet created but has no record of (the record was lost):
    // show it without a spec. Other klets' and the kubelet's pods are not listed.
    pods.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid },
      status: { phase: 'Unknown', reason: 'NoRecord', message: 'the runtime runs this pod but klet has no record of it' },
    });
  }
  return pods.sort((a, b) =>
    `${a.metadata?.namespace}/${a.metadata?.name}`.localeCompare(`${b.metadata?.namespace}/${b.metadata?.name}`),
  );
}

/**
 * Delete a pod: stop its containers gracefully (SIGTERM, then SIGKILL after
 * the grace period), stop and remove its sandboxes and containers, then
 * remove its pod dir and log dir.
 */
export async function deletePod(
  ctx: SyncContext,
  pod: { uid: string; name: string; namespace: string; spec?: V1Pod },
  opts: { gracePeriodSeconds?: number } = {},
): Promise<void> {
  const podObj: V1Pod = pod.spec ?? { metadata: { uid: pod.uid, name: pod.name, namespace: pod.namespace } };
  const status = await getRuntimePodStatus(ctx.cri, pod, { signal: ctx.signal, owner: instanceSelector(ctx) });
  const grace = opts.gracePeriodSeconds ?? podObj.spec?.terminationGracePeriodSeconds ?? 30;
  await killPod(ctx, podObj, status, { gracePeriodSeconds: grace });
  for (const c of status.containers) await ctx.cri.removeContainer({ containerId: c.id }, { signal: ctx.signal });
  for (const sb of status.sandboxes) {
    await ctx.cri.stopPodSandbox({ podSandboxId: sb.id }, { signal: ctx.signal });
    await ctx.cri.removePodSandbox({ podSandboxId: sb.id }, { signal: ctx.signal });
  }
  await removePodDir(ctx.rootDir, pod.uid);
  await removePodLogDir(ctx, { metadata: { uid: pod.uid, name: pod.name, namespace: pod.namespace } });
}

/**
 * Remove a pod's log dir, unless a sandbox of that pod UID that is not this
 * klet's still runs: the pod log root is shared by every klet root dir and
 * the kubelet, and a static pod of the same manifest and node name has the
 * same UID (so the same log dir) in each. Another owner's logs are never deleted.
 */
export async function removePodLogDir(
  ctx: { cri: CriClient; rootDir: string; nodeName: string; logRoot?: string; signal?: AbortSignal },
  pod: V1Pod,
): Promise<void> {
  const uid = pod.metadata?.uid ?? '';
  const logDir = podLogDir(pod, ctx.logRoot);
  const mine = kletInstance(ctx.rootDir, ctx.nodeName);
  const { items } = await ctx.cri.listPodSandbox({ filter: { labelSelector: { [POD_UID_LABEL]: uid } } }, { signal: ctx.signal });
  if (items.some((sb) => sb.labels[KLET_INSTANCE_LABEL] !== mine)) return;
  await fsp.rm(logDir, { recursive: true, force: true }).catch((err) => {
    throw new Error(`cannot remove ${logDir}: ${errorMessage(err)}`);
  });
}

export interface PreflightProblem {
  fieldPath: string;
  message: string;
}

/**
 * Checks run before anything is created for a pod, so a pod that cannot
 * start leaves nothing behind: images under pull policy Never must be
 * present, image names must parse, and ConfigMap/Secret references must
 * resolve. (The kubelet would create the sandbox and report the container
 * as waiting; a one-shot command fails early instead.)
 */
export async function preflightPod(ctx: SyncContext, pod: V1Pod): Promise<PreflightProblem[]> {
  const { defaultPullPolicy, isValidImageReference, normalizeImageRef } = await import('./image.js');
  const { makeEnvironment, ContainerConfigError } = await import('./env.js');
  const problems: PreflightProblem[] = [];
  const groups: [string, NonNullable<V1Pod['spec']>['containers']][] = [
    ['initContainers', pod.spec?.initContainers ?? []],
    ['containers', pod.spec?.containers ?? []],
  ];
  for (const [field, list] of groups) {
    for (const [i, c] of list.entries()) {
      const image = c.image ?? '';
      if (!isValidImageReference(image)) {
        problems.push({ fieldPath: `spec.${field}[${i}].image`, message: `invalid image reference "${image}"` });
        continue;
      }
      const policy = c.imagePullPolicy ?? defaultPullPolicy(image);
      if (policy === 'Never') {
        const st = await ctx.cri.imageStatus({ image: { image: normalizeImageRef(image) } }, { signal: ctx.signal });
        if (!st.image?.id) {
          problems.push({
            fieldPath: `spec.${field}[${i}].image`,
            message: `image "${image}" is not present on this node and imagePullPolicy is Never (import it with: klet images import FILE)`,
          });
        }
      }
      try {
        makeEnvironment(c, {
          pod,
          podIPs: [],
          hostIPs: hostIPs(),
          nodeName: ctx.nodeName,
          objects: ctx.objects,
          nodeAllocatable: { cpuMillis: 1000, memoryBytes: 1, ephemeralStorageBytes: 0 },
        });
      } catch (err) {
        if (err instanceof ContainerConfigError) {
          problems.push({ fieldPath: `spec.${field}[${i}].env`, message: err.message });
        } else throw err;
      }
    }
  }
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    const ns = pod.metadata?.namespace ?? 'default';
    if (v.configMap && !v.configMap.optional) {
      const found = ctx.objects.configMaps.some((c) => c.metadata?.name === v.configMap?.name && (c.metadata?.namespace ?? 'default') === ns);
      if (!found) problems.push({ fieldPath: `spec.volumes[${i}].configMap.name`, message: `configmap "${v.configMap.name}" not found` });
    }
    if (v.secret && !v.secret.optional) {
      const found = ctx.objects.secrets.some((s) => s.metadata?.name === v.secret?.secretName && (s.metadata?.namespace ?? 'default') === ns);
      if (!found) problems.push({ fieldPath: `spec.volumes[${i}].secret.secretName`, message: `secret "${v.secret.secretName}" not found` });
    }
  }
  return problems;
}
