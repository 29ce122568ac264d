/**
 * Checks a one-shot run makes before it creates anything for a pod.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { ContainerConfigError, makeEnvironment } from '../kuberuntime/env.js';
import { defaultImagePullPolicy, isValidImageReference, withDefaultTag } from '../image/reference.js';
import { nodeHostIPs, type SyncContext } from '../kuberuntime/sync-pod.js';

export interface PreflightProblem {
  fieldPath: string;
  message: string;
}

/**
 * Checks run before anything is created for a pod, so a pod that cannot
 * start leaves nothing behind: images under pull policy Never must be
 * present, image names must parse, and ConfigMap/Secret references must
 * resolve. (The kubelet would create the sandbox and report the container
 * as waiting; a one-shot command fails early instead.)
 */
export async function preflightPod(ctx: SyncContext, pod: V1Pod): Promise<PreflightProblem[]> {
  const problems: PreflightProblem[] = [];
  const groups: [string, NonNullable<V1Pod['spec']>['containers']][] = [
    ['initContainers', pod.spec?.initContainers ?? []],
    ['containers', pod.spec?.containers ?? []],
  ];
  for (const [field, list] of groups) {
    for (const [i, c] of list.entries()) {
      const image = c.image ?? '';
      if (!isValidImageReference(image)) {
        problems.push({ fieldPath: `spec.${field}[${i}].image`, message: `invalid image reference "${image}"` });
        continue;
      }
      const policy = c.imagePullPolicy ?? defaultImagePullPolicy(image);
      if (policy === 'Never') {
        const st = await ctx.cri.imageStatus({ image: { image: withDefaultTag(image) } }, { signal: ctx.signal });
        if (!st.image?.id) {
          problems.push({
            fieldPath: `spec.${field}[${i}].image`,
            message: `image "${image}" is not present on this node and imagePullPolicy is Never (import it with: klet images import FILE)`,
          });
        }
      }
      try {
        makeEnvironment(c, {
          pod,
          podIPs: [],
          hostIPs: nodeHostIPs(ctx),
          nodeName: ctx.nodeName,
          objects: ctx.objects,
          nodeAllocatable: { cpuMillis: 1000, memoryBytes: 1, ephemeralStorageBytes: 0 },
        });
      } catch (err) {
        if (err instanceof ContainerConfigError) {
          problems.push({ fieldPath: `spec.${field}[${i}].${err.field ?? 'env'}`, message: err.message });
        } else throw err;
      }
    }
  }
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    const ns = pod.metadata?.namespace ?? 'default';
    if (v.configMap && !v.configMap.optional) {
      const found = ctx.objects.configMaps.some((c) => c.metadata?.name === v.configMap?.name && (c.metadata?.namespace ?? 'default') === ns);
      if (!found) problems.push({ fieldPath: `spec.volumes[${i}].configMap.name`, message: `configmap "${v.configMap.name}" not found` });
    }
    if (v.secret && !v.secret.optional) {
      const found = ctx.objects.secrets.some((s) => s.metadata?.name === v.secret?.secretName && (s.metadata?.namespace ?? 'default') === ns);
      if (!found) problems.push({ fieldPath: `spec.volumes[${i}].secret.secretName`, message: `secret "${v.secret.secretName}" not found` });
    }
  }
  return problems;
}
