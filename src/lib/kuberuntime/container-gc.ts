/**
 * Container garbage collection as the kubelet plans it (pkg/kubelet/container/
 * container_gc.go GCPolicy, pkg/kubelet/kuberuntime/kuberuntime_gc.go, and
 * pkg/kubelet/pod_container_deletor.go for the clean-up after each
 * ContainerDied). Pure: given the runtime's containers and sandboxes (only
 * this klet's: the caller lists them with its owner label) it says what to
 * remove; gc-runner.ts removes it.
 *
 * - Dead containers are grouped by evict unit (pod UID, container name);
 *   each keeps its `maxPerPodContainer` newest (the kubelet's
 *   --maximum-dead-containers-per-container, 1), so the instance that
 *   `logs --previous` and the restart count read is never removed while its
 *   pod exists. Those of pods that no longer exist are all removed.
 * - `maxContainers` (--maximum-dead-containers, -1: no limit) caps the total,
 *   an equal share per unit first (at least 1), then oldest first.
 * - A sandbox is removed when it is not ready and no container refers to
 *   it, and either its pod no longer exists or it is not the pod's newest.
 */

/** The kubelet's GCPolicy (durations in ms). */
export interface ContainerGCPolicy {
  /** Minimum age of a dead container before it may be removed (--minimum-container-ttl-duration, 0). */
  minAgeMs: number;
  /** Dead instances kept per (pod UID, container name); < 0: no limit. */
  maxPerPodContainer: number;
  /** Dead containers kept in all; < 0: no limit. */
  maxContainers: number;
}

/** The kubelet's defaults (pkg/kubelet/apis/config/v1beta1 and cmd/kubelet options). */
export const DEFAULT_CONTAINER_GC_POLICY: Readonly<ContainerGCPolicy> = Object.freeze({ minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 });

/** The kubelet's ContainerGCPeriod. */
export const CONTAINER_GC_PERIOD_MS = 60_000;

export type GcContainerState = 'created' | 'running' | 'exited' | 'unknown';

export interface GcContainer {
  id: string;
  podUid: string;
  /** The container's name in the pod. */
  name: string;
  state: GcContainerState;
  /** Creation time, ms since the epoch. */
  createdAt: number;
  sandboxId: string;
}

export interface GcSandbox {
  id: string;
  podUid: string;
  ready: boolean;
  /** Creation time, ms since the epoch. */
  createdAt: number;
}

/** A container to remove; `unknown` ones are stopped first (the kubelet kills them before removal). */
export interface ContainerRemoval {
  id: string;
  podUid: string;
  name: string;
  unknown: boolean;
}

