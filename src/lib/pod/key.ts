/**
 * A pod's key, `namespace/name` (the kubelet's format.Pod without the UID):
 * how klet names a pod in events, progress, errors and de-duplication.
 */
export const DEFAULT_NAMESPACE = 'default';

/** `namespace/name` of a pod or object (namespace `default` when unset). */
export function podKey(obj: { metadata?: { namespace?: string; name?: string } }): string {
  return namespacedName(obj.metadata?.namespace ?? DEFAULT_NAMESPACE, obj.metadata?.name ?? '');
}

export function namespacedName(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The kubelet's format.Pod: `name_namespace(uid)`, as its messages name a pod. */
export function podDesc(pod: { metadata?: { namespace?: string; name?: string; uid?: string } }): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? DEFAULT_NAMESPACE}(${pod.metadata?.uid ?? ''})`;
}
