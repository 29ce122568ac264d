import { describe, expect, it } from 'vitest';
import type { CoreV1Event } from '@kubernetes/client-node';
import { COMBINED_PREFIX, EventCorrelator } from '../../src/lib/node/event-correlator.js';
import { EventRecorder, type EventApi } from '../../src/lib/node/event-recorder.js';
import { nodeConditionEvents, podEventToRecorded } from '../../src/lib/node/kubelet-events.js';

const ev = (message: string, reason = 'BackOff', name = 'p'): CoreV1Event => ({
  metadata: { name: `${name}.1`, namespace: 'ns' },
  involvedObject: { kind: 'Pod', namespace: 'ns', name, uid: `uid-${name}`, apiVersion: 'v1' },
  reason,
  message,
  type: 'Warning',
  count: 1,
  source: { component: 'kubelet', host: 'n1' },
});

describe('EventCorrelator (client-go events_cache.go)', () => {
  it('an identical event patches count of the first object instead of creating another', () => {
    const c = new EventCorrelator();
    const first = c.correlate(ev('Back-off restarting failed container'), 0);
    expect(first).toMatchObject({ skip: false, event: { metadata: { name: 'p.1' }, count: 1 } });
    expect(first.skip === false && first.patch).toBeUndefined();
    const second = c.correlate({ ...ev('Back-off restarting failed container'), metadata: { name: 'p.2', namespace: 'ns' } }, 1000);
    expect(second).toMatchObject({ skip: false, event: { metadata: { name: 'p.1' }, count: 2 }, patch: { count: 2, message: 'Back-off restarting failed container' } });
  });

  it('similar events (same reason, other messages): from the 10th distinct message on, one combined event', () => {
    const c = new EventCorrelator();
    const names = new Set<string>();
    for (let i = 1; i <= 9; i++) {
      const r = c.correlate(ev(`message ${i}`), i);
      expect(r.skip === false && r.event.message).toBe(`message ${i}`);
    }
    const tenth = c.correlate(ev('message 10'), 10);
    expect(tenth.skip === false && tenth.event.message).toBe(`${COMBINED_PREFIX}message 10`);
    expect(tenth.skip === false && tenth.patch).toBeUndefined();
    if (!tenth.skip) names.add(tenth.event.metadata!.name!);
    const eleventh = c.correlate(ev('message 11'), 11);
    expect(eleventh).toMatchObject({ skip: false, event: { message: `${COMBINED_PREFIX}message 11`, count: 2 }, patch: { count: 2 } });
    if (!eleventh.skip) names.add(eleventh.event.metadata!.name!);
    expect(names.size).toBe(1);
    // 10 minutes later the window starts again.
    const later = c.correlate(ev('message 12'), 11 + 600_001);
    expect(later.skip === false && later.event.message).toBe('message 12');
  });

  it('spam filter: 25 events per object at once, then one per 5 minutes', () => {
    const c = new EventCorrelator();
    let passed = 0;
    for (let i = 0; i < 40; i++) if (!c.correlate(ev('same'), i).skip) passed++;
    expect(passed).toBe(25);
    expect(c.correlate(ev('same'), 299_000).skip).toBe(true);
    expect(c.correlate(ev('same'), 301_000).skip).toBe(false);
    // Another object has its own bucket.
    expect(c.correlate(ev('same', 'BackOff', 'q'), 301_000).skip).toBe(false);
  });
});

