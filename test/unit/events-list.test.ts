/**
 * `klet events`' pure parts: klet's event stream made into the Events the
 * kubelet would hold (counted and combined as client-go's correlator does,
 * nothing rate-limited), kubectl events' table, and the events a pod's
 * record, sync state and runtime objects still tell without a sync.
 */
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { EventList, kubeletEventOf } from '../../src/lib/events/event-list.js';
import { podEvents } from '../../src/lib/events/pod-events.js';
import type { KletEvent, KletEventBody } from '../../src/lib/events/types.js';
import type { PodRecord, PodSyncState } from '../../src/lib/kuberuntime/poddir.js';
import type { RuntimeContainerStatus } from '../../src/lib/kuberuntime/runtime-status.js';
import { deriveEvents, type DerivedEvent } from '../../src/lib/status/derived-events.js';
import { formatEventTable } from '../../src/lib/status/format.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'shop', uid: 'uid-web' },
  spec: { initContainers: [{ name: 'setup', image: 'busybox' }], containers: [{ name: 'app', image: 'busybox' }] },
};

let seq = 0;
const at = (body: KletEventBody, ms: number): KletEvent => ({ ...body, seq: ++seq, time: new Date(ms).toISOString() }) as KletEvent;

describe('EventList: klet events as the kubelet would hold them', () => {
  it('a repeated event is one Event, counted, with its first and last time; the kubelet\'s object, fieldPath and source', () => {
    const list = new EventList('node1');
    expect(list.add(at(podEvents.started(pod, 'app', 'c1', false), T0))?.type).toBe('ADDED');
    for (let i = 1; i <= 40; i++) {
      const c = list.add(at(podEvents.failed(pod, 'app', 'CrashLoopBackOff', `back-off ${10 * i}s restarting failed container=app pod=web_shop(uid-web)`), T0 + i * 1000));
      expect(c?.type).toBe(i === 1 ? 'ADDED' : 'MODIFIED');
    }
    const items = list.items();
    expect(items).toHaveLength(2);
    const backoff = items[1] as CoreV1Event;
    // 40, not the 25 the kubelet's spam filter would let through to an API server.
    expect(backoff).toMatchObject({
      type: 'Warning',
      reason: 'BackOff',
      count: 40,
      message: 'Back-off restarting failed container app in pod web_shop(uid-web)',
      involvedObject: { kind: 'Pod', namespace: 'shop', name: 'web', uid: 'uid-web', fieldPath: 'spec.containers{app}' },
      source: { component: 'kubelet', host: 'node1' },
      metadata: { namespace: 'shop' },
    });
    expect(backoff.firstTimestamp?.toISOString()).toBe(new Date(T0 + 1000).toISOString());
    expect(backoff.lastTimestamp?.toISOString()).toBe(new Date(T0 + 40_000).toISOString());
  });

  it('Killing and FailedPreStopHook of a sidecar are about spec.initContainers{name}, as the kubelet\'s reference is (checked against the kubelet v1.34 in scripts/compare-kubelet.sh)', () => {
    const list = new EventList('node1');
    list.add(at(podEvents.killing(pod, 'setup', 'c0', 'Stopping container setup'), T0));
    list.add(at(podEvents.failedPreStopHook(pod, 'setup', 'c0'), T0 + 1));
    list.add(at(podEvents.killing(pod, 'app', 'c1', 'Stopping container app'), T0 + 2));
    expect(list.items().map((e) => [e.reason, e.involvedObject.fieldPath])).toEqual([
      ['Killing', 'spec.initContainers{setup}'],
      ['FailedPreStopHook', 'spec.initContainers{setup}'],
      ['Killing', 'spec.containers{app}'],
    ]);
  });

  it('similar events with ten different messages are combined, as the kubelet\'s aggregator does', () => {
    const list = new EventList('node1');
    for (let i = 0; i < 12; i++) list.add(at(podEvents.failedMount(pod, `MountVolume.SetUp failed for volume "v${i}"`), T0 + i));
    const combined = list.items().filter((e) => e.message?.startsWith('(combined from similar events): '));
    expect(combined).toHaveLength(1);
    expect(combined[0]).toMatchObject({ count: 3, message: '(combined from similar events): MountVolume.SetUp failed for volume "v11"' });
  });

  it('leaves out what the kubelet does not record: klet\'s own sandbox events, PLEG and sync-loop events', () => {
    const list = new EventList('node1');
    expect(list.add(at(podEvents.sandboxCreated(pod, 'a'.repeat(64), '10.0.0.2'), T0))).toBeNull();
    expect(list.add(at({ kind: 'PLEG', type: 'ContainerStarted', podUid: 'uid-web', containerId: 'c' }, T0))).toBeNull();
    expect(list.items()).toEqual([]);
  });
});

