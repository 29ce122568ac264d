/**
 * The pure half of the PLEG: grouping CRI lists into pod records, and the
 * kubelet's generateEvents state machine over every transition.
 */
import { describe, expect, it } from 'vitest';
import { Container, ContainerState, PodSandbox, PodSandboxState } from '../../src/lib/cri/index.js';
import {
  buildPodRecords,
  diffPodRecords,
  generateEvents,
  keepUnchanged,
  type ContainerSnapshotState,
  type PlegContainerState,
  type PlegEventType,
  type PodRecordSnapshot,
} from '../../src/lib/pleg/index.js';

const AT = 1_700_000_000_000;

function sandbox(id: string, uid: string | null, ready = true, createdAt = 1n, attempt = 0): PodSandbox {
  return PodSandbox.fromPartial({
    id,
    state: ready ? PodSandboxState.SANDBOX_READY : PodSandboxState.SANDBOX_NOTREADY,
    createdAt,
    metadata: { name: `pod-${uid}`, uid: uid ?? 'x', namespace: 'ns', attempt },
    labels:
      uid === null
        ? { app: 'not-kubelet' }
        : { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.pod.name': `pod-${uid}`, 'io.kubernetes.pod.namespace': 'ns' },
  });
}

const CSTATE: Record<ContainerSnapshotState, ContainerState> = {
  created: ContainerState.CONTAINER_CREATED,
  running: ContainerState.CONTAINER_RUNNING,
  exited: ContainerState.CONTAINER_EXITED,
  unknown: ContainerState.CONTAINER_UNKNOWN,
};

function container(
  id: string,
  uid: string | null,
  state: ContainerSnapshotState,
  extra: { sandboxId?: string; name?: string; createdAt?: bigint; annotations?: Record<string, string> } = {},
): Container {
  return Container.fromPartial({
    id,
    podSandboxId: extra.sandboxId ?? `sb-${uid}`,
    metadata: { name: 'meta-name', attempt: 2 },
    state: CSTATE[state],
    createdAt: extra.createdAt ?? 5n,
    imageRef: 'sha256:abc',
    labels:
      uid === null
        ? {}
        : {
            'io.kubernetes.pod.uid': uid,
            'io.kubernetes.pod.name': `pod-${uid}`,
            'io.kubernetes.pod.namespace': 'ns',
            ...(extra.name === undefined ? {} : { 'io.kubernetes.container.name': extra.name }),
          },
    annotations: extra.annotations ?? {},
  });
}

/** The events' types, in order. */
const types = (events: { type: PlegEventType }[]): PlegEventType[] => events.map((e) => e.type);

describe('generateEvents (the kubelet state machine)', () => {
  const states: PlegContainerState[] = ['non-existent', 'running', 'exited', 'unknown'];
  const expected: Record<PlegContainerState, Record<PlegContainerState, PlegEventType[]>> = {
    'non-existent': {
      'non-existent': [],
      running: ['ContainerStarted'],
      exited: ['ContainerDied'],
      unknown: ['ContainerChanged'],
    },
    running: {
      'non-existent': ['ContainerDied', 'ContainerRemoved'],
      running: [],
      exited: ['ContainerDied'],
      unknown: ['ContainerChanged'],
    },
    exited: {
      'non-existent': ['ContainerRemoved'],
      running: ['ContainerStarted'],
      exited: [],
      unknown: ['ContainerChanged'],
    },
    unknown: {
      'non-existent': ['ContainerDied', 'ContainerRemoved'],
      running: ['ContainerStarted'],
      exited: ['ContainerDied'],
      unknown: [],
    },
  };
  for (const from of states) {
    for (const to of states) {
      it(`${from} → ${to}: ${expected[from][to].join(' + ') || 'nothing'}`, () => {
        const events = generateEvents('uid-1', 'c1', from, to, AT);
        expect(types(events)).toEqual(expected[from][to]);
        for (const e of events) expect(e).toMatchObject({ podUid: 'uid-1', containerId: 'c1', at: AT });
      });
    }
  }
});

describe('buildPodRecords', () => {
  it('groups sandboxes and containers by the pod UID label and ignores unlabelled ones', () => {
    const records = buildPodRecords(
      [sandbox('sb-a', 'a'), sandbox('sb-b', 'b'), sandbox('sb-foreign', null)],
      [
        container('c-a1', 'a', 'running', { name: 'web' }),
        container('c-b1', 'b', 'exited', { name: 'job' }),
        container('c-foreign', null, 'running'),
        // Its sandbox is gone, the container still belongs to pod c.
        container('c-c1', 'c', 'exited', { name: 'orphan', sandboxId: 'sb-gone' }),
      ],
    );
    expect([...records.keys()]).toEqual(['a', 'b', 'c']);
    expect(records.get('a')?.sandboxes.map((s) => s.id)).toEqual(['sb-a']);
    expect(records.get('a')?.containers.map((c) => c.id)).toEqual(['c-a1']);
    expect(records.get('b')?.containers.map((c) => c.id)).toEqual(['c-b1']);
    expect(records.get('c')).toMatchObject({ uid: 'c', name: 'pod-c', namespace: 'ns', sandboxes: [] });
    expect(records.get('c')?.containers[0]?.sandboxId).toBe('sb-gone');
    const all = [...records.values()].flatMap((r) => [...r.sandboxes.map((s) => s.id), ...r.containers.map((c) => c.id)]);
    expect(all).not.toContain('sb-foreign');
    expect(all).not.toContain('c-foreign');
  });

  it('reads each object as the sync loop needs it, newest first', () => {
    const records = buildPodRecords(
      [sandbox('sb-old', 'a', false, 100n, 0), sandbox('sb-new', 'a', true, 200n, 1)],
      [
        container('c-old', 'a', 'exited', {
          name: 'app',
          createdAt: 300n,
          sandboxId: 'sb-old',
          annotations: { 'io.kubernetes.container.restartCount': '0', 'io.kubernetes.container.hash': 'h0' },
        }),
        container('c-new', 'a', 'created', {
          name: 'app',
          createdAt: 400n,
          sandboxId: 'sb-new',
          annotations: { 'io.kubernetes.container.restartCount': '1', 'io.kubernetes.container.hash': 'h1' },
        }),
        container('c-noname', 'a', 'unknown', { createdAt: 350n, annotations: { 'io.kubernetes.container.restartCount': 'x' } }),
      ],
    );
    const pod = records.get('a') as PodRecordSnapshot;
    expect(pod.sandboxes).toEqual([
      { id: 'sb-new', state: 'ready', createdAt: 200n, attempt: 1 },
      { id: 'sb-old', state: 'notready', createdAt: 100n, attempt: 0 },
    ]);
    expect(pod.containers).toEqual([
      { id: 'c-new', name: 'app', state: 'created', createdAt: 400n, sandboxId: 'sb-new', attempt: 2, restartCount: 1, hash: 'h1', imageRef: 'sha256:abc' },
      // No container-name label: the CRI metadata name; a bad restart count reads as 0.
      { id: 'c-noname', name: 'meta-name', state: 'unknown', createdAt: 350n, sandboxId: 'sb-a', attempt: 2, restartCount: 0, hash: '', imageRef: 'sha256:abc' },
      { id: 'c-old', name: 'app', state: 'exited', createdAt: 300n, sandboxId: 'sb-old', attempt: 2, restartCount: 0, hash: 'h0', imageRef: 'sha256:abc' },
    ]);
    // Nanosecond timestamps beyond 2^53 stay exact.
    const big = 1_700_000_000_123_456_789n;
    const r2 = buildPodRecords([sandbox('s', 'z', true, big)], []);
    expect(r2.get('z')?.sandboxes[0]?.createdAt).toBe(big);
  });
});

describe('diffPodRecords', () => {
  const snap = (sbs: PodSandbox[], cs: Container[]) => buildPodRecords(sbs, cs);

  it('every CRI container state against every other, through real records', () => {
    const cri: (ContainerSnapshotState | null)[] = [null, 'created', 'running', 'exited', 'unknown'];
    // created folds into unknown, as in the kubelet.
    const pleg = (s: ContainerSnapshotState | null): PlegContainerState =>
      s === null ? 'non-existent' : s === 'created' ? 'unknown' : s;
    for (const from of cri) {
      for (const to of cri) {
        const prev = snap([sandbox('sb', 'p')], from === null ? [] : [container('c', 'p', from)]);
        const next = snap([sandbox('sb', 'p')], to === null ? [] : [container('c', 'p', to)]);
        const events = diffPodRecords(prev, next, AT);
        expect(events, `${from} → ${to}`).toEqual(generateEvents('p', 'c', pleg(from), pleg(to), AT));
      }
    }
  });

  it('tracks sandboxes as containers: ready → not ready is ContainerDied with the sandbox id', () => {
    const ready = snap([sandbox('sb', 'p', true)], []);
    const notReady = snap([sandbox('sb', 'p', false)], []);
    const gone = snap([], []);
    expect(diffPodRecords(new Map(), ready, AT)).toEqual([{ type: 'ContainerStarted', podUid: 'p', containerId: 'sb', at: AT }]);
    expect(diffPodRecords(ready, notReady, AT)).toEqual([{ type: 'ContainerDied', podUid: 'p', containerId: 'sb', at: AT }]);
    expect(types(diffPodRecords(notReady, gone, AT))).toEqual(['ContainerRemoved']);
    expect(types(diffPodRecords(ready, gone, AT))).toEqual(['ContainerDied', 'ContainerRemoved']);
    expect(diffPodRecords(ready, ready, AT)).toEqual([]);
  });

  it('a pod appearing and disappearing: containers first, then sandboxes; old ids before new', () => {
    const empty = snap([], []);
    const up = snap([sandbox('sb', 'p')], [container('c1', 'p', 'running'), container('c2', 'p', 'created')]);
    expect(diffPodRecords(empty, up, AT).map((e) => `${e.type}:${e.containerId}`)).toEqual([
      'ContainerStarted:c1',
      'ContainerChanged:c2',
      'ContainerStarted:sb',
    ]);
    const restarted = snap([sandbox('sb', 'p')], [container('c1', 'p', 'exited'), container('c2', 'p', 'running'), container('c3', 'p', 'running')]);
    expect(diffPodRecords(up, restarted, AT).map((e) => `${e.type}:${e.containerId}`)).toEqual([
      'ContainerDied:c1',
      'ContainerStarted:c2',
      'ContainerStarted:c3',
    ]);
    expect(diffPodRecords(restarted, empty, AT).map((e) => `${e.type}:${e.containerId}`)).toEqual([
      'ContainerRemoved:c1',
      'ContainerDied:c2',
      'ContainerRemoved:c2',
      'ContainerDied:c3',
      'ContainerRemoved:c3',
      'ContainerDied:sb',
      'ContainerRemoved:sb',
    ]);
  });

  it('events carry the pod UID they were grouped under; other pods are untouched', () => {
    const prev = snap([sandbox('sa', 'a'), sandbox('sb', 'b')], [container('ca', 'a', 'running'), container('cb', 'b', 'running')]);
    const next = snap([sandbox('sa', 'a'), sandbox('sb', 'b')], [container('ca', 'a', 'running'), container('cb', 'b', 'exited')]);
    expect(diffPodRecords(prev, next, AT)).toEqual([{ type: 'ContainerDied', podUid: 'b', containerId: 'cb', at: AT }]);
  });
});

describe('keepUnchanged', () => {
  const snap = (sbs: PodSandbox[], cs: Container[]) => buildPodRecords(sbs, cs);

  it('keeps the earlier record of every pod that did not change, and the new one of every pod that did', () => {
    const prev = snap([sandbox('sa', 'a'), sandbox('sb', 'b')], [container('ca', 'a', 'running'), container('cb', 'b', 'running')]);
    const next = snap(
      [sandbox('sa', 'a'), sandbox('sb', 'b'), sandbox('sc', 'c')],
      [container('ca', 'a', 'running'), container('cb', 'b', 'exited'), container('cc', 'c', 'running')],
    );
    const built = new Map(next);
    keepUnchanged(prev, next);
    expect(next.get('a')).toBe(prev.get('a'));
    expect(next.get('b')).toBe(built.get('b'));
    expect(next.get('c')).toBe(built.get('c'));
    expect([...next.keys()]).toEqual(['a', 'b', 'c']);
    // The events are those of the records as built.
    expect(diffPodRecords(prev, next, AT)).toEqual(diffPodRecords(prev, built, AT));
  });

  it('counts every field the sync loop reads as a change', () => {
    const base = () => snap([sandbox('s', 'p')], [container('c', 'p', 'running', { annotations: { 'io.kubernetes.container.hash': 'h1' } })]);
    const variants: [string, Map<string, PodRecordSnapshot>][] = [
      ['sandbox state', snap([sandbox('s', 'p', false)], [container('c', 'p', 'running', { annotations: { 'io.kubernetes.container.hash': 'h1' } })])],
      ['sandbox attempt', snap([sandbox('s', 'p', true, 1n, 1)], [container('c', 'p', 'running', { annotations: { 'io.kubernetes.container.hash': 'h1' } })])],
      ['container hash', snap([sandbox('s', 'p')], [container('c', 'p', 'running', { annotations: { 'io.kubernetes.container.hash': 'h2' } })])],
      [
        'restart count',
        snap([sandbox('s', 'p')], [container('c', 'p', 'running', { annotations: { 'io.kubernetes.container.hash': 'h1', 'io.kubernetes.container.restartCount': '1' } })]),
      ],
      ['container created', snap([sandbox('s', 'p')], [container('c', 'p', 'running', { createdAt: 6n, annotations: { 'io.kubernetes.container.hash': 'h1' } })])],
      ['container name', snap([sandbox('s', 'p')], [container('c', 'p', 'running', { name: 'other', annotations: { 'io.kubernetes.container.hash': 'h1' } })])],
      ['one more container', snap([sandbox('s', 'p')], [container('c', 'p', 'running', { annotations: { 'io.kubernetes.container.hash': 'h1' } }), container('d', 'p', 'created')])],
    ];
    const first = base();
    const same = base();
    keepUnchanged(first, same);
    expect(same.get('p')).toBe(first.get('p'));
    for (const [what, next] of variants) {
      const prev = base();
      const built = next.get('p');
      keepUnchanged(prev, next);
      expect(next.get('p'), what).toBe(built);
    }
  });
});
