/**
 * Image pulls by pull policy (pkg/kubelet/images/image_manager.go), with the
 * kubelet's waiting reasons and messages.
 */
import type { V1Container } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import { errorMessage, KletError } from '../errors.js';
import { defaultImagePullPolicy, isValidImageReference, withDefaultTag } from '../image/reference.js';
import { log } from '../log.js';
import { recordPulledImage } from './pulled-images.js';

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

/**
 * Make sure the container's image is present per its pull policy and return
 * the image ID to run. Errors carry the waiting reason to show. With
 * `rootDir`, a pull that brought an image the runtime did not have is
 * recorded there (pulled-images.ts): image GC removes only such images.
 */
export async function ensureImageExists(
  cri: CriClient,
  c: V1Container,
  opts: { signal?: AbortSignal; rootDir?: string } = {},
): Promise<{ imageRef: string; pulled: boolean }> {
  const image = c.image ?? '';
  if (!isValidImageReference(image)) {
    throw new ImageError('InvalidImageName', `Failed to apply default image tag "${image}": invalid reference format`);
  }
  const policy = c.imagePullPolicy ?? defaultImagePullPolicy(image);
  const ref = withDefaultTag(image);
  const present = await cri.imageStatus({ image: { image: ref } }, opts);
  const presentId = present.image?.id ?? '';
  if (policy !== 'Always' && presentId !== '') return { imageRef: presentId, pulled: false };
  if (policy === 'Never') {
    throw new ImageError('ErrImageNeverPull', `Container image "${image}" is not present with pull policy of Never`);
  }
  try {
    const res = await cri.pullImage({ image: { image: ref } }, opts);
    const after = await cri.imageStatus({ image: { image: ref } }, opts);
    const imageRef = after.image?.id || res.imageRef;
    if (opts.rootDir !== undefined && presentId === '') {
      // A pod that runs matters more than the record: image GC then only keeps this image.
      await recordPulledImage(opts.rootDir, ref, imageRef).catch((err: unknown) => log.warn(`image ${ref}: the pull is not recorded: ${errorMessage(err)}`));
    }
    return { imageRef, pulled: true };
  } catch (err) {
    // Policy Always with the image present locally: a failed pull is still a
    // failed pull (the kubelet does not fall back), but these machines have no
    // registry, so name the cause plainly.
    throw new ImageError('ErrImagePull', `failed to pull image "${image}": ${errorMessage(err)}`);
  }
}
