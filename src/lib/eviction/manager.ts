/**
 * The eviction manager, as the kubelet v1.34's (pkg/kubelet/eviction):
 * every monitoring interval (10 s) it reads the Summary API's node figures
 * as signals (memory.available, nodefs/imagefs/containerfs available and
 * inodesFree, pid.available), finds the thresholds met (a soft one once met
 * for its grace period; a met one stays met until its minimum reclaim is
 * recovered), reports MemoryPressure / DiskPressure / PIDPressure until the
 * pressure transition period has passed without them, and reclaims the
 * most pressing resource: for disk, container GC and image GC first; if
 * that is not enough, it evicts ONE pod per round — the first in the
 * kubelet's ranking (usage above requests, then priority, then usage) that
 * is not critical (static, mirror, or system-critical priority) — killed
 * with a 1 s grace period (hard) or the capped pod's own (soft), Failed
 * with reason Evicted and the kubelet's message. Its admission refuses
 * pods under pressure as the kubelet's does.
 *
 * The decisions are pure functions of the observations (table-tested); the
 * class keeps the state between rounds and does the I/O through its options.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { Quantity } from '../pod/quantity.js';
import type { PodStats, Summary } from '../stats/summary.js';
import { pause } from '../util/sleep.js';
import {
  SIGNAL_CONDITION,
  SIGNAL_RESOURCE,
  formatAmount,
  formatThreshold,
  thresholdAmount,
  thresholdKey,
  withContainerFsThresholds,
  type PressureCondition,
  type Signal,
  type Threshold,
} from './thresholds.js';

/** The kubelet's evictionMonitoringPeriod. */
export const MONITORING_INTERVAL_MS = 10_000;
/**
 * Between rounds, the node's cheap figures (memory, statfs) are looked at
 * this often: a hard threshold newly crossed starts the next round at once
 * instead of up to 10 s later (the kubelet waits for its next round unless
 * kernel memcg notifications are on, and has none for disk).
 */
export const QUICK_LOOK_MS = 1000;
/** How long the manager waits for an evicted pod to be cleaned up before its next round (podCleanupTimeout, polled every second). */
const POD_CLEANUP_TIMEOUT_MS = 30_000;
const POD_CLEANUP_POLL_MS = 1000;
/** immediateEvictionGracePeriodSeconds. */
const HARD_EVICTION_GRACE_SECONDS = 1;
/** scheduling.SystemCriticalPriority. */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;
export const EVICTED_REASON = 'Evicted';

export interface Observation {
  available: number;
  capacity: number;
  /** When the figure was read (RFC 3339). */
  time: string;
}

export type Observations = Map<Signal, Observation>;

/** A pod's local volumes' usage (emptyDirs on disk), which the Summary API of klet does not carry. */
export interface VolumeUsage {
  usedBytes: number;
  inodesUsed: number;
}

/** makeSignalObservations: the node's figures as signals. */
export function observe(summary: Summary): Observations {
  const out: Observations = new Map();
  const n = summary.node;
  const m = n.memory;
  if (m?.availableBytes !== undefined && m.workingSetBytes !== undefined) out.set('memory.available', { available: m.availableBytes, capacity: m.availableBytes + m.workingSetBytes, time: m.time });
  const fsOf = (bytes: Signal, inodes: Signal, f: NonNullable<typeof n.fs> | undefined) => {
    if (f === undefined) return;
    if (f.availableBytes !== undefined && f.capacityBytes !== undefined) out.set(bytes, { available: f.availableBytes, capacity: f.capacityBytes, time: f.time });
    if (f.inodesFree !== undefined && f.inodes !== undefined) out.set(inodes, { available: f.inodesFree, capacity: f.inodes, time: f.time });
  };
  fsOf('nodefs.available', 'nodefs.inodesFree', n.fs);
  fsOf('imagefs.available', 'imagefs.inodesFree', n.runtime?.imageFs);
  fsOf('containerfs.available', 'containerfs.inodesFree', n.runtime?.containerFs);
  // The pods' cgroup under its limit (the kubelet's allocatable memory): available + working set is its capacity.
  const pods = n.systemContainers?.find((c) => c.name === 'pods')?.memory;
  if (pods?.availableBytes !== undefined && pods.workingSetBytes !== undefined) {
    out.set('allocatableMemory.available', { available: pods.availableBytes, capacity: pods.availableBytes + pods.workingSetBytes, time: pods.time });
  }
  const r = n.rlimit;
  if (r?.maxpid !== undefined && r.curproc !== undefined) out.set('pid.available', { available: r.maxpid - r.curproc, capacity: r.maxpid, time: r.time });
  return out;
}

