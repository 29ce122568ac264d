/**
 * A pod's termination and its re-creation are serialised by its pod worker
 * (the kubelet's restartRequested): a static pod put back while its old
 * instance is still being removed waits for that removal, then starts, in
 * its own worker — not whenever housekeeping comes round, and never with
 * its new record deleted by the old instance's clean-up. And one pod whose
 * admission fails never holds up the other pods of the same config update.
 * PodWorkers alone (pure ordering), then the sync loop against the
 * in-memory CRI with the real file source.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPodConfig } from '../../src/lib/config/index.js';
import { ContainerState } from '../../src/lib/cri/gen/api.js';
import { EventBus } from '../../src/lib/events/bus.js';
import { instanceSelector } from '../../src/lib/kuberuntime/labels.js';
import { GenericPLEG } from '../../src/lib/pleg/generic.js';
import { prepareManifests, readManifestDir } from '../../src/lib/pod/manifest.js';
import { Kubelet } from '../../src/lib/syncloop/kubelet.js';
import { PodWorkers, type UpdateType } from '../../src/lib/syncloop/pod-workers.js';
import { FakeCri } from '../helpers/fake-cri.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('PodWorkers: a pod added again while it terminates', () => {
  const pod: V1Pod = { metadata: { uid: 'u1', name: 'p', namespace: 'default' }, spec: { containers: [] } };

  it('starts over only after its clean-up, in its own worker, and never runs two steps of one UID at once', async () => {
    const log: string[] = [];
    let inStep = 0;
    let overlapped = false;
    const cleanup = deferred();
    const step = async (name: string, wait?: Promise<void>) => {
      if (++inStep > 1) overlapped = true;
      log.push(`${name}:start`);
      if (wait) await wait;
      log.push(`${name}:end`);
      inStep--;
    };
    const ctl = new AbortController();
    const workers = new PodWorkers({
      signal: ctl.signal,
      handlers: {
        syncPod: async (_p, type: UpdateType) => {
          await step(`sync(${type})`);
          return {};
        },
        syncTerminatingPod: () => step('terminating'),
        syncTerminatedPod: (_p, _s, restart) => step(`terminated(restart=${restart})`, log.includes('terminated(restart=false):start') ? undefined : cleanup.promise),
        requeue: () => undefined,
      },
    });
    workers.updatePod({ pod, type: 'create' });
    await workers.whenIdle();
    workers.updatePod({ pod, type: 'kill', reason: 'removed' });
    await until('the clean-up to start', () => log.includes('terminated(restart=false):start'));
    // Put back while the old instance is being cleaned up.
    workers.updatePod({ pod, type: 'create' });
    await new Promise((r) => setTimeout(r, 50));
    expect(log.filter((l) => l.startsWith('sync(create)'))).toHaveLength(2); // only the first instance's so far
    expect(workers.state('u1')).toBe('TerminatedPod');
    cleanup.resolve();
    await workers.whenIdle();
    expect(log).toEqual([
      'sync(create):start',
      'sync(create):end',
      'terminating:start',
      'terminating:end',
      'terminated(restart=false):start',
      'terminated(restart=false):end',
      'sync(create):start',
      'sync(create):end',
    ]);
    expect(overlapped).toBe(false);
    expect(workers.state('u1')).toBe('SyncPod');
    ctl.abort();
  });

  it('an idle terminated pod added again is cleaned up (restart) and started by its worker', async () => {
    const log: string[] = [];
    const ctl = new AbortController();
    const workers = new PodWorkers({
      signal: ctl.signal,
      handlers: {
        syncPod: async (_p, type) => {
          log.push(`sync(${type})`);
          return {};
        },
        syncTerminatingPod: async () => void log.push('terminating'),
        syncTerminatedPod: async (_p, _s, restart) => void log.push(`terminated(restart=${restart})`),
        requeue: () => undefined,
      },
    });
    workers.updatePod({ pod, type: 'create' });
    await workers.whenIdle();
    workers.updatePod({ pod, type: 'kill' });
    await workers.whenIdle();
    expect(workers.state('u1')).toBe('TerminatedPod');
    workers.updatePod({ pod, type: 'update' });
    await workers.whenIdle();
    expect(log).toEqual(['sync(create)', 'terminating', 'terminated(restart=false)', 'terminated(restart=true)', 'sync(create)']);
    // A sync asked for while a create waits does not replace it.
    workers.updatePod({ pod, type: 'kill' });
    await workers.whenIdle();
    log.length = 0;
    workers.updatePod({ pod, type: 'create' });
    workers.updatePod({ pod, type: 'sync' });
    await workers.whenIdle();
    expect(log).toEqual(['terminated(restart=true)', 'sync(create)']);
    ctl.abort();
  });
});

describe('PodWorkers: the cap on parallel syncs', () => {
  it("holds back resyncs of running pods, never new pods' first syncs or terminations", async () => {
    let active = 0;
    let peak = 0;
    const gate = deferred();
    const busy = async () => {
      peak = Math.max(peak, ++active);
      await gate.promise;
      active--;
    };
    const ctl = new AbortController();
    const workers = new PodWorkers({
      concurrency: 2,
      signal: ctl.signal,
      handlers: { syncPod: async () => (await busy(), {}), syncTerminatingPod: busy, syncTerminatedPod: async () => undefined, requeue: () => undefined },
    });
    const pods: V1Pod[] = Array.from({ length: 6 }, (_, i) => ({ metadata: { uid: `u${i}`, name: `p${i}`, namespace: 'default' }, spec: { containers: [] } }));
    for (const p of pods) workers.updatePod({ pod: p, type: 'create' });
    await until('every first sync to run', () => active === 6);
    gate.resolve();
    await workers.whenIdle();
    const gate2 = deferred();
    const resyncs = new PodWorkers({
      concurrency: 2,
      signal: ctl.signal,
      handlers: {
        syncPod: async (_p, type) => {
          if (type !== 'create') {
            peak = Math.max(peak, ++active);
            await gate2.promise;
            active--;
          }
          return {};
        },
        syncTerminatingPod: async () => {
          peak = Math.max(peak, ++active);
          await gate2.promise;
          active--;
        },
        syncTerminatedPod: async () => undefined,
        requeue: () => undefined,
      },
    });
    for (const p of pods) resyncs.updatePod({ pod: p, type: 'create' });
    await resyncs.whenIdle();
    peak = 0;
    for (const p of pods.slice(0, 4)) resyncs.updatePod({ pod: p, type: 'sync' });
    for (const p of pods.slice(4)) resyncs.updatePod({ pod: p, type: 'kill' });
    await new Promise((r) => setTimeout(r, 100));
    expect(active).toBe(4); // 2 resyncs (the cap) + 2 terminations
    gate2.resolve();
    await resyncs.whenIdle();
    ctl.abort();
  });
});

const NODE = 'node1';
let tmp: string;
let fake: FakeCri;

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-syncloop-'));
  fake = new FakeCri();
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

function manifest(name: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: c
      image: localhost/klet/busybox:1.36
      imagePullPolicy: IfNotPresent
      command: ["sh", "-c", "sleep 1000"]
`;
}

/** `klet sync`'s loop over a manifest dir, housekeeping far away (so it cannot be what starts a pod). */
function startKubelet(manifestDir: string): { kubelet: Kubelet; rootDir: string; stop: () => Promise<void> } {
  const rootDir = path.join(tmp, 'root');
  const cri = fake.client();
  const config = createPodConfig({ nodeName: NODE, manifestDir, fileCheckFrequencyMs: 100 });
  const pleg = new GenericPLEG({ cri, relistPeriodMs: 100, labelSelector: instanceSelector({ rootDir, nodeName: NODE }) });
  const kubelet = new Kubelet({
    cri,
    rootDir,
    nodeName: NODE,
    config,
    pleg,
    bus: new EventBus(),
    logRoot: path.join(tmp, 'logs'),
    syncTickMs: 100,
    housekeepingMs: 60_000,
  });
  const ctl = new AbortController();
  const done = kubelet.run(ctl.signal);
  return {
    kubelet,
    rootDir,
    stop: async () => {
      ctl.abort();
      await done;
    },
  };
}

