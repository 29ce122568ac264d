import { describe, expect, it } from 'vitest';
import {
  DEFAULT_CONTAINER_GC_POLICY,
  containersToDeleteInPod,
  deletorKeeps,
  planContainerEviction,
  planSandboxEviction,
  type ContainerGCPolicy,
  type GcContainer,
  type GcContainerState,
  type GcSandbox,
} from '../../src/lib/kuberuntime/container-gc.js';

const NOW = 1_000_000;

function c(id: string, podUid: string, name: string, state: GcContainerState, createdAt: number, sandboxId = `sb-${podUid}`): GcContainer {
  return { id, podUid, name, state, createdAt, sandboxId };
}

function plan(containers: GcContainer[], opts: { policy?: Partial<ContainerGCPolicy>; ready?: boolean; removed?: string[] } = {}): string[] {
  return planContainerEviction({
    containers,
    policy: { ...DEFAULT_CONTAINER_GC_POLICY, ...opts.policy },
    now: NOW,
    allSourcesReady: opts.ready ?? true,
    podRemoved: (uid) => (opts.removed ?? []).includes(uid),
  }).map((r) => r.id);
}

describe('planContainerEviction (the kubelet\'s evictContainers)', () => {
  it.each<[string, GcContainer[], Parameters<typeof plan>[1], string[]]>([
    ['nothing dead: nothing', [c('r', 'p', 'c', 'running', 1)], {}, []],
    ['one dead instance per pod container is kept (MaxPerPodContainer 1)', [c('d1', 'p', 'c', 'exited', 1), c('r', 'p', 'c', 'running', 3)], {}, []],
    [
      'older dead instances go, oldest first; the newest dead one stays',
      [c('d1', 'p', 'c', 'exited', 1), c('d3', 'p', 'c', 'exited', 3), c('d2', 'p', 'c', 'exited', 2), c('r', 'p', 'c', 'running', 4)],
      {},
      ['d1', 'd2'],
    ],
    ['each (pod, container name) is its own unit', [c('a1', 'p', 'a', 'exited', 1), c('b1', 'p', 'b', 'exited', 2), c('a2', 'q', 'a', 'exited', 3)], {}, []],
    ['created and unknown containers count as dead, running never', [c('x', 'p', 'c', 'created', 1), c('u', 'p', 'c', 'unknown', 2), c('r', 'p', 'c', 'running', 0)], {}, ['x']],
    ['a pod that no longer exists loses every dead container', [c('d1', 'gone', 'c', 'exited', 1), c('d2', 'gone', 'c', 'exited', 2)], { removed: ['gone'] }, ['d1', 'd2']],
    ['… only once every source is ready', [c('d1', 'gone', 'c', 'exited', 1), c('d2', 'gone', 'c', 'exited', 2)], { removed: ['gone'], ready: false }, ['d1']],
    ['MinAge: younger dead containers are not evictable', [c('d1', 'p', 'c', 'exited', NOW - 500), c('d2', 'p', 'c', 'exited', NOW - 100)], { policy: { minAgeMs: 1000 } }, []],
    ['MaxPerPodContainer < 0: no per-unit limit', [c('d1', 'p', 'c', 'exited', 1), c('d2', 'p', 'c', 'exited', 2)], { policy: { maxPerPodContainer: -1 } }, []],
    [
      'MaxContainers: an equal share per unit (at least 1), then oldest first overall',
      [c('a1', 'p', 'a', 'exited', 1), c('a2', 'p', 'a', 'exited', 5), c('b1', 'p', 'b', 'exited', 2), c('b2', 'p', 'b', 'exited', 6), c('e1', 'q', 'e', 'exited', 3)],
      { policy: { maxPerPodContainer: -1, maxContainers: 2 } },
      ['a1', 'b1', 'e1'],
    ],
    [
      'MaxContainers 2 over 2 units: 1 each',
      [c('a1', 'p', 'a', 'exited', 1), c('a2', 'p', 'a', 'exited', 2), c('a3', 'p', 'a', 'exited', 3), c('b1', 'p', 'b', 'exited', 4)],
      { policy: { maxPerPodContainer: -1, maxContainers: 2 } },
      ['a1', 'a2'],
    ],
  ])('%s', (_name, containers, opts, want) => {
    expect(plan(containers, opts)).toEqual(want);
  });

  it('marks unknown containers, which are stopped before removal', () => {
    const r = planContainerEviction({
      containers: [c('u', 'p', 'c', 'unknown', 1), c('d', 'p', 'c', 'exited', 2)],
      policy: DEFAULT_CONTAINER_GC_POLICY,
      now: NOW,
      allSourcesReady: true,
      podRemoved: () => false,
    });
    expect(r).toEqual([{ id: 'u', podUid: 'p', name: 'c', unknown: true }]);
  });
});