/** thresholdsMet: the thresholds whose signal is below them (with enforceMinReclaim, below them plus the minimum reclaim). */
export function thresholdsMet(thresholds: readonly Threshold[], observations: Observations, enforceMinReclaim: boolean): Threshold[] {
  return thresholds.filter((t) => {
    const o = observations.get(t.signal);
    if (o === undefined) return false;
    let quantity = thresholdAmount(t.value, o.capacity);
    if (enforceMinReclaim && t.minReclaim !== undefined) quantity += thresholdAmount(t.minReclaim, o.capacity);
    return quantity > o.available;
  });
}

/** The conditions the thresholds set, in the thresholds' order. */
export function conditionsOf(thresholds: readonly Threshold[]): PressureCondition[] {
  return [...new Set(thresholds.map((t) => SIGNAL_CONDITION[t.signal]))];
}

/** byEvictionPriority: memory first, thresholds without a resource to reclaim last (every signal here has one). */
export function byEvictionPriority(thresholds: readonly Threshold[]): Threshold[] {
  const memory = (t: Threshold) => t.signal === 'memory.available' || t.signal === 'allocatableMemory.available';
  return [...thresholds.filter(memory), ...thresholds.filter((t) => !memory(t))];
}

// ---------------------------------------------------------------------------
// Pods: requests, usage, ranking, the eviction message

type ResourceName = 'memory' | 'ephemeral-storage' | 'inodes';

function quantityOf(v: unknown): Quantity | undefined {
  if (v === undefined || v === null) return undefined;
  try {
    return Quantity.parse(String(v));
  } catch {
    return undefined;
  }
}

/** v1resource.GetResourceRequestQuantity: containers summed, an init container's if larger, plus overhead when non-zero. */
export function podRequest(pod: V1Pod, resource: ResourceName): number {
  const req = (c: { resources?: { requests?: Record<string, unknown> } }) => quantityOf(c.resources?.requests?.[resource])?.value();
  let total = 0;
  for (const c of pod.spec?.containers ?? []) total += req(c) ?? 0;
  for (const c of pod.spec?.initContainers ?? []) {
    const r = req(c);
    if (r !== undefined && total < r) total = r;
  }
  const overhead = quantityOf(pod.spec?.overhead?.[resource])?.value();
  if (overhead !== undefined && total !== 0) total += overhead;
  return total;
}

/** spec.priority (0 when unset, as corev1helpers.PodPriority). */
function priorityOf(pod: V1Pod): number {
  return pod.spec?.priority ?? 0;
}

/** What a disk ranking counts of a pod (fsStatsType): writable layers, logs, local volumes. */
export type FsStatsType = 'root' | 'logs' | 'localVolumeSource' | 'images';

export interface PodUsage {
  stats: PodStats;
  volumes?: VolumeUsage;
}

/** podDiskUsage: bytes and inodes of the measured kinds. */
export function podDiskUsage(u: PodUsage, measure: readonly FsStatsType[]): { 'ephemeral-storage': number; inodes: number } {
  let disk = 0;
  let inodes = 0;
  for (const c of u.stats.containers) {
    if (measure.includes('root')) {
      disk += c.rootfs?.usedBytes ?? 0;
      inodes += c.rootfs?.inodesUsed ?? 0;
    }
    if (measure.includes('logs')) {
      disk += c.logs?.usedBytes ?? 0;
      inodes += c.logs?.inodesUsed ?? 0;
    }
  }
  if (measure.includes('localVolumeSource') && u.volumes !== undefined) {
    disk += u.volumes.usedBytes;
    inodes += u.volumes.inodesUsed;
  }
  return { 'ephemeral-storage': disk, inodes };
}

