/**
 * The container spec hash stored in the io.kubernetes.container.hash
 * annotation: a 32-bit FNV-1a of the container's canonical JSON, printed in
 * hex as the kubelet prints its own. A running container whose hash differs
 * from its spec's is restarted.
 */
import type { V1Container } from '@kubernetes/client-node';

/** JSON with object keys sorted and undefined values dropped, so equal specs hash equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function containerHash(c: V1Container): string {
  return fnv1a32(canonicalJson(c)).toString(16);
}
