/**
 * `klet delete`: delete named pods (or every pod klet knows) gracefully,
 * removing their sandboxes, containers, pod dirs and logs.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { deletePod } from '../kuberuntime/lifecycle.js';
import { syncContext, type ServiceDeps } from './deps.js';
import { findPods, knownPods } from './lookup.js';

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
  const deleted = await Promise.all(
    pods.map(async (p) => {
      const pod: V1Pod = p.spec ?? { metadata: { uid: p.uid, name: p.name, namespace: p.namespace } };
      await deletePod(ctx, pod, { gracePeriodSeconds: opts.gracePeriodSeconds });
      return { namespace: p.namespace, name: p.name, uid: p.uid };
    }),
  );
  return { deleted };
}
