/**
 * The eviction manager's signals and thresholds, as the kubelet v1.34
 * parses them (pkg/kubelet/eviction/helpers.go ParseThresholdConfig,
 * defaults_linux.go): `--eviction-hard` / evictionHard and `--eviction-soft`
 * / evictionSoft (signal<quantity or percentage), evictionSoftGracePeriod
 * (signal=duration, required for every soft threshold),
 * evictionMinimumReclaim (signal=quantity or percentage). Errors carry the
 * kubelet's messages; the caller names the flag or field. Pure.
 */
import { Quantity, QuantityError } from '../pod/quantity.js';
import { parseDuration } from '../util/duration.js';

export type Signal =
  | 'memory.available'
  | 'allocatableMemory.available'
  | 'nodefs.available'
  | 'nodefs.inodesFree'
  | 'imagefs.available'
  | 'imagefs.inodesFree'
  | 'containerfs.available'
  | 'containerfs.inodesFree'
  | 'pid.available';

/** The resource each signal reclaims (signalToResource): `inodes` and `pids` are the manager's own names. */
export const SIGNAL_RESOURCE: Readonly<Record<Signal, 'memory' | 'ephemeral-storage' | 'inodes' | 'pids'>> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'containerfs.available': 'ephemeral-storage',
  'containerfs.inodesFree': 'inodes',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The node condition a met threshold of each signal sets (signalToNodeCondition). */
export const SIGNAL_CONDITION: Readonly<Record<Signal, PressureCondition>> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'containerfs.available': 'DiskPressure',
  'containerfs.inodesFree': 'DiskPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** The kubelet's hard thresholds on Linux when evictionHard is not set (eviction.DefaultEvictionHard). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};

/** evictionPressureTransitionPeriod's default. */
export const DEFAULT_PRESSURE_TRANSITION_PERIOD_MS = 5 * 60_000;

/** A literal quantity, or a fraction of the capacity (a float32, as the kubelet keeps it). */
export interface ThresholdValue {
  quantity?: Quantity;
  percentage?: number;
}

export interface Threshold {
  signal: Signal;
  value: ThresholdValue;
  /** 0: a hard threshold. */
  gracePeriodMs: number;
  minReclaim?: ThresholdValue;
}

/** The eviction settings as the configuration holds them (maps of signal to value). */
export interface EvictionSettings {
  evictionHard: Record<string, string>;
  evictionSoft: Record<string, string>;
  evictionSoftGracePeriod: Record<string, string>;
  evictionMinimumReclaim: Record<string, string>;
}

/** Which of the settings a parse error is about, so the caller can name its flag or field. */
export class ThresholdError extends Error {
  constructor(
    readonly field: keyof EvictionSettings,
    message: string,
  ) {
    super(message);
  }
}

function validSignal(s: string): s is Signal {
  return Object.hasOwn(SIGNAL_RESOURCE, s);
}

/** strconv.ParseFloat(strings.TrimRight(input, "%"), 32) / 100, in float32 as the kubelet computes it. */
function parsePercentage(input: string): number {
  const text = input.replace(/%+$/, '');
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw new Error(`strconv.ParseFloat: parsing "${text}": invalid syntax`);
  return Math.fround(Math.fround(Number(text)) / 100);
}

function parseQuantity(text: string): Quantity {
  try {
    return Quantity.parse(text);
  } catch (err) {
    if (err instanceof QuantityError) throw new Error(err.message, { cause: err });
    throw err;
  }
}

