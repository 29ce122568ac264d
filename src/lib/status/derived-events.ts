/**
 * A pod's events as far as they can be told without the `klet sync` that
 * saw them happen: from what klet recorded of the pod under the root dir
 * (pod.json, sync-state.json) and what the runtime still holds of its
 * containers. `klet events` shows these when no sync is running.
 *
 * What can be told, with the kubelet's reasons and messages:
 * - Created and Started, per container, counted from its restart count (the
 *   runtime's label), first and last at the times of the instances the
 *   runtime still holds; when it no longer holds the first, the pod's start
 *   (klet's first sync) stands for it (and an old instance's creation for
 *   its start, which the runtime's list does not give);
 * - the container's last failure, which the sync state keeps until a start
 *   succeeds: BackOff (crash loop, at the last exit; image pull, at the
 *   failed pull) or Failed (ErrImagePull, CreateContainerConfigError, …);
 * - FailedMount, Evicted and an admission's rejection (the pod-level reason
 *   of the sync state), and FailedCreatePodSandBox;
 * - Killing, for a pod being deleted, at the deletion.
 * What cannot: Pulled (whether an image was pulled), probe failures
 * (Unhealthy: only the current result is kept, not its output), how often a
 * failure repeated, and anything of a pod whose record is gone. Times not
 * kept are left unset ("<unknown>", as kubectl prints them).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podEvents } from '../events/pod-events.js';
import type { PodEvent } from '../events/types.js';
import type { Occurrences } from '../events/event-list.js';
import type { PodRecord, PodSyncState } from '../kuberuntime/poddir.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../kuberuntime/runtime-status.js';

export interface DerivedEvent {
  event: PodEvent;
  at: Occurrences;
}

/** What is known of one pod. */
export interface PodEvidence {
  record: PodRecord;
  runtime: RuntimePodStatus;
  syncState: PodSyncState;
}

/** Created and Started of one container, from the instances the runtime holds (newest first). */
function lifecycleEvents(pod: V1Pod, name: string, init: boolean, instances: RuntimeContainerStatus[], podStartMs: number): DerivedEvent[] {
  const newest = instances[0];
  if (newest === undefined) return [];
  const created = newest.restartCount + 1;
  const allHeld = instances.length >= created;
  const out: DerivedEvent[] = [
    {
      event: podEvents.created(pod, name, newest.id, init),
      at: { count: created, firstMs: allHeld ? instances.at(-1)?.createdAt : podStartMs, lastMs: newest.createdAt },
    },
  ];
  const started = instances.filter((c) => c.startedAt > 0);
  const latest = started[0];
  if (latest !== undefined) {
    // The runtime's list gives the older instances without their start: their creation stands for it.
    const oldest = instances.at(-1) as RuntimeContainerStatus;
    out.push({
      event: podEvents.started(pod, name, latest.id, init, latest.restartCount),
      at: { count: created - (newest.startedAt > 0 ? 0 : 1), firstMs: allHeld ? oldest.startedAt || oldest.createdAt : podStartMs, lastMs: latest.startedAt },
    });
  }
  return out;
}

/** The events of one pod that its record, sync state and runtime objects still tell, in no particular order. */
export function deriveEvents({ record, runtime, syncState }: PodEvidence): DerivedEvent[] {
  const pod = record.pod;
  const podStartMs = Date.parse(record.firstSeen);
  const out: DerivedEvent[] = [];
  const once = (event: PodEvent, atMs?: number) => out.push({ event, at: { count: 1, firstMs: atMs, lastMs: atMs } });

  if (syncState.rejected === true && syncState.reason !== undefined) once(podEvents.rejected(pod, syncState.reason, syncState.message ?? ''), podStartMs);
  if (syncState.sandboxError !== undefined) once(podEvents.sandboxFailed(pod, syncState.sandboxError.message));
  if (syncState.reason === 'FailedMount') once(podEvents.failedMount(pod, `Unable to attach or mount volumes: ${syncState.message ?? ''}`));
  if (syncState.reason === 'Evicted') once(podEvents.evicted(pod, syncState.message ?? ''));

  const specs = [
    ...(pod.spec?.initContainers ?? []).map((c) => ({ name: c.name, init: true })),
    ...(pod.spec?.containers ?? []).map((c) => ({ name: c.name, init: false })),
  ];
  const deletedMs = record.deletion === undefined ? undefined : Date.parse(record.deletion.at);
  for (const { name, init } of specs) {
    const instances = runtime.containers.filter((c) => c.name === name);
    out.push(...lifecycleEvents(pod, name, init, instances, podStartMs));
    const newest = instances[0];
    const failure = syncState.containers[name];
    if (failure?.reason !== undefined) {
      const atMs = failure.reason === 'CrashLoopBackOff' ? newest?.finishedAt || undefined : failure.pullFailedAt;
      once(podEvents.failed(pod, name, failure.reason, failure.message ?? '', { init }), atMs);
    }
    if (deletedMs !== undefined && newest !== undefined && (newest.state === 'running' || newest.finishedAt >= deletedMs)) {
      once(podEvents.killing(pod, name, newest.id, `Stopping container ${name}`), deletedMs);
    }
  }
  return out;
}
