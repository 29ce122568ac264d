/**
 * The last sync of each pod the loop syncs: what computePodActions decided
 * and how it went, as a PodSync event. The bus gets one when a pod's sync
 * differs from its previous one (a healthy pod's resyncs emit nothing); the
 * local API's /plans serves the last one per pod, with when the pod was last
 * synced, for `klet explain`.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { KletEvent, PodSyncEvent } from '../events/types.js';
import { planByName } from '../kuberuntime/actions.js';
import type { RuntimePodStatus } from '../kuberuntime/runtime-status.js';
import type { SyncPodResult } from '../kuberuntime/sync-pod.js';
import { podKey } from '../pod/key.js';

/**
 * One pod's entry of /plans: its last sync as a PodSync event, whose seq and
 * time are of the event the bus got when the sync first came out so (the
 * same plan since then is not emitted again), its back-off times of the last
 * sync, and when that sync was.
 */
export type LastSync = (KletEvent & PodSyncEvent) & { lastSyncAt: string };

/** The PodSync event of one sync's result. `nowMs` turns the result's relative times into timestamps. */
export function podSyncEvent(pod: V1Pod, res: SyncPodResult, nowMs: number): PodSyncEvent {
  const at = (ms: number | undefined) => (ms === undefined ? undefined : new Date(nowMs + ms).toISOString());
  const blocked = res.rejected
    ? 'Rejected'
    : res.deadlineExceeded
      ? 'DeadlineExceeded'
      : res.mountFailed !== undefined
        ? 'FailedMount'
        : res.sandboxError !== undefined
          ? res.sandboxError.reason
          : undefined;
  const message = res.mountFailed ?? res.sandboxError?.message ?? '';
  const nextSyncAt = at(res.requeueAfterMs);
  return {
    kind: 'PodSync',
    pod: podKey(pod),
    uid: pod.metadata?.uid ?? '',
    plan: planByName(pod, res.actions),
    ...(blocked !== undefined ? { blocked: { reason: blocked, message } } : {}),
    failures: res.failures
      .filter((f) => f.container !== '')
      .map((f) => ({ container: f.container, reason: f.reason, message: f.message, ...(f.retryInMs !== undefined ? { retryAt: at(f.retryInMs) } : {}) })),
    ...(nextSyncAt !== undefined ? { nextSyncAt } : {}),
  };
}

/**
 * The PodSync event of a pod's worker terminating it (no computePodActions
 * there: every running container is stopped), `why` each container is.
 */
export function killPodSyncEvent(pod: V1Pod, status: RuntimePodStatus, why: string): PodSyncEvent {
  return {
    kind: 'PodSync',
    pod: podKey(pod),
    uid: pod.metadata?.uid ?? '',
    plan: {
      killPod: true,
      createSandbox: false,
      initContainersToStart: [],
      containersToStart: [],
      ephemeralContainersToStart: [],
      containersToKill: status.containers.filter((c) => c.state === 'running').map((c) => ({ name: c.name, message: why })),
    },
    failures: [],
  };
}

/** An API pod admission rejected (it never reaches a pod worker): nothing planned, blocked by the admission's reason. */
export function rejectedSyncEvent(r: { namespace: string; name: string; uid: string; reason: string; message: string }): PodSyncEvent {
  return {
    kind: 'PodSync',
    pod: `${r.namespace}/${r.name}`,
    uid: r.uid,
    plan: { killPod: false, createSandbox: false, initContainersToStart: [], containersToStart: [], ephemeralContainersToStart: [], containersToKill: [] },
    blocked: { reason: r.reason, message: r.message },
    failures: [],
  };
}

/** What makes two syncs "the same" for the bus: the plan and the failures' reasons and messages, not their times. */
function fingerprint(e: PodSyncEvent): string {
  return JSON.stringify([e.plan, e.blocked, e.failures.map((f) => [f.container, f.reason, f.message])]);
}

export class LastSyncs {
  private readonly byUid = new Map<string, { event: KletEvent & PodSyncEvent; latest: PodSyncEvent; key: string; lastSyncAt: string }>();

  /**
   * Records a sync; `emit` is called (and its stamped event kept) only when
   * the sync differs from the pod's previous one.
   */
  record(body: PodSyncEvent, at: Date, emit: (e: PodSyncEvent) => KletEvent & PodSyncEvent): void {
    const key = fingerprint(body);
    const prev = this.byUid.get(body.uid);
    if (prev !== undefined && prev.key === key) {
      prev.lastSyncAt = at.toISOString();
      prev.latest = body;
      return;
    }
    // The event's time is the sync's: a sync is never seen before the plan it came to.
    const event = emit(body);
    this.byUid.set(body.uid, { event, latest: body, key, lastSyncAt: event.time });
  }

  /** The pod was removed: its entry goes too. */
  forget(uid: string): void {
    this.byUid.delete(uid);
  }

  list(): LastSync[] {
    return [...this.byUid.values()].map((v) => ({ ...v.event, ...v.latest, seq: v.event.seq, time: v.event.time, lastSyncAt: v.lastSyncAt }));
  }
}
