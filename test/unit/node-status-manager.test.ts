import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiServerError } from '../../src/lib/kube/errors.js';
import type { PodApi } from '../../src/lib/node/api.js';
import { PodStatusManager, type MirrorPodEvent, mirrorPodFor } from '../../src/lib/node/status-manager.js';

const staticPod = (phase = 'Running', hash = 'h1'): V1Pod => ({
  metadata: { name: 'etcd-node1', namespace: 'kube-system', uid: hash, annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': hash, 'kubernetes.io/config.seen': 'x' } },
  spec: { containers: [{ name: 'etcd', image: 'etcd' }], serviceAccountName: 'default', serviceAccount: 'default' },
  status: { phase },
});

function fakeApi() {
  const pods = new Map<string, V1Pod>();
  const calls: string[] = [];
  let n = 0;
  let down = false;
  const api: PodApi = {
    server: 'https://fake',
    listNodePods: async () => {
      if (down) throw new ApiServerError('API server https://fake: list pods: connection refused');
      return [...pods.values()].map((p) => structuredClone(p));
    },
    watchNodePods: async () => {},
    createPod: async (p) => {
      calls.push('create');
      const created = { ...structuredClone(p), metadata: { ...p.metadata, uid: `m${++n}` } };
      pods.set(p.metadata!.name!, created);
      return structuredClone(created);
    },
    deletePod: async (_ns, name, uid) => {
      calls.push('delete');
      if (pods.get(name)?.metadata?.uid === uid) pods.delete(name);
    },
    patchPodStatus: async (_ns, name, uid, status) => {
      if (down) throw new ApiServerError('API server https://fake: patch: connection refused');
      calls.push(`status:${status.phase}`);
      const p = pods.get(name)!;
      expect(p.metadata?.uid).toBe(uid);
      p.status = status;
      return p;
    },
  };
  return { api, pods, calls, setDown: (d: boolean) => (down = d) };
}

describe('mirror pods', () => {
  it('mirrorPodFor: bound to the node, owned by it, config.mirror = the config hash, no service account', () => {
    const m = mirrorPodFor(staticPod(), { name: 'node1', uid: 'node-uid' });
    expect(m.metadata?.annotations).toEqual({ 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': 'h1', 'kubernetes.io/config.mirror': 'h1' });
    expect(m.metadata?.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: 'node1', uid: 'node-uid', controller: true }]);
    expect(m.metadata?.uid).toBeUndefined();
    expect(m.spec?.nodeName).toBe('node1');
    expect(m.spec?.serviceAccountName).toBeUndefined();
    expect(m.status).toBeUndefined();
  });

  it('creates once, patches status only on change, replaces a stale mirror, deletes orphans, and writes the latest status after an outage', async () => {
    const f = fakeApi();
    let local = [staticPod('Pending')];
    const events: MirrorPodEvent[] = [];
    const mgr = new PodStatusManager({ api: f.api, nodeName: 'node1', nodeUid: () => 'node-uid', localPods: async () => local, onEvent: (e) => events.push(e) });
    const s = new AbortController().signal;
    await mgr.syncOnce(s);
    await mgr.syncOnce(s);
    expect(f.calls).toEqual(['create', 'status:Pending']);
    local = [staticPod('Running')];
    f.setDown(true);
    await expect(mgr.syncOnce(s)).rejects.toThrow(/connection refused/);
    f.setDown(false);
    await mgr.syncOnce(s);
    expect(f.calls).toEqual(['create', 'status:Pending', 'status:Running']);
    // The manifest changed (new hash): the old mirror pod is stale.
    local = [staticPod('Running', 'h2')];
    await mgr.syncOnce(s);
    expect(f.calls.slice(3)).toEqual(['delete', 'create', 'status:Running']);
    expect(f.pods.get('etcd-node1')?.metadata?.annotations?.['kubernetes.io/config.mirror']).toBe('h2');
    expect(events.filter((e) => e.kind === 'MirrorPodCreated').map((e) => (e as { reason: string }).reason)).toEqual(['missing', 'stale']);
    local = [];
    await mgr.syncOnce(s);
    expect(f.pods.size).toBe(0);
  });

  it('creates nothing before the node is registered', async () => {
    const f = fakeApi();
    const mgr = new PodStatusManager({ api: f.api, nodeName: 'node1', nodeUid: () => undefined, localPods: async () => [staticPod()] });
    await mgr.syncOnce(new AbortController().signal);
    expect(f.calls).toEqual([]);
  });
});

describe('status manager: event-driven passes', () => {
  it('a kick runs a pass from the watch view (no LIST); the first pass LISTs; a mirror pod created but not yet watched is not created twice', async () => {
    const f = fakeApi();
    let lists = 0;
    const list = f.api.listNodePods;
    f.api.listNodePods = async (n, s) => {
      lists++;
      return list(n, s);
    };
    let local = [staticPod('Pending')];
    let watched: V1Pod[] | undefined = [];
    const mgr = new PodStatusManager({ api: f.api, nodeName: 'node1', nodeUid: () => 'node-uid', localPods: async () => local, remotePods: () => watched });
    const ctrl = new AbortController();
    const done = mgr.run(ctrl.signal, 60_000);
    const until = async (fn: () => boolean) => {
      while (!fn()) await new Promise((r) => setTimeout(r, 2));
    };
    await until(() => f.calls.length === 2);
    // The first pass is the full one.
    expect(lists).toBe(1);
    expect(f.calls).toEqual(['create', 'status:Pending']);
    // The watch has not delivered the mirror pod yet: a kick must not create another.
    local = [staticPod('Running')];
    mgr.kick();
    await until(() => f.calls.length === 3);
    expect(f.calls[2]).toBe('status:Running');
    expect(lists).toBe(1);
    watched = [...f.pods.values()];
    local = [staticPod('Succeeded')];
    mgr.kick();
    await until(() => f.calls.length === 4);
    expect(f.calls).toEqual(['create', 'status:Pending', 'status:Running', 'status:Succeeded']);
    expect(lists).toBe(1);
    // Nothing changed: a kick writes nothing.
    const passes = mgr.passes;
    mgr.kick();
    await until(() => mgr.passes > passes);
    expect(f.calls).toHaveLength(4);
    ctrl.abort();
    await done;
  });

  it('the slow resync works from the watch view while there is one, and LISTs while there is none (the watch failing)', async () => {
    const f = fakeApi();
    let lists = 0;
    const list = f.api.listNodePods;
    f.api.listNodePods = async (n, s) => {
      lists++;
      return list(n, s);
    };
    let watched: V1Pod[] | undefined;
    const mgr = new PodStatusManager({ api: f.api, nodeName: 'node1', nodeUid: () => 'node-uid', localPods: async () => [staticPod('Running')], remotePods: () => watched });
    const ctrl = new AbortController();
    // Every pass is a full one (resync period 1 ms).
    const done = mgr.run(ctrl.signal, 1);
    const until = async (fn: () => boolean) => {
      while (!fn()) await new Promise((r) => setTimeout(r, 2));
    };
    await until(() => f.calls.length === 2);
    watched = [...f.pods.values()];
    const [passes, listed] = [mgr.passes, lists];
    await until(() => mgr.passes >= passes + 5);
    expect(lists).toBe(listed);
    watched = undefined;
    await until(() => lists >= listed + 3);
    // Created once, written once: the watch view and the LISTs agree.
    expect(f.calls).toEqual(['create', 'status:Running']);
    ctrl.abort();
    await done;
  });

  it('a mirror pod created but never shown by the watch for a whole resync period (deleted again) is created anew', async () => {
    const f = fakeApi();
    const mgr = new PodStatusManager({ api: f.api, nodeName: 'node1', nodeUid: () => 'node-uid', localPods: async () => [staticPod('Running')], remotePods: () => [] });
    const ctrl = new AbortController();
    const done = mgr.run(ctrl.signal, 1);
    while (f.calls.filter((c) => c === 'create').length < 2) await new Promise((r) => setTimeout(r, 2));
    ctrl.abort();
    await done;
  });

  it('while the server is away passes back off instead of following every kick', async () => {
    const f = fakeApi();
    f.setDown(true);
    const mgr = new PodStatusManager({ api: f.api, nodeName: 'node1', nodeUid: () => 'node-uid', localPods: async () => [staticPod()], remotePods: () => [] });
    const ctrl = new AbortController();
    const done = mgr.run(ctrl.signal, 60_000);
    const t0 = Date.now();
    const kicker = setInterval(() => mgr.kick(), 5);
    // A timer may fire a millisecond early by Date.now(): wait on the clock the assertion reads.
    while (Date.now() - t0 < 1500) await new Promise((r) => setTimeout(r, 1500 - (Date.now() - t0) + 1));
    clearInterval(kicker);
    // The first pass, then one after the 1 s back-off: not hundreds.
    expect(mgr.passes).toBeLessThanOrEqual(3);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1500);
    ctrl.abort();
    await done;
  });
});

