/**
 * The Node object a kubelet registers and the status it reports, computed
 * from plain facts (pure: no I/O), following the kubelet's
 * kubelet_node_status.go and pkg/kubelet/nodestatus/setters.go.
 */
import type { V1Node, V1NodeCondition, V1NodeStatus, V1ContainerImage } from '@kubernetes/client-node';
import type { MachineFacts } from './machine.js';
import { nodeAddresses } from './addresses.js';
import type { Reservation, Taint } from './config.js';
import { DEFAULT_EVICTION_HARD, parseThresholdStatement, thresholdAmount } from '../eviction/thresholds.js';

/** The kubelet's default --max-pods. */
export const DEFAULT_MAX_PODS = 110;
/** Hard eviction thresholds the kubelet uses by default on Linux (memory.available<100Mi, nodefs.available<10%). */
export const EVICTION_HARD_MEMORY_BYTES = 100 * 1024 * 1024;
export const EVICTION_HARD_NODEFS_FRACTION = 0.1;
/** nodeStatusMaxImages: how many images the kubelet lists in status.images (largest first). */
export const NODE_STATUS_MAX_IMAGES = 50;
/** maxNamesPerImageInNodeStatus. */
export const MAX_NAMES_PER_IMAGE = 5;
export const ATTACH_DETACH_ANNOTATION = 'volumes.kubernetes.io/controller-managed-attach-detach';

export interface RuntimeFacts {
  /** `containerd://1.6.20`: runtime name and version as the kubelet reports them. */
  containerRuntimeVersion: string;
  /** CRI RuntimeReady / NetworkReady conditions; absent counts as not ready. */
  runtimeReady: boolean;
  networkReady: boolean;
  /** "reason:… message:…" of a false runtime condition, for the Ready message. */
  runtimeReason?: string;
  networkReason?: string;
  images: Array<{ names: string[]; sizeBytes: number }>;
}

export interface NodeSpecInput {
  nodeName: string;
  /** Labels from the user (already validated); the standard labels are added. */
  labels: Record<string, string>;
  taints: Taint[];
  nodeIP?: string;
  maxPods: number;
  reserved: Reservation;
  kletVersion: string;
  /** The hard eviction thresholds (the kubelet's defaults when unset): memory.available and nodefs.available are held back from allocatable. */
  evictionHard?: Readonly<Record<string, string>>;
  /** Where the kubelet server listens (status.daemonEndpoints.kubeletEndpoint.Port): the API server reaches logs and exec there. */
  kubeletPort?: number;
}

export interface NodeFacts {
  machine: MachineFacts;
  runtime: RuntimeFacts;
  /** The node's IPv4 addresses by preference (used without an explicit node IP). */
  hostIPs: string[];
  now: Date;
  /**
   * The eviction manager's pressure conditions (klet sync): MemoryPressure,
   * DiskPressure and PIDPressure are True exactly for these. Without it
   * (klet register-node, no eviction manager) they are judged from the
   * machine against the default hard thresholds.
   */
  pressure?: readonly string[];
}

