/**
 * The status manager of cluster mode: API pods' status written to pods/status
 * (and the final delete of gracefully deleted pods), and mirror pods for
 * static pods with their status (the kubelet's status_manager.go,
 * pod/mirror_client.go, the static-pod half of status_manager.go and
 * kubelet.go's syncPod mirror handling): every static pod klet runs gets a
 * mirror pod in the API server — a copy with the `kubernetes.io/config.mirror`
 * annotation, bound to this node and owned by the Node — recreated when it
 * is deleted or no longer matches the static pod, deleted when the static
 * pod goes; its status is patched with the static pod's status whenever that
 * changes. A failed request is retried on the next pass: nothing is lost,
 * the latest status is written once the API server answers.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import { pause } from '../util/sleep.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION, CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION, isStaticPod } from '../pod/static-pod.js';
import type { PodApi } from './api.js';
import { withServerConditions } from '../status/pod-status.js';

export { CONFIG_MIRROR_ANNOTATION, isStaticPod };
/**
 * The slow resync (the kubelet status manager's syncPeriod): a full pass
 * (every pod's latest status compared with the server's, the pods gone
 * forgotten) even when nothing was signalled; it reads from the runtime
 * only the pods it has no status for yet, not all of them (110 pods' CRI
 * status, records, sync states and probe results every 10 s were the
 * largest share of klet's CPU holding API pods). Between resyncs
 * a pass runs when kick() says a pod's status may have changed (a pod sync,
 * the watch). Passes work from the watch's view of the server; only the
 * first pass, and a pass while the watch has no view (not listed yet, or
 * failing), LIST the node's pods: the kubelet's status manager works from
 * its informer alone, and a LIST of 110 pods every 10 s was 6 LISTs a
 * minute and ~5 % of klet's CPU holding them (bench/cluster-cpu.md).
 */
export const STATUS_RESYNC_INTERVAL_MS = 10_000;
/** Pod status writes in flight at once. */
export const STATUS_WRITE_CONCURRENCY = 4;
/** Kicks within this long after a pass are served by one pass (the sync loop kicks once per pod sync). */
export const STATUS_KICK_COALESCE_MS = 100;

export type MirrorPodEvent =
  | { kind: 'MirrorPodCreated'; pod: string; reason: 'missing' | 'stale' }
  | { kind: 'MirrorPodDeleted'; pod: string }
  | { kind: 'MirrorPodStatusPatched'; pod: string; phase: string }
  | { kind: 'MirrorPodError'; pod: string; message: string }
  | { kind: 'PodStatusPatched'; pod: string; phase: string }
  | { kind: 'PodDeleted'; pod: string }
  | { kind: 'PodRejected'; pod: string; uid: string; reason: string; message: string }
  | { kind: 'PodStatusError'; pod: string; message: string };

export type StatusManagerEvent = MirrorPodEvent;