describe('kubectl events table', () => {
  const now = new Date(T0 + 600_000);
  const ev = (over: Partial<CoreV1Event>): CoreV1Event => ({
    metadata: { namespace: 'shop', name: 'web.1' },
    involvedObject: { kind: 'Pod', name: 'web', namespace: 'shop' },
    type: 'Normal',
    reason: 'Started',
    message: 'Started container app',
    count: 1,
    firstTimestamp: new Date(T0),
    lastTimestamp: new Date(T0),
    ...over,
  });

  it('LAST SEEN, TYPE, REASON, OBJECT, MESSAGE; a count as "(xN over AGE)"; NAMESPACE first across namespaces', () => {
    const events = [
      ev({}),
      ev({ type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container app in pod web_shop(u)', count: 3, firstTimestamp: new Date(T0 + 60_000), lastTimestamp: new Date(T0 + 480_000) }),
    ];
    expect(formatEventTable(events, now, { namespaces: false }).split('\n')).toEqual([
      'LAST SEEN         TYPE      REASON    OBJECT    MESSAGE',
      '10m               Normal    Started   Pod/web   Started container app',
      '2m (x3 over 9m)   Warning   BackOff   Pod/web   Back-off restarting failed container app in pod web_shop(u)',
    ]);
    expect(formatEventTable(events, now, { namespaces: true }).split('\n')[0]).toBe('NAMESPACE   LAST SEEN         TYPE      REASON    OBJECT    MESSAGE');
    expect(formatEventTable(events, now, { namespaces: true }).split('\n')[1]).toMatch(/^shop +10m +Normal/);
  });

  it('a time not known is <unknown>; a message ends at its first line break; ESC is shown as ^[, not sent', () => {
    const row = formatEventTable([ev({ firstTimestamp: undefined, lastTimestamp: undefined, message: '  Error: one\ntwo \x1b[31m ' })], now, { namespaces: false }).split('\n')[1];
    expect(row).toBe('<unknown>   Normal   Started   Pod/web   Error: one...');
    expect(formatEventTable([ev({ reason: 'X\x1b[2J' })], now, { namespaces: false })).toContain('X^[[2J');
  });
});

describe('deriveEvents: what the records and the runtime still tell', () => {
  const ctr = (over: Partial<RuntimeContainerStatus>): RuntimeContainerStatus => ({
    id: 'c',
    name: 'app',
    sandboxId: 's',
    state: 'exited',
    createdAt: 0,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    reason: '',
    message: '',
    image: 'busybox',
    imageRef: '',
    hash: '',
    restartCount: 0,
    type: 'regular',
    logPath: '',
    ...over,
  });
  const record = (over: Partial<PodRecord> = {}): PodRecord => ({ pod, source: 'file', firstSeen: new Date(T0).toISOString(), ...over });
  const runtime = (containers: RuntimeContainerStatus[]) => ({ uid: 'uid-web', name: 'web', namespace: 'shop', sandboxes: [], containers });
  const state = (over: Partial<PodSyncState> = {}): PodSyncState => ({ containers: {}, ...over });
  const summary = (d: DerivedEvent[]) =>
    d.map((x) => `${x.event.type} ${x.event.reason} ${x.event.container ?? '-'} x${x.at.count} ${x.at.firstMs === undefined ? '?' : x.at.firstMs - T0}..${x.at.lastMs === undefined ? '?' : x.at.lastMs - T0}: ${x.event.message}`);

  it('a crash loop: Created and Started counted from the restart count, the back-off at the last exit', () => {
    const d = deriveEvents({
      record: record(),
      runtime: runtime([
        ctr({ id: 'c3', name: 'app', restartCount: 2, createdAt: T0 + 30_000, startedAt: T0 + 30_100, finishedAt: T0 + 31_000, exitCode: 3 }),
        ctr({ id: 'c2', name: 'app', restartCount: 1, createdAt: T0 + 10_000, startedAt: T0 + 10_100, finishedAt: T0 + 11_000, exitCode: 3 }),
        ctr({ id: 'i1', name: 'setup', type: 'init', createdAt: T0 + 1000, startedAt: T0 + 1100, finishedAt: T0 + 1200 }),
      ]),
      syncState: state({ containers: { app: { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container=app pod=web_shop(uid-web)', backoffMs: 20_000 } } }),
    });
    expect(summary(d)).toEqual([
      'Normal Created setup x1 1000..1000: Created container: setup',
      'Normal Started setup x1 1100..1100: Started container setup',
      // Three instances, of which the runtime holds two: the first is the pod's start.
      'Normal Created app x3 0..30000: Created container: app',
      'Normal Started app x3 0..30100: Started container app',
      'Warning BackOff app x1 31000..31000: back-off 20s restarting failed container=app pod=web_shop(uid-web)',
    ]);
    const backoff = kubeletEventOf(d[4]!.event, 'node1', d[4]!.at);
    expect(backoff).toMatchObject({ reason: 'BackOff', message: 'Back-off restarting failed container app in pod web_shop(uid-web)', count: 1 });
    expect(d[0]!.event.init).toBe(true);
    expect(kubeletEventOf(d[0]!.event, 'node1', d[0]!.at)?.involvedObject.fieldPath).toBe('spec.initContainers{setup}');
  });

  it('a container that never started: the failure with no time kept (CreateContainerConfigError), an image pull at its failed pull', () => {
    const config = deriveEvents({
      record: record(),
      runtime: runtime([]),
      syncState: state({ containers: { setup: { reason: 'CreateContainerConfigError', message: 'configmap "cfg" not found' } } }),
    });
    expect(summary(config)).toEqual(['Warning Failed setup x1 ?..?: configmap "cfg" not found']);
    const pull = deriveEvents({
      record: record(),
      runtime: runtime([]),
      syncState: state({ containers: { app: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "nope"', pullFailedAt: T0 + 5000, pullBackoffMs: 10_000 } } }),
    });
    expect(summary(pull)).toEqual(['Warning BackOff app x1 5000..5000: Back-off pulling image "nope"']);
  });

  it('a created container that has not started yet: Created only; Started counts the instances that did', () => {
    const d = deriveEvents({ record: record(), runtime: runtime([ctr({ name: 'app', state: 'created', restartCount: 1, createdAt: T0 + 9000 }), ctr({ name: 'app', createdAt: T0 + 1000, startedAt: T0 + 1100, finishedAt: T0 + 2000 })]), syncState: state() });
    expect(summary(d)).toEqual(['Normal Created app x2 1000..9000: Created container: app', 'Normal Started app x1 1100..1100: Started container app']);
  });

  it('pod-level: an admission rejection at the pod\'s start, FailedMount, FailedCreatePodSandBox, Evicted; Killing while being deleted', () => {
    expect(summary(deriveEvents({ record: record(), runtime: runtime([]), syncState: state({ rejected: true, reason: 'NodePorts', message: 'Node didn\'t have free ports' }) }))).toEqual([
      "Warning NodePorts - x1 0..0: Node didn't have free ports",
    ]);
    expect(summary(deriveEvents({ record: record(), runtime: runtime([]), syncState: state({ reason: 'FailedMount', message: 'configmap "cfg" not found' }) }))).toEqual([
      'Warning FailedMount - x1 ?..?: Unable to attach or mount volumes: configmap "cfg" not found',
    ]);
    expect(summary(deriveEvents({ record: record(), runtime: runtime([]), syncState: state({ sandboxError: { reason: 'CreatePodSandboxError', message: 'Failed to create pod sandbox: boom', backoffMs: 1 } }) }))).toEqual([
      'Warning FailedCreatePodSandBox - x1 ?..?: Failed to create pod sandbox: boom',
    ]);
    expect(summary(deriveEvents({ record: record(), runtime: runtime([]), syncState: state({ reason: 'Evicted', message: 'Usage of EmptyDir volume "v" exceeds the limit "1Mi".' }) }))).toEqual([
      'Warning Evicted - x1 ?..?: Usage of EmptyDir volume "v" exceeds the limit "1Mi".',
    ]);
    const deleting = deriveEvents({
      record: record({ deletion: { at: new Date(T0 + 50_000).toISOString(), gracePeriodSeconds: 30 } }),
      runtime: runtime([ctr({ name: 'app', state: 'running', createdAt: T0 + 1000, startedAt: T0 + 1100 })]),
      syncState: state(),
    });
    expect(summary(deleting).at(-1)).toBe('Normal Killing app x1 50000..50000: Stopping container app');
  });

  it('an admission rejection\'s event says what follows "Pod was rejected: ", as the kubelet\'s rejectPod', () => {
    expect(podEvents.rejected(pod, 'NodePorts', 'Pod was rejected: Predicate NodePorts failed: x')).toMatchObject({ type: 'Warning', reason: 'NodePorts', message: 'Predicate NodePorts failed: x' });
  });

  it('the same event read again has the same name (a watch tells a new event from one counted again)', () => {
    const e = podEvents.created(pod, 'app', 'c1', false);
    const a = kubeletEventOf(e, 'node1', { count: 1, firstMs: T0, lastMs: T0 });
    const b = kubeletEventOf(e, 'node1', { count: 2, firstMs: T0, lastMs: T0 + 1 });
    expect(a?.metadata?.name).toMatch(/^web\.[0-9a-f]{16}$/);
    expect(b?.metadata?.name).toBe(a?.metadata?.name);
    expect(kubeletEventOf(podEvents.started(pod, 'app', 'c1', false), 'node1', { count: 1 })?.metadata?.name).not.toBe(a?.metadata?.name);
  });
});