/** One `signal<value` statement (parseThresholdStatement); null for 0% and 100%, which the kubelet ignores. */
export function parseThresholdStatement(signal: string, val: string): Threshold | null {
  if (!validSignal(signal)) throw new Error(`unsupported eviction signal ${signal}`);
  if (val.endsWith('%')) {
    if (val === '0%' || val === '100%') return null;
    const percentage = parsePercentage(val);
    if (percentage < 0) throw new Error(`eviction percentage threshold ${signal} must be >= 0%: ${val}`);
    if (percentage > 1) throw new Error(`eviction percentage threshold ${signal} must be <= 100%: ${val}`);
    return { signal, value: { percentage }, gracePeriodMs: 0 };
  }
  const quantity = parseQuantity(val);
  if (quantity.sign() <= 0) throw new Error(`eviction threshold ${signal} must be positive: ${quantity.toString()}`);
  return { signal, value: { quantity }, gracePeriodMs: 0 };
}

/** A Go duration (time.ParseDuration) in ms, with its error message. */
function goDuration(val: string): number {
  const negative = val.startsWith('-');
  const ms = parseDuration(negative || val.startsWith('+') ? val.slice(1) : val);
  if (ms === null) throw new Error(`time: invalid duration "${val}"`);
  return negative ? -ms : ms;
}

/** The thresholds of the settings, hard ones first (ParseThresholdConfig); a ThresholdError names the setting at fault. */
export function parseThresholdConfig(s: EvictionSettings): Threshold[] {
  const at = <T>(field: keyof EvictionSettings, fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof ThresholdError) throw err;
      throw new ThresholdError(field, err instanceof Error ? err.message : String(err));
    }
  };
  const statements = (field: 'evictionHard' | 'evictionSoft') =>
    Object.entries(s[field]).flatMap(([signal, val]) => {
      const t = at(field, () => parseThresholdStatement(signal, val));
      return t === null ? [] : [t];
    });
  const hard = statements('evictionHard');
  const soft = statements('evictionSoft');
  const grace = new Map<string, number>();
  for (const [signal, val] of Object.entries(s.evictionSoftGracePeriod)) {
    at('evictionSoftGracePeriod', () => {
      if (!validSignal(signal)) throw new Error(`unsupported eviction signal ${signal}`);
      const ms = goDuration(val);
      if (ms < 0) throw new Error(`invalid eviction grace period specified: ${val}, must be a positive value`);
      grace.set(signal, ms);
    });
  }
  const reclaim = new Map<string, ThresholdValue>();
  for (const [signal, val] of Object.entries(s.evictionMinimumReclaim)) {
    at('evictionMinimumReclaim', () => {
      if (!validSignal(signal)) throw new Error(`unsupported eviction signal ${signal}`);
      if (val.endsWith('%')) {
        const percentage = parsePercentage(val);
        if (percentage <= 0) throw new Error(`eviction percentage minimum reclaim ${signal} must be positive: ${val}`);
        reclaim.set(signal, { percentage });
        return;
      }
      const quantity = parseQuantity(val);
      if (quantity.sign() < 0) throw new Error(`negative eviction minimum reclaim specified for ${signal}`);
      reclaim.set(signal, { quantity });
    });
  }
  for (const t of soft) {
    const period = grace.get(t.signal);
    if (period === undefined) throw new ThresholdError('evictionSoft', `grace period must be specified for the soft eviction threshold ${t.signal}`);
    t.gracePeriodMs = period;
  }
  const all = [...hard, ...soft];
  for (const t of all) {
    const r = reclaim.get(t.signal);
    if (r !== undefined) t.minReclaim = r;
  }
  return all;
}

/**
 * addAllocatableThresholds, when node allocatable is enforced on the pods
 * (`enforceNodeAllocatable` has `pods`): each hard `memory.available`
 * threshold again for `allocatableMemory.available`, the memory left in
 * the pods' cgroup (kubepods) under its limit.
 */
export function withAllocatableThresholds(thresholds: Threshold[], enforceNodeAllocatable: readonly string[]): Threshold[] {
  if (!enforceNodeAllocatable.includes('pods')) return thresholds;
  const extra = thresholds
    .filter((t) => t.signal === 'memory.available' && t.gracePeriodMs === 0)
    .map((t): Threshold => ({ signal: 'allocatableMemory.available', value: t.value, gracePeriodMs: 0, ...(t.minReclaim !== undefined ? { minReclaim: t.minReclaim } : {}) }));
  return [...thresholds, ...extra];
}