/** The three pressure conditions with the kubelet's reasons and messages (nodestatus setters), True for those under pressure. */
export function pressureConditionStates(pressure: readonly string[]): ConditionState[] {
  const memory = pressure.includes('MemoryPressure');
  const disk = pressure.includes('DiskPressure');
  const pid = pressure.includes('PIDPressure');
  return [
    memory
      ? { type: 'MemoryPressure', status: 'True', reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' }
      : { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
    disk
      ? { type: 'DiskPressure', status: 'True', reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' }
      : { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
    pid
      ? { type: 'PIDPressure', status: 'True', reason: 'KubeletHasInsufficientPID', message: 'kubelet has insufficient PID available' }
      : { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
  ];
}

/** The labels the kubelet always sets (and reconciles on an existing Node). */
export function defaultLabels(nodeName: string, m: Pick<MachineFacts, 'operatingSystem' | 'architecture'>): Record<string, string> {
  return {
    'beta.kubernetes.io/arch': m.architecture,
    'beta.kubernetes.io/os': m.operatingSystem,
    'kubernetes.io/arch': m.architecture,
    'kubernetes.io/hostname': nodeName,
    'kubernetes.io/os': m.operatingSystem,
  };
}

function cpuQuantity(milli: number): string {
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

function bytesQuantity(bytes: number): string {
  const b = Math.max(0, Math.floor(bytes));
  if (b === 0) return '0';
  if (b % (1024 * 1024 * 1024) === 0) return `${b / (1024 * 1024 * 1024)}Gi`;
  if (b % (1024 * 1024) === 0) return `${b / (1024 * 1024)}Mi`;
  if (b % 1024 === 0) return `${b / 1024}Ki`;
  return String(b);
}

/** Allocatable in numbers (cpu millicores, memory bytes, pods): what admission checks against. */
export function allocatableAmounts(
  m: MachineFacts,
  maxPods: number,
  reserved: Reservation,
  evictionHard: Readonly<Record<string, string>> = DEFAULT_EVICTION_HARD,
): { cpuMilli: number; memoryBytes: number; ephemeralStorageBytes: number; pods: number } {
  const hugepageBytes = Object.values(m.hugepages).reduce((a, b) => a + b, 0);
  const evictionReserved = hardEvictionReservation(evictionHard, m);
  return {
    cpuMilli: Math.max(0, m.cpus * 1000 - reserved.cpuMilli),
    // Pre-allocated huge pages are not available as ordinary memory.
    memoryBytes: Math.max(0, m.memoryBytes - reserved.memoryBytes - evictionReserved.memoryBytes - hugepageBytes),
    ephemeralStorageBytes: Math.max(0, m.fsCapacityBytes - reserved.ephemeralStorageBytes - evictionReserved.ephemeralStorageBytes),
    pods: maxPods,
  };
}

/** hardEvictionReservation: what the hard memory.available and nodefs.available thresholds hold back of capacity (a percentage of it as the kubelet truncates it). */
function hardEvictionReservation(evictionHard: Readonly<Record<string, string>>, m: MachineFacts): { memoryBytes: number; ephemeralStorageBytes: number } {
  const amount = (signal: string, capacity: number): number => {
    const text = evictionHard[signal];
    if (text === undefined) return 0;
    try {
      const t = parseThresholdStatement(signal, text);
      return t === null ? 0 : thresholdAmount(t.value, capacity);
    } catch {
      return 0; // checked where the configuration is built
    }
  };
  return { memoryBytes: amount('memory.available', m.memoryBytes), ephemeralStorageBytes: amount('nodefs.available', m.fsCapacityBytes) };
}

/** status.capacity and status.allocatable (capacity minus reservations and hard eviction thresholds). */
export function capacityAndAllocatable(
  m: MachineFacts,
  maxPods: number,
  reserved: Reservation,
  evictionHard?: Readonly<Record<string, string>>,
): { capacity: Record<string, string>; allocatable: Record<string, string> } {
  const capacity: Record<string, string> = {
    cpu: String(m.cpus),
    'ephemeral-storage': bytesQuantity(m.fsCapacityBytes),
    memory: bytesQuantity(m.memoryBytes),
    pods: String(maxPods),
  };
  const a = allocatableAmounts(m, maxPods, reserved, evictionHard);
  const allocatable: Record<string, string> = {
    cpu: cpuQuantity(a.cpuMilli),
    'ephemeral-storage': bytesQuantity(a.ephemeralStorageBytes),
    memory: bytesQuantity(a.memoryBytes),
    pods: String(maxPods),
  };
  for (const [name, bytes] of Object.entries(m.hugepages)) {
    capacity[name] = bytesQuantity(bytes);
    allocatable[name] = bytesQuantity(bytes);
  }
  return { capacity, allocatable };
}

export interface ConditionState {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** The four conditions with the kubelet's reasons and messages, in the kubelet's order. */
export function conditionStates(f: NodeFacts): ConditionState[] {
  const m = f.machine;
  const pressure = f.pressure ?? [
    ...(m.memoryAvailableBytes > 0 && m.memoryAvailableBytes < EVICTION_HARD_MEMORY_BYTES ? ['MemoryPressure'] : []),
    ...(m.fsCapacityBytes > 0 && m.fsAvailableBytes < m.fsCapacityBytes * EVICTION_HARD_NODEFS_FRACTION ? ['DiskPressure'] : []),
  ];
  const notReady: string[] = [];
  if (!f.runtime.runtimeReady) notReady.push(`container runtime not ready: RuntimeReady=false ${f.runtime.runtimeReason ?? ''}`.trim());
  if (!f.runtime.networkReady) notReady.push(`container runtime network not ready: NetworkReady=false ${f.runtime.networkReason ?? ''}`.trim());
  return [
    ...pressureConditionStates(pressure),
    notReady.length === 0
      ? { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }
      : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: notReady.join(', ') },
  ];
}

/** Conditions with heartbeat now, keeping lastTransitionTime while the status stays the same. */
export function nodeConditions(f: NodeFacts, previous: V1NodeCondition[] = []): V1NodeCondition[] {
  return conditionStates(f).map((c) => {
    const old = previous.find((p) => p.type === c.type);
    const transition = old && old.status === c.status && old.lastTransitionTime ? new Date(old.lastTransitionTime) : f.now;
    return { ...c, lastHeartbeatTime: f.now, lastTransitionTime: transition };
  });
}

/** status.images: the largest NODE_STATUS_MAX_IMAGES images, digests then tags, at most MAX_NAMES_PER_IMAGE names each. */
export function nodeImages(images: RuntimeFacts['images']): V1ContainerImage[] {
  return images
    .filter((i) => i.names.length > 0)
    .sort((a, b) => b.sizeBytes - a.sizeBytes)
    .slice(0, NODE_STATUS_MAX_IMAGES)
    .map((i) => ({ names: i.names.slice(0, MAX_NAMES_PER_IMAGE), sizeBytes: i.sizeBytes }));
}

export function nodeStatus(spec: NodeSpecInput, f: NodeFacts, previous: V1NodeCondition[] = []): V1NodeStatus {
  const m = f.machine;
  const { capacity, allocatable } = capacityAndAllocatable(m, spec.maxPods, spec.reserved, spec.evictionHard);
  return {
    capacity,
    allocatable,
    conditions: nodeConditions(f, previous),
    addresses: nodeAddresses(spec.nodeIP, f.hostIPs, m.hostname),
    ...(spec.kubeletPort !== undefined ? { daemonEndpoints: { kubeletEndpoint: { Port: spec.kubeletPort } } } : {}),
    nodeInfo: {
      machineID: m.machineID,
      systemUUID: m.systemUUID,
      bootID: m.bootID,
      kernelVersion: m.kernelVersion,
      osImage: m.osImage,
      containerRuntimeVersion: f.runtime.containerRuntimeVersion,
      kubeletVersion: spec.kletVersion,
      // Deprecated and no longer set by the kubelet (KEP-4004); the API still requires the field.
      kubeProxyVersion: '',
      operatingSystem: m.operatingSystem,
      architecture: m.architecture,
    },
    images: nodeImages(f.runtime.images),
  };
}

/** The Node the kubelet creates on first registration (initialNode). */
export function initialNode(spec: NodeSpecInput, f: NodeFacts): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: spec.nodeName,
      labels: { ...spec.labels, ...defaultLabels(spec.nodeName, f.machine) },
      annotations: { [ATTACH_DETACH_ANNOTATION]: 'true' },
    },
    spec: spec.taints.length > 0 ? { taints: spec.taints.map((t) => ({ ...t })) } : {},
    status: nodeStatus(spec, f),
  };
}

/**
 * What must change on an existing Node's metadata (the kubelet's
 * reconcileExistingNode: default labels and the attach/detach annotation),
 * or null when nothing does. User labels and taints are set at registration
 * only, as the kubelet does.
 */
export function reconcileMetadata(
  existing: V1Node,
  nodeName: string,
  m: Pick<MachineFacts, 'operatingSystem' | 'architecture'>,
): { labels?: Record<string, string>; annotations?: Record<string, string> } | null {
  const patch: { labels?: Record<string, string>; annotations?: Record<string, string> } = {};
  const labels = existing.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(defaultLabels(nodeName, m))) {
    if (labels[k] !== v) (patch.labels ??= {})[k] = v;
  }
  if (existing.metadata?.annotations?.[ATTACH_DETACH_ANNOTATION] !== 'true') patch.annotations = { [ATTACH_DETACH_ANNOTATION]: 'true' };
  return patch.labels || patch.annotations ? patch : null;
}

/** A status with the heartbeat times blanked: two statuses that compare equal need no update. */
function withoutHeartbeats(s: V1NodeStatus): unknown {
  return {
    ...s,
    conditions: (s.conditions ?? []).map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })),
  };
}

/** Did anything but the heartbeat times change (the kubelet's nodeStatusHasChanged)? */
export function nodeStatusChanged(a: V1NodeStatus | undefined, b: V1NodeStatus): boolean {
  if (!a) return true;
  return JSON.stringify(withoutHeartbeats(a)) !== JSON.stringify(withoutHeartbeats(b));
}
