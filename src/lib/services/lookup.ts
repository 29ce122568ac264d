/**
 * Finding the pods a user names on the command line: klet's records under
 * the root dir, plus this klet's pods only the runtime knows (from CRI labels).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { PodNotFoundError, resolvePodRef, type PodRefTarget } from '../pod/ref.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { listOtherNodeRecords, listPodRecords } from '../kuberuntime/poddir.js';
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

/**
 * Resolve POD arguments (ns/name, name, UID prefix) to known pods; unknown or
 * ambiguous ones throw. A pod this root dir ran for another node name is not
 * this node's (klet status, delete --all and sync leave it alone too), but the
 * error says whose it is rather than only "not found".
 */
export async function findPods(ctx: LookupContext, refs: string[]): Promise<KnownPod[]> {
  const all = await knownPods(ctx);
  const out: KnownPod[] = [];
  for (const ref of refs) out.push(await resolveOwnPod(ctx, ref, all));
  return out;
}

/** resolvePodRef among this node's pods; not found, the error says so when `ref` is another node name's pod of this root dir. */
export async function resolveOwnPod<T extends PodRefTarget>(ctx: Pick<LookupContext, 'rootDir' | 'nodeName'>, ref: string, pods: readonly T[]): Promise<T> {
  try {
    return resolvePodRef(ref, pods);
  } catch (err) {
    if (!(err instanceof PodNotFoundError)) throw err;
    const node = await otherNodeOf(ctx, ref);
    throw node === undefined ? err : new PodNotFoundError(ref, err.candidates, pods.length, { node, thisNode: ctx.nodeName });
  }
}

/** The node name of the record `ref` names among this root dir's pods of other node names, if one does. */
async function otherNodeOf(ctx: Pick<LookupContext, 'rootDir' | 'nodeName'>, ref: string): Promise<string | undefined> {
  const others = (await listOtherNodeRecords(ctx.rootDir, ctx.nodeName)).map((r) => ({
    namespace: r.pod.metadata?.namespace ?? 'default',
    name: r.pod.metadata?.name ?? '',
    uid: r.pod.metadata?.uid ?? '',
    node: r.pod.spec?.nodeName ?? '',
  }));
  try {
    return resolvePodRef(ref, others).node;
  } catch {
    return undefined;
  }
}
