/**
 * What the kubelet's file and http pod sources do to a manifest before it
 * becomes a pod on the node (pkg/kubelet/config/common.go applyDefaults):
 *
 * - the UID is an md5 hash of the defaulted pod and its source, so it is
 *   stable across restarts and changes whenever the manifest, its path or
 *   URL, or the node changes (that is how a changed manifest is seen as a
 *   new pod);
 * - the name gets `-<node name>` appended, so that mirror pods of several
 *   nodes do not collide in the API;
 * - a metadata.uid written in the manifest is kept, as the kubelet keeps it
 *   (an edited manifest then updates the same pod in place);
 * - namespace defaults to `default`, spec.nodeName is this node;
 * - annotations record the source, the hash and when it was first seen;
 * - file pods tolerate every NoExecute taint, so node problems never
 *   evict them (the node *is* where they must run);
 * - status.phase starts as Pending.
 *
 * Deliberate differences from the kubelet:
 * - the node name is hashed for http sources too (the kubelet hashes only
 *   "url:<url>"), so one URL served to several nodes gives distinct UIDs.
 * - a pod with generateName but no name is an error: the kubelet would
 *   produce a name like "-node1", which then fails validation obscurely.
 */
import { createHash } from 'node:crypto';
import type { V1Pod, V1Toleration } from '@kubernetes/client-node';
import { serializeModel } from './decode.js';
import { cloneModel, DEFAULT_NAMESPACE } from './defaults.js';
import { type FieldError, FieldPath, forbidden, required } from './field.js';
import { canonicalJson } from '../util/json.js';

export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';
/** Set by the kubelet on a static pod's mirror pod in the API (kubetypes.ConfigMirrorAnnotationKey). */
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** Is this a static pod (from a file or http source), as kubetypes.IsStaticPod? */
export function isStaticPod(p: V1Pod): boolean {
  const src = p.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION];
  return src !== undefined && src !== 'api';
}

/** Where a static pod came from: a manifest file (absolute path) or a URL. */
export interface StaticPodSource {
  /** 'api' only types the ManifestSource of API pods, which never become static pods. */
  kind: 'file' | 'http' | 'api';
  path: string;
}

/** The toleration the kubelet gives every file pod. */
const TOLERATE_NO_EXECUTE: Readonly<V1Toleration> = { operator: 'Exists', effect: 'NoExecute' };

/**
 * The static pod UID: hex md5 of
 *   canonicalJson(wire form of the defaulted pod, without metadata.uid)
 *   + "host:<nodeName>"
 *   + "file:<absolute path>" or "url:<url>".
 * Call it with the API-defaulted pod as read from the manifest, before the
 * static pod changes (name suffix, annotations, ...), as the kubelet does.
 */
export function staticPodUID(pod: V1Pod, source: StaticPodSource, nodeName: string): string {
  const copy = cloneModel(pod);
  if (copy.metadata !== undefined) delete copy.metadata.uid;
  const hash = createHash('md5');
  hash.update(canonicalJson(serializeModel(copy, 'V1Pod')));
  hash.update(`host:${nodeName}`);
  hash.update(source.kind === 'file' ? `file:${source.path}` : `url:${source.path}`);
  return hash.digest('hex');
}

/** helper.AddOrUpdateTolerationInPod: replace matching tolerations, else append. */
export function addOrUpdateToleration(tolerations: readonly V1Toleration[] | undefined, toleration: V1Toleration): V1Toleration[] {
  const same = (a: V1Toleration, b: V1Toleration): boolean =>
    (a.key ?? '') === (b.key ?? '') &&
    (a.effect ?? '') === (b.effect ?? '') &&
    (a.operator ?? '') === (b.operator ?? '') &&
    (a.value ?? '') === (b.value ?? '');
  const existing = tolerations ?? [];
  if (existing.some((t) => same(t, toleration) && t.tolerationSeconds === toleration.tolerationSeconds)) return [...existing];
  let updated = false;
  const out = existing.map((t) => {
    if (!same(t, toleration)) return t;
    updated = true;
    return { ...toleration };
  });
  if (!updated) out.push({ ...toleration });
  return out;
}

export interface StaticPodOptions {
  nodeName: string;
  source: StaticPodSource;
  /** Time for the config.seen annotation; defaults to now. */
  seen?: Date;
}

export interface StaticPodResult {
  /** The static pod; undefined when `errors` is not empty. */
  pod: V1Pod | undefined;
  errors: FieldError[];
}

