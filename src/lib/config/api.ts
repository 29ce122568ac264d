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
import { CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../pod/static-pod.js';
import type { PodSource, SourceSink } from './source.js';

export const API_SOURCE = 'api';
const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** The list+watch an ApiSource runs (PodApi.watchNodePods for one node). */
export type WatchNodePods = (on: { pods(pods: V1Pod[]): void; error(message: string): void }, signal: AbortSignal) => Promise<void>;

/** Should the node run this API pod now? */
export function runnableApiPod(p: V1Pod): boolean {
  if (p.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined) return false;
  if (p.metadata?.deletionTimestamp !== undefined && p.metadata?.deletionTimestamp !== null) return false;
  const phase = p.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

export class ApiSource implements PodSource {
  readonly name = API_SOURCE;

  constructor(private readonly o: { server: string; watch: WatchNodePods; now?: () => Date }) {}

  async run(sink: SourceSink, signal: AbortSignal): Promise<void> {
    const seen = new Map<string, string>();
    await this.o.watch(
      {
        pods: (pods) => {
          const loaded: LoadedPod[] = [];
          for (const p of pods.filter(runnableApiPod)) {
            const uid = p.metadata?.uid ?? '';
            if (!seen.has(uid)) seen.set(uid, (this.o.now?.() ?? new Date()).toISOString());
            const pod: V1Pod = {
              ...p,
              metadata: {
                ...p.metadata,
                annotations: { ...p.metadata?.annotations, [CONFIG_SOURCE_ANNOTATION]: API_SOURCE, [CONFIG_SEEN_ANNOTATION]: seen.get(uid)! },
              },
            };
            loaded.push({ pod, source: { kind: 'api', path: `${this.o.server}/api/v1/namespaces/${p.metadata?.namespace}/pods/${p.metadata?.name}` } });
          }
          sink.snapshot({ pods: loaded, objects: { configMaps: [], secrets: [] }, errors: [] });
        },
        error: (message) => sink.failed([new ManifestError({ file: this.o.server, message })]),
      },
      signal,
    );
  }
}