const key = (p: V1Pod) => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`;

/** A pod from the API server (config.source api, set by the api pod source). */
export function isApiPod(p: V1Pod): boolean {
  return p.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] === 'api';
}

/** A mirror pod (kubetypes.IsMirrorPod). */
export function isMirrorPod(p: V1Pod): boolean {
  return p.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined;
}

/** The hash the mirror pod carries: the static pod's config hash (its UID). */
export function staticPodHash(p: V1Pod): string {
  return p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] ?? p.metadata?.uid ?? '';
}

/** The mirror pod to create for a static pod (mirror_client.go CreateMirrorPod). */
export function mirrorPodFor(staticPod: V1Pod, node: { name: string; uid: string }): V1Pod {
  const src = JSON.parse(JSON.stringify(staticPod)) as V1Pod;
  const annotations: Record<string, string> = { ...src.metadata?.annotations, [CONFIG_MIRROR_ANNOTATION]: staticPodHash(staticPod) };
  delete annotations[CONFIG_SEEN_ANNOTATION];
  const spec = { ...src.spec!, nodeName: node.name };
  // Mirror pods may not reference a service account (the ServiceAccount admission plugin refuses them).
  delete spec.serviceAccountName;
  delete spec.serviceAccount;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: src.metadata?.name,
      namespace: src.metadata?.namespace ?? 'default',
      labels: src.metadata?.labels,
      annotations,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid, controller: true }],
    },
    spec,
  };
}

/** The static pod's status as written to its mirror pod (without fields the server owns). */
export function mirrorStatus(staticPod: V1Pod): V1PodStatus {
  return JSON.parse(JSON.stringify(staticPod.status ?? {})) as V1PodStatus;
}

export interface PodStatusManagerOptions {
  api: PodApi;
  nodeName: string;
  /** The Node's UID, once registered (no mirror pod is created before: it needs the owner). */
  nodeUid: () => string | undefined;
  /** The pods klet runs, with status (listPodsWithStatus); with `only`, just the recorded pods of those UIDs. */
  localPods: (signal: AbortSignal, only?: ReadonlySet<string>) => Promise<V1Pod[]>;
  /**
   * The UIDs of every pod klet has (its pod records). With it, a pass
   * between resyncs reads the status of only the pods whose status may have
   * changed (kick(uid)) and of the static pods; without it every pass reads all.
   */
  localUids?: (signal: AbortSignal) => Promise<Set<string>>;
  /**
   * Is the pod's worker syncing it (or about to)? A resync leaves such a
   * pod's status to the kick that ends its sync, so a half-done start is
   * never written as a status of its own.
   */
  busy?: (uid: string) => boolean;
  onEvent?: (e: MirrorPodEvent) => void;
  /** API pods admission refused: marked Failed with the reason, as the kubelet's rejectPod. */
  rejections?: () => Iterable<{ namespace: string; name: string; uid: string; reason: string; message: string }>;
  /** The pods bound to the node as the watch last saw them (undefined: not listed yet, or the watch is failing); without it every pass lists. */
  remotePods?: () => V1Pod[] | undefined;
}

export class PodStatusManager {
  /** Pod UID (API pods) or mirror pod UID → the status last written to it (comparable(): without condition times). */
  private readonly written = new Map<string, string>();
  /**
   * Pod UID → the inputs of a status found already written: while the pod's
   * own status and its server copy stay the same objects, the pass skips
   * merging and comparing it again (with 110 pods, every pass did it for
   * all of them: ~16 MB of strings over a 110-pod start, api-start-110).
   */
  private readonly unchanged = new Map<string, { own: V1PodStatus; server: V1Pod; rv: string | undefined; text: string }>();
  /**
   * Pod UID → its latest status, condition times settled (the kubelet status
   * manager's podStatuses): what is written, and what the next status's
   * lastTransitionTimes are kept from.
   */
  private readonly statuses = new Map<string, V1PodStatus>();
  /** The static pods' UIDs (every full pass and every pod kicked tells which pods are static). */
  private readonly staticUids = new Set<string>();
  /** Pods whose status may have changed since the last pass (kick(uid)). */
  private readonly dirty = new Set<string>();
  /** Statuses handed over by setPodStatus, not yet taken by a pass. */
  private readonly given = new Map<string, V1Pod>();
  /** In the current pass: is the status just read a pod's latest (not a half-done sync's)? */
  private fresh: (uid: string) => boolean = () => true;
  /** Static pod UID → its mirror pod's UID. */
  private readonly mirrorUids = new Map<string, string>();
  /** Mirror pods klet created that the watch may not show yet, by `namespace/name` (cleared by each LIST). */
  private readonly created = new Map<string, { pod: V1Pod; fullPasses: number }>();
  /** Full passes run from the watch's view (how long a created mirror pod has waited to show in it). */
  private fullPasses = 0;
  private kicked = false;
  /** Failed requests in the current pass. */
  private failures = 0;
  private wake: (() => void) | null = null;
  /** Passes run (for tests and the figures in bench/). */
  passes = 0;

  /**
   * A pod's status may have changed (`uid`; the pass reads it from the
   * runtime), or the server's view did (no uid): run a pass soon. Never blocks.
   */
  kick(uid?: string): void {
    if (uid !== undefined) this.dirty.add(uid);
    this.kicked = true;
    this.wake?.();
  }

  /**
   * A pod with the status it has now, as its sync saw it (the kubelet's
   * SetPodStatus): written by the next pass unless a later kick(uid) has
   * read a newer one by then. Never blocks.
   */
  setPodStatus(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    this.given.set(uid, pod);
    this.dirty.delete(uid);
    this.kicked = true;
    this.wake?.();
  }

  /**
   * The status to write: `status` with each condition's lastTransitionTime
   * kept from the previous status while the condition's status stays, and
   * now where it changed (the kubelet status manager's
   * updateLastTransitionTime); the previous status is the one klet set last,
   * else the server's.
   */
  private settle(uid: string, status: V1PodStatus, server: V1PodStatus | undefined, now: Date): V1PodStatus {
    if (!this.fresh(uid)) return this.statuses.get(uid)!;
    const prev = this.statuses.get(uid) ?? server;
    for (const c of status.conditions ?? []) {
      const old = prev?.conditions?.find((o) => o.type === c.type);
      c.lastTransitionTime = old !== undefined && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : now;
    }
    this.statuses.set(uid, status);
    return status;
  }

  constructor(private readonly o: PodStatusManagerOptions) {}

  /** The UID of a static pod's mirror pod, once klet has seen or made it. */
  mirrorUidOf(staticUid: string): string | undefined {
    return this.mirrorUids.get(staticUid);
  }

  private emit(e: MirrorPodEvent): void {
    if (e.kind === 'MirrorPodError' || e.kind === 'PodStatusError') this.failures++;
    try {
      this.o.onEvent?.(e);
    } catch {
      // a listener's failure is not ours
    }
  }

  /**
   * One reconcile pass: against a fresh LIST with `full`, else against the
   * watch's view (plus the mirror pods created since). Rejects only when
   * the pods could not be listed at all.
   */
  async syncOnce(signal: AbortSignal, full = true): Promise<void> {
    const nodeUid = this.o.nodeUid();
    if (!nodeUid) return;
    this.passes++;
    const dirty = new Set(this.dirty);
    const given = new Map(this.given);
    this.dirty.clear();
    this.given.clear();
    // A pass that could not read both sides leaves what it took for the next: a status handed over or
    // signalled while the server was away is written once it answers, not left to the next full pass.
    const taken = [...dirty];
    const putBack = () => {
      for (const u of taken) this.dirty.add(u);
      for (const [u, p] of given) if (!this.given.has(u)) this.given.set(u, p);
    };
    let all: V1Pod[];
    let localUids: Set<string>;
    try {
      if (this.o.localUids === undefined) {
        all = await this.o.localPods(signal);
        localUids = new Set(all.map(uidOf));
      } else if (full) {
        // A resync reads from the runtime only what it has no status for yet (a pod no sync has reported, the
        // first pass): every other pod's latest status is the one its worker's last sync gave (kick or
        // setPodStatus), as the kubelet's syncBatch works from its podStatuses cache. Each worker syncs its pod at
        // least every syncFrequency and on every PLEG or probe change, so nothing goes unread for longer.
        localUids = await this.o.localUids(signal);
        const unread = new Set([...dirty, ...this.staticUids]);
        for (const u of localUids) if (!this.statuses.has(u)) unread.add(u);
        all = unread.size > 0 ? await this.o.localPods(signal, unread) : [];
      } else {
        // Between resyncs: the pods signalled, and the static pods (their mirror pods are checked every pass).
        [all, localUids] = await Promise.all([this.o.localPods(signal, new Set([...dirty, ...this.staticUids])), this.o.localUids(signal)]);
      }
    } catch (err) {
      putBack();
      throw err;
    }
    // A status its sync handed over counts unless a later read replaced it.
    const read = new Set(all.map(uidOf));
    for (const [u, p] of given) {
      if (read.has(u) && dirty.has(u)) continue;
      all = all.filter((x) => uidOf(x) !== u);
      all.push(p);
      dirty.add(u);
    }
    // A pod in the middle of a sync keeps the status last set, until the kick that ends its sync.
    const busy = this.o.busy;
    this.fresh = (uid) => dirty.has(uid) || busy === undefined || !busy(uid) || !this.statuses.has(uid);
    const local = all.filter(isStaticPod);
    // The static pods are read every pass (their mirror pods are checked every pass): their UIDs, as last seen.
    for (const u of [...this.staticUids]) if (!localUids.has(u)) this.staticUids.delete(u);
    for (const p of local) this.staticUids.add(uidOf(p));
    const watched = this.passes === 1 ? undefined : this.o.remotePods?.();
    let remote: V1Pod[];
    if (watched === undefined) {
      try {
        remote = await this.o.api.listNodePods(this.o.nodeName, signal);
      } catch (err) {
        putBack();
        throw err;
      }
      this.created.clear();
    } else {
      const seen = new Set(watched.map(key));
      // A mirror pod the watch has shown, or not shown for a whole resync period (deleted again before it
      // could: then the next pass creates it anew), is the watch's business from now on.
      if (full) this.fullPasses++;
      for (const [k, c] of [...this.created]) if (seen.has(k) || c.fullPasses < this.fullPasses - 1) this.created.delete(k);
      remote = [...watched, ...[...this.created.values()].map((c) => c.pod)];
    }
    const now = new Date();
    await this.syncApiPods(all.filter(isApiPod), localUids, remote.filter((p) => !isMirrorPod(p)), now, signal);
    const mirrors = new Map(remote.filter((p) => p.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined).map((p) => [key(p), p]));
    const wanted = new Set<string>();
    const live = new Set(remote.map((p) => p.metadata?.uid));
    for (const sp of local) {
      const k = key(sp);
      wanted.add(k);
      try {
        let mirror = mirrors.get(k);
        const stale = mirror !== undefined && (mirror.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== staticPodHash(sp) || mirror.metadata?.deletionTimestamp !== undefined);
        if (mirror && stale) {
          await this.o.api.deletePod(mirror.metadata!.namespace!, mirror.metadata!.name!, mirror.metadata!.uid!, signal).catch(ignoreNotFound);
          this.created.delete(k);
          this.emit({ kind: 'MirrorPodDeleted', pod: k });
          this.written.delete(mirror.metadata!.uid!);
          mirror = undefined;
        }
        if (!mirror) {
          mirror = await this.o.api.createPod(mirrorPodFor(sp, { name: this.o.nodeName, uid: nodeUid }), signal);
          this.created.set(k, { pod: mirror, fullPasses: this.fullPasses });
          live.add(mirror.metadata?.uid);
          this.emit({ kind: 'MirrorPodCreated', pod: k, reason: stale ? 'stale' : 'missing' });
        }
        const uid = mirror.metadata!.uid!;
        const status = this.settle(sp.metadata?.uid ?? '', mirrorStatus(sp), mirror.status, now);
        const text = comparable(status);
        this.mirrorUids.set(sp.metadata?.uid ?? '', uid);
        if (this.written.get(uid) !== text) {
          await this.o.api.patchPodStatus(mirror.metadata!.namespace!, mirror.metadata!.name!, uid, status, signal);
          this.written.set(uid, text);
          this.emit({ kind: 'MirrorPodStatusPatched', pod: k, phase: status.phase ?? '' });
        }
      } catch (err) {
        if (signal.aborted) return;
        this.emit({ kind: 'MirrorPodError', pod: k, message: errorMessage(err) });
      }
    }
    // Mirror pods whose static pod is gone (kubelet's deleteOrphanedMirrorPods).
    for (const [k, m] of mirrors) {
      if (wanted.has(k)) continue;
      try {
        // The watch may not show yet that it is gone: NotFound is done.
        await this.o.api.deletePod(m.metadata!.namespace!, m.metadata!.name!, m.metadata!.uid!, signal).catch(ignoreNotFound);
        this.created.delete(k);
        this.written.delete(m.metadata!.uid!);
        this.emit({ kind: 'MirrorPodDeleted', pod: k });
      } catch (err) {
        if (signal.aborted) return;
        this.emit({ kind: 'MirrorPodError', pod: k, message: errorMessage(err) });
      }
    }
    // Forget what was written to mirror pods that no longer exist.
    for (const uid of this.written.keys()) if (!live.has(uid)) this.written.delete(uid);
    for (const [s, m] of this.mirrorUids) if (!live.has(m)) this.mirrorUids.delete(s);
    // And the statuses of pods klet no longer has.
    for (const uid of this.statuses.keys()) if (!localUids.has(uid)) this.statuses.delete(uid);
    for (const uid of this.unchanged.keys()) if (!this.statuses.has(uid)) this.unchanged.delete(uid);
  }

  /**
   * API pods: patch each one's pods/status when klet's status for it
   * changed (UID precondition: never another pod of the same name); a pod
   * the server marked for deletion that klet no longer runs (its containers
   * were stopped within the grace period) is deleted with grace 0, as the
   * kubelet does once a pod is terminated.
   */
  private async syncApiPods(local: V1Pod[], localUids: Set<string>, remote: V1Pod[], now: Date, signal: AbortSignal): Promise<void> {
    const remoteByUid = new Map(remote.map((p) => [p.metadata?.uid ?? '', p]));
    for (const lp of local) {
      const uid = uidOf(lp);
      this.settle(uid, mirrorStatus(lp), remoteByUid.get(uid)?.status, now);
    }
    // Changed statuses are written a few at a time: one slow answer does not hold up the other pods.
    // Every pod's latest status counts, also one read in an earlier pass whose write failed.
    const changed: Array<() => Promise<void>> = [];
    for (const [uid, own] of this.statuses) {
      const rp = remoteByUid.get(uid);
      if (!rp || !localUids.has(uid)) continue;
      const seen = this.unchanged.get(uid);
      if (seen !== undefined && seen.own === own && seen.server === rp && seen.rv === rp.metadata?.resourceVersion && this.written.get(uid) === seen.text) continue;
      // The conditions others own are the server's as the watch shows them now, and Ready follows the readiness gates among them.
      // (`now` only stamps a Ready transition, which comparable() leaves out: the same inputs compare the same.)
      const status = withServerConditions(rp, own, now);
      const text = comparable(status);
      if (this.written.get(uid) === text) {
        this.unchanged.set(uid, { own, server: rp, rv: rp.metadata?.resourceVersion, text });
        continue;
      }
      changed.push(async () => {
        try {
          await this.o.api.patchPodStatus(rp.metadata!.namespace!, rp.metadata!.name!, uid, status, signal);
          this.written.set(uid, text);
          this.unchanged.set(uid, { own, server: rp, rv: rp.metadata?.resourceVersion, text });
          this.emit({ kind: 'PodStatusPatched', pod: key(rp), phase: status.phase ?? '' });
        } catch (err) {
          if (signal.aborted) return;
          this.emit({ kind: 'PodStatusError', pod: key(rp), message: errorMessage(err) });
        }
      });
    }
    await Promise.all(Array.from({ length: Math.min(STATUS_WRITE_CONCURRENCY, changed.length) }, async () => {
      for (let job = changed.shift(); job; job = changed.shift()) await job();
    }));
    if (signal.aborted) return;
    for (const r of this.o.rejections?.() ?? []) {
      const rp = remoteByUid.get(r.uid);
      if (!rp || rp.status?.phase === 'Failed') continue;
      const status: V1PodStatus = { phase: 'Failed', reason: r.reason, message: r.message };
      const text = JSON.stringify(status);
      if (this.written.get(r.uid) === text) continue;
      try {
        await this.o.api.patchPodStatus(r.namespace, r.name, r.uid, status, signal);
        this.written.set(r.uid, text);
        this.emit({ kind: 'PodRejected', pod: key(rp), uid: r.uid, reason: r.reason, message: r.message });
      } catch (err) {
        if (signal.aborted) return;
        this.emit({ kind: 'PodStatusError', pod: key(rp), message: errorMessage(err) });
      }
    }
    for (const rp of remote) {
      const uid = rp.metadata?.uid ?? '';
      if (rp.metadata?.deletionTimestamp === undefined || localUids.has(uid)) continue;
      try {
        await this.o.api.deletePod(rp.metadata!.namespace!, rp.metadata!.name!, uid, signal);
        this.written.delete(uid);
        this.emit({ kind: 'PodDeleted', pod: key(rp) });
      } catch (err) {
        if (signal.aborted) return;
        if ((err as { status?: number }).status === 404) continue;
        this.emit({ kind: 'PodStatusError', pod: key(rp), message: errorMessage(err) });
      }
    }
  }

  /**
   * Reconcile whenever kick() is called (passes never overlap; kicks during
   * a pass make one more) and every `resyncMs` with a full LIST, until the
   * signal aborts. Never rejects.
   */
  async run(signal: AbortSignal, resyncMs = STATUS_RESYNC_INTERVAL_MS): Promise<void> {
    let lastError = '';
    let lastFull = 0;
    let backoff = 0;
    while (!signal.aborted) {
      const full = Date.now() - lastFull >= resyncMs;
      this.kicked = false;
      this.failures = 0;
      try {
        await this.syncOnce(signal, full);
        if (full) lastFull = Date.now();
        lastError = '';
      } catch (err) {
        const m = errorMessage(err);
        // Report an outage once, not every pass.
        if (!signal.aborted && m !== lastError) this.emit({ kind: 'MirrorPodError', pod: '', message: m });
        else this.failures++;
        lastError = m;
        if (full) lastFull = Date.now();
      }
      // While requests fail (the server away), passes back off (1 s doubling to the resync period) whatever the kicks say.
      backoff = this.failures > 0 ? Math.min(resyncMs, Math.max(1000, backoff * 2)) : 0;
      if (backoff > 0) {
        await pause(backoff, signal);
        continue;
      }
      if (this.kicked) {
        await pause(STATUS_KICK_COALESCE_MS, signal);
        continue;
      }
      await new Promise<void>((resolve) => {
        // The signal may have aborted during the pass (a write it cut short is not a failure): then
        // no 'abort' event comes any more, and the wait would last until the next resync.
        if (signal.aborted) return resolve();
        const timer = setTimeout(done, Math.max(0, lastFull + resyncMs - Date.now()));
        const onAbort = () => done();
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve();
        }
        this.wake = done;
        signal.addEventListener('abort', onAbort, { once: true });
      });
      this.wake = null;
    }
  }
}

const uidOf = (p: V1Pod): string => p.metadata?.uid ?? '';

/**
 * A status as compared to the one written: without the conditions'
 * lastTransitionTime and lastProbeTime (the kubelet's
 * isPodStatusByKubeletEqual compares a condition's status, reason and
 * message), so a time alone never makes a write.
 */
export function comparable(status: V1PodStatus): string {
  return JSON.stringify({
    ...status,
    conditions: status.conditions?.map((c) => ({ ...c, lastTransitionTime: undefined, lastProbeTime: undefined })),
  });
}

function ignoreNotFound(err: unknown): void {
  if ((err as { status?: number }).status !== 404) throw err;
}
