/**
 * `klet run-pod`: sync one pod from a manifest file and wait for it; with
 * `rm`, a fresh docker-run-like run: a finished pod of the same name is
 * replaced, and the pod is deleted at the end after its output was read.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { InputError } from '../errors.js';
import { admitPod, deletePod, replaceOtherInstances } from '../kuberuntime/lifecycle.js';
import { readPodRecord } from '../kuberuntime/poddir.js';
import { loadManifests, manifestErrorsToError } from '../pod/index.js';
import { podKey } from '../pod/key.js';
import { podWithStatus } from '../status/pods.js';
import { syncContext, type ServiceDeps } from './deps.js';
import { preflightPod } from './preflight.js';
import { podOutput } from './read-logs.js';
import { syncUntil, type WaitGoal } from './wait.js';

export interface RunPodOptions {
  /** The manifest file as the user named it. */
  file: string;
  /** A directory of ConfigMaps and Secrets for the pod. */
  objectsDir?: string;
  goal: WaitGoal;
  timeoutMs: number;
  /** Delete the pod when it has finished (a fresh run: a finished pod of the same name is replaced first). */
  rm: boolean;
}

export interface RunPodResult {
  /** The pod with its last status. */
  pod: V1Pod;
  /** `namespace/name`. */
  key: string;
  ok: boolean;
  /** Why not, in one line. */
  problem?: string;
  /** What klet exits with: 0, the first failing container's exit code, or 1. */
  exitCode: number;
  /** With rm: what the pod's containers wrote, read before the pod was removed. */
  output?: string;
}

export async function runPod(opts: RunPodOptions, deps: ServiceDeps): Promise<RunPodResult> {
  const set = await loadManifests({ files: [opts.file], nodeName: deps.nodeName });
  if (set.errors.length > 0) throw manifestErrorsToError(set.errors);
  if (set.pods.length !== 1) throw new InputError(`${opts.file}: expected exactly one Pod, found ${set.pods.length}`);
  let objects = { configMaps: set.configMaps, secrets: set.secrets };
  if (opts.objectsDir !== undefined) {
    const extra = await loadManifests({ dir: opts.objectsDir, nodeName: deps.nodeName });
    if (extra.errors.length > 0) throw manifestErrorsToError(extra.errors);
    objects = { configMaps: [...objects.configMaps, ...extra.configMaps], secrets: [...objects.secrets, ...extra.secrets] };
  }
  const loaded = set.pods[0]!;
  const pod = loaded.pod;
  const key = podKey(pod);
  const ctx = syncContext(deps, objects);

  const problems = await preflightPod(ctx, pod);
  if (problems.length > 0) {
    const p = problems[0]!;
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
    // The file as the user named it, like the manifest errors above.
    throw new InputError(`${opts.file}: ${p.fieldPath}: ${p.message}${more}`);
  }
  // A static pod's full name is unique on the node: an edited manifest's pod replaces the old one.
  await replaceOtherInstances(ctx, pod);
  if (opts.rm) await replaceFinished(ctx, pod, key);

  const rec = await admitPod(ctx, pod, loaded.source.path);
  const uid = pod.metadata?.uid ?? '';
  deps.onEvent?.({
    kind: 'PodWaitStarted',
    pod: key,
    uid,
    goal: opts.goal,
    initContainers: (pod.spec?.initContainers ?? []).map((c) => c.name),
    containers: (pod.spec?.containers ?? []).map((c) => c.name),
  });
  const outcome = await syncUntil(ctx, rec, opts.goal, { timeoutMs: opts.timeoutMs });
  deps.onEvent?.({ kind: 'PodWaitDone', pod: key, uid, ok: outcome.ok, summary: outcome.ok ? `${outcome.pod.status?.phase}` : outcome.problem ?? 'failed' });

  let output: string | undefined;
  if (opts.rm) {
    const md = pod.metadata ?? {};
    const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.name);
    output = await podOutput({ namespace: md.namespace ?? 'default', name: md.name ?? '', uid, containers }, deps);
    await deletePod(ctx, pod);
  }
  const exitCode = outcome.ok ? 0 : outcome.exitCode !== null && outcome.exitCode > 0 ? outcome.exitCode : 1;
  return { pod: outcome.pod, key, ok: outcome.ok, problem: outcome.problem, exitCode, output };
}

/**
 * For a fresh run: the pod of this manifest that already ran to completion
 * (same UID: the same manifest on the same node) is deleted first. One still
 * running is not touched: that is an error.
 */
async function replaceFinished(ctx: ReturnType<typeof syncContext>, pod: V1Pod, key: string): Promise<void> {
  const prev = await readPodRecord(ctx.rootDir, pod.metadata?.uid ?? '');
  if (prev === null) return;
  const current = await podWithStatus(ctx, prev);
  const phase = current.status?.phase;
  if (phase !== 'Succeeded' && phase !== 'Failed') {
    throw new InputError(`pod ${key} is already running on this node (phase ${phase}): delete it first (klet delete ${key})`);
  }
  await deletePod(ctx, prev.pod);
}
