/**
 * Garbage collection in `klet sync`, on a private containerd: a crash-looping
 * container keeps exactly one dead instance beside the running one (and its
 * log file, so `klet logs --previous` still works); what another client
 * created on the same containerd (dead containers, a stopped sandbox) is
 * left alone; image GC removes an unused image klet pulled (from a registry
 * on loopback) once the image filesystem is over --image-gc-high-threshold,
 * and never one in use (by klet's containers or anyone's) nor one klet did
 * not pull. The thresholds are set low (1/0) so any real filesystem is over
 * them, which also makes FreeDiskSpaceFailed certain.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ContainerState, CriClient } from '../../src/lib/cri/index.js';
import { busyboxImageSpec } from '../../src/lib/runtime/oci-image.js';
import { explain, runKlet } from '../helpers/cli.js';
import { podYaml, SLEEP_FOREVER } from '../helpers/manifests.js';
import { startTestRegistry, type TestRegistry } from '../helpers/registry.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { apiEvents, apiGet, eventually, killAllSyncs, startSync, writeAtomic } from '../helpers/sync.js';

const NODE = 'gcnode';
const NS = 'kgc';
const UID_LABEL = 'io.kubernetes.pod.uid';
const NAME_LABEL = 'io.kubernetes.pod.name';
const RESTART_COUNT = 'io.kubernetes.container.restartCount';

let rt: TestRuntime;
let cri: CriClient;
let registry: TestRegistry;
let tmp: string;

function klet(args: string[]) {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs: 60_000 });
}

function manifestDir(): string {
  return fs.mkdtempSync(path.join(tmp, 'manifests-'));
}

/** Containers of pod `name` (klet's pods are named NAME-NODE) by CRI state. */
async function containersOf(name: string): Promise<{ id: string; state: ContainerState; restartCount: number }[]> {
  const { containers } = await cri.listContainers({ filter: { labelSelector: { [NAME_LABEL]: `${name}-${NODE}` } } });
  return containers.map((c) => ({ id: c.id, state: c.state, restartCount: Number(c.annotations[RESTART_COUNT]) }));
}

/** A pod of "another client" (a kubelet): a sandbox with its labels and `dead` exited containers named c in it, plus a stopped sandbox without containers. */
async function foreignPod(dead: number, image: string): Promise<{ sandboxes: string[]; containers: string[]; live: string }> {
  const uid = randomBytes(16).toString('hex');
  const meta = { name: 'foreign', namespace: NS, uid };
  const labels = { [NAME_LABEL]: meta.name, 'io.kubernetes.pod.namespace': NS, [UID_LABEL]: uid };
  const config = { metadata: { ...meta, attempt: 0 }, hostname: 'foreign', labels, linux: {} };
  const old = (await cri.runPodSandbox({ config })).podSandboxId;
  await cri.stopPodSandbox({ podSandboxId: old });
  const live = (await cri.runPodSandbox({ config: { ...config, metadata: { ...meta, attempt: 1 } } })).podSandboxId;
  const containers: string[] = [];
  for (let i = 0; i < dead; i++) {
    const { containerId } = await cri.createContainer({
      podSandboxId: live,
      sandboxConfig: config,
      config: {
        metadata: { name: 'c', attempt: i },
        image: { image },
        command: ['true'],
        labels: { ...labels, 'io.kubernetes.container.name': 'c' },
      },
    });
    await cri.startContainer({ containerId });
    containers.push(containerId);
  }
  await eventually(async () => {
    const { containers: now } = await cri.listContainers({ filter: { labelSelector: { [UID_LABEL]: uid } } });
    expect(now.filter((c) => c.state === ContainerState.CONTAINER_EXITED)).toHaveLength(dead);
  });
  return { sandboxes: [old, live].sort(), containers: containers.sort(), live };
}

async function idsOf(uidLabel: string): Promise<{ sandboxes: string[]; containers: string[] }> {
  const sel = { labelSelector: { [UID_LABEL]: uidLabel } };
  return {
    sandboxes: (await cri.listPodSandbox({ filter: sel })).items.map((s) => s.id).sort(),
    containers: (await cri.listContainers({ filter: sel })).containers.map((c) => c.id).sort(),
  };
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  registry = await startTestRegistry();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-gc-'));
});

