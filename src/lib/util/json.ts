/**
 * JSON.stringify replacer: bigint (CRI nanosecond timestamps) as strings,
 * Date as RFC 3339 with second precision, as the Kubernetes API writes times.
 */
export function jsonReplacer(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown> | null)?.[key];
  if (raw instanceof Date) return raw.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return typeof value === 'bigint' ? value.toString() : value;
}
