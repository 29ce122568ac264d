/**
 * JSON.stringify replacer: bigint (CRI nanosecond timestamps) as strings,
 * Date as RFC 3339 with second precision, as the Kubernetes API writes times.
 */
export function jsonReplacer(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown> | null)?.[key];
  if (raw instanceof Date) return raw.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return typeof value === 'bigint' ? value.toString() : value;
}

/**
 * JSON with object keys sorted at every level and undefined members dropped:
 * one byte sequence per value, whatever the key order of the source (the
 * container hash, the static pod UID, change detection).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