describe('EventRecorder', () => {
  it('stamps an event when it is recorded, not when the sender gets to it', async () => {
    let clock = 1_000_000;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const sent: CoreV1Event[] = [];
    const api: EventApi = {
      createEvent: async (_ns, e) => {
        if (sent.length === 0) await gate;
        sent.push(e);
        return e;
      },
      patchEvent: async () => {
        throw new Error('no patch expected');
      },
    };
    const ctrl = new AbortController();
    const r = new EventRecorder({ api, nodeName: 'n1', signal: ctrl.signal, now: () => clock });
    const obj = { kind: 'Pod', namespace: 'ns', name: 'p', uid: 'u', apiVersion: 'v1' };
    r.record({ object: obj, type: 'Normal', reason: 'Pulled', message: 'first' });
    r.record({ object: obj, type: 'Normal', reason: 'Created', message: 'second' });
    // The sender is held on the first for a minute.
    clock += 60_000;
    release();
    while (sent.length < 2) await new Promise((res) => setTimeout(res, 5));
    expect(sent.map((e) => [e.reason, e.firstTimestamp?.getTime(), e.lastTimestamp?.getTime()])).toEqual([
      ['Pulled', 1_000_000, 1_000_000],
      ['Created', 1_000_000, 1_000_000],
    ]);
    ctrl.abort();
    await r.done;
  });

  it('creates, then patches count; a patch of an expired event creates it again; the caller never waits', async () => {
    const calls: string[] = [];
    const server = new Map<string, CoreV1Event>();
    let rv = 0;
    const api: EventApi = {
      createEvent: async (ns, e) => {
        calls.push(`create ${e.reason} ${e.count}`);
        const w = { ...e, metadata: { ...e.metadata, resourceVersion: String(++rv) } };
        server.set(e.metadata!.name!, w);
        return w;
      },
      patchEvent: async (ns, name, p) => {
        calls.push(`patch ${p.count}`);
        const old = server.get(name);
        if (!old) throw Object.assign(new Error('not found'), { status: 404 });
        const w = { ...old, count: p.count };
        server.set(name, w);
        return w;
      },
    };
    const ctrl = new AbortController();
    const r = new EventRecorder({ api, nodeName: 'n1', signal: ctrl.signal });
    const e = { object: { kind: 'Pod', namespace: 'ns', name: 'p', uid: 'u', apiVersion: 'v1' }, type: 'Warning' as const, reason: 'BackOff', message: 'back-off' };
    r.record(e);
    r.record(e);
    r.record(e);
    while (r.stats.sent < 3) await new Promise((res) => setTimeout(res, 5));
    expect(calls).toEqual(['create BackOff 1', 'patch 2', 'patch 3']);
    expect([...server.values()][0]).toMatchObject({ count: 3, source: { component: 'kubelet', host: 'n1' }, reportingComponent: 'kubelet', reportingInstance: 'n1' });
    server.clear();
    r.record(e);
    while (r.stats.sent < 4) await new Promise((res) => setTimeout(res, 5));
    expect(calls.slice(3)).toEqual(['patch 4', 'create BackOff 4']);
    ctrl.abort();
    await r.done;
  });

  it('while the server is away: bounded queue, drops counted, retries stop at the limit', async () => {
    const api: EventApi = {
      createEvent: async () => {
        throw new Error('connection refused');
      },
      patchEvent: async () => {
        throw new Error('connection refused');
      },
    };
    const ctrl = new AbortController();
    const errors: string[] = [];
    const r = new EventRecorder({ api, nodeName: 'n1', signal: ctrl.signal, retryMs: 1, maxTries: 3, queueMax: 5, onError: (m) => errors.push(m) });
    for (let i = 0; i < 10; i++) r.record({ object: { kind: 'Node', name: 'n1', uid: 'n1' }, type: 'Normal', reason: 'R', message: `m${i}` });
    // The sender has not run yet: five wait in the queue, five are dropped at once.
    expect(r.stats.dropped).toBe(5);
    while (r.stats.dropped < 10) await new Promise((res) => setTimeout(res, 5));
    expect(errors.length).toBe(5 * 3);
    ctrl.abort();
    await r.done;
  });
});

describe('what the kubelet records', () => {
  it('pod events are about the mirror pod of a static pod, with the container fieldPath; sandbox events stay local', () => {
    const base = { kind: 'Event' as const, pod: 'kube-system/etcd-n1', uid: 'static-uid', type: 'Normal' as const };
    expect(podEventToRecorded({ ...base, reason: 'Started', message: 'Started container etcd', container: 'etcd' }, (u) => (u === 'static-uid' ? 'mirror-uid' : undefined))).toEqual({
      object: { kind: 'Pod', namespace: 'kube-system', name: 'etcd-n1', uid: 'mirror-uid', apiVersion: 'v1', fieldPath: 'spec.containers{etcd}' },
      type: 'Normal',
      reason: 'Started',
      message: 'Started container etcd',
    });
    expect(podEventToRecorded({ ...base, reason: 'SandboxCreated', message: 'x' }, () => undefined)).toBeNull();
    // A crash loop's BackOff has the kubelet's one message, whatever the delay: every back-off counts on one object.
    const backoff = podEventToRecorded(
      { ...base, type: 'Warning', reason: 'BackOff', containerReason: 'CrashLoopBackOff', container: 'etcd', message: 'back-off 20s restarting failed container=etcd pod=etcd-n1_kube-system(static-uid)' },
      () => undefined,
    );
    expect(backoff?.message).toBe('Back-off restarting failed container etcd in pod etcd-n1_kube-system(static-uid)');
    expect(backoff?.object.uid).toBe('static-uid');
    // A container that could not be created or started: "Error: <message>", as the kubelet words it.
    for (const containerReason of ['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']) {
      const failed = podEventToRecorded({ ...base, type: 'Warning', reason: 'Failed', containerReason, container: 'etcd', message: 'configmap "cfg" not found' }, () => undefined);
      expect(failed?.message).toBe('Error: configmap "cfg" not found');
    }
    const pull = podEventToRecorded({ ...base, type: 'Warning', reason: 'Failed', containerReason: 'ErrImagePull', container: 'etcd', message: 'Failed to pull image "x": not found' }, () => undefined);
    expect(pull?.message).toBe('Failed to pull image "x": not found');
    const never = podEventToRecorded(
      { ...base, type: 'Warning', reason: 'Failed', containerReason: 'ErrImageNeverPull', container: 'etcd', message: 'Container image "x" is not present with pull policy of Never' },
      () => undefined,
    );
    expect(never).toMatchObject({ reason: 'ErrImageNeverPull', message: 'Container image "x" is not present with pull policy of Never' });
  });

  it('node condition events on start and on each transition', () => {
    const cond = (type: string, status: string) => ({ type, status });
    const first = nodeConditionEvents('n1', undefined, [cond('MemoryPressure', 'False'), cond('Ready', 'True')]);
    expect(first.map((e) => e.message)).toEqual(['Node n1 status is now: NodeHasSufficientMemory', 'Node n1 status is now: NodeReady']);
    expect(nodeConditionEvents('n1', [cond('Ready', 'True')], [cond('Ready', 'True')])).toEqual([]);
    expect(nodeConditionEvents('n1', [cond('Ready', 'True')], [cond('Ready', 'False')]).map((e) => e.reason)).toEqual(['NodeNotReady']);
  });
});