type Cmp = (a: V1Pod, b: V1Pod) => number;
/** true before false. */
const cmpBool = (a: boolean, b: boolean): number => (a === b ? 0 : a ? -1 : 1);

/** orderedBy(...).Sort, stable: the first comparison that tells them apart decides. */
function orderedBy(pods: V1Pod[], ...cmps: Cmp[]): V1Pod[] {
  return [...pods].sort((a, b) => {
    for (const c of cmps) {
      const r = c(a, b);
      if (r !== 0) return r;
    }
    return 0;
  });
}

/** Pods without stats first (the kubelet evicts those first), else the comparison. */
function withStats(usage: (p: V1Pod) => PodUsage | undefined, cmp: (a: PodUsage, b: PodUsage, pa: V1Pod, pb: V1Pod) => number): Cmp {
  return (a, b) => {
    const ua = usage(a);
    const ub = usage(b);
    if (ua === undefined || ub === undefined) return cmpBool(ua === undefined, ub === undefined);
    return cmp(ua, ub, a, b);
  };
}

/** Lower priority first. */
const byPriority: Cmp = (a, b) => priorityOf(a) - priorityOf(b);

const workingSet = (u: PodUsage) => u.stats.memory?.workingSetBytes ?? 0;

/** rankMemoryPressure: usage above requests first, then lower priority, then the larger usage above requests. */
export function rankMemoryPressure(pods: V1Pod[], usage: (p: V1Pod) => PodUsage | undefined): V1Pod[] {
  return orderedBy(
    pods,
    withStats(usage, (a, b, pa, pb) => cmpBool(workingSet(a) > podRequest(pa, 'memory'), workingSet(b) > podRequest(pb, 'memory'))),
    byPriority,
    withStats(usage, (a, b, pa, pb) => workingSet(b) - podRequest(pb, 'memory') - (workingSet(a) - podRequest(pa, 'memory'))),
  );
}

/** rankPIDPressure: lower priority first, then more processes. */
export function rankPIDPressure(pods: V1Pod[], usage: (p: V1Pod) => PodUsage | undefined): V1Pod[] {
  const procs = (u: PodUsage) => u.stats.process_stats?.process_count ?? 0;
  return orderedBy(pods, byPriority, withStats(usage, (a, b) => procs(b) - procs(a)));
}

/** rankDiskPressureFunc: usage of the measured kinds above requests first, then lower priority, then the larger usage above the ephemeral-storage request. */
export function rankDiskPressure(pods: V1Pod[], usage: (p: V1Pod) => PodUsage | undefined, measure: readonly FsStatsType[], resource: 'ephemeral-storage' | 'inodes'): V1Pod[] {
  return orderedBy(
    pods,
    withStats(usage, (a, b, pa, pb) => cmpBool(podDiskUsage(a, measure)[resource] > podRequest(pa, resource), podDiskUsage(b, measure)[resource] > podRequest(pb, resource))),
    byPriority,
    withStats(usage, (a, b, pa, pb) => podDiskUsage(b, measure)[resource] - podRequest(pb, 'ephemeral-storage') - (podDiskUsage(a, measure)[resource] - podRequest(pa, 'ephemeral-storage'))),
  );
}

/** buildSignalToRankFunc for containerd (no separate container filesystem): the ranking of a signal's pods. */
export function rankFor(signal: Signal, dedicatedImageFs: boolean): (pods: V1Pod[], usage: (p: V1Pod) => PodUsage | undefined) => V1Pod[] {
  const all: FsStatsType[] = ['images', 'root', 'logs', 'localVolumeSource'];
  const nodeFs: FsStatsType[] = dedicatedImageFs ? ['logs', 'localVolumeSource'] : all;
  const imageFs: FsStatsType[] = dedicatedImageFs ? ['root', 'images'] : all;
  switch (signal) {
    case 'memory.available':
    case 'allocatableMemory.available':
      return rankMemoryPressure;
    case 'pid.available':
      return rankPIDPressure;
    case 'nodefs.available':
      return (p, u) => rankDiskPressure(p, u, nodeFs, 'ephemeral-storage');
    case 'nodefs.inodesFree':
      return (p, u) => rankDiskPressure(p, u, nodeFs, 'inodes');
    case 'imagefs.available':
    case 'containerfs.available':
      return (p, u) => rankDiskPressure(p, u, imageFs, 'ephemeral-storage');
    case 'imagefs.inodesFree':
    case 'containerfs.inodesFree':
      return (p, u) => rankDiskPressure(p, u, imageFs, 'inodes');
  }
}

