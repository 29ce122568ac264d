/**
 * A full root-dir filesystem must not strand its pods. klet's root dir on a
 * small tmpfs (its own mount under a temp dir; the runtime stays on the
 * test's disk), a pod whose emptyDir fills it: `klet delete` of that pod, and
 * `klet delete --all`, still stop and remove every pod — killing a pod needs
 * no disk write — and nothing half-written is left under the root dir.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { V1PodList } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explain, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { eventually } from '../helpers/sync.js';

const execFileP = promisify(execFile);
const NODE = 'fullnode';
let rt: TestRuntime;
let tmp: string;
let root: string;
let mounted = false;

function klet(args: string[]): Promise<CliResult> {
  return runKlet([...args, '--root-dir', root, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs: 90_000 });
}

function pod(name: string, script: string): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    '  terminationGracePeriodSeconds: 2',
    '  volumes: [{ name: data, emptyDir: {} }]',
    '  containers:',
    '    - name: c',
    `      image: ${rt.images.busybox}`,
    `      command: ["sh", "-c", ${JSON.stringify(`trap 'exit 0' TERM; ${script}; sleep 1000000 & wait`)}]`,
    '      volumeMounts: [{ name: data, mountPath: /data }]',
    '',
  ].join('\n');
}

/** Bytes still free on the root dir's filesystem. */
const free = (): number => {
  const st = fs.statfsSync(root);
  return st.bavail * st.bsize;
};

async function podNames(): Promise<string[]> {
  const r = await klet(['status', '-o', 'json']);
  expect(r.code, explain(r)).toBe(0);
  return ((JSON.parse(r.stdout) as V1PodList).items ?? []).map((p) => p.metadata?.name ?? '').sort();
}

/** Fill the root dir's filesystem from inside a pod's emptyDir (until ENOSPC), and wait until it is full. */
async function startFilling(manifests: string): Promise<void> {
  const r = await klet(['runonce', '--manifest-dir', manifests, '--settle', '0']);
  expect(r.code, explain(r)).toBe(0);
  await eventually(() => expect(free()).toBeLessThan(64 * 1024), 20_000);
  // Not even a pod record fits now.
  expect(() => fs.writeFileSync(path.join(root, 'probe'), Buffer.alloc(128 * 1024))).toThrow(/ENOSPC/);
  fs.rmSync(path.join(root, 'probe'), { force: true });
}

beforeAll(async () => {
  rt = await startTestRuntime();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-full-disk-'));
  root = path.join(tmp, 'root');
  fs.mkdirSync(root);
  await execFileP('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0755', 'tmpfs', root]);
  mounted = true;
});

afterAll(async () => {
  if (rt !== undefined && root !== undefined) await klet(['delete', '--all', '--force']).catch(() => undefined);
  if (mounted) await execFileP('umount', [root]).catch(() => execFileP('umount', ['-l', root]));
  await rt?.stop();
  if (tmp !== undefined) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('a full root-dir filesystem', () => {
  it('the pod that filled it is deleted; then, full again, delete --all removes every pod', async () => {
    const manifests = path.join(tmp, 'manifests');
    fs.mkdirSync(manifests);
    fs.writeFileSync(path.join(manifests, 'filler.yaml'), pod('filler', 'dd if=/dev/zero of=/data/fill bs=64k 2>/dev/null'));
    fs.writeFileSync(path.join(manifests, 'quiet.yaml'), pod('quiet', 'true'));
    await startFilling(manifests);

    const one = await klet(['delete', `filler-${NODE}`]);
    expect(one.code, explain(one)).toBe(0);
    expect(await podNames()).toEqual([`quiet-${NODE}`]);
    // Its emptyDir went with it: the space is back.
    expect(free()).toBeGreaterThan(4 * 1024 * 1024);

    await startFilling(manifests);
    const all = await klet(['delete', '--all']);
    expect(all.code, explain(all)).toBe(0);
    expect(await podNames()).toEqual([]);
    // Nothing half-written left behind (no temp files, no pod dirs).
    expect(fs.readdirSync(path.join(root, 'pods'))).toEqual([]);
  }, 120_000);
});
