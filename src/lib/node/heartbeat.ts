/**
 * The node's heartbeats, as the kubelet sends them: the Lease in
 * kube-node-lease renewed every 10 s (leaseDurationSeconds 40, owned by the
 * Node; component-helpers/apimachinery/lease), and node status recomputed
 * every 10 s and patched when it changed or 5 minutes after the last report
 * (nodeStatusUpdateFrequency / nodeStatusReportFrequency). Errors never end
 * the loop: they are reported and retried with back-off until the signal aborts.
 */
import type { V1Lease, V1NodeCondition, V1NodeStatus } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import type { NodeApi } from './api.js';
import { NODE_LEASE_NAMESPACE } from './api.js';
import { nodeStatusChanged } from './node-status.js';
import { pause } from '../util/sleep.js';

export const LEASE_DURATION_SECONDS = 40;
/** renewInterval = 0.25 × leaseDuration. */
export const LEASE_RENEW_INTERVAL_MS = 10_000;
export const NODE_STATUS_UPDATE_FREQUENCY_MS = 10_000;
export const NODE_STATUS_REPORT_FREQUENCY_MS = 5 * 60_000;
/** The lease controller's back-off after a failed renewal: 200 ms doubling up to 7 s. */
export const LEASE_RETRY_INITIAL_MS = 200;
export const LEASE_RETRY_MAX_MS = 7_000;
/** maxUpdateRetries of the lease controller. */
const MAX_UPDATE_RETRIES = 5;

export type HeartbeatEvent =
  | { kind: 'LeaseRenewed'; renewTime: string }
  | { kind: 'NodeStatusUpdated'; changed: boolean; conditions: V1NodeCondition[] }
  | { kind: 'HeartbeatError'; what: 'lease' | 'status'; message: string };

/** An RFC 3339 time with microseconds, as metav1.MicroTime is written. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** A Date whose JSON is a MicroTime (what client-node's V1MicroTime does). */
class MicroTime extends Date {
  override toISOString(): string {
    return microTime(new Date(this.getTime()));
  }
  override toJSON(): string {
    return this.toISOString();
  }
}

export interface LeaseRenewer {
  /** Renew (creating the Lease if needed); resolves to the renewTime written. */
  renew(signal: AbortSignal): Promise<string>;
}

/** The lease controller: keeps the last Lease it wrote and updates from it; re-reads on conflict. */
export function leaseRenewer(api: NodeApi, nodeName: string, nodeUid: () => string | undefined, now: () => Date = () => new Date()): LeaseRenewer {
  let latest: V1Lease | null = null;
  const ownerRefs = () => {
    const uid = nodeUid();
    return uid ? [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid }] : undefined;
  };
  const fresh = (base: V1Lease | null): V1Lease => {
    const renew = new MicroTime(now().getTime());
    const lease: V1Lease = base
      ? { ...base, spec: { ...base.spec } }
      : { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: nodeName, namespace: NODE_LEASE_NAMESPACE }, spec: {} };
    lease.spec!.holderIdentity = nodeName;
    lease.spec!.leaseDurationSeconds = LEASE_DURATION_SECONDS;
    lease.spec!.renewTime = renew;
    // setNodeOwnerFunc: the Lease is owned by the Node, so it goes with it.
    if (!(lease.metadata?.ownerReferences ?? []).length) {
      const refs = ownerRefs();
      if (refs) lease.metadata = { ...lease.metadata, ownerReferences: refs };
    }
    return lease;
  };
  const renewTimeOf = (l: V1Lease): string => {
    const t = l.spec?.renewTime as unknown;
    return t instanceof Date ? microTime(t) : String(t);
  };
  return {
    async renew(signal) {
      let lastErr: unknown;
      for (let attempt = 0; attempt < MAX_UPDATE_RETRIES; attempt++) {
        try {
          if (!latest) {
            const existing = await api.getLease(nodeName, signal);
            if (!existing) {
              latest = await api.createLease(fresh(null), signal);
              return renewTimeOf(latest);
            }
            latest = existing;
          }
          latest = await api.updateLease(fresh(latest), signal);
          return renewTimeOf(latest);
        } catch (err) {
          lastErr = err;
          latest = null; // re-read: a conflict, or the Lease was deleted
          const reason = (err as { reason?: string }).reason;
          if (reason !== 'Conflict' && reason !== 'NotFound') throw err;
        }
      }
      throw lastErr;
    },
  };
}