function runningContainers(podName: string): { id: string; sandbox: string }[] {
  return [...fake.containers.values()]
    .filter((c) => c.state === ContainerState.CONTAINER_RUNNING && fake.sandboxes.get(c.podSandboxId)?.metadata.name.startsWith(`${podName}-`))
    .map((c) => ({ id: c.id, sandbox: c.podSandboxId }));
}

describe('klet sync: a static pod removed and put back', () => {
  it('put back while its old instance is being removed: starts once the removal is done, with its record', async () => {
    const dir = path.join(tmp, 'manifests');
    fs.mkdirSync(dir);
    const file = path.join(dir, 'web.yaml');
    fs.writeFileSync(file, manifest('web'));
    const k = startKubelet(dir);
    try {
      await until('web to run', () => runningContainers('web').length === 1);
      const [first] = runningContainers('web');
      const uid = fake.sandboxes.get(first!.sandbox)!.metadata.uid;
      const record = path.join(k.rootDir, 'pods', uid, 'pod.json');
      expect(fs.existsSync(record)).toBe(true);

      // Hold the old instance's removal at RemovePodSandbox (its pod dir is removed after that).
      const gate = deferred();
      fake.gates.set('removePodSandbox', gate.promise);
      fs.rmSync(file);
      await until('the old sandbox removal to start', () => fake.calls.includes('removePodSandbox'));
      fs.writeFileSync(file, manifest('web')); // the same manifest: the same UID
      await until('the pod to be wanted again', () => k.kubelet.desiredPods().some((d) => d.pod.metadata?.uid === uid), 3000);
      await new Promise((r) => setTimeout(r, 300));
      expect(runningContainers('web')).toEqual([]); // it waits for the old instance
      fake.gates.delete('removePodSandbox');
      gate.resolve();

      await until('web to run again', () => runningContainers('web').length === 1, 5000);
      const [second] = runningContainers('web');
      expect(second!.sandbox).not.toBe(first!.sandbox);
      expect(fake.sandboxes.has(first!.sandbox)).toBe(false);
      expect(fs.existsSync(record)).toBe(true);
      expect(JSON.parse(fs.readFileSync(record, 'utf8')).pod.metadata.uid).toBe(uid);
    } finally {
      await k.stop();
    }
  });

  it('one pod that cannot be admitted does not keep the others of the same update from starting', async () => {
    const dir = path.join(tmp, 'manifests');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'a.yaml'), manifest('a-broken'));
    fs.writeFileSync(path.join(dir, 'b.yaml'), manifest('b-fine'));
    const set = prepareManifests(await readManifestDir(dir), { nodeName: NODE });
    const uidA = set.pods.find((p) => p.pod.metadata?.name?.startsWith('a-broken'))!.pod.metadata!.uid!;
    // Its pod dir cannot be made: a file is in the way.
    fs.mkdirSync(path.join(tmp, 'root', 'pods'), { recursive: true });
    fs.writeFileSync(path.join(tmp, 'root', 'pods', uidA), 'in the way');
    const k = startKubelet(dir);
    try {
      await until('b to run', () => runningContainers('b-fine').length === 1, 5000);
      expect(runningContainers('a-broken')).toEqual([]);
    } finally {
      await k.stop();
    }
  });
});

describe('klet sync: stopping', () => {
  it('a signal that aborted before the loop started stops it at once (no abort event comes any more)', async () => {
    const dir = path.join(tmp, 'manifests');
    fs.mkdirSync(dir);
    const rootDir = path.join(tmp, 'root');
    const cri = fake.client();
    const kubelet = new Kubelet({
      cri,
      rootDir,
      nodeName: NODE,
      config: createPodConfig({ nodeName: NODE, manifestDir: dir, fileCheckFrequencyMs: 100 }),
      pleg: new GenericPLEG({ cri, relistPeriodMs: 100, labelSelector: instanceSelector({ rootDir, nodeName: NODE }) }),
      bus: new EventBus(),
      logRoot: path.join(tmp, 'logs'),
      syncTickMs: 100,
      housekeepingMs: 60_000,
    });
    const t0 = Date.now();
    await kubelet.run(AbortSignal.abort());
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});