describe('planSandboxEviction (the kubelet\'s evictSandboxes)', () => {
  const sb = (id: string, podUid: string, ready: boolean, createdAt: number): GcSandbox => ({ id, podUid, ready, createdAt });
  it.each<[string, GcSandbox[], { sandboxId: string }[], string[], string[]]>([
    ['a pod that exists keeps its newest sandbox, even when not ready', [sb('s1', 'p', false, 1), sb('s2', 'p', false, 2)], [], [], ['s1']],
    ['older sandboxes go when not ready and unreferenced', [sb('s1', 'p', false, 1), sb('s2', 'p', false, 2), sb('s3', 'p', true, 3)], [], [], ['s1', 's2']],
    ['a ready sandbox stays', [sb('s1', 'p', true, 1), sb('s2', 'p', true, 2)], [], [], []],
    ['a sandbox a container refers to stays', [sb('s1', 'p', false, 1), sb('s2', 'p', true, 2)], [{ sandboxId: 's1' }], [], []],
    ['a pod that no longer exists loses all its inactive sandboxes, the newest too', [sb('s1', 'g', false, 1), sb('s2', 'g', false, 2)], [], ['g'], ['s1', 's2']],
    ['… but not a ready one', [sb('s1', 'g', false, 1), sb('s2', 'g', true, 2)], [], ['g'], ['s1']],
  ])('%s', (_name, sandboxes, containers, removed, want) => {
    expect(planSandboxEviction({ sandboxes, containers, podRemoved: (u) => removed.includes(u) }).sort()).toEqual(want);
  });
});

describe('containersToDeleteInPod (the pod container deletor on ContainerDied)', () => {
  const pod = [
    c('c1', 'p', 'c', 'exited', 1),
    c('c2', 'p', 'c', 'exited', 2),
    c('c3', 'p', 'c', 'exited', 3),
    c('c4', 'p', 'c', 'running', 4),
    c('o1', 'p', 'other', 'exited', 1),
    c('o2', 'p', 'other', 'exited', 2),
  ];
  it.each<[string, string, number, boolean, string[]]>([
    ['keeps the newest exited instance of the container that died, newest first', 'c3', 1, false, ['c2', 'c1']],
    ['the other containers of the pod are not touched', 'c1', 1, false, ['c2', 'c1']],
    ['nothing beyond the kept ones: nothing', 'o2', 2, false, []],
    ['an id the pod does not have (a sandbox): nothing', 'sandbox', 1, false, []],
    ['removeAll: every exited container of the pod', 'c3', 1, true, ['c3', 'c2', 'o2', 'c1', 'o1']],
  ])('%s', (_name, died, keep, all, want) => {
    expect(containersToDeleteInPod(pod, died, keep, all).map((r) => r.id)).toEqual(want);
  });

  it('keeps at least one (the kubelet\'s minDeadContainerInPod)', () => {
    expect(deletorKeeps({ ...DEFAULT_CONTAINER_GC_POLICY, maxPerPodContainer: 0 })).toBe(1);
    expect(deletorKeeps({ ...DEFAULT_CONTAINER_GC_POLICY, maxPerPodContainer: 3 })).toBe(3);
  });
});
