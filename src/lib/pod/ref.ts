/**
 * Resolving the POD argument of commands the way users type it, coming from
 * kubectl and crictl:
 *
 * - `namespace/name`: that pod;
 * - `name`: the pod of that name in namespace `default`, as kubectl without
 *   `-n`. A pod of that name in another namespace is not picked silently:
 *   the error suggests it instead. Static pods keep their full
 *   `<name>-<node>` names, as in kubectl;
 * - a UID prefix of at least four hex digits (dashes optional), like a git
 *   short hash or crictl's truncated IDs, when no pod of that name exists in
 *   `default`; it must match exactly one pod.
 *
 * A name always wins over a UID prefix, so a pod named like hex stays
 * reachable by name.
 */
import { InputError, NotFoundError } from '../errors.js';

/** What a reference is resolved against; callers may carry more fields (the pod itself). */
export interface PodRefTarget {
  namespace: string;
  name: string;
  uid: string;
}

export const DEFAULT_NAMESPACE_FOR_REF = 'default';

/** Shortest UID prefix accepted, so that short names are not read as prefixes. */
export const MIN_UID_PREFIX = 4;
/** Most candidates named in an error. */
const MAX_SUGGESTIONS = 10;

/** Not found, with the closest pods for the error output and for callers. */
export class PodNotFoundError extends NotFoundError {
  /** `namespace/name` of similar pods, most similar first (at most 10). */
  readonly candidates: string[];
  /**
   * The node name the pod was run for, when it is one of this root dir's pods
   * under another node name (the caller may name the way to act on it).
   */
  readonly otherNode: string | undefined;

  constructor(ref: string, candidates: string[], known: number, other?: { node: string; thisNode: string }) {
    const suggestions = other
      ? [`it was run for node "${other.node}" under this root dir, not "${other.thisNode}"`]
      : candidates.length > 0
        ? [`did you mean ${candidates.join(', ')}?`]
        : known === 0
          ? ['there are no pods on this node']
          : [];
    super(other ? `pod "${ref}" not found for node "${other.thisNode}"` : `pod "${ref}" not found`, { suggestions });
    this.candidates = candidates;
    this.otherNode = other?.node;
  }
}

/**
 * The one pod `ref` names among `pods`, returned as given, so callers can
 * pass richer objects (`{ namespace, name, uid, pod }`) and get theirs back.
 *
 * @throws InputError for a malformed reference, or a UID prefix matching
 *   several pods (the message lists them with longer prefixes to type).
 * @throws PodNotFoundError (a NotFoundError) when nothing matches; its
 *   suggestions name up to 10 similar pods.
 */
export function resolvePodRef<T extends PodRefTarget>(ref: string, pods: readonly T[]): T {
  const text = ref.trim();
  if (text === '') throw new InputError('pod reference is empty: give NAME, NAMESPACE/NAME or a UID prefix');

  const slash = text.indexOf('/');
  if (slash >= 0) {
    const namespace = text.slice(0, slash);
    const name = text.slice(slash + 1);
    if (namespace === '' || name === '' || name.includes('/')) {
      throw new InputError(`pod reference "${ref}": expected NAMESPACE/NAME`);
    }
    const hit = pods.find((p) => p.namespace === namespace && p.name === name);
    if (hit !== undefined) return hit;
    throw notFound(text, { namespace, name }, pods);
  }

  const byName = pods.find((p) => p.namespace === DEFAULT_NAMESPACE_FOR_REF && p.name === text);
  if (byName !== undefined) return byName;

  if (isUidPrefix(text)) {
    const prefix = normalizeUid(text);
    const matches = pods.filter((p) => normalizeUid(p.uid).startsWith(prefix));
    if (matches.length === 1) return matches[0] as T;
    if (matches.length > 1) {
      const shown = matches.slice(0, MAX_SUGGESTIONS);
      const len = distinguishingLength(shown.map((p) => p.uid), Math.max(8, text.length + 1));
      const list = shown.map((p) => `${p.namespace}/${p.name} (${p.uid.slice(0, len)}...)`).join(', ');
      const more = matches.length > shown.length ? ` and ${matches.length - shown.length} more` : '';
      throw new InputError(`pod "${ref}" is ambiguous: matches ${list}${more}`, {
        suggestions: ['give more of the UID, or NAMESPACE/NAME'],
      });
    }
  }
  throw notFound(text, { namespace: DEFAULT_NAMESPACE_FOR_REF, name: text }, pods);
}

/** Whether `text` can be a UID prefix: hex digits and dashes, at least MIN_UID_PREFIX digits. */
export function isUidPrefix(text: string): boolean {
  return /^[0-9a-f-]+$/i.test(text) && normalizeUid(text).length >= MIN_UID_PREFIX;
}

function normalizeUid(uid: string): string {
  return uid.replaceAll('-', '').toLowerCase();
}

/** Shortest prefix length (at least `min`) at which all UIDs differ, capped at the longest UID. */
function distinguishingLength(uids: string[], min: number): number {
  const longest = Math.max(...uids.map((u) => u.length));
  for (let len = Math.min(min, longest); len < longest; len++) {
    if (new Set(uids.map((u) => u.slice(0, len))).size === uids.length) return len;
  }
  return longest;
}

function notFound(ref: string, want: { namespace: string; name: string }, pods: readonly PodRefTarget[]): PodNotFoundError {
  return new PodNotFoundError(ref, similarPods(want, pods), pods.length);
}

/**
 * `namespace/name` of the pods most like the one asked for, best first:
 * the same name in another namespace, then names that start with, contain
 * or are contained in the asked name (a static pod's `<name>-<node>`, a
 * deployment pod's hash suffix), then small typos by edit distance. Ties go
 * to the asked namespace, then to the closer edit distance, then by name.
 */
export function similarPods(want: { namespace: string; name: string }, pods: readonly PodRefTarget[]): string[] {
  const asked = want.name.toLowerCase();
  const scored: Array<{ key: string; rank: number; sameNs: number; dist: number }> = [];
  for (const p of pods) {
    const name = p.name.toLowerCase();
    const dist = editDistance(asked, name);
    let rank: number;
    if (name === asked) rank = 0;
    else if (name.startsWith(asked) || asked.startsWith(name)) rank = 1;
    else if (name.includes(asked) || asked.includes(name)) rank = 2;
    else if (dist <= Math.max(2, Math.floor(asked.length / 3))) rank = 3;
    else continue;
    scored.push({ key: `${p.namespace}/${p.name}`, rank, sameNs: p.namespace === want.namespace ? 0 : 1, dist });
  }
  scored.sort((a, b) => a.rank - b.rank || a.sameNs - b.sameNs || a.dist - b.dist || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return scored.slice(0, MAX_SUGGESTIONS).map((s) => s.key);
}

/** Levenshtein distance, two rows. Pod names are at most 253 characters. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
    }
    prev = cur;
  }
  return prev[b.length] as number;
}

/**
 * Whether `ref` names this static pod in a manifest set (runonce's
 * --exit-code-from): its name or its full name `<name>-<node>`, each alone
 * (any namespace) or as `namespace/name`.
 */
export function matchesStaticPodRef(
  ref: string,
  pod: { metadata?: { name?: string; namespace?: string } },
  nodeName: string,
): boolean {
  const md = pod.metadata ?? {};
  const short = md.name?.endsWith(`-${nodeName}`) ? md.name.slice(0, -(nodeName.length + 1)) : md.name;
  return ref === md.name || ref === short || ref === `${md.namespace}/${md.name}` || ref === `${md.namespace}/${short}`;
}
