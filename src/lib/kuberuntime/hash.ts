/**
 * The container spec hash stored in the io.kubernetes.container.hash
 * annotation: a 32-bit FNV-1a of the container's canonical JSON, printed in
 * hex as the kubelet prints its own. A running container whose hash differs
 * from its spec's is restarted. `resources` is left out, as the kubelet's
 * HashContainer leaves it out: an in-place resize changes it without a
 * restart (resize.ts).
 */
import type { V1Container } from '@kubernetes/client-node';
import { canonicalJson } from '../util/json.js';

export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function containerHash(c: V1Container): string {
  const { resources: _resources, ...rest } = c;
  return fnv1a32(canonicalJson(rest)).toString(16);
}