/** buildSignalToNodeReclaimFuncs: with a dedicated image filesystem nodefs has nothing to reclaim; every other disk signal has container GC then image GC. */
export function reclaimsFor(signal: Signal, dedicatedImageFs: boolean): Array<'containers' | 'images'> {
  const resource = SIGNAL_RESOURCE[signal];
  if (resource !== 'ephemeral-storage' && resource !== 'inodes') return [];
  if (dedicatedImageFs && signal.startsWith('nodefs.')) return [];
  return ['containers', 'images'];
}

/** The request of a container as the kubelet prints it ("0" without one). */
function requestText(c: { resources?: { requests?: Record<string, unknown> } }, resource: string): { text: string; value: number } {
  const q = quantityOf(c.resources?.requests?.[resource]);
  return q === undefined ? { text: '0', value: 0 } : { text: q.toString(), value: q.value() };
}

/**
 * evictionMessage: "The node was low on resource: R. Threshold quantity: Q,
 * available: A. " and, per container using more than its request,
 * "Container C was using U, request is Q, has larger consumption of R. ".
 */
export function evictionMessage(resource: string, pod: V1Pod, usage: PodUsage | undefined, thresholds: readonly Threshold[], observations: Observations): string {
  let message = `The node was low on resource: ${resource}. `;
  for (const t of thresholds) {
    if (SIGNAL_RESOURCE[t.signal] !== resource) continue;
    const o = observations.get(t.signal);
    if (o === undefined) continue;
    message += `Threshold quantity: ${formatThreshold(t.value, o.capacity)}, available: ${formatAmount(o.available, resource !== 'inodes' && resource !== 'pids')}. `;
    break;
  }
  if (usage === undefined) return message;
  const podRequestMemory = quantityOf(pod.spec?.resources?.requests?.memory);
  if (resource === 'memory' && podRequestMemory !== undefined && usage.stats.memory !== undefined) {
    message += `Pod ${pod.metadata?.name ?? ''} was using ${formatAmount(workingSet(usage), true)}, request is ${podRequestMemory.toString()}, has larger consumption of memory. `;
  }
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  for (const cs of usage.stats.containers) {
    const c = containers.find((x) => x.name === cs.name);
    if (c === undefined) continue;
    let used: number | undefined;
    if (resource === 'ephemeral-storage' && cs.rootfs?.usedBytes !== undefined && cs.logs?.usedBytes !== undefined) used = cs.rootfs.usedBytes + cs.logs.usedBytes;
    if (resource === 'memory' && cs.memory?.workingSetBytes !== undefined) used = cs.memory.workingSetBytes;
    const req = requestText(c, resource);
    if (used !== undefined && used > req.value) message += `Container ${c.name} was using ${formatAmount(used, true)}, request is ${req.text}, has larger consumption of ${resource}. `;
  }
  return message;
}

/** kubelettypes.IsCriticalPod: a static pod, a mirror pod, or a system-critical priority. */
export function isCriticalPod(pod: V1Pod): boolean {
  const a = pod.metadata?.annotations ?? {};
  const source = a['kubernetes.io/config.source'];
  if (source !== undefined && source !== 'api') return true;
  if (a['kubernetes.io/config.mirror'] !== undefined) return true;
  return pod.spec?.priority !== undefined && pod.spec.priority >= SYSTEM_CRITICAL_PRIORITY;
}

