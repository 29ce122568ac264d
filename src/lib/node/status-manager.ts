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
import { CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../pod/static-pod.js';
import type { PodApi } from './api.js';

export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';
/**
 * The slow resync (the kubelet status manager's syncPeriod): a full pass
 * with a fresh LIST even when nothing was signalled. Between resyncs a pass
 * runs when kick() says a pod's status may have changed (a pod sync, the
 * watch), working from the watch's view of the server.
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

/** Is this a static pod (from a file or http source), as kubetypes.IsStaticPod? */
export function isStaticPod(p: V1Pod): boolean {
  const src = p.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION];
  return src !== undefined && src !== 'api';
}

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
  /** The pods klet runs, with status (listPodsWithStatus). */
  localPods: (signal: AbortSignal) => Promise<V1Pod[]>;
  onEvent?: (e: MirrorPodEvent) => void;
  /** API pods admission refused: marked Failed with the reason, as the kubelet's rejectPod. */
  rejections?: () => Iterable<{ namespace: string; name: string; uid: string; reason: string; message: string }>;
  /** The pods bound to the node as the watch last saw them (undefined: not listed yet); without it every pass lists. */
  remotePods?: () => V1Pod[] | undefined;
}

export class PodStatusManager {
  /** Mirror pod UID → the status last written to it. */
  private readonly written = new Map<string, string>();
  /** Static pod UID → its mirror pod's UID. */
  private readonly mirrorUids = new Map<string, string>();
  /** Mirror pods klet created that the watch may not show yet, by `namespace/name` (cleared by each LIST). */
  private readonly created = new Map<string, V1Pod>();
  private kicked = false;
  /** Failed requests in the current pass. */
  private failures = 0;
  private wake: (() => void) | null = null;
  /** Passes run (for tests and the figures in bench/). */
  passes = 0;

  /** A pod's status may have changed: run a pass soon. Never blocks. */
  kick(): void {
    this.kicked = true;
    this.wake?.();
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
    const all = await this.o.localPods(signal);
    const local = all.filter(isStaticPod);
    const watched = full ? undefined : this.o.remotePods?.();
    let remote: V1Pod[];
    if (watched === undefined) {
      remote = await this.o.api.listNodePods(this.o.nodeName, signal);
      this.created.clear();
    } else {
      const seen = new Set(watched.map(key));
      for (const k of [...this.created.keys()]) if (seen.has(k)) this.created.delete(k);
      remote = [...watched, ...this.created.values()];
    }
    await this.syncApiPods(all.filter(isApiPod), remote.filter((p) => !isMirrorPod(p)), signal);
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
          this.created.set(k, mirror);
          live.add(mirror.metadata?.uid);
          this.emit({ kind: 'MirrorPodCreated', pod: k, reason: stale ? 'stale' : 'missing' });
        }
        const status = mirrorStatus(sp);
        const text = JSON.stringify(status);
        const uid = mirror.metadata!.uid!;
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
  }

  /**
   * API pods: patch each one's pods/status when klet's status for it
   * changed (UID precondition: never another pod of the same name); a pod
   * the server marked for deletion that klet no longer runs (its containers
   * were stopped within the grace period) is deleted with grace 0, as the
   * kubelet does once a pod is terminated.
   */
  private async syncApiPods(local: V1Pod[], remote: V1Pod[], signal: AbortSignal): Promise<void> {
    const remoteByUid = new Map(remote.map((p) => [p.metadata?.uid ?? '', p]));
    const localUids = new Set(local.map((p) => p.metadata?.uid ?? ''));
    // Changed statuses are written a few at a time: one slow answer does not hold up the other pods.
    const changed: Array<() => Promise<void>> = [];
    for (const lp of local) {
      const uid = lp.metadata?.uid ?? '';
      const rp = remoteByUid.get(uid);
      if (!rp) continue;
      const status = mirrorStatus(lp);
      const text = JSON.stringify(status);
      if (this.written.get(uid) === text) continue;
      changed.push(async () => {
        try {
          await this.o.api.patchPodStatus(rp.metadata!.namespace!, rp.metadata!.name!, uid, status, signal);
          this.written.set(uid, text);
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

function ignoreNotFound(err: unknown): void {
  if ((err as { status?: number }).status !== 404) throw err;
}
