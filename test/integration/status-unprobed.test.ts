/**
 * `klet status` after a plain runonce, on a real containerd, the BUILT CLI:
 * nothing probes the pods any more, so the READY of a pod with a readiness
 * probe is its last result, not a current one. Status says so (on stderr,
 * under the table), with the result's age or "not probed yet", and says
 * nothing of it while a klet sync runs and keeps probing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { explain, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { teardown } from '../helpers/teardown.js';
import { eventually, startSync } from '../helpers/sync.js';

const NODE = 'upnode';
const NS = 'kup';

let rt: TestRuntime;
let cri: CriClient;
let dir: string;

function klet(args: string[]): Promise<CliResult> {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE]);
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-up-'));
  const pod = (name: string, probe: Record<string, unknown>) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: rt.images.busybox, command: ['sh', '-c', 'touch /tmp/ok; sleep 100000'], readinessProbe: { exec: { command: ['cat', '/tmp/ok'] }, ...probe } }],
    },
  });
  // One probed while runonce waits (its first probe is due at once), one whose first probe is due after runonce ends.
  fs.writeFileSync(path.join(dir, 'early.json'), JSON.stringify(pod('early', { periodSeconds: 1 })));
  fs.writeFileSync(path.join(dir, 'late.json'), JSON.stringify(pod('late', { initialDelaySeconds: 600 })));
  fs.writeFileSync(path.join(dir, 'plain.json'), JSON.stringify({ ...pod('plain', {}), spec: { containers: [{ name: 'app', image: rt.images.busybox, command: ['sleep', '100000'] }] } }));
}, 120_000);

afterAll(async () => {
  cri?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  await teardown(rt);
}, 120_000);

describe('klet status when no prober runs', () => {
  it('says READY is the last readiness result, with its age, or that the probe never ran', async () => {
    const r = await klet(['runonce', '--manifest-dir', dir]);
    expect(r.code, explain(r)).toBe(0);
    await eventually(
      async () => {
        const s = await klet(['status']);
        expect(s.code, explain(s)).toBe(0);
        expect(s.stderr).toMatch(/^klet status: no klet sync runs on --root-dir \S+, so nothing probes readiness; READY shows the last result:$/m);
        expect(s.stderr).toMatch(new RegExp(`^  ${NS}/late-${NODE} readiness app: not probed yet$`, 'm'));
        expect(s.stderr).toMatch(new RegExp(`^  ${NS}/early-${NODE} readiness app: Success \\d+s ago$`, 'm'));
        // A pod without a readiness probe is ready as it runs: nothing to say of it.
        expect(s.stderr).not.toMatch(/plain-/);
        expect(s.stdout).toMatch(new RegExp(`^${NS}\\s+early-${NODE}\\s+1/1\\s+Running`, 'm'));
      },
      10_000,
      500,
    );
  }, 90_000);

  it('says nothing of it while a klet sync runs (and probes)', async () => {
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir: dir });
    const s = await klet(['status']);
    expect(s.code, explain(s)).toBe(0);
    expect(s.stderr, sync.tail()).not.toMatch(/nothing probes readiness/);
    expect((await sync.stop()).code, sync.tail()).toBe(0);
  }, 90_000);
});
