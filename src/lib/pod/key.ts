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
