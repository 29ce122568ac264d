import type { V1Lease, V1Node, V1NodeStatus } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { NodeApi } from '../../src/lib/node/api.js';
import { ApiServerError } from '../../src/lib/kube/errors.js';
import { type HeartbeatEvent, leaseRenewer, microTime, runHeartbeat } from '../../src/lib/node/heartbeat.js';

/** An in-memory API server holding one node's Lease, with resourceVersion conflicts like the real one. */
function fakeApi() {
  let lease: V1Lease | null = null;
  let rv = 0;
  const calls: string[] = [];
  const statuses: V1NodeStatus[] = [];
  let failStatus = 0;
  const api: NodeApi = {
    server: 'https://fake',
    getNode: async () => null,
    createNode: async (n: V1Node) => n,
    patchNodeMetadata: async () => ({}),
    patchNodeStatus: async (_name, status) => {
      calls.push('patchNodeStatus');
      if (failStatus > 0) {
        failStatus--;
        throw new ApiServerError('API server https://fake: patch node status: connection refused');
      }
      statuses.push(status);
      return { status };
    },
    getLease: async () => {
      calls.push('getLease');
      return lease && JSON.parse(JSON.stringify(lease));
    },
    createLease: async (l) => {
      calls.push('createLease');
      lease = JSON.parse(JSON.stringify({ ...l, metadata: { ...l.metadata, resourceVersion: String(++rv) } }));
      return JSON.parse(JSON.stringify(lease));
    },
    updateLease: async (l) => {
      calls.push('updateLease');
      if (l.metadata?.resourceVersion !== lease?.metadata?.resourceVersion) throw new ApiServerError('conflict', { status: 409, reason: 'Conflict' });
      lease = JSON.parse(JSON.stringify({ ...l, metadata: { ...l.metadata, resourceVersion: String(++rv) } }));
      return JSON.parse(JSON.stringify(lease));
    },
    close: () => {},
  };
  return {
    api,
    calls,
    statuses,
    lease: () => lease,
    bumpLease: () => {
      lease!.metadata!.resourceVersion = String(++rv);
    },
    failStatusTimes: (n: number) => (failStatus = n),
  };
}

describe('lease renewer', () => {
  it('creates the Lease owned by the Node with leaseDurationSeconds 40 and a MicroTime renewTime, then updates it', async () => {
    const f = fakeApi();
    let t = Date.parse('2026-01-01T00:00:00.123Z');
    const r = leaseRenewer(f.api, 'node1', () => 'uid-1', () => new Date(t));
    const signal = new AbortController().signal;
    expect(await r.renew(signal)).toBe('2026-01-01T00:00:00.123000Z');
    expect(f.lease()).toMatchObject({
      metadata: { name: 'node1', namespace: 'kube-node-lease', ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node1', uid: 'uid-1' }] },
      spec: { holderIdentity: 'node1', leaseDurationSeconds: 40, renewTime: '2026-01-01T00:00:00.123000Z' },
    });
    t += 10_000;
    expect(await r.renew(signal)).toBe('2026-01-01T00:00:10.123000Z');
    expect(f.calls).toEqual(['getLease', 'createLease', 'updateLease']);
  });
  it('re-reads the Lease after a conflict and succeeds', async () => {
    const f = fakeApi();
    const r = leaseRenewer(f.api, 'node1', () => 'uid-1');
    const signal = new AbortController().signal;
    await r.renew(signal);
    f.bumpLease(); // someone else wrote it
    await r.renew(signal);
    expect(f.calls).toEqual(['getLease', 'createLease', 'updateLease', 'getLease', 'updateLease']);
  });
  it('microTime has six fractional digits', () => {
    expect(microTime(new Date('2026-01-01T00:00:00Z'))).toBe('2026-01-01T00:00:00.000000Z');
  });
});

describe('runHeartbeat', () => {
  it('renews the lease every interval, sends status only when it changed, and retries failed status updates', async () => {
    const f = fakeApi();
    const ac = new AbortController();
    const events: HeartbeatEvent[] = [];
    let memory = 1;
    f.failStatusTimes(1);
    const run = runHeartbeat({
      api: f.api,
      nodeName: 'node1',
      nodeUid: () => 'uid-1',
      initialStatus: { capacity: { memory: '1' } },
      computeStatus: async () => ({ capacity: { memory: String(memory) } }),
      signal: ac.signal,
      onEvent: (e) => events.push(e),
      intervals: { leaseMs: 40, statusMs: 20, reportMs: 60_000, retryInitialMs: 5, retryMaxMs: 10 },
    });
    await new Promise((r) => setTimeout(r, 130));
    expect(f.statuses).toEqual([]); // unchanged: nothing sent
    memory = 2;
    await new Promise((r) => setTimeout(r, 130));
    ac.abort();
    await run;
    // The first attempt failed, was reported, and the retry wrote the new status once.
    expect(events.filter((e) => e.kind === 'HeartbeatError')).toEqual([{ kind: 'HeartbeatError', what: 'status', message: 'API server https://fake: patch node status: connection refused' }]);
    expect(f.statuses).toEqual([{ capacity: { memory: '2' } }]);
    const renewals = events.filter((e) => e.kind === 'LeaseRenewed').length;
    expect(renewals).toBeGreaterThanOrEqual(2);
    expect(renewals).toBeLessThanOrEqual(8);
  });
});
