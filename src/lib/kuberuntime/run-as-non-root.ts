/**
 * runAsNonRoot, as the kubelet checks it before it creates a container
 * (kuberuntime's verifyRunAsNonRoot, with the image's user from
 * getImageUser): the container's security context over the pod's; an
 * explicit runAsUser decides alone; otherwise the image's user, and an
 * image that names no user runs as root. A refusal is the container's
 * CreateContainerConfigError, in the kubelet's words. Pure.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { ContainerConfigError } from './env.js';

/** The image's user as the runtime's ImageStatus reports it: a numeric uid, or a name. */
export interface ImageUser {
  uid?: number;
  username?: string;
}

/** The effective runAsNonRoot and runAsUser (the container's over the pod's, DetermineEffectiveSecurityContext). */
function effective(pod: V1Pod, c: V1Container): { runAsNonRoot: boolean; runAsUser: number | undefined } {
  const podSc = pod.spec?.securityContext;
  const sc = c.securityContext;
  return { runAsNonRoot: (sc?.runAsNonRoot ?? podSc?.runAsNonRoot) === true, runAsUser: sc?.runAsUser ?? podSc?.runAsUser };
}

/** Does the check need the image's user (runAsNonRoot without an explicit runAsUser)? */
export function needsImageUser(pod: V1Pod, c: V1Container): boolean {
  const e = effective(pod, c);
  return e.runAsNonRoot && e.runAsUser === undefined;
}

/** Throws the kubelet's ContainerConfigError when the container would run as root under runAsNonRoot. */
export function verifyRunAsNonRoot(pod: V1Pod, c: V1Container, image: ImageUser | undefined): void {
  const e = effective(pod, c);
  if (!e.runAsNonRoot) return;
  const md = pod.metadata ?? {};
  const who = `(pod: "${md.name ?? ''}_${md.namespace ?? 'default'}(${md.uid ?? ''})", container: ${c.name})`;
  if (e.runAsUser !== undefined) {
    if (e.runAsUser === 0) throw new ContainerConfigError(`container's runAsUser breaks non-root policy ${who}`);
    return;
  }
  // getImageUser: neither a uid nor a name means root.
  const uid = image?.uid ?? (image?.username ? undefined : 0);
  if (uid === 0) throw new ContainerConfigError(`container has runAsNonRoot and image will run as root ${who}`);
  if (uid === undefined && image?.username) {
    throw new ContainerConfigError(`container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root ${who}`);
  }
}
