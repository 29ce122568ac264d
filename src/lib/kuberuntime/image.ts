/**
 * Image pulls by pull policy (pkg/kubelet/images/image_manager.go), with the
 * kubelet's waiting reasons and messages.
 */
import type { V1Container } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import { errorMessage, KletError } from '../errors.js';

export type ImageErrorReason = 'ErrImagePull' | 'ErrImageNeverPull' | 'InvalidImageName' | 'ImagePullBackOff';

export class ImageError extends KletError {
  override readonly code: string = 'IMAGE_ERROR';
  constructor(
    readonly reason: ImageErrorReason,
    message: string,
  ) {
    super(message);
  }
}

/** Default pull policy from the tag, as the API server defaults it. */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  const at = image.indexOf('@');
  const name = at === -1 ? image : image.slice(0, at);
  const last = name.split('/').pop() ?? name;
  const tag = last.includes(':') ? last.slice(last.lastIndexOf(':') + 1) : '';
  // No tag and no digest means :latest; a digest alone pins the image.
  if (tag === '') return at === -1 ? 'Always' : 'IfNotPresent';
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}

const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const DOMAIN = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?';
const REFERENCE = new RegExp(
  `^(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*(?::[\\w][\\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`,
);

/** The distribution reference grammar (docker/distribution reference.go). */
export function isValidImageReference(image: string): boolean {
  return image.length > 0 && image.length <= 255 && REFERENCE.test(image);
}

/** Normalize like the runtime does for lookups: add the :latest tag when there is none. */
export function normalizeImageRef(image: string): string {
  if (image.includes('@')) return image;
  const last = image.split('/').pop() ?? image;
  return last.includes(':') ? image : `${image}:latest`;
}

/**
 * Make sure the container's image is present per its pull policy and return
 * the image ID to run. Errors carry the waiting reason to show.
 */
export async function ensureImageExists(
  cri: CriClient,
  c: V1Container,
  opts: { signal?: AbortSignal } = {},
): Promise<{ imageRef: string; pulled: boolean }> {
  const image = c.image ?? '';
  if (!isValidImageReference(image)) {
    throw new ImageError('InvalidImageName', `Failed to apply default image tag "${image}": invalid reference format`);
  }
  const policy = c.imagePullPolicy ?? defaultPullPolicy(image);
  const ref = normalizeImageRef(image);
  const present = await cri.imageStatus({ image: { image: ref } }, opts);
  const presentId = present.image?.id ?? '';
  if (policy !== 'Always' && presentId !== '') return { imageRef: presentId, pulled: false };
  if (policy === 'Never') {
    throw new ImageError('ErrImageNeverPull', `Container image "${image}" is not present with pull policy of Never`);
  }
  try {
    const res = await cri.pullImage({ image: { image: ref } }, opts);
    const after = await cri.imageStatus({ image: { image: ref } }, opts);
    return { imageRef: after.image?.id || res.imageRef, pulled: true };
  } catch (err) {
    // Policy Always with the image present locally: a failed pull is still a
    // failed pull (the kubelet does not fall back), but these machines have no
    // registry, so name the cause plainly.
    throw new ImageError('ErrImagePull', `failed to pull image "${image}": ${errorMessage(err)}`);
  }
}
