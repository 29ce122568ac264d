/**
 * The volume manager on the real file system and mount table (root, no
 * container runtime): desired/actual state, rebuild after a restart,
 * event-driven re-projection, tear-down.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VolumeEvent } from '../../src/lib/events/types.js';
import { mountsUnder, unmountAll } from '../../src/lib/util/mounts.js';
import { VolumeManager, VolumeMountError } from '../../src/lib/volume/manager.js';
import { localObjectSource } from '../../src/lib/volume/plugins.js';

let root: string;
const controllers: AbortController[] = [];

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-vm-'));
});
afterEach(async () => {
  for (const c of controllers.splice(0)) c.abort();
  await unmountAll(root);
  fs.rmSync(root, { recursive: true, force: true });
});

function mkPod(volumes: NonNullable<V1Pod['spec']>['volumes'], labels: Record<string, string> = { app: 'a' }): V1Pod {
  return { metadata: { name: 'p', namespace: 'default', uid: 'uid-1', labels }, spec: { containers: [{ name: 'c' }], volumes } };
}

function manager(objects: { configMaps: V1ConfigMap[] }, events: VolumeEvent[] = [], resyncMs = 0): VolumeManager {
  return new VolumeManager({
    rootDir: root,
    nodeName: 'n1',
    objects: () => localObjectSource({ configMaps: objects.configMaps, secrets: [{ metadata: { name: 's', namespace: 'default' }, stringData: { k: 'v' } }] }),
    onEvent: (e) => events.push(e),
    resyncMs,
  });
}

const cm = (v: string): V1ConfigMap => ({ metadata: { name: 'cm', namespace: 'default' }, data: { key: v } });
const volDir = (plugin: string, name: string) => path.join(root, 'pods', 'uid-1', 'volumes', plugin, name);

describe('VolumeManager', () => {
  it('sets up, rebuilds after a restart without remounting or rewriting, tears down what the pod no longer declares', async () => {
    const objects = { configMaps: [cm('1')] };
    const pod = mkPod([
      { name: 'cfg', configMap: { name: 'cm' } },
      { name: 'sec', secret: { secretName: 's' } },
      { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '4Mi' } },
    ]);
    const events: VolumeEvent[] = [];
    const first = manager(objects, events);
    const m = await first.mountPod(pod);
    expect([...m.paths.keys()]).toEqual(['cfg', 'sec', 'mem']);
    expect([...m.readOnly].sort()).toEqual(['cfg', 'sec']);
    expect(events.map((e) => `${e.op} ${e.volume}`)).toEqual(['SetUp cfg', 'SetUp sec', 'SetUp mem']);
    const mounts = await mountsUnder(root);
    expect(mounts).toHaveLength(2);
    const gen = fs.readlinkSync(path.join(volDir('kubernetes.io~configmap', 'cfg'), '..data'));

    // A new process: actual state from disk and mountinfo.
    const events2: VolumeEvent[] = [];
    const second = manager(objects, events2);
    await second.rebuild();
    expect(second.volumes('uid-1').map((v) => [v.name, v.medium]).sort()).toEqual([
      ['cfg', ''],
      ['mem', 'Memory'],
      ['sec', 'Memory'],
    ]);
    await second.mountPod(pod);
    expect(await mountsUnder(root)).toEqual(mounts);
    expect(fs.readlinkSync(path.join(volDir('kubernetes.io~configmap', 'cfg'), '..data'))).toBe(gen);
    expect(events2).toEqual([]);

    // The edited pod drops a volume: it is unmounted and removed.
    await second.mountPod(mkPod([{ name: 'cfg', configMap: { name: 'cm' } }]));
    expect(await mountsUnder(root)).toEqual([]);
    expect(fs.existsSync(volDir('kubernetes.io~secret', 'sec'))).toBe(false);
    expect(events2.map((e) => `${e.op} ${e.volume}`).sort()).toEqual(['TearDown mem', 'TearDown sec']);

    await second.unmountPod(pod);
    expect(fs.existsSync(path.join(root, 'pods', 'uid-1', 'volumes'))).toBe(false);
  });

  it('re-projects on an objects change and a pod update (events, not polling); keeps the last content when the object goes', async () => {
    const objects = { configMaps: [cm('1')] };
    const events: VolumeEvent[] = [];
    const vm = manager(objects, events);
    const ac = new AbortController();
    controllers.push(ac);
    await vm.start(ac.signal);
    const pod = mkPod([
      { name: 'cfg', configMap: { name: 'cm' } },
      { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
    ]);
    await vm.mountPod(pod);
    const file = path.join(volDir('kubernetes.io~configmap', 'cfg'), 'key');
    expect(fs.readFileSync(file, 'utf8')).toBe('1');

    objects.configMaps = [cm('2')];
    // No resync period (resyncMs 0): only the notification can bring the change.
    await new Promise((r) => setTimeout(r, 300));
    expect(fs.readFileSync(file, 'utf8')).toBe('1');
    vm.objectsChanged();
    await expect.poll(() => fs.readFileSync(file, 'utf8'), { timeout: 15_000 }).toBe('2');
    expect(events.filter((e) => e.op === 'Updated').map((e) => e.volume)).toEqual(['cfg']);

    vm.podUpdated(mkPod(pod.spec?.volumes, { app: 'b' }));
    await expect.poll(() => fs.readFileSync(path.join(volDir('kubernetes.io~downward-api', 'info'), 'labels'), 'utf8'), { timeout: 15_000 }).toBe('app="b"');

    objects.configMaps = [];
    vm.objectsChanged();
    await new Promise((r) => setTimeout(r, 300));
    expect(fs.readFileSync(file, 'utf8')).toBe('2');
    // Still mounted for the pod's next container start.
    await expect(vm.mountPod(mkPod(pod.spec?.volumes, { app: 'b' }))).resolves.toBeDefined();
  });

  it('a failing volume: VolumeMountError with the kubelet messages; a growing back-off', async () => {
    const vm = manager({ configMaps: [] });
    const pod = mkPod([
      { name: 'ok', emptyDir: {} },
      { name: 'cfg', configMap: { name: 'nope' } },
      { name: 'hp', hostPath: { path: path.join(root, 'missing'), type: 'Directory' } },
    ]);
    const err = await vm.mountPod(pod).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VolumeMountError);
    const e = err as VolumeMountError;
    expect(e.message).toBe(
      `unmounted volumes=[cfg hp], unattached volumes=[], failed to process volumes=[]: configmap "nope" not found; hostPath type check failed: ${path.join(root, 'missing')} is not a directory`,
    );
    expect(e.volumeMessages()).toEqual([
      'MountVolume.SetUp failed for volume "cfg" : configmap "nope" not found',
      `MountVolume.SetUp failed for volume "hp" : hostPath type check failed: ${path.join(root, 'missing')} is not a directory`,
    ]);
    const first = vm.retryInMs('uid-1') ?? 0;
    await vm.mountPod(pod).catch(() => undefined);
    expect(vm.retryInMs('uid-1') ?? 0).toBeGreaterThan(first);
    // A missing ConfigMap is not the node's to fix: a one-shot's objects do not change, a retry would not help.
    expect(vm.lastFailure('uid-1')?.retryableWithSameObjects()).toBe(false);
  });

  it("hostPath FileOrCreate in a directory not made yet: Go's error as the kubelet's makeFile gives it, retryable, set up once the directory is there", async () => {
    const vm = manager({ configMaps: [] });
    const file = path.join(root, 'kubernetes', 'scheduler.conf');
    const pod = mkPod([{ name: 'kubeconfig', hostPath: { path: file, type: 'FileOrCreate' } }]);
    const err = (await vm.mountPod(pod).catch((e: unknown) => e)) as VolumeMountError;
    expect(err).toBeInstanceOf(VolumeMountError);
    // Not created (the kubelet does not make a FileOrCreate's parent), nor Node's "ENOENT: …, open '…'".
    expect(err.volumeMessages()).toEqual([`MountVolume.SetUp failed for volume "kubeconfig" : open ${file}: no such file or directory`]);
    expect(fs.existsSync(path.dirname(file))).toBe(false);
    expect(vm.lastFailure('uid-1')?.retryableWithSameObjects()).toBe(true);
    expect(vm.retryInMs('uid-1')).toBeGreaterThan(0);
    fs.mkdirSync(path.dirname(file));
    await expect(vm.mountPod(pod)).resolves.toMatchObject({ paths: new Map([['kubeconfig', file]]) });
    expect(fs.statSync(file).isFile()).toBe(true);
    expect(vm.lastFailure('uid-1')).toBeUndefined();
    // An invalid type is the spec's: no retry helps.
    const bad = mkPod([{ name: 'x', hostPath: { path: file, type: 'Fifo' } }]);
    await expect(vm.mountPod(bad)).rejects.toThrow('Fifo is an invalid volume type');
    expect(vm.lastFailure('uid-1')?.retryableWithSameObjects()).toBe(false);
  });
});