/** Turn an API-defaulted manifest pod into the static pod this node runs. Pure. */
export function toStaticPod(pod: V1Pod, opts: StaticPodOptions): StaticPodResult {
  const name = pod.metadata?.name ?? '';
  if (name === '') {
    const detail =
      (pod.metadata?.generateName ?? '') !== ''
        ? 'static pods need a name; generateName is not supported'
        : 'name or generateName is required';
    return { pod: undefined, errors: [required(FieldPath.of('metadata', 'name'), detail)] };
  }
  // A pod read back from an API server (`kubectl get pod -o yaml` of a
  // static pod's mirror) carries the mirror annotation. The kubelet's pod
  // manager files such a pod as a mirror pod (kubetypes.IsMirrorPod) and,
  // with no static pod of its full name, skips it ("Unable to find pod for
  // mirror pod, skipping", at log level 2): it never runs. klet does not run
  // it either, and says why, naming the annotation.
  if (pod.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined) {
    const detail = 'a mirror pod (as kubectl get -o yaml writes a static pod back) is never run from a manifest, as the kubelet skips it: remove this annotation';
    return { pod: undefined, errors: [forbidden(FieldPath.of('metadata', 'annotations').key(CONFIG_MIRROR_ANNOTATION), detail)] };
  }
  const uid = (pod.metadata?.uid ?? '') !== '' ? (pod.metadata?.uid as string) : staticPodUID(pod, opts.source, opts.nodeName);
  const out = cloneModel(pod);
  const metadata = (out.metadata ??= {});
  metadata.uid = uid;
  metadata.name = `${name}-${opts.nodeName.toLowerCase()}`;
  if ((metadata.namespace ?? '') === '') metadata.namespace = DEFAULT_NAMESPACE;
  metadata.annotations = {
    ...metadata.annotations,
    [CONFIG_HASH_ANNOTATION]: uid,
    [CONFIG_SOURCE_ANNOTATION]: opts.source.kind,
    [CONFIG_SEEN_ANNOTATION]: (opts.seen ?? new Date()).toISOString(),
  };
  const spec = (out.spec ??= { containers: [] });
  spec.nodeName = opts.nodeName;
  if (opts.source.kind === 'file') spec.tolerations = addOrUpdateToleration(spec.tolerations, TOLERATE_NO_EXECUTE);
  out.status = { ...out.status, phase: 'Pending' };
  return { pod: out, errors: [] };
}

/**
 * The API objects a pod references, as the plural resource of the first
 * found (the kubelet's podutil.HasAPIObjectReference, order kept), or
 * undefined. A kubelet joined to a cluster rejects static pods that
 * reference any (PreventStaticPodAPIReferences, on by default since 1.34):
 * NodeRestriction would refuse their mirror pods and the Node authorizer
 * their reads.
 */
export function apiObjectReference(pod: V1Pod): string | undefined {
  const spec = pod.spec;
  if (!spec) return undefined;
  if ((spec.serviceAccountName ?? '') !== '') return 'serviceaccounts';
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
  const vols = spec.volumes ?? [];
  const secrets =
    (spec.imagePullSecrets ?? []).length > 0 ||
    containers.some((c) => (c.envFrom ?? []).some((f) => f.secretRef) || (c.env ?? []).some((e) => e.valueFrom?.secretKeyRef)) ||
    vols.some(
      (v) =>
        v.secret ||
        (v.projected?.sources ?? []).some((s) => s.secret) ||
        v.azureFile ||
        v.cephfs?.secretRef ||
        v.cinder?.secretRef ||
        v.flexVolume?.secretRef ||
        v.iscsi?.secretRef ||
        v.rbd?.secretRef ||
        v.scaleIO?.secretRef ||
        v.storageos?.secretRef ||
        v.csi?.nodePublishSecretRef,
    );
  if (secrets) return 'secrets';
  const configMaps =
    containers.some((c) => (c.envFrom ?? []).some((f) => f.configMapRef) || (c.env ?? []).some((e) => e.valueFrom?.configMapKeyRef)) ||
    vols.some((v) => v.configMap || (v.projected?.sources ?? []).some((s) => s.configMap));
  if (configMaps) return 'configmaps';
  if ((spec.resourceClaims ?? []).length > 0) return 'resourceclaims';
  for (const v of vols) {
    if (v.persistentVolumeClaim || v.ephemeral) return 'persistentvolumeclaims';
    for (const s of v.projected?.sources ?? []) {
      if (s.clusterTrustBundle) return 'clustertrustbundles';
      if (s.serviceAccountToken) return 'serviceaccounts';
      if (s.podCertificate) return 'podcertificaterequests';
    }
  }
  return undefined;
}