/** The pod's QoS class (v1qos.GetPodQOS), enough to tell BestEffort: no request or limit of cpu or memory anywhere. */
function isBestEffort(pod: V1Pod): boolean {
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const podLevel = pod.spec?.resources;
  const has = (r?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> }) =>
    ['cpu', 'memory'].some((k) => {
      const req = quantityOf(r?.requests?.[k]);
      const lim = quantityOf(r?.limits?.[k]);
      return (req !== undefined && req.sign() !== 0) || (lim !== undefined && lim.sign() !== 0);
    });
  return !has(podLevel) && !all.some((c) => has(c.resources));
}

/** Whether the tolerations tolerate node.kubernetes.io/memory-pressure:NoSchedule. */
function toleratesMemoryPressure(pod: V1Pod): boolean {
  return (pod.spec?.tolerations ?? []).some((t) => {
    if (t.effect && t.effect !== 'NoSchedule') return false;
    if (t.operator === 'Exists') return !t.key || t.key === 'node.kubernetes.io/memory-pressure';
    return t.key === 'node.kubernetes.io/memory-pressure' && (t.value ?? '') === '';
  });
}

/**
 * The manager's admission (its Admit): under no pressure every pod; a
 * critical pod always; under memory pressure alone a pod that is not
 * BestEffort, or one tolerating the memory-pressure taint; else refused,
 * reason Evicted, "The node had condition: [DiskPressure]. ".
 */
export function admitUnderPressure(pod: V1Pod, conditions: readonly PressureCondition[]): { reason: string; message: string } | null {
  if (conditions.length === 0 || isCriticalPod(pod)) return null;
  if (conditions.length === 1 && conditions[0] === 'MemoryPressure' && (!isBestEffort(pod) || toleratesMemoryPressure(pod))) return null;
  return { reason: EVICTED_REASON, message: `The node had condition: [${conditions.join(' ')}]. ` };
}

// ---------------------------------------------------------------------------
// The manager

export interface EvictionManagerOptions {
  /** The configured thresholds (thresholds.ts parseThresholdConfig); the containerfs ones are derived here. */
  thresholds: Threshold[];
  pressureTransitionPeriodMs: number;
  /** evictionMaxPodGracePeriod: the cap of a soft eviction's grace period. */
  maxPodGracePeriodSeconds: number;
  /** The Summary API's answer, read now (pods included: for ranking them). */
  summary: (signal: AbortSignal) => Promise<Summary>;
  /** The node's figures only, read now (every round); default: summary. */
  nodeSummary?: (signal: AbortSignal) => Promise<Summary>;
  /** The node's cheap figures (no runtime call, no process count), looked at between rounds; none: no look between rounds. */
  quickSummary?: (signal: AbortSignal) => Promise<Summary>;
  /** How often quickSummary is looked at (QUICK_LOOK_MS). */
  quickLookMs?: number;
  /** Each pod's local volumes' usage (by UID). */
  volumeUsage?: (signal: AbortSignal) => Promise<Map<string, VolumeUsage>>;
  /** Whether the runtime's image filesystem is another filesystem than the root dir's. */
  dedicatedImageFs: (signal: AbortSignal) => Promise<boolean>;
  /** The pods running now (the kubelet's active pods). */
  activePods: () => V1Pod[];
  /** Has the evicted pod been cleaned up (its containers stopped)? */
  podCleanedUp: (pod: V1Pod) => boolean;
  /** Node-level reclaim: container GC (every dead container) and image GC (every unused image). */
  reclaim: { containers: (signal: AbortSignal) => Promise<void>; images: (signal: AbortSignal) => Promise<void> };
  /** Kill the pod and record it Failed/Evicted with this message (and the Evicted event). */
  evict: (pod: V1Pod, message: string, gracePeriodSeconds: number) => Promise<void>;
  /** Node events (EvictionThresholdMet). */
  onNodeEvent?: (e: { type: 'Warning'; reason: string; message: string }) => void;
  /** The pressure conditions changed. */
  onConditions?: (conditions: PressureCondition[]) => void;
  now?: () => number;
}

export class EvictionManager {
  private thresholds: Threshold[] | undefined;
  private dedicated = false;
  private nodeConditions: PressureCondition[] = [];
  private readonly firstObservedAt = new Map<string, { t: Threshold; at: number }>();
  private readonly conditionLastObservedAt = new Map<PressureCondition, number>();
  private met: Threshold[] = [];
  private lastObservations: Observations = new Map();

