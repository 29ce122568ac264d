/**
 * Recovery without leaks: containerd SIGKILLed while `klet runonce` is
 * starting 12 pods, then restarted and `runonce` run again, ends with exactly
 * the 12 pods' sandboxes, shims, IP leases and veths (nothing of the
 * interrupted attempts), no tmp files under the root dir, and after
 * `delete --all` nothing at all.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient, PodSandboxState } from '../../src/lib/cri/index.js';
import { layoutFor, shimPids } from '../../src/lib/runtime/containerd.js';
import { mountsUnder } from '../../src/lib/util/mounts.js';
import { explain, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { eventually, sleep } from '../helpers/sync.js';

const NODE = 'recnode';
const PODS = 12;
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";

let rt: TestRuntime;
let cri: CriClient;
let tmp: string;
let dir: string;

function klet(args: string[], timeoutMs = 180_000): Promise<CliResult> {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs });
}

/** The runtime's CNI network, as the test runtime set it up. */
function network(): { bridge: string; leasesDir: string } {
  const conf = JSON.parse(
    fs.readFileSync(path.join(rt.rootDir, 'containerd', 'cni', 'net.d', '10-klet.conflist'), 'utf8'),
  ) as { name: string; plugins: { type: string; bridge?: string }[] };
  const layout = layoutFor({ endpoint: rt.endpoint, rootDir: rt.rootDir });
  return {
    bridge: conf.plugins.find((p) => p.type === 'bridge')?.bridge ?? '',
    leasesDir: path.join(layout.cniDataDir, conf.name),
  };
}

/** What the node holds for pods: ready sandboxes, all sandboxes, shims, IP leases, veths on the bridge, tmp files. */
async function holdings() {
  const { bridge, leasesDir } = network();
  const sandboxes = (await cri.listPodSandbox()).items;
  const list = (d: string): string[] => {
    try {
      return fs.readdirSync(d);
    } catch {
      return [];
    }
  };
  const leases = list(leasesDir).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f));
  const veths = list(`/sys/class/net/${bridge}/brif`);
  const tmpFiles: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && p !== path.join(rt.rootDir, 'containerd')) walk(p);
      else if (/\.tmp$/.test(e.name)) tmpFiles.push(p);
    }
  };
  walk(rt.rootDir);
  return {
    ready: sandboxes.filter((s) => s.state === PodSandboxState.SANDBOX_READY).length,
    sandboxes: sandboxes.length,
    shims: (await shimPids(rt.socketPath)).length,
    leases: leases.length,
    veths: veths.length,
    tmpFiles,
  };
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-rec-'));
  dir = path.join(tmp, 'manifests');
  fs.mkdirSync(dir);
  for (let i = 0; i < PODS; i++) {
    fs.writeFileSync(
      path.join(dir, `p${String(i).padStart(2, '0')}.yaml`),
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata:',
        `  name: rec${i}`,
        '  namespace: krec',
        'spec:',
        '  terminationGracePeriodSeconds: 1',
        '  containers:',
        '    - name: c',
        `      image: ${rt.images.busybox}`,
        `      command: ["sh", "-c", ${JSON.stringify(SLEEP_FOREVER)}]`,
        '',
      ].join('\n'),
    );
  }
}, 120_000);

afterAll(async () => {
  if (rt) {
    await klet(['delete', '--all', '--force']).catch(() => undefined);
    cri?.close();
    await rt.stop();
  }
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
}, 180_000);

describe('containerd SIGKILL mid-runonce, then a rerun', () => {
  it('ends with exactly the pods\' sandboxes, shims, leases and veths; delete --all leaves nothing', async () => {
    const first = klet(['runonce', '--manifest-dir', dir, '--timeout', '120s']);
    // Kill containerd once a few sandboxes exist: the rest are mid-creation.
    await eventually(async () => {
      const n = (await cri.listPodSandbox()).items.length;
      if (n < 3) throw new Error(`${n} sandboxes so far`);
    }, 90_000, 50);
    await rt.killContainerd();
    const r1 = await first;
    expect(r1.code, explain(r1)).not.toBe(0);
    await rt.restart();
    // The restarted CRI plugin needs a moment to recover its sandboxes.
    await sleep(1000);

    const r2 = await klet(['runonce', '--manifest-dir', dir, '--timeout', '120s', '-o', 'json']);
    expect(r2.code, explain(r2)).toBe(0);
    const report = JSON.parse(r2.stdout) as { pods: { phase: string }[] };
    expect(report.pods.map((p) => p.phase)).toEqual(Array(PODS).fill('Running'));

    await eventually(async () => {
      expect(await holdings()).toEqual({ ready: PODS, sandboxes: PODS, shims: PODS, leases: PODS, veths: PODS, tmpFiles: [] });
    }, 30_000, 500);

    const del = await klet(['delete', '--all']);
    expect(del.code, explain(del)).toBe(0);
    await eventually(async () => {
      expect(await holdings()).toEqual({ ready: 0, sandboxes: 0, shims: 0, leases: 0, veths: 0, tmpFiles: [] });
    }, 30_000, 500);
    expect(await mountsUnder(path.join(rt.rootDir, 'pods'))).toEqual([]);
  }, 600_000);
});
