/**
 * The kubelet's CRI labels and annotations (pkg/kubelet/kuberuntime/labels.go).
 * crictl, the kubelet and people read these to map CRI objects back to pods;
 * klet writes and reads exactly the same keys.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';

export const POD_NAME_LABEL = 'io.kubernetes.pod.name';
export const POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
export const POD_UID_LABEL = 'io.kubernetes.pod.uid';
export const CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';

export const POD_DELETION_GRACE_PERIOD_ANNOTATION = 'io.kubernetes.pod.deletionGracePeriod';
export const POD_TERMINATION_GRACE_PERIOD_ANNOTATION = 'io.kubernetes.pod.terminationGracePeriod';
export const CONTAINER_HASH_ANNOTATION = 'io.kubernetes.container.hash';
export const CONTAINER_RESTART_COUNT_ANNOTATION = 'io.kubernetes.container.restartCount';
export const CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION = 'io.kubernetes.container.terminationMessagePath';
export const CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION = 'io.kubernetes.container.terminationMessagePolicy';
export const CONTAINER_PRESTOP_HANDLER_ANNOTATION = 'io.kubernetes.container.preStopHandler';
export const CONTAINER_PORTS_ANNOTATION = 'io.kubernetes.container.ports';
/** klet's own: whether a container is an init container (the kubelet tells by name from the spec). */
export const CONTAINER_TYPE_ANNOTATION = 'io.kubernetes.container.type';

/** The kubelet's io.kubernetes.container.type values. */
export type ContainerType = 'init' | 'regular' | 'ephemeral';

/**
 * klet's own label on every sandbox and container it creates: which klet
 * instance (root dir + node name) owns it. Every list klet acts on is
 * filtered by it, so klet never stops, removes, adopts or garbage-collects
 * what another klet root dir or the real kubelet runs on the same runtime.
 */
export const KLET_INSTANCE_LABEL = 'io.klet.instance';

/** The value of KLET_INSTANCE_LABEL for a root dir and node name: a short hash (a valid label value). */
export function kletInstance(rootDir: string, nodeName: string): string {
  return createHash('sha256').update(`${path.resolve(rootDir)}\n${nodeName}`).digest('hex').slice(0, 20);
}

/** The CRI label selector matching exactly what this klet instance created. */
export function instanceSelector(owner: { rootDir: string; nodeName: string }): Record<string, string> {
  return { [KLET_INSTANCE_LABEL]: kletInstance(owner.rootDir, owner.nodeName) };
}

/** Sandbox labels: the pod's labels plus name, namespace and UID (and klet's owner label, when given). */
export function podSandboxLabels(pod: V1Pod, instance?: string): Record<string, string> {
  return {
    ...(pod.metadata?.labels ?? {}),
    [POD_NAME_LABEL]: pod.metadata?.name ?? '',
    [POD_NAMESPACE_LABEL]: pod.metadata?.namespace ?? 'default',
    [POD_UID_LABEL]: pod.metadata?.uid ?? '',
    ...(instance !== undefined ? { [KLET_INSTANCE_LABEL]: instance } : {}),
  };
}

/** Sandbox annotations: the pod's annotations. */
export function podSandboxAnnotations(pod: V1Pod): Record<string, string> {
  return { ...(pod.metadata?.annotations ?? {}) };
}

export function containerLabels(pod: V1Pod, container: V1Container, instance?: string): Record<string, string> {
  return {
    [POD_NAME_LABEL]: pod.metadata?.name ?? '',
    [POD_NAMESPACE_LABEL]: pod.metadata?.namespace ?? 'default',
    [POD_UID_LABEL]: pod.metadata?.uid ?? '',
    [CONTAINER_NAME_LABEL]: container.name,
    ...(instance !== undefined ? { [KLET_INSTANCE_LABEL]: instance } : {}),
  };
}

export function containerAnnotations(
  pod: V1Pod,
  container: V1Container,
  opts: { hash: string; restartCount: number; type: ContainerType },
): Record<string, string> {
  const a: Record<string, string> = {
    [CONTAINER_HASH_ANNOTATION]: opts.hash,
    [CONTAINER_RESTART_COUNT_ANNOTATION]: String(opts.restartCount),
    [CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION]: container.terminationMessagePath ?? '/dev/termination-log',
    [CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION]: container.terminationMessagePolicy ?? 'File',
    [CONTAINER_TYPE_ANNOTATION]: opts.type,
  };
  if (pod.metadata?.deletionGracePeriodSeconds !== undefined) {
    a[POD_DELETION_GRACE_PERIOD_ANNOTATION] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec?.terminationGracePeriodSeconds !== undefined) {
    a[POD_TERMINATION_GRACE_PERIOD_ANNOTATION] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.lifecycle?.preStop !== undefined) {
    a[CONTAINER_PRESTOP_HANDLER_ANNOTATION] = JSON.stringify(container.lifecycle.preStop);
  }
  if (container.ports !== undefined && container.ports.length > 0) {
    a[CONTAINER_PORTS_ANNOTATION] = JSON.stringify(container.ports);
  }
  return a;
}

/** What klet reads back from a CRI container's labels and annotations. */
export interface ContainerLabelInfo {
  podName: string;
  podNamespace: string;
  podUid: string;
  containerName: string;
  hash: string;
  restartCount: number;
  type: ContainerType;
  terminationMessagePath: string;
  terminationMessagePolicy: string;
  podTerminationGracePeriod: number | null;
}

export function readContainerLabels(
  labels: Record<string, string>,
  annotations: Record<string, string>,
): ContainerLabelInfo {
  const grace = annotations[POD_TERMINATION_GRACE_PERIOD_ANNOTATION];
  return {
    podName: labels[POD_NAME_LABEL] ?? '',
    podNamespace: labels[POD_NAMESPACE_LABEL] ?? '',
    podUid: labels[POD_UID_LABEL] ?? '',
    containerName: labels[CONTAINER_NAME_LABEL] ?? '',
    hash: annotations[CONTAINER_HASH_ANNOTATION] ?? '',
    restartCount: Number.parseInt(annotations[CONTAINER_RESTART_COUNT_ANNOTATION] ?? '0', 10) || 0,
    type: annotations[CONTAINER_TYPE_ANNOTATION] === 'init' ? 'init' : annotations[CONTAINER_TYPE_ANNOTATION] === 'ephemeral' ? 'ephemeral' : 'regular',
    terminationMessagePath: annotations[CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION] ?? '',
    terminationMessagePolicy: annotations[CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION] ?? '',
    podTerminationGracePeriod: grace === undefined ? null : Number.parseInt(grace, 10),
  };
}