describe('status manager: API pods, as the kubelet status manager writes them', () => {
  const apiPod = (uid: string, status: V1Pod['status']): V1Pod => ({
    metadata: { name: `p-${uid}`, namespace: 'default', uid, annotations: { 'kubernetes.io/config.source': 'api' } },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
    status,
  });
  const ready = (ok: boolean, at: Date) => [
    { type: 'Initialized', status: 'True', lastTransitionTime: at },
    { type: 'Ready', status: ok ? 'True' : 'False', reason: ok ? undefined : 'ContainersNotReady', lastTransitionTime: at },
  ];

  function setup(opts: { busy?: Set<string>; watching?: () => boolean } = {}) {
    const f = fakeApi();
    const server = apiPod('u1', { phase: 'Pending' });
    f.pods.set('p-u1', server);
    let local: V1Pod[] = [];
    const reads: Array<string[] | 'all'> = [];
    const mgr = new PodStatusManager({
      api: f.api,
      nodeName: 'node1',
      nodeUid: () => 'node-uid',
      localPods: async (_s, only) => {
        const pods = only ? local.filter((p) => only.has(p.metadata!.uid!)) : local;
        reads.push(only ? pods.map((p) => p.metadata!.uid!) : 'all');
        return structuredClone(pods);
      },
      localUids: async () => new Set(local.map((p) => p.metadata!.uid!)),
      busy: (uid) => opts.busy?.has(uid) ?? false,
      remotePods: () => (opts.watching?.() === false ? undefined : [...f.pods.values()]),
    });
    return { f, mgr, reads, setLocal: (p: V1Pod[]) => (local = p) };
  }
  const s = new AbortController().signal;

  it('a condition whose time alone moved is not a change; lastTransitionTime is kept while the status stays and moves when it changes', async () => {
    const { f, mgr, setLocal } = setup();
    setLocal([apiPod('u1', { phase: 'Pending', conditions: ready(false, new Date(1000)) })]);
    await mgr.syncOnce(s);
    expect(f.calls).toEqual(['status:Pending']);
    const first = f.pods.get('p-u1')!.status!.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime;
    // The same status read again with other times (the generator's "now"): nothing to write.
    setLocal([apiPod('u1', { phase: 'Pending', conditions: ready(false, new Date(5000)) })]);
    mgr.kick('u1');
    await mgr.syncOnce(s, false);
    expect(f.calls).toEqual(['status:Pending']);
    // Ready: written; Initialized keeps its time, Ready's moves.
    await new Promise((r) => setTimeout(r, 5));
    setLocal([apiPod('u1', { phase: 'Running', conditions: ready(true, new Date(9000)) })]);
    mgr.kick('u1');
    await mgr.syncOnce(s, false);
    expect(f.calls).toEqual(['status:Pending', 'status:Running']);
    const conds = f.pods.get('p-u1')!.status!.conditions!;
    expect(conds.find((c) => c.type === 'Initialized')!.lastTransitionTime).toEqual(first);
    expect(new Date(conds.find((c) => c.type === 'Ready')!.lastTransitionTime!).getTime()).toBeGreaterThan(new Date(first!).getTime());
  });

  it("readiness gates: Ready follows the gate conditions others set on the server, with no change on the node (the kubelet's NeedToReconcilePodReadiness)", async () => {
    const { f, mgr, setLocal } = setup();
    const gates = [{ conditionType: 'k8s.io/c1' }, { conditionType: 'k8s.io/c2' }];
    const server = f.pods.get('p-u1')!;
    server.spec!.readinessGates = gates;
    const at = new Date(0);
    // What klet generates from its record of the pod (admitted before any gate was set): gates missing.
    const local = apiPod('u1', {
      phase: 'Running',
      conditions: [
        { type: 'Initialized', status: 'True', lastTransitionTime: at },
        { type: 'Ready', status: 'False', reason: 'ReadinessGatesNotReady', message: 'corresponding condition of pod readiness gate "k8s.io/c1" does not exist., corresponding condition of pod readiness gate "k8s.io/c2" does not exist.', lastTransitionTime: at },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: at },
      ],
    });
    local.spec!.readinessGates = gates;
    setLocal([local]);
    await mgr.syncOnce(s);
    const readyOf = () => f.pods.get('p-u1')!.status!.conditions!.find((c) => c.type === 'Ready')!;
    expect(readyOf().status).toBe('False');
    // Someone patches one gate True: still not Ready, with the kubelet's message about the other.
    // A change on the server reaches klet as a new object (the watch decodes each event afresh).
    const patchGate = (type: string, status: string) => {
      const p = f.pods.get('p-u1')!;
      f.pods.set('p-u1', { ...p, status: { ...p.status, conditions: [...p.status!.conditions!.filter((c) => c.type !== type), { type, status }] } });
    };
    patchGate('k8s.io/c1', 'True');
    mgr.kick();
    await mgr.syncOnce(s, false);
    expect(readyOf()).toMatchObject({ status: 'False', message: 'corresponding condition of pod readiness gate "k8s.io/c2" does not exist.' });
    // Both True: Ready, and the gates' conditions stay as set.
    patchGate('k8s.io/c2', 'True');
    mgr.kick();
    await mgr.syncOnce(s, false);
    expect(readyOf().status).toBe('True');
    expect(f.pods.get('p-u1')!.status!.conditions!.filter((c) => c.type.startsWith('k8s.io/')).map((c) => c.status)).toEqual(['True', 'True']);
    // One back to False: not Ready again.
    patchGate('k8s.io/c1', 'False');
    mgr.kick();
    await mgr.syncOnce(s, false);
    expect(readyOf()).toMatchObject({ status: 'False', reason: 'ReadinessGatesNotReady', message: 'the status of pod readiness gate "k8s.io/c1" is not "True", but False' });
  });

  it('between resyncs only the pods kicked are read; a status handed over by setPodStatus is written unless a later kick read a newer one', async () => {
    const { f, mgr, reads, setLocal } = setup();
    const pending = apiPod('u1', { phase: 'Pending', conditions: ready(false, new Date(0)) });
    setLocal([apiPod('u1', { phase: 'Running', conditions: ready(true, new Date(0)) }), apiPod('u2', { phase: 'Running' })]);
    // The first sync's status (Pending) handed over, then the pass: Pending is written, nothing read from the runtime for u1.
    mgr.setPodStatus(pending);
    await mgr.syncOnce(s, false);
    expect(f.calls).toEqual(['status:Pending']);
    expect(reads).toEqual([[]]);
    // The sync ended (kick): u1 read and written Running; u2 never read.
    mgr.kick('u1');
    await mgr.syncOnce(s, false);
    expect(reads[1]).toEqual(['u1']);
    expect(f.calls).toEqual(['status:Pending', 'status:Running']);
    // Handed over and then kicked before a pass: one write, of what the kick read.
    f.pods.set('p-u3', apiPod('u3', { phase: 'Pending' }));
    setLocal([apiPod('u3', { phase: 'Running' })]);
    mgr.setPodStatus(apiPod('u3', { phase: 'Pending', conditions: ready(false, new Date(0)) }));
    mgr.kick('u3');
    await mgr.syncOnce(s, false);
    expect(f.calls).toEqual(['status:Pending', 'status:Running', 'status:Running']);
  });

  it("a resync reads from the runtime only the pods it has no status for (the kubelet's syncBatch works from its cache): 110 pods held read none", async () => {
    const { f, mgr, reads, setLocal } = setup();
    const pods = Array.from({ length: 110 }, (_, i) => apiPod(`u${i + 1}`, { phase: 'Running', conditions: ready(true, new Date(0)) }));
    for (const p of pods.slice(1)) f.pods.set(`p-${p.metadata!.uid}`, apiPod(p.metadata!.uid!, { phase: 'Pending' }));
    setLocal(pods);
    // The first pass has no status for any pod: it reads them all, and writes each once.
    await mgr.syncOnce(s);
    expect(reads).toHaveLength(1);
    expect(new Set(reads[0] as string[]).size).toBe(110);
    expect(f.calls.filter((c) => c === 'status:Running')).toHaveLength(110);
    // Resyncs with nothing signalled: no runtime read, no write.
    await mgr.syncOnce(s);
    await mgr.syncOnce(s);
    expect(reads).toHaveLength(1);
    expect(f.calls).toHaveLength(110);
    // A new pod no sync has reported yet is read by the next resync; a pod gone is forgotten.
    const u111 = apiPod('u111', { phase: 'Running', conditions: ready(true, new Date(0)) });
    f.pods.set('p-u111', apiPod('u111', { phase: 'Pending' }));
    setLocal([...pods.slice(1), u111]);
    await mgr.syncOnce(s);
    expect(reads[1]).toEqual(['u111']);
    expect(f.calls.slice(110)).toEqual(['status:Running']);
    // A kicked pod is read again on the resync too (its sync ended).
    mgr.kick('u5');
    await mgr.syncOnce(s);
    expect(reads[2]).toEqual(['u5']);
  });

  it('a resync does not write the half-done state of a pod in the middle of a sync; a failed write is retried with the latest status', async () => {
    const busy = new Set<string>();
    const { f, mgr, setLocal } = setup({ busy });
    setLocal([apiPod('u1', { phase: 'Pending', conditions: ready(false, new Date(0)) })]);
    await mgr.syncOnce(s);
    expect(f.calls).toEqual(['status:Pending']);
    // Its sync is running (sandbox ready, container not yet started): the resync keeps what was set.
    busy.add('u1');
    setLocal([apiPod('u1', { phase: 'Pending', conditions: [{ type: 'PodReadyToStartContainers', status: 'True' }, ...ready(false, new Date(0))] })]);
    await mgr.syncOnce(s);
    expect(f.calls).toEqual(['status:Pending']);
    // The sync ends while the server is away: the write fails; the next pass (no new kick) writes it.
    busy.delete('u1');
    setLocal([apiPod('u1', { phase: 'Running', conditions: ready(true, new Date(0)) })]);
    f.setDown(true);
    mgr.kick('u1');
    await mgr.syncOnce(s, false);
    f.setDown(false);
    await mgr.syncOnce(s, false);
    expect(f.calls).toEqual(['status:Pending', 'status:Running']);
  });
  it('a status signalled while the server is away (its LIST failing) is written by the first pass once it answers, not left to the next full resync', async () => {
    let watching = true;
    const { f, mgr, reads, setLocal } = setup({ watching: () => watching });
    setLocal([apiPod('u1', { phase: 'Running', conditions: ready(true, new Date(0)) }), apiPod('u2', { phase: 'Running' })]);
    f.pods.set('p-u2', apiPod('u2', { phase: 'Pending' }));
    await mgr.syncOnce(s);
    expect(f.calls).toEqual(['status:Running', 'status:Running']);
    // The server goes away (the watch has no view: passes LIST): u1's container restarts (kick), u2's first
    // status is handed over; the pass reads them and fails at the LIST.
    watching = false;
    f.setDown(true);
    setLocal([apiPod('u1', { phase: 'Running', conditions: ready(false, new Date(0)) }), apiPod('u2', { phase: 'Running' })]);
    mgr.kick('u1');
    mgr.setPodStatus(apiPod('u2', { phase: 'Failed' }));
    await expect(mgr.syncOnce(s, false)).rejects.toThrow(/connection refused/);
    // It answers again: the next pass between resyncs reads u1 again and writes both.
    f.setDown(false);
    await mgr.syncOnce(s, false);
    expect(reads.at(-1)).toEqual(['u1']);
    expect(f.calls).toEqual(['status:Running', 'status:Running', 'status:Running', 'status:Failed']);
    expect(f.pods.get('p-u1')!.status!.conditions!.find((c) => c.type === 'Ready')!.status).toBe('False');
  });
});

describe('status manager: stopping', () => {
  it('stops at once when the signal aborts during a status write (no wait for the next resync)', async () => {
    const f = fakeApi();
    const pod: V1Pod = {
      metadata: { name: 'p', namespace: 'default', uid: 'u1', annotations: { 'kubernetes.io/config.source': 'api' } },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
      status: { phase: 'Running' },
    };
    f.pods.set('p', structuredClone({ ...pod, status: { phase: 'Pending' } }));
    let writing: () => void = () => undefined;
    const inWrite = new Promise<void>((r) => (writing = r));
    // A write that lasts until the signal cuts it short, as a request to the API server does.
    f.api.patchPodStatus = (_ns, _name, _uid, _status, signal) =>
      new Promise((_resolve, reject) => {
        writing();
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    const mgr = new PodStatusManager({ api: f.api, nodeName: 'node1', nodeUid: () => 'node-uid', localPods: async () => [structuredClone(pod)] });
    const ctrl = new AbortController();
    const done = mgr.run(ctrl.signal, 60_000);
    await inWrite;
    const t0 = Date.now();
    ctrl.abort();
    await done;
    expect(Date.now() - t0).toBeLessThan(1000);
  }, 5000);
});
