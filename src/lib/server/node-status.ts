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
  /** The newest event's seq, to resume /events from. */
  lastEventSeq: number;
}

/** True when `value` is what /node serves (the dashboard's check that a socket is klet's). */
export function isNodeStatus(value: unknown): value is NodeStatus {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'KletNodeStatus';
}
