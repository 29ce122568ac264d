/**
 * Ctrl-C during a wait, against a real containerd: `klet run-pod --wait`
 * and `klet runonce` stop waiting within a second of SIGINT, exit 130 (as a
 * shell reports an interrupted command), and leave the pods as they are —
 * still running, not deleted even with --rm or --cleanup.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN, PROJECT_ROOT, assertBuilt, cleanEnv, explain, runKlet } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

const NODE = 'intnode';
let rt: TestRuntime;
let dir: string;

const common = () => ['--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];

function podManifest(where: string, name: string, restartPolicy: string): string {
  fs.mkdirSync(where, { recursive: true });
  const file = path.join(where, `${name}.yaml`);
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      `  name: ${name}`,
      'spec:',
      `  restartPolicy: ${restartPolicy}`,
      '  terminationGracePeriodSeconds: 1',
      '  containers:',
      '    - name: c',
      `      image: ${rt.images.busybox}`,
      '      command: ["sh", "-c", "trap \'exit 0\' TERM; while true; do sleep 1; done"]',
      '',
    ].join('\n'),
  );
  return file;
}

/** Start klet, SIGINT it once stderr shows `readyText`; how long it took to exit after the signal, and how. */
async function interruptWhen(args: string[], readyText: RegExp): Promise<{ code: number | null; afterSignalMs: number; stderr: string; stdout: string }> {
  assertBuilt();
  const child = spawn(process.execPath, [KLET_BIN, ...args, ...common()], { cwd: PROJECT_ROOT, env: cleanEnv() });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`klet never printed ${readyText}; stderr:\n${stderr}`)), 60_000);
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString('utf8');
      if (readyText.test(stderr)) {
        clearTimeout(t);
        resolve();
      }
    });
  });
  const t0 = Date.now();
  child.kill('SIGINT');
  const code = await exited;
  return { code, afterSignalMs: Date.now() - t0, stderr, stdout };
}

async function podOf(name: string): Promise<V1Pod> {
  const r = await runKlet(['status', `${name}-${NODE}`, '-o', 'json', ...common()]);
  expect(r.code, explain(r)).toBe(0);
  return JSON.parse(r.stdout) as V1Pod;
}

beforeAll(async () => {
  rt = await startTestRuntime();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-interrupt-'));
});

afterAll(async () => {
  await runKlet(['delete', '--all', '--force', ...common()]).catch(() => undefined);
  await rt?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('Ctrl-C during a wait', () => {
  it('run-pod --wait completed --rm: stops within 1 s, exits 130, the pod keeps running', async () => {
    const file = podManifest(path.join(dir, 'run-pod'), 'waiter', 'Never');
    const r = await interruptWhen(['run-pod', file, '--wait', 'completed', '--rm'], /container c started/);
    expect(r.code, r.stderr).toBe(130);
    expect(r.afterSignalMs, 'exit after SIGINT').toBeLessThan(1000);
    expect(r.stderr).toContain('error: interrupted by SIGINT');
    expect(r.stdout).toBe('');
    const pod = await podOf('waiter');
    expect(pod.status?.phase).toBe('Running');
    expect(pod.status?.containerStatuses?.[0]?.state?.running).toBeDefined();
  });

  it('runonce --cleanup: stops within 1 s, exits 130, the pods keep running', async () => {
    const manifests = path.join(dir, 'runonce');
    podManifest(manifests, 'job', 'Never');
    podManifest(manifests, 'svc', 'Always');
    const r = await interruptWhen(['runonce', '--manifest-dir', manifests, '--wait', 'ready', '--cleanup'], /pod default\/job-intnode: container c started/);
    expect(r.code, r.stderr).toBe(130);
    expect(r.afterSignalMs, 'exit after SIGINT').toBeLessThan(1000);
    expect(r.stderr).toContain('error: interrupted by SIGINT');
    for (const name of ['job', 'svc']) {
      const pod = await podOf(name);
      expect(pod.status?.phase, name).toBe('Running');
    }
  });
});
