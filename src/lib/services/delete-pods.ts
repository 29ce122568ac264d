/**
 * `klet delete`: delete named pods (or every pod klet knows) gracefully,
 * removing their sandboxes, containers, pod dirs and logs.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { deletePod, listPodRuntimeObjects } from '../kuberuntime/lifecycle.js';
import { listPodRecordUids } from '../kuberuntime/poddir.js';
import { mapLimit } from '../util/limit.js';
import { syncContext, type ServiceDeps } from './deps.js';
import { findPods, knownPods } from './lookup.js';

/** Pods deleted at the same time (each mostly waits on its containers' grace period and the runtime). */
export const DELETE_PARALLELISM = 32;

export interface DeletePodsOptions {
  /** Pods as the user named them (ns/name, name, UID prefix); ignored with `all`. */
  refs: string[];
  all: boolean;
  /** Seconds between SIGTERM and SIGKILL; default: each pod's terminationGracePeriodSeconds. */
  gracePeriodSeconds?: number;
}

export interface DeletePodsResult {
  deleted: { namespace: string; name: string; uid: string }[];
}

export async function deletePods(opts: DeletePodsOptions, deps: ServiceDeps): Promise<DeletePodsResult> {
  const ctx = syncContext(deps);
  const pods = opts.all ? await knownPods(ctx) : await findPods(ctx, opts.refs);
  let deleted: DeletePodsResult['deleted'] = [];
  if (pods.length > 0) {
    // The runtime listed once for every pod, not per pod.
    const objects = await listPodRuntimeObjects(ctx);
    deleted = await mapLimit(pods, DELETE_PARALLELISM, async (p) => {
      const pod: V1Pod = p.spec ?? { metadata: { uid: p.uid, name: p.name, namespace: p.namespace } };
      await deletePod(ctx, pod, { gracePeriodSeconds: opts.gracePeriodSeconds, objects: objects.get(p.uid) ?? { sandboxes: [], containers: [] } });
      return { namespace: p.namespace, name: p.name, uid: p.uid };
    });
  }
  // --all: the pod cgroups of pods this root dir no longer has (a sync stopped between making a pod's cgroup and
  // recording the pod again after a delete), as the kubelet's cleanupOrphanedPodCgroups. A pod dir (another node
  // name's pod, one a running sync has just admitted again) keeps its cgroup; so does one something runs in.
  if (opts.all) await (await import('../cm/manager.js')).removeOrphanedPodCgroups(deps.rootDir, await listPodRecordUids(deps.rootDir));
  return { deleted };
}
