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

/**
 * canonicalJson(a) === canonicalJson(b), without building either string:
 * change detection of whole pods (the pod config compares every changed
 * pod's spec and status) allocates nothing when it walks them.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || a instanceof Date || b instanceof Date) {
    return canonicalJson(a) === canonicalJson(b);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i] === undefined ? null : a[i], b[i] === undefined ? null : b[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let n = 0;
  for (const k in ao) {
    if (!Object.hasOwn(ao, k) || ao[k] === undefined) continue;
    n++;
    if (!Object.hasOwn(bo, k) || bo[k] === undefined || !jsonEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (Object.hasOwn(bo, k) && bo[k] !== undefined) n--;
  return n === 0;
}
