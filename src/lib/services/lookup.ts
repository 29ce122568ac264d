/**
 * Finding the pods a user names on the command line: klet's records under
 * the root dir, plus this klet's pods only the runtime knows (from CRI labels).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { resolvePodRef } from '../pod/ref.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { listPodRecords } from '../kuberuntime/poddir.js';
import { listRuntimePods } from '../kuberuntime/runtime-status.js';
import type { SyncContext } from '../kuberuntime/sync-pod.js';

export type LookupContext = Pick<SyncContext, 'cri' | 'rootDir' | 'nodeName' | 'signal'>;

export interface KnownPod {
  namespace: string;
  name: string;
  uid: string;
  /** The spec klet synced, when it has a record. */
  spec?: V1Pod;
}

export async function knownPods(ctx: LookupContext): Promise<KnownPod[]> {
  const recs = await listPodRecords(ctx.rootDir, ctx.nodeName);
  const out = new Map<string, KnownPod>();
  for (const r of recs) {
    const md = r.pod.metadata ?? {};
    out.set(md.uid ?? '', { namespace: md.namespace ?? 'default', name: md.name ?? '', uid: md.uid ?? '', spec: r.pod });
  }
  for (const p of await listRuntimePods(ctx.cri, { signal: ctx.signal, owner: instanceSelector(ctx) })) {
    if (!out.has(p.uid)) out.set(p.uid, { namespace: p.namespace, name: p.name, uid: p.uid });
  }
  return [...out.values()];
}

/** Resolve POD arguments (ns/name, name, UID prefix) to known pods; unknown or ambiguous ones throw. */
export async function findPods(ctx: LookupContext, refs: string[]): Promise<KnownPod[]> {
  const all = await knownPods(ctx);
  return refs.map((r) => resolvePodRef(r, all));
}