  constructor(private readonly opts: EvictionManagerOptions) {}

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** The pressure conditions the node reports now. */
  conditions(): PressureCondition[] {
    return [...this.nodeConditions];
  }

  /** The manager's admission of a new pod (null: admitted). */
  admit(pod: V1Pod): { reason: string; message: string } | null {
    return admitUnderPressure(pod, this.nodeConditions);
  }

  /** One round (synchronize); the pods evicted, if any. */
  async synchronize(signal: AbortSignal): Promise<V1Pod[]> {
    if (this.thresholds === undefined) {
      this.dedicated = await this.opts.dedicatedImageFs(signal);
      this.thresholds = withContainerFsThresholds(this.opts.thresholds, this.dedicated);
    }
    if (this.thresholds.length === 0) return [];
    const active = this.opts.activePods();
    const observations = observe(await (this.opts.nodeSummary ?? this.opts.summary)(signal));
    const now = this.now();
    let thresholds = thresholdsMet(this.thresholds, observations, false);
    if (this.met.length > 0) {
      const keys = new Set(thresholds.map(thresholdKey));
      for (const t of thresholdsMet(this.met, observations, true)) if (!keys.has(thresholdKey(t))) thresholds.push(t);
    }
    // When each threshold was first met (kept while it stays met).
    const first = new Map<string, { t: Threshold; at: number }>();
    for (const t of thresholds) first.set(thresholdKey(t), { t, at: this.firstObservedAt.get(thresholdKey(t))?.at ?? now });
    this.firstObservedAt.clear();
    for (const [k, v] of first) this.firstObservedAt.set(k, v);
    // Conditions hold for the transition period after they were last observed.
    for (const c of conditionsOf(thresholds)) this.conditionLastObservedAt.set(c, now);
    const conditions = (['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const).filter((c) => {
      const at = this.conditionLastObservedAt.get(c);
      return at !== undefined && now - at < this.opts.pressureTransitionPeriodMs;
    });
    const changed = conditions.join() !== this.nodeConditions.join();
    this.nodeConditions = conditions;
    if (changed) this.opts.onConditions?.(conditions);
    // The thresholds whose grace period has passed, and whose figures are newer than the last round's.
    thresholds = [...first.values()].filter(({ t, at }) => now - at >= t.gracePeriodMs).map(({ t }) => t);
    this.met = thresholds;
    const last = this.lastObservations;
    thresholds = thresholds.filter((t) => {
      const o = observations.get(t.signal);
      const before = last.get(t.signal);
      return o !== undefined && (before === undefined || o.time === '' || Date.parse(o.time) > Date.parse(before.time));
    });
    this.lastObservations = observations;
    if (thresholds.length === 0) return [];

    const toReclaim = byEvictionPriority(thresholds)[0]!;
    const resource = SIGNAL_RESOURCE[toReclaim.signal];
    log.info(`Eviction manager: attempting to reclaim resourceName=${resource}`);
    this.opts.onNodeEvent?.({ type: 'Warning', reason: 'EvictionThresholdMet', message: `Attempting to reclaim ${resource}` });
    if (await this.reclaimNodeLevel(toReclaim.signal, resource, signal)) {
      log.info(`Eviction manager: able to reduce resource pressure without evicting pods. resourceName=${resource}`);
      return [];
    }
    if (active.length === 0) {
      log.error('Eviction manager: eviction thresholds have been met, but no pods are active to evict');
      return [];
    }
    // The pods' figures, read once a pod must be chosen.
    const summary = await this.opts.summary(signal);
    const volumes = (await this.opts.volumeUsage?.(signal)) ?? new Map<string, VolumeUsage>();
    const byUid = new Map(summary.pods.map((p) => [p.podRef.uid, p]));
    const usage = (p: V1Pod): PodUsage | undefined => {
      const uid = p.metadata?.uid ?? '';
      const stats = byUid.get(uid);
      if (stats === undefined) return undefined;
      const v = volumes.get(uid);
      return v === undefined ? { stats } : { stats, volumes: v };
    };
    const ranked = rankFor(toReclaim.signal, this.dedicated)(active, usage);
    log.info(`Eviction manager: pods ranked for eviction pods=[${ranked.map((p) => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`).join(', ')}]`);
    // At most one pod per round.
    for (const pod of ranked) {
      let grace = HARD_EVICTION_GRACE_SECONDS;
      if (toReclaim.gracePeriodMs > 0) {
        const own = pod.spec?.terminationGracePeriodSeconds;
        grace = this.opts.maxPodGracePeriodSeconds;
        if (own !== undefined) grace = Math.min(grace, own);
        // A negative maximum defers to the pod's own (the flag's help).
        if (grace < 0) grace = own ?? 30;
      }
      if (isCriticalPod(pod)) {
        log.error(`Eviction manager: cannot evict a critical pod pod=${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`);
        continue;
      }
      const message = evictionMessage(resource, pod, usage(pod), thresholds, observations);
      try {
        await this.opts.evict(pod, message, grace);
        log.info(`Eviction manager: pod is evicted successfully pod=${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`);
      } catch (err) {
        log.error(`Eviction manager: pod failed to evict pod=${pod.metadata?.name ?? ''}: ${errorMessage(err)}`);
      }
      return [pod];
    }
    log.info('Eviction manager: unable to evict any pods from the node');
    return [];
  }

  /** reclaimNodeLevelResources: GC, then the thresholds (with their minimum reclaim) read again; true when none is met. */
  private async reclaimNodeLevel(sig: Signal, resource: string, signal: AbortSignal): Promise<boolean> {
    const funcs = reclaimsFor(sig, this.dedicated);
    if (funcs.length === 0) return false;
    for (const f of funcs) {
      try {
        await this.opts.reclaim[f](signal);
      } catch (err) {
        log.info(`Eviction manager: unexpected error when attempting to reduce resource pressure resourceName=${resource}: ${errorMessage(err)}`);
      }
    }
    const observations = observe(await (this.opts.nodeSummary ?? this.opts.summary)(signal));
    return thresholdsMet(this.thresholds ?? [], observations, true).length === 0;
  }

  /**
   * Wait for the next round: the interval, or less when a quick look finds
   * a hard threshold met that the last round did not act on.
   */
  private async untilNextRound(intervalMs: number, signal: AbortSignal): Promise<void> {
    const quick = this.opts.quickSummary;
    const hard = (this.thresholds ?? []).filter((t) => t.gracePeriodMs === 0);
    if (quick === undefined || hard.length === 0) return pause(intervalMs, signal);
    const acted = new Set(this.met.map(thresholdKey));
    const step = this.opts.quickLookMs ?? QUICK_LOOK_MS;
    const end = Date.now() + intervalMs;
    while (!signal.aborted && Date.now() < end) {
      await pause(Math.min(step, end - Date.now()), signal);
      if (signal.aborted || Date.now() >= end) return;
      try {
        const crossed = thresholdsMet(hard, observe(await quick(signal)), false);
        if (crossed.some((t) => !acted.has(thresholdKey(t)))) return;
      } catch (err) {
        if (signal.aborted) return;
        log.debug(`Eviction manager: quick look: ${errorMessage(err)}`);
      }
    }
  }

  /** Run rounds until the signal aborts: every interval, or after an eviction once the pod is cleaned up (30 s at most). */
  async run(signal: AbortSignal, intervalMs = MONITORING_INTERVAL_MS): Promise<void> {
    log.info('Eviction manager: starting control loop');
    while (!signal.aborted) {
      let evicted: V1Pod[] = [];
      try {
        evicted = await this.synchronize(signal);
      } catch (err) {
        if (signal.aborted) return;
        log.error(`Eviction manager: failed to synchronize: ${errorMessage(err)}`);
      }
      if (evicted.length === 0) {
        await this.untilNextRound(intervalMs, signal);
        continue;
      }
      const deadline = this.now() + POD_CLEANUP_TIMEOUT_MS;
      while (!signal.aborted && this.now() < deadline && !evicted.every((p) => this.opts.podCleanedUp(p))) await pause(POD_CLEANUP_POLL_MS, signal);
    }
  }
}