/**
 * UpdateContainerFsThresholds for a runtime whose containers' writable
 * layers live on its image filesystem (containerd's snapshotter): the
 * containerfs thresholds copy nodefs' without a dedicated image
 * filesystem, imagefs' with one; a containerfs threshold set by the user is
 * replaced (the kubelet ignores it with an error in its log).
 */
export function withContainerFsThresholds(thresholds: Threshold[], dedicatedImageFs: boolean): Threshold[] {
  const out = thresholds.filter((t) => t.signal !== 'containerfs.available' && t.signal !== 'containerfs.inodesFree');
  const from = dedicatedImageFs ? { bytes: 'imagefs.available', inodes: 'imagefs.inodesFree' } : { bytes: 'nodefs.available', inodes: 'nodefs.inodesFree' };
  for (const t of thresholds) {
    if (t.signal === from.bytes) out.push({ ...t, signal: 'containerfs.available' });
    if (t.signal === from.inodes) out.push({ ...t, signal: 'containerfs.inodesFree' });
  }
  return out;
}

/** The settings' evictionHard: the given map, the kubelet's defaults when none is given (merged under it with mergeDefaultEvictionSettings). */
export function effectiveEvictionHard(given: Record<string, string> | undefined, mergeDefaults: boolean): Record<string, string> {
  if (given === undefined) return { ...DEFAULT_EVICTION_HARD };
  return mergeDefaults ? { ...DEFAULT_EVICTION_HARD, ...given } : { ...given };
}

/**
 * A flag's `k<v,k<v` (--eviction-hard, --eviction-soft: the kubelet's
 * LangleSeparatedMapStringString) or `k=v,k=v` (--eviction-soft-grace-period,
 * --eviction-minimum-reclaim: MapStringString) as a map.
 */
export function parseSignalMap(text: string, separator: '<' | '='): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of text.split(',')) {
    const pair = item.trim();
    if (pair === '') continue;
    const parts = pair.split(separator);
    if (parts.length !== 2) throw new Error(`malformed pair, expect string${separator}string`);
    out[parts[0]!.trim()] = parts[1]!.trim();
  }
  return out;
}

/** A byte or count as the kubelet prints a resource.NewQuantity of it (BinarySI for bytes, DecimalSI for counts). */
export function formatAmount(n: number, binary: boolean): string {
  const v = Math.trunc(n);
  if (binary && Math.abs(v) >= 1024) {
    let x = BigInt(v);
    const suffixes = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
    let i = 0;
    while (i < suffixes.length - 1 && x % 1024n === 0n) {
      x /= 1024n;
      i++;
    }
    return `${x}${suffixes[i]}`;
  }
  return Quantity.parse(String(v)).toString();
}

/** GetThresholdQuantity: the threshold in the signal's unit against this capacity (a percentage truncated, as int64(capacity × percentage)). */
export function thresholdAmount(v: ThresholdValue, capacity: number): number {
  if (v.quantity !== undefined) return v.quantity.value();
  return Math.trunc(capacity * (v.percentage ?? 0));
}

/** The threshold as the kubelet prints it in an eviction message: the quantity as written, a percentage as bytes (BinarySI). */
export function formatThreshold(v: ThresholdValue, capacity: number): string {
  if (v.quantity !== undefined) return v.quantity.toString();
  return formatAmount(thresholdAmount(v, capacity), true);
}

/** A threshold's identity (the kubelet keys its maps by the Threshold struct). */
export function thresholdKey(t: Threshold): string {
  const v = (x: ThresholdValue | undefined) => (x === undefined ? '' : x.quantity !== undefined ? `q${x.quantity.toString()}` : `p${x.percentage}`);
  return `${t.signal}|${t.gracePeriodMs}|${v(t.value)}|${v(t.minReclaim)}`;
}
