/**
 * The API server as a pod source (the kubelet's pkg/kubelet/config
 * apiserver.go): the pods bound to this node, from a list+watch, delivered as
 * full snapshots. Left out, as the kubelet leaves them out of what it runs:
 * mirror pods (klet's own reflections of static pods), pods marked for
 * deletion (their removal makes the sync loop stop them within their grace
 * period; the status manager then deletes them from the server), and pods
 * already Succeeded or Failed (never run again, also after a klet restart).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { ManifestError, type LoadedPod } from '../pod/manifest.js';
import { CONFIG_MIRROR_ANNOTATION, CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../pod/static-pod.js';
import type { PodSource, SourceSink } from './source.js';

export const API_SOURCE = 'api';

/** The list+watch an ApiSource runs (PodApi.watchNodePods for one node). */
export type WatchNodePods = (on: { pods(pods: V1Pod[]): void; error(message: string): void }, signal: AbortSignal) => Promise<void>;

/** Should the node run this API pod now? */
export function runnableApiPod(p: V1Pod): boolean {
  if (p.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined) return false;
  if (p.metadata?.deletionTimestamp !== undefined && p.metadata?.deletionTimestamp !== null) return false;
  const phase = p.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

/**
 * An API pod that finished on this node (Succeeded or Failed) and is still on the server: the kubelet
 * keeps it (its pod manager) until it is deleted, never running it again, so its containers and
 * logs stay readable (kubectl logs of a finished Job).
 */
export function finishedApiPod(p: V1Pod): boolean {
  if (p.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined) return false;
  if (p.metadata?.deletionTimestamp !== undefined && p.metadata?.deletionTimestamp !== null) return false;
  const phase = p.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** Admission of new pods given those already admitted (lib/node/admission.ts admitPods, bound to the node). */
export type AdmitPods = (candidates: V1Pod[], running: V1Pod[]) => { admitted: V1Pod[]; rejected: Array<{ pod: V1Pod; reason: string; message: string }> };

export interface ApiRejection {
  namespace: string;
  name: string;
  uid: string;
  reason: string;
  message: string;
}

export class ApiSource implements PodSource {
  readonly name = API_SOURCE;
  /** Pods admission refused, by UID, until they leave the server (the status manager marks them Failed). */
  readonly rejected = new Map<string, ApiRejection>();
  private readonly admitted = new Set<string>();
  /** Every pod bound to the node as the watch last delivered them (mirror pods included); undefined before the first list. */
  latest: V1Pod[] | undefined;
  /** How the list+watch is doing, for /node. */
  watchState: 'connecting' | 'watching' | 'retrying' = 'connecting';
  watchError: string | null = null;
  private readonly listeners = new Set<() => void>();

  /** Called after each change the watch delivers. Returns the unsubscribe function. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  constructor(private readonly o: { server: string; watch: WatchNodePods; admit?: AdmitPods; now?: () => Date }) {}

  /** Is this UID an API pod klet admitted (not a static pod)? */
  isAdmitted(uid: string): boolean {
    return this.admitted.has(uid);
  }

  /** Admitted pods stay admitted (`finished` ones too, counted for nothing); new ones go through admission in creation order. */
  private admit(runnable: V1Pod[], finished: V1Pod[] = []): V1Pod[] {
    const uid = (p: V1Pod) => p.metadata?.uid ?? '';
    const present = new Set([...runnable, ...finished].map(uid));
    for (const u of this.admitted) if (!present.has(u)) this.admitted.delete(u);
    if (!this.o.admit) return runnable;
    const running = runnable.filter((p) => this.admitted.has(uid(p)));
    const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
    const fresh = runnable.filter((p) => !this.admitted.has(uid(p)) && !this.rejected.has(uid(p))).sort((a, b) => created(a) - created(b));
    if (fresh.length === 0) return running;
    const { admitted, rejected } = this.o.admit(fresh, running);
    for (const p of admitted) this.admitted.add(uid(p));
    for (const r of rejected) {
      this.rejected.set(uid(r.pod), { namespace: r.pod.metadata?.namespace ?? 'default', name: r.pod.metadata?.name ?? '', uid: uid(r.pod), reason: r.reason, message: r.message });
    }
    return [...running, ...admitted];
  }

  async run(sink: SourceSink, signal: AbortSignal): Promise<void> {
    const seen = new Map<string, string>();
    // The watch hands the same object for a pod until the pod changes: so does this source (PodConfig
    // then neither copies nor compares it again), for each version of a pod one LoadedPod.
    const made = new WeakMap<V1Pod, LoadedPod>();
    await this.o.watch(
      {
        pods: (pods) => {
          const loaded: LoadedPod[] = [];
          const onServer = new Set(pods.map((p) => p.metadata?.uid ?? ''));
          for (const u of this.rejected.keys()) if (!onServer.has(u)) this.rejected.delete(u);
          // Pods that finished here stay (never run again: computePodActions starts nothing in them) until deleted.
          const finished = pods.filter((p) => finishedApiPod(p) && this.admitted.has(p.metadata?.uid ?? ''));
          for (const p of [...this.admit(pods.filter(runnableApiPod), finished), ...finished]) {
            const uid = p.metadata?.uid ?? '';
            const again = made.get(p);
            if (again !== undefined) {
              loaded.push(again);
              continue;
            }
            if (!seen.has(uid)) seen.set(uid, (this.o.now?.() ?? new Date()).toISOString());
            const pod: V1Pod = {
              ...p,
              metadata: {
                ...p.metadata,
                annotations: { ...p.metadata?.annotations, [CONFIG_SOURCE_ANNOTATION]: API_SOURCE, [CONFIG_SEEN_ANNOTATION]: seen.get(uid)! },
              },
            };
            const lp: LoadedPod = { pod, source: { kind: 'api', path: `${this.o.server}/api/v1/namespaces/${p.metadata?.namespace}/pods/${p.metadata?.name}` } };
            made.set(p, lp);
            loaded.push(lp);
          }
          sink.snapshot({ pods: loaded, objects: { configMaps: [], secrets: [] }, errors: [] });
          this.latest = pods;
          this.watchState = 'watching';
          this.watchError = null;
          for (const fn of this.listeners) fn();
        },
        error: (message) => {
          this.watchState = 'retrying';
          this.watchError = message;
          sink.failed([new ManifestError({ file: this.o.server, message })]);
        },
      },
      signal,
    );
  }
}
