/**
 * The one-shot services end to end, against a real containerd. Ctrl-C
 * during a wait: `klet run-pod --wait` and `klet runonce` stop waiting within
 * a second of SIGINT, exit 130 (as a shell reports an interrupted command),
 * and leave the pods as they are — still running, not deleted even with --rm
 * or --cleanup. One-off runs: `run-pod --rm` is a fresh docker-run-like run
 * with the output on stdout; runonce's EXIT column shows a job's exit code.
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
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-one-shot-'));
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
    const r = await interruptWhen(['runonce', '--manifest-dir', manifests, '--wait', 'ready', '--cleanup'],
      // Both pods' containers started (in either order): then both must still run after the interrupt.
      /(?=[\s\S]*pod default\/job-intnode: container c started)(?=[\s\S]*pod default\/svc-intnode: container c started)/,
    );
    expect(r.code, r.stderr).toBe(130);
    expect(r.afterSignalMs, 'exit after SIGINT').toBeLessThan(1000);
    expect(r.stderr).toContain('error: interrupted by SIGINT');
    for (const name of ['job', 'svc']) {
      const pod = await podOf(name);
      expect(pod.status?.phase, name).toBe('Running');
    }
  });
});

describe('one-off runs', () => {
  it('run-pod examples/job.yaml --rm after a previous run: a fresh run, its output on stdout, exit 0, nothing left', async () => {
    const job = path.join(PROJECT_ROOT, 'examples', 'job.yaml');
    const first = await runKlet(['run-pod', job, '--wait', 'completed', ...common()]);
    expect(first.code, explain(first)).toBe(0);
    const firstUid = (await podOf('job')).metadata?.uid;

    const again = await runKlet(['run-pod', job, '--rm', ...common()]);
    expect(again.code, explain(again)).toBe(0);
    // docker run --rm: the container's output is the result.
    expect(again.stdout).toBe('step 1\nstep 2\nstep 3\ndone\n');
    // It ran again (a new container started), rather than reporting the old finished pod.
    expect(again.stderr).toMatch(/pod default\/job-intnode: container count started/);
    const gone = await runKlet(['status', `job-${NODE}`, ...common()]);
    expect(gone.code, explain(gone)).not.toBe(0);
    expect(firstUid).toBeDefined();
  });

  it('runonce reports a finished job with its exit code in the EXIT column', async () => {
    const manifests = path.join(dir, 'jobs');
    fs.mkdirSync(manifests, { recursive: true });
    fs.copyFileSync(path.join(PROJECT_ROOT, 'examples', 'job.yaml'), path.join(manifests, 'job.yaml'));
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--cleanup', ...common()]);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`\\ndefault +job-${NODE} +Never +ok +Succeeded +0 +`));
  });
});