/** Newest first (the kubelet's byCreated); ties by id, so a plan is the same for the same input. */
function newestFirst<T extends { createdAt: number; id: string }>(a: T, b: T): number {
  return b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function removal(c: GcContainer): ContainerRemoval {
  return { id: c.id, podUid: c.podUid, name: c.name, unknown: c.state === 'unknown' };
}

/** The oldest `n` of `unit` (to remove) and the rest (kept), as removeOldestN splits them. */
function splitOldest(unit: GcContainer[], n: number): { remove: GcContainer[]; keep: GcContainer[] } {
  const sorted = [...unit].sort(newestFirst);
  const keep = Math.max(0, sorted.length - n);
  // Removed from oldest to newest, as the kubelet walks the slice from its end.
  return { remove: sorted.slice(keep).reverse(), keep: sorted.slice(0, keep) };
}

/**
 * evictContainers: which dead containers to remove. `podRemoved(uid)` is the
 * kubelet's ShouldPodContentBeRemoved (the pod no longer exists); it is
 * only asked once every pod source is ready (`allSourcesReady`).
 */
export function planContainerEviction(input: {
  containers: readonly GcContainer[];
  policy: ContainerGCPolicy;
  now: number;
  allSourcesReady: boolean;
  podRemoved: (uid: string) => boolean;
}): ContainerRemoval[] {
  const { policy } = input;
  const newest = input.now - policy.minAgeMs;
  const units = new Map<string, GcContainer[]>();
  for (const c of input.containers) {
    if (c.state === 'running' || c.createdAt > newest) continue;
    const key = `${c.podUid}\u0000${c.name}`;
    const unit = units.get(key);
    if (unit === undefined) units.set(key, [c]);
    else unit.push(c);
  }
  const out: ContainerRemoval[] = [];
  const removeOldest = (key: string, n: number): void => {
    const { remove, keep } = splitOldest(units.get(key) ?? [], n);
    out.push(...remove.map(removal));
    units.set(key, keep);
  };
  if (input.allSourcesReady) {
    for (const [key, unit] of units) {
      if (!input.podRemoved(unit[0]?.podUid ?? '')) continue;
      removeOldest(key, unit.length);
      units.delete(key);
    }
  }
  const enforcePerUnit = (max: number): void => {
    for (const [key, unit] of units) if (unit.length > max) removeOldest(key, unit.length - max);
  };
  if (policy.maxPerPodContainer >= 0) enforcePerUnit(policy.maxPerPodContainer);
  const total = (): number => [...units.values()].reduce((n, u) => n + u.length, 0);
  if (policy.maxContainers >= 0 && total() > policy.maxContainers) {
    enforcePerUnit(Math.max(1, Math.floor(policy.maxContainers / units.size)));
    const left = total();
    if (left > policy.maxContainers) {
      const flat = [...units.values()].flat().sort(newestFirst);
      out.push(...flat.slice(flat.length - (left - policy.maxContainers)).reverse().map(removal));
    }
  }
  return out;
}

/**
 * evictSandboxes: the sandboxes to remove (stopped first). `containers` is
 * every container of this klet as listed after the container eviction
 * (any state): a sandbox one of them refers to is active, as is a ready one.
 */
export function planSandboxEviction(input: {
  sandboxes: readonly GcSandbox[];
  containers: readonly Pick<GcContainer, 'sandboxId'>[];
  podRemoved: (uid: string) => boolean;
}): string[] {
  const referenced = new Set(input.containers.map((c) => c.sandboxId));
  const byPod = new Map<string, GcSandbox[]>();
  for (const sb of input.sandboxes) {
    const list = byPod.get(sb.podUid);
    if (list === undefined) byPod.set(sb.podUid, [sb]);
    else list.push(sb);
  }
  const out: string[] = [];
  for (const [uid, list] of byPod) {
    const sorted = [...list].sort(newestFirst);
    // A pod that still exists keeps its newest sandbox, whatever its state.
    const keep = input.podRemoved(uid) ? 0 : 1;
    for (let i = sorted.length - 1; i >= keep; i--) {
      const sb = sorted[i]!;
      if (!sb.ready && !referenced.has(sb.id)) out.push(sb.id);
    }
  }
  return out;
}

/**
 * The pod container deletor (getContainersToDeleteInPod), run on each
 * ContainerDied: the exited instances of the container that died beyond
 * the `keep` newest (`max(maxPerPodContainer, 1)`), newest first. With
 * `removeAll` (the pod no longer exists) every exited container of the pod.
 * An unknown container id gives nothing.
 */
export function containersToDeleteInPod(
  containers: readonly GcContainer[],
  diedId: string,
  keep: number,
  removeAll = false,
): ContainerRemoval[] {
  const died = removeAll ? undefined : containers.find((c) => c.id === diedId);
  if (!removeAll && died === undefined) return [];
  const candidates = containers.filter((c) => c.state === 'exited' && (died === undefined || c.name === died.name)).sort(newestFirst);
  const n = removeAll ? 0 : keep;
  return candidates.length <= n ? [] : candidates.slice(n).map(removal);
}

/** How many dead instances the deletor keeps: the policy's, and at least 1 (the kubelet's minDeadContainerInPod). */
export function deletorKeeps(policy: ContainerGCPolicy): number {
  return Math.max(policy.maxPerPodContainer, 1);
}