afterEach(async () => {
  await killAllSyncs();
  await wipeNode(cri, rt.rootDir, NS);
});

afterAll(async () => {
  await killAllSyncs();
  cri?.close();
  await registry?.close();
  await rt?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('container garbage collection', () => {
  it('a crash-looping container keeps one dead instance beside the running one, with its log for --previous; another client\'s dead containers and sandboxes stay', async () => {
    const { live: _live, ...foreign } = await foreignPod(3, rt.images.busybox);
    const foreignUid = (await cri.podSandboxStatus({ podSandboxId: foreign.sandboxes[0]! })).status?.metadata?.uid ?? '';
    const dir = manifestDir();
    // Each instance counts itself in an emptyDir (which outlives container restarts) and says which it is.
    const script = 'n=$(cat /d/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /d/n; echo "instance $n"; sleep 1; exit 1';
    const yaml = podYaml({ name: 'crash', namespace: NS, image: rt.images.busybox, script }).replace(
      '      command:',
      '      volumeMounts: [{name: d, mountPath: /d}]\n      command:',
    ) + '  volumes: [{name: d, emptyDir: {}}]\n';
    writeAtomic(dir, 'crash.yaml', yaml);
    const s = await startSync({
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      nodeName: NODE,
      manifestDir: dir,
      args: ['--crash-loop-backoff-initial', '1s', '--crash-loop-backoff-max', '1s', '--container-gc-period', '1s'],
    });
    // Several restarts, then: exactly one exited instance and one running (the newest).
    const settled = await eventually(
      async () => {
        const cs = await containersOf('crash');
        const exited = cs.filter((c) => c.state === ContainerState.CONTAINER_EXITED);
        const running = cs.filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
        expect(Math.max(...cs.map((c) => c.restartCount)), s.tail()).toBeGreaterThanOrEqual(4);
        expect({ exited: exited.length, running: running.length, all: cs.length }).toEqual({ exited: 1, running: 1, all: 2 });
        expect(running[0]!.restartCount).toBe(exited[0]!.restartCount + 1);
        return { exited: exited[0]!, running: running[0]! };
      },
      90_000,
      100,
    );
    // The log files of the removed instances went with them; the dead one's and the running one's stay.
    const uid = (await cri.containerStatus({ containerId: settled.running.id })).status?.labels[UID_LABEL] ?? '';
    const logDir = path.join('/var/log/pods', `${NS}_crash-${NODE}_${uid}`, 'c');
    const logs = fs.readdirSync(logDir).sort();
    expect(logs.every((f) => [`${settled.exited.restartCount}.log`, `${settled.running.restartCount}.log`].includes(f)), logs.join(',')).toBe(true);
    expect(logs).toContain(`${settled.exited.restartCount}.log`);
    // --previous: the dead instance's output (instance N+1 ran with restart count N).
    const prev = await klet(['logs', `${NS}/crash-${NODE}`, '--previous']);
    expect(prev.code, explain(prev)).toBe(0);
    expect(prev.stdout).toBe(`instance ${settled.exited.restartCount + 1}\n`);
    // Many container GC passes ran meanwhile: the other client's objects are all there.
    expect(await idsOf(foreignUid)).toEqual(foreign);
    await s.stop();
  }, 150_000);
});

describe('image garbage collection', () => {
  it('removes an unused image klet pulled once the image filesystem is over the high threshold; never one in use, by klet or another client, nor one klet did not pull', async () => {
    const spec = await busyboxImageSpec();
    const push = (repo: string) => registry.push(repo, '1', { files: spec.files, config: { ...spec.config, labels: { repo } } });
    const keep = await push('gc/keep');
    const gone = await push('gc/gone');
    const shared = await push('gc/shared');
    const dir = manifestDir();
    for (const [name, img] of [['keep', keep], ['gone', gone], ['shared', shared]] as const) {
      writeAtomic(dir, `${name}.yaml`, podYaml({ name, namespace: NS, image: img.ref, script: SLEEP_FOREVER }));
    }
    const s = await startSync({
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      nodeName: NODE,
      manifestDir: dir,
      args: ['--image-gc-high-threshold', '1', '--image-gc-low-threshold', '0', '--minimum-image-gc-age', '2s', '--image-gc-period', '1s'],
    });
    await eventually(async () => {
      for (const n of ['keep', 'gone', 'shared']) expect((await containersOf(n)).map((c) => c.state), `${n}\n${s.tail()}`).toEqual([ContainerState.CONTAINER_RUNNING]);
    }, 60_000);
    // Another client runs a container of the image klet pulled for "shared".
    const sandbox = (await foreignPod(0, rt.images.busybox)).live;
    const sbConfig = { metadata: { name: 'foreign', namespace: NS, uid: 'x', attempt: 1 }, linux: {} };
    const { containerId } = await cri.createContainer({ podSandboxId: sandbox, sandboxConfig: sbConfig, config: { metadata: { name: 'user' }, image: { image: shared.ref }, command: ['sh', '-c', SLEEP_FOREVER] } });
    await cri.startContainer({ containerId });
    // GC passes meanwhile found every image in use: nothing removed.
    await s.waitForStderr(/Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold usage=\d+ highThreshold=1 amountToFree=\d+ lowThreshold=0/, 15_000);
    const present = async () => new Set((await cri.listImages({})).images.map((i) => i.id));
    for (const img of [keep, gone, shared]) expect((await present()).has(img.imageId)).toBe(true);

    fs.rmSync(path.join(dir, 'gone.yaml'));
    fs.rmSync(path.join(dir, 'shared.yaml'));
    await eventually(async () => expect((await present()).has(gone.imageId), s.tail()).toBe(false), 60_000);
    expect(s.stderr).toMatch(new RegExp(`Removing image to free bytes imageID=${gone.imageId} size=\\d+`));
    // Freeing down to 0 % cannot succeed: FreeDiskSpaceFailed, as the kubelet records it on the node.
    await eventually(async () => {
      const failed = (await apiEvents(s.socketPath)).filter((e) => e.kind === 'NodeEvent' && e.reason === 'FreeDiskSpaceFailed');
      expect(failed[0]?.message).toMatch(/^Failed to garbage collect required amount of images\. Attempted to free \d+ bytes, but only found \d+ bytes eligible to free\.$/);
    });
    // kubelet_image_garbage_collected_total{reason="space"} counted it.
    const metrics = await apiGet(s.socketPath, '/metrics');
    expect(metrics.body).toMatch(/^kubelet_image_garbage_collected_total\{reason="space"\} [1-9]\d*$/m);
    const events = await klet(['events']);
    expect(events.stdout, explain(events)).toMatch(/Warning\s+FreeDiskSpaceFailed\s+Node\/gcnode\s/);
    // Still there after more passes: in use by klet (keep), by the other client (shared), and never pulled by klet (busybox, pause).
    await new Promise((r) => setTimeout(r, 3000));
    const after = await present();
    expect(after.has(keep.imageId)).toBe(true);
    expect(after.has(shared.imageId)).toBe(true);
    const names = (await cri.listImages({})).images.flatMap((i) => i.repoTags);
    expect(names).toEqual(expect.arrayContaining([rt.images.busybox, rt.images.pause]));
    expect(s.stderr).not.toMatch(new RegExp(`imageID=(${keep.imageId}|${shared.imageId})`));
    await s.stop();
  }, 150_000);

  it('bad thresholds are a one-line error naming the flag, before anything starts', async () => {
    for (const [args, msg] of [
      [['--image-gc-high-threshold', '101'], 'imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive'],
      // A negative percentage is refused by the flag's parser (an integer flag with a minimum of 0), one line naming it.
      [['--image-gc-low-threshold=-1'], 'Parsing --image-gc-low-threshold Expected an integer greater than or equal to 0 but received: -1'],
      [['--image-gc-low-threshold', '90'], 'imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85'],
    ] as const) {
      const root = path.join(tmp, 'bad-root');
      const r = await runKlet(['sync', '--manifest-dir', tmp, ...args, '--root-dir', root, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE]);
      expect(r.code, explain(r)).not.toBe(0);
      expect(r.stderr.trim().split('\n'), explain(r)).toEqual([expect.stringContaining(msg)]);
      expect(fs.existsSync(root), 'nothing left behind').toBe(false);
    }
  }, 60_000);
});
