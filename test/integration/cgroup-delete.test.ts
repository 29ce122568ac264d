/**
 * A pod's cgroup goes with its pod, however a sync stopped (issue 60, item
 * 2): `klet sync` with one static pod, `klet delete --all` while it runs
 * (the sync recreates the pod), SIGTERM the sync at some point of that
 * recreation, `klet delete --all` again: no `kubepods/besteffort/pod<uid>`
 * may be left in any hierarchy. Twenty rounds, each stopping the sync at
 * another moment after the first delete.
 *
 * The host's cgroups are never touched: the sync runs under a private
 * --cgroup-root that this file creates in each hierarchy and removes after.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { ContainerState } from '../../src/lib/cri/gen/api.js';
import { hostHierarchies, rmdirTree, type Hierarchies } from '../../src/lib/cm/manager.js';
import { explain, runKlet } from '../helpers/cli.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, sleep, startSync, writeAtomic } from '../helpers/sync.js';

const NODE = 'testnode';
const NS = 'kcgdelete';
const ROUNDS = 20;
const ROOT = `/klet-test-${randomBytes(4).toString('hex')}`;

let rt: TestRuntime;
let cri: CriClient;
let h: Hierarchies;
let dir: string;

/** Every pod<uid> cgroup under the private root, in any hierarchy. */
function podCgroups(): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const full = path.join(d, e.name);
      if (e.name.startsWith('pod')) out.push(full);
      walk(full);
    }
  };
  for (const m of new Set(h.mounts.values())) walk(path.join(m, ROOT));
  return out;
}

/** The pod's container runs. */
async function running(): Promise<boolean> {
  const { containers } = await cri.listContainers({ filter: { labelSelector: { 'io.kubernetes.pod.namespace': NS } } });
  return containers.some((c) => c.state === ContainerState.CONTAINER_RUNNING);
}

const common = () => ['--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  h = await hostHierarchies();
  for (const m of new Set(h.mounts.values())) fs.mkdirSync(path.join(m, ROOT));
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-cgdel-'));
  writeAtomic(
    dir,
    'p.yaml',
    [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      '  name: racer',
      `  namespace: ${NS}`,
      'spec:',
      '  terminationGracePeriodSeconds: 1',
      '  containers:',
      '    - name: c',
      `      image: ${rt.images.busybox}`,
      '      command: ["sh", "-c", "trap \'exit 0\' TERM; sleep 1000000 & wait"]',
      '',
    ].join('\n'),
  );
}, 120_000);

afterEach(async () => {
  await killAllSyncs();
}, 60_000);

afterAll(async () => {
  await killAllSyncs();
  if (cri) await wipeNode(cri, rt.rootDir, NS);
  cri?.close();
  await rt?.stop();
  if (h) for (const m of new Set(h.mounts.values())) await rmdirTree(path.join(m, ROOT));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('klet delete after a sync stopped while it recreated the pod', () => {
  it(`leaves no pod cgroup in any hierarchy (${ROUNDS} rounds)`, async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir: dir, args: ['--cgroup-root', ROOT] });
      // The pod runs (its container is up), as the sync started it.
      const deadline = Date.now() + 60_000;
      while (!(await running())) {
        if (Date.now() > deadline) throw new Error(`round ${round}: the pod did not start in 60 s\n${sync.tail()}`);
        await sleep(100);
      }
      const first = await runKlet(['delete', '--all', ...common()], { timeoutMs: 60_000 });
      if (first.code !== 0) failures.push(`round ${round}: the first delete failed: ${first.stderr.trim()}`);
      // The sync recreates the pod: stopped at another moment of that each round (0 to 1.9 s after the delete).
      await sleep((round % 10) * 200);
      const exit = await sync.stop();
      expect(exit.code, sync.tail()).toBe(0);
      const second = await runKlet(['delete', '--all', ...common()], { timeoutMs: 60_000 });
      // It deletes the pod the sync re-created ("No pods to delete" when the sync was stopped before it re-admitted it).
      if (second.code !== 0) failures.push(`round ${round}: the second delete: ${explain(second)}`);
      const left = podCgroups();
      if (left.length > 0) {
        const markers = fs.readdirSync(path.join(rt.rootDir, 'cgroups'), { withFileTypes: true }).filter((e) => e.isFile()).map((e) => decodeURIComponent(e.name));
        failures.push(`round ${round} (stopped ${(round % 10) * 200} ms after the first delete): left ${left.join(', ')}; klet's records of cgroups: ${markers.join(', ')}`);
      }
      // The next round starts clean, whatever this one left.
      await wipeNode(cri, rt.rootDir, NS);
      for (const d of left.sort((a, b) => b.length - a.length)) await rmdirTree(d);
    }
    expect(failures, `${failures.length} of ${ROUNDS} rounds left a pod cgroup`).toEqual([]);
  }, 900_000);

  it('delete --all removes the pod cgroups of pods the root dir no longer has, recorded or made again by the runtime (the kubelet\'s cleanupOrphanedPodCgroups)', async () => {
    // kubepods and the QoS cgroups, klet's (recorded by the syncs above).
    const records = path.join(rt.rootDir, 'cgroups');
    expect(fs.readdirSync(records).map((n) => decodeURIComponent(n))).toContain(`${ROOT}/kubepods/besteffort`);
    const recorded = `${ROOT}/kubepods/besteffort/pod0rphan1`;
    const remade = `${ROOT}/kubepods/burstable/pod0rphan2`;
    for (const m of new Set(h.mounts.values())) {
      for (const name of [recorded, remade]) if (fs.existsSync(path.join(m, path.dirname(name)))) fs.mkdirSync(path.join(m, name));
    }
    fs.writeFileSync(path.join(records, encodeURIComponent(recorded)), `${recorded}\n`);
    expect(podCgroups().length).toBeGreaterThan(0);
    const r = await runKlet(['delete', '--all', ...common()], { timeoutMs: 60_000 });
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout.trim()).toBe('No pods to delete.');
    expect(podCgroups()).toEqual([]);
    expect(fs.existsSync(path.join(records, encodeURIComponent(recorded)))).toBe(false);
  }, 120_000);
});