export interface HeartbeatOptions {
  api: NodeApi;
  nodeName: string;
  /** The Node's UID (owner of the Lease). */
  nodeUid: () => string | undefined;
  /** Compute the current status (fresh facts each time); `previous` is the last status sent. */
  computeStatus: (previous: V1NodeStatus | undefined, signal: AbortSignal) => Promise<V1NodeStatus>;
  /** The status sent at registration, if any. */
  initialStatus?: V1NodeStatus;
  signal: AbortSignal;
  onEvent?: (e: HeartbeatEvent) => void;
  intervals?: { leaseMs?: number; statusMs?: number; reportMs?: number; retryInitialMs?: number; retryMaxMs?: number };
  now?: () => Date;
}


/** Run both heartbeats until `signal` aborts. Never rejects. */
export async function runHeartbeat(o: HeartbeatOptions): Promise<void> {
  const now = o.now ?? (() => new Date());
  const leaseMs = o.intervals?.leaseMs ?? LEASE_RENEW_INTERVAL_MS;
  const statusMs = o.intervals?.statusMs ?? NODE_STATUS_UPDATE_FREQUENCY_MS;
  const reportMs = o.intervals?.reportMs ?? NODE_STATUS_REPORT_FREQUENCY_MS;
  const retryInitial = o.intervals?.retryInitialMs ?? LEASE_RETRY_INITIAL_MS;
  const retryMax = o.intervals?.retryMaxMs ?? LEASE_RETRY_MAX_MS;
  const emit = (e: HeartbeatEvent) => {
    try {
      o.onEvent?.(e);
    } catch {
      // a listener's failure is not the heartbeat's
    }
  };
  const renewer = leaseRenewer(o.api, o.nodeName, o.nodeUid, now);

  const leaseLoop = async () => {
    let backoff = retryInitial;
    while (!o.signal.aborted) {
      const started = Date.now();
      try {
        const renewTime = await renewer.renew(o.signal);
        backoff = retryInitial;
        emit({ kind: 'LeaseRenewed', renewTime });
        // A fixed period from the start of each renewal, so request time does not drift it.
        await pause(started + leaseMs - Date.now(), o.signal);
      } catch (err) {
        if (o.signal.aborted) break;
        emit({ kind: 'HeartbeatError', what: 'lease', message: errorMessage(err) });
        await pause(backoff, o.signal);
        backoff = Math.min(backoff * 2, retryMax);
      }
    }
  };

  const statusLoop = async () => {
    let lastSent = o.initialStatus;
    let lastReport = Date.now();
    let backoff = retryInitial;
    let wait = lastSent === undefined ? 0 : statusMs;
    while (!o.signal.aborted) {
      await pause(wait, o.signal);
      if (o.signal.aborted) break;
      try {
        const status = await o.computeStatus(lastSent, o.signal);
        const changed = nodeStatusChanged(lastSent, status);
        if (changed || Date.now() - lastReport >= reportMs) {
          await o.api.patchNodeStatus(o.nodeName, status, o.signal);
          lastSent = status;
          lastReport = Date.now();
          emit({ kind: 'NodeStatusUpdated', changed, conditions: status.conditions ?? [] });
        }
        backoff = retryInitial;
        wait = statusMs;
      } catch (err) {
        if (o.signal.aborted) break;
        emit({ kind: 'HeartbeatError', what: 'status', message: errorMessage(err) });
        wait = backoff;
        backoff = Math.min(backoff * 2, retryMax);
      }
    }
  };

  await Promise.all([leaseLoop(), statusLoop()]);
}
