/**
 * GET /node: what the sync loop knows about itself and the node, beyond the
 * pods and the event stream — the dashboard's header and sync-loop panel,
 * and `curl` for a person. Plain JSON, assembled from the engine's own
 * state (PLEG, pod config, pod workers, CRI Status/Version); nothing here is
 * computed a second way.
 */

/** A CRI runtime condition (RuntimeReady, NetworkReady), as Status reports it. */
export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface NodeStatus {
  kind: 'KletNodeStatus';
  nodeName: string;
  /** When this `klet sync` started (RFC 3339). */
  startedAt: string;
  runtime: {
    /** runtimeName and runtimeVersion from CRI Version ('' when the runtime did not answer). */
    name: string;
    version: string;
    conditions: RuntimeCondition[];
    /** Why Version/Status failed, when they did. */
    error: string | null;
  };
  /** Pod sources: a manifest dir, a URL. */
  sources: { name: string; lastReadAt: string | null; errors: string[] }[];
  pleg: {
    healthy: boolean;
    message: string;
    /** Start of the last relist (RFC 3339), null before the first. */
    lastRelistAt: string | null;
    lastRelistDurationMs: number;
    error: string | null;
  };
  podWorkers: {
    /** Workers by state. */
    counts: Record<string, number>;
    /** Workers with an update waiting (the queue depth). */
    pending: number;
    /** Workers running a sync now. */
    running: number;
  };
  /**
   * The node's pressure conditions as the eviction manager reports them
   * (MemoryPressure, DiskPressure, PIDPressure, with the kubelet's reasons
   * and messages), and since when each has had its status.
   */
  conditions?: { type: string; status: string; reason: string; message: string; lastTransitionTime: string }[];
  /** The newest event's seq, to resume /events from. */
  lastEventSeq: number;
  /** In cluster mode (`klet sync --kubeconfig`) only. */
  cluster?: ClusterStatus;
}

/** What `klet sync --kubeconfig` knows about the cluster it joined. */
export interface ClusterStatus {
  /** The API server URL (never credentials). */
  server: string;
  nodeName: string;
  /** The Node exists in the API server (created or updated by this klet). */
  registered: boolean;
  nodeUid: string | null;
  lease: {
    /** The last renewTime klet wrote (RFC 3339), null before the first. */
    renewTime: string | null;
    /** Seconds since then, at the time of the answer. */
    ageSeconds: number | null;
  };
  /** The newest failed API request (registration, heartbeat, pod status, events), null after none. */
  lastError: { message: string; at: string } | null;
  /** The list+watch of the node's pods. */
  watch: { state: 'connecting' | 'watching' | 'retrying'; pods: number; error: string | null };
  /** Events sent to the API server (lib/node/event-recorder.ts EventRecorderStats). */
  events: { sent: number; created: number; patched: number; filtered: number; dropped: number; queued: number };
  /** Requests klet made to the API server, by verb (list, watch, get, create, update, patch, delete). */
  requests: Record<string, number>;
}

/** The header's one-line view of a ClusterStatus: "API server https://… · lease 3s ago". */
export function clusterHeadline(c: ClusterStatus): string {
  const lease = c.lease.ageSeconds === null ? 'no lease yet' : `lease ${c.lease.ageSeconds}s ago`;
  const state = c.registered ? lease : 'not registered';
  return `API server ${c.server} · ${state}${c.lastError ? ` · error: ${c.lastError.message}` : ''}`;
}

/** True when `value` is what /node serves (the dashboard's check that a socket is klet's). */
export function isNodeStatus(value: unknown): value is NodeStatus {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'KletNodeStatus';
}
