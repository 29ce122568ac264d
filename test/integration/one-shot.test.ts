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
import { pathToFileURL } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN, PROJECT_ROOT, assertBuilt, cleanEnv, explain, flatCgroups, runKlet } from '../helpers/cli.js';
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
  const child = spawn(process.execPath, [KLET_BIN, ...flatCgroups([...args, ...common()])], { cwd: PROJECT_ROOT, env: cleanEnv() });
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

/**
 * A pod manifest: metadata lines (indented under `metadata:`, the name
 * first), one container `c` (the busybox image unless `image`) running
 * `script` (sleep by default), `extra` lines under it, then `tail` lines.
 */
function podText(name: string, opts: { meta?: string[]; image?: string; script?: string; extra?: string[]; tail?: string[] } = {}): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    ...(opts.meta ?? []),
    'spec:',
    '  terminationGracePeriodSeconds: 1',
    '  containers:',
    '    - name: c',
    `      image: ${opts.image ?? rt.images.busybox}`,
    `      command: ["sh", "-c", ${JSON.stringify(opts.script ?? 'sleep 3600')}]`,
    ...(opts.extra ?? []),
    ...(opts.tail ?? []),
    '',
  ].join('\n');
}

/** A one-container pod of restartPolicy Always running `script`, or with image `image`. */
function alwaysPod(where: string, name: string, opts: { script?: string; image?: string }): void {
  fs.mkdirSync(where, { recursive: true });
  fs.writeFileSync(path.join(where, `${name}.yaml`), podText(name, opts));
}

interface ReportRow {
  name: string;
  ok: boolean;
  reason: string | null;
  message: string | null;
  problem: string | null;
  exitCode: number | null;
  logTail: string[];
}

describe('runonce tells the truth', () => {
  // What a control-plane pod does with a bad flag or a port in use: starts, prints why, exits ~1 s later.
  // One stream: stdout and stderr lines may reach the log in either order.
  const DIES = 'echo starting >&2; echo "listen tcp :2379: bind: address already in use" >&2; sleep 1; exit 3';

  it('a container that exits within the settle window fails its pod with reason, exit code and last log lines; the others stay ok', async () => {
    const manifests = path.join(dir, 'settle');
    alwaysPod(manifests, 'dies', { script: DIES });
    alwaysPod(manifests, 'lives', {});
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '-o', 'json', ...common()]);
    expect(r.code, explain(r)).toBe(1);
    const report = JSON.parse(r.stdout) as { ok: boolean; pods: ReportRow[] };
    const rows = Object.fromEntries(report.pods.map((p) => [p.name, p]));
    expect(report.ok).toBe(false);
    expect(rows[`lives-${NODE}`]).toMatchObject({ ok: true, reason: null });
    expect(rows[`dies-${NODE}`]).toMatchObject({ ok: false, reason: 'Error', exitCode: 3 });
    expect(rows[`dies-${NODE}`]?.problem).toMatch(/^container c exited within the 3s settle window: Error, exit code 3/);
    expect(rows[`dies-${NODE}`]?.logTail).toEqual(['starting', 'listen tcp :2379: bind: address already in use']);
    // The pod is left as it ended (not restarted), which is what `klet status` shows.
    const pod = await podOf('dies');
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3);
    await runKlet(['delete', `dies-${NODE}`, `lives-${NODE}`, ...common()]);
  }, 120_000);

  it('the table: FAILED with the reason, the log lines under it, the summary last', async () => {
    const manifests = path.join(dir, 'settle-table');
    alwaysPod(manifests, 'dies2', { script: DIES });
    alwaysPod(manifests, 'lives2', {});
    const table = await runKlet(['runonce', '--manifest-dir', manifests, '--settle', '2500ms', '--cleanup', ...common()]);
    expect(table.code, explain(table)).toBe(1);
    expect(table.stdout).toMatch(new RegExp(`\\ndefault +dies2-${NODE} +Always +FAILED +Running +3 +[0-9.]+s +container c exited within the 2.5s settle window: Error, exit code 3\\n`));
    expect(table.stdout).toContain(`default/dies2-${NODE}: last 2 log lines:\n  starting\n  listen tcp :2379: bind: address already in use\n`);
    expect(table.stdout).toMatch(/\n1\/2 pods ok, 0 invalid, [0-9.]+s\n?$/);
  }, 120_000);

  it('--settle 0 reports a running pod at once, as before', async () => {
    const manifests = path.join(dir, 'settle-0');
    alwaysPod(manifests, 'dies0', { script: DIES });
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--settle', '0', '--cleanup', '-o', 'json', ...common()]);
    expect(r.code, explain(r)).toBe(0);
  }, 60_000);

  it('an image that cannot be pulled fails its pod at once with the pull error, not at the timeout', async () => {
    const manifests = path.join(dir, 'no-image');
    // Nothing listens on port 1: the pull fails, and the image is nowhere else.
    alwaysPod(manifests, 'noimage', { image: '127.0.0.1:1/klet/absent:v1' });
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--timeout', '10m', '--cleanup', '-o', 'json', ...common()], { timeoutMs: 90_000 });
    expect(r.code, explain(r)).toBe(1);
    const row = (JSON.parse(r.stdout) as { pods: ReportRow[] }).pods[0];
    expect(row).toMatchObject({ ok: false, reason: 'ErrImagePull' });
    expect(row?.problem).toContain('failed to pull image "127.0.0.1:1/klet/absent:v1"');
  }, 120_000);
});

describe('manifest paths as the kubelet takes them', () => {
  it('--pod-manifest-path names one manifest file (the kubelet\'s staticPodPath may), through both entries', async () => {
    const manifests = path.join(dir, 'single-file');
    alwaysPod(manifests, 'single', {});
    alwaysPod(manifests, 'other', {});
    const file = path.join(manifests, 'single.yaml');
    for (const extraEnv of [{}, { KLET_ENTRY: 'oclif' }]) {
      const r = await runKlet(['runonce', '--pod-manifest-path', file, '--settle', '0', '--cleanup', '-o', 'json', ...common()], { extraEnv });
      expect(r.code, explain(r)).toBe(0);
      // Only that file's pod: not the directory's.
      expect((JSON.parse(r.stdout) as { pods: ReportRow[] }).pods.map((p) => [p.name, p.ok])).toEqual([[`single-${NODE}`, true]]);
    }
  }, 120_000);

  it('a pod dumped with kubectl get -o yaml: a mirror pod is not run (the kubelet skips it); an old creationTimestamp does not age a new pod', async () => {
    const manifests = path.join(dir, 'dumped');
    fs.mkdirSync(manifests, { recursive: true });
    const dumped = (name: string, mirror: boolean) =>
      podText(name, {
        meta: [
          '  annotations:',
          `    kubernetes.io/config.hash: 0123abcd${name}`,
          ...(mirror ? [`    kubernetes.io/config.mirror: 0123abcd${name}`] : []),
          '    kubernetes.io/config.source: file',
          '  creationTimestamp: "2024-12-30T10:00:00Z"',
          '  namespace: default',
        ],
        tail: ['status:', '  phase: Running'],
      });
    fs.writeFileSync(path.join(manifests, 'mirror.yaml'), dumped('mirror', true));
    fs.writeFileSync(path.join(manifests, 'edited.yaml'), dumped('edited', false));
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--settle', '0', '-o', 'json', ...common()]);
    expect(r.code, explain(r)).toBe(1);
    const report = JSON.parse(r.stdout) as { pods: ReportRow[]; invalid: { file: string; line: number; fieldPath: string; message: string }[] };
    expect(report.pods.map((p) => [p.name, p.ok])).toEqual([[`edited-${NODE}`, true]]);
    expect(report.invalid).toEqual([
      {
        file: path.join(manifests, 'mirror.yaml'),
        line: 7,
        fieldPath: 'metadata.annotations[kubernetes.io/config.mirror]',
        message: 'Forbidden: a mirror pod (as kubectl get -o yaml writes a static pod back) is never run from a manifest, as the kubelet skips it: remove this annotation',
      },
    ]);
    const gone = await runKlet(['status', `mirror-${NODE}`, ...common()]);
    expect(gone.code, explain(gone)).not.toBe(0);
    // Born when klet first ran it, as its mirror pod would be by the API server: AGE in seconds, not 697d.
    const pod = await podOf('edited');
    const age = Date.now() - new Date(pod.metadata?.creationTimestamp ?? 0).getTime();
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(120_000);
    const table = await runKlet(['status', ...common()]);
    expect(table.stdout).toMatch(new RegExp(`\\ndefault +edited-${NODE} +1/1 +Running +0 +[0-9]+s\\b`));
    await runKlet(['delete', `edited-${NODE}`, ...common()]);
  }, 120_000);
});

describe('deterministic admission', () => {
  const port = 32000 + Math.floor(Math.random() * 2000);
  const portPod = (where: string, file: string, name: string, created?: string) => {
    fs.mkdirSync(where, { recursive: true });
    const meta = created ? [`  creationTimestamp: "${created}"`] : [];
    fs.writeFileSync(path.join(where, file), podText(name, { meta, extra: [`      ports: [{ containerPort: 80, hostPort: ${port} }]`] }));
  };
  const outcome = async (manifests: string, extra: string[] = ['--cleanup']) => {
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--settle', '0', ...extra, '-o', 'json', ...common()]);
    expect(r.code, explain(r)).toBe(1);
    return Object.fromEntries((JSON.parse(r.stdout) as { pods: ReportRow[] }).pods.map((p) => [p.name, p.ok ? 'ok' : p.reason]));
  };

  it('two pods asking for one hostPort: the one first in source order wins, every time', async () => {
    const manifests = path.join(dir, 'ports-source-order');
    // The names sort the other way round: the files' order, not the names' (or whichever start runs first), decides.
    portPod(manifests, 'a.yaml', 'zz-first');
    portPod(manifests, 'b.yaml', 'aa-second');
    for (let i = 0; i < 4; i++) {
      expect(await outcome(manifests), `run ${i}`).toEqual({ [`zz-first-${NODE}`]: 'ok', [`aa-second-${NODE}`]: 'NodePorts' });
    }
  }, 120_000);

  it('an older creationTimestamp wins over source order; the loser has the kubelet\'s rejected-pod status', async () => {
    const manifests = path.join(dir, 'ports-created');
    portPod(manifests, 'a.yaml', 'newer', '2025-06-01T00:00:00Z');
    portPod(manifests, 'b.yaml', 'older', '2025-01-01T00:00:00Z');
    expect(await outcome(manifests, [])).toEqual({ [`newer-${NODE}`]: 'NodePorts', [`older-${NODE}`]: 'ok' });
    const loser = await podOf('newer');
    expect(loser.status?.phase).toBe('Failed');
    expect(loser.status?.reason).toBe('NodePorts');
    expect(loser.status?.message).toMatch(/^Pod was rejected: Predicate NodePorts failed: /);
    // No waiting container statuses (nothing of it ever ran), no conditions: STATUS is the reason.
    expect(loser.status?.containerStatuses).toBeUndefined();
    expect(loser.status?.conditions).toBeUndefined();
    const table = await runKlet(['status', ...common()]);
    expect(table.stdout).toMatch(new RegExp(`\\ndefault +newer-${NODE} +0/1 +NodePorts +0 `));
    await runKlet(['delete', `newer-${NODE}`, `older-${NODE}`, ...common()]);
  }, 120_000);
});

describe('sidecars as Kubernetes 1.34 runs them (KEP-753)', () => {
  it("a sidecar's startup probe holds the app back until it passes; the job's exit code is its own, not the stopped sidecar's", async () => {
    const manifests = path.join(dir, 'sidecar-job');
    fs.mkdirSync(manifests, { recursive: true });
    const mount = ['      volumeMounts: [{ name: shared, mountPath: /shared }]'];
    fs.writeFileSync(
      path.join(manifests, 'job.yaml'),
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata:',
        '  name: sidejob',
        'spec:',
        '  restartPolicy: Never',
        '  terminationGracePeriodSeconds: 1',
        '  volumes: [{ name: shared, emptyDir: {} }]',
        '  initContainers:',
        '    - name: shipper',
        `      image: ${rt.images.busybox}`,
        '      restartPolicy: Always',
        // Ready only after 2 s; then sleep as PID 1, which ignores SIGTERM: stopped with 137.
        '      command: ["sh", "-c", "sleep 2; touch /shared/ready; exec sleep 3600"]',
        '      startupProbe: { exec: { command: ["test", "-f", "/shared/ready"] }, periodSeconds: 1, failureThreshold: 30 }',
        ...mount,
        '  containers:',
        '    - name: c',
        `      image: ${rt.images.busybox}`,
        // Fails if it starts before the sidecar's startup probe has passed.
        '      command: ["test", "-f", "/shared/ready"]',
        ...mount,
        '',
      ].join('\n'),
    );
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--cleanup', '-o', 'json', ...common()]);
    expect(r.code, explain(r)).toBe(0);
    expect((JSON.parse(r.stdout) as { pods: (ReportRow & { phase: string })[] }).pods[0]).toMatchObject({ ok: true, phase: 'Succeeded', exitCode: 0 });
  }, 120_000);

  it('on deletion the app stops first, then the sidecars in reverse order', async () => {
    const manifests = path.join(dir, 'sidecar-order');
    const out = path.join(dir, 'sidecar-order-out');
    fs.mkdirSync(manifests, { recursive: true });
    fs.mkdirSync(out, { recursive: true });
    const container = (name: string, onTerm: string, sidecar: boolean) => [
      `    - name: ${name}`,
      `      image: ${rt.images.busybox}`,
      ...(sidecar ? ['      restartPolicy: Always'] : []),
      `      command: ["sh", "-c", ${JSON.stringify(`trap '${onTerm}echo ${name} >> /out/order; exit 0' TERM; sleep 1000000 & wait`)}]`,
      '      volumeMounts: [{ name: out, mountPath: /out }]',
    ];
    fs.writeFileSync(
      path.join(manifests, 'p.yaml'),
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata:',
        '  name: sidecars',
        'spec:',
        '  terminationGracePeriodSeconds: 20',
        `  volumes: [{ name: out, hostPath: { path: ${out}, type: Directory } }]`,
        '  initContainers:',
        ...container('first', '', true),
        ...container('second', '', true),
        '  containers:',
        // The app takes a second to stop: the sidecars must still wait for it.
        ...container('app', 'sleep 1; ', false),
        '',
      ].join('\n'),
    );
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--settle', '0', ...common()]);
    expect(r.code, explain(r)).toBe(0);
    const del = await runKlet(['delete', `sidecars-${NODE}`, ...common()]);
    expect(del.code, explain(del)).toBe(0);
    expect(fs.readFileSync(path.join(out, 'order'), 'utf8')).toBe('app\nsecond\nfirst\n');
  }, 120_000);
});

describe('the errors users grep for', () => {
  it('a missing envFrom ConfigMap names envFrom[0].configMapRef, not env', async () => {
    const manifests = path.join(dir, 'envfrom');
    fs.mkdirSync(manifests, { recursive: true });
    fs.writeFileSync(path.join(manifests, 'p.yaml'), podText('envfrom', { extra: ['      envFrom:', '        - configMapRef:', '            name: settings'] }));
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '-o', 'json', ...common()]);
    expect(r.code, explain(r)).toBe(1);
    const { invalid } = JSON.parse(r.stdout) as { invalid: { fieldPath: string; message: string }[] };
    expect(invalid).toEqual([expect.objectContaining({ fieldPath: 'spec.containers[0].envFrom[0].configMapRef', message: 'configmap "settings" not found' })]);
  });

  it('an image volume is refused for what it needs: a runtime that mounts images', async () => {
    const manifests = path.join(dir, 'imagevol');
    fs.mkdirSync(manifests, { recursive: true });
    fs.writeFileSync(
      path.join(manifests, 'p.yaml'),
      podText('imagevol', { tail: ['  volumes:', '    - name: models', '      image:', `        reference: ${rt.images.busybox}`] }),
    );
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--cleanup', '-o', 'json', ...common()]);
    expect(r.code, explain(r)).toBe(1);
    const row = (JSON.parse(r.stdout) as { pods: ReportRow[] }).pods[0];
    expect(row?.reason).toBe('FailedMount');
    expect(row?.message).toContain('volume "models": an image volume needs a container runtime that mounts images as volumes (containerd 2.1 or later)');
  });
});

describe('progress of a pod stuck retrying', () => {
  it('run-pod: one line per state change, not one per retry; then each repeated state once with its count, before the result', async () => {
    // A working directory that is a file: every start fails (RunContainerError), then CrashLoopBackOff, again and again.
    const file = path.join(dir, 'stuck.yaml');
    fs.writeFileSync(file, podText('stuck', { extra: ['      workingDir: /etc/passwd'] }));
    const r = await runKlet(['run-pod', file, '--timeout', '8s', '--rm', ...common()]);
    expect(r.code, explain(r)).not.toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    const pod = `pod default/stuck-${NODE}`;
    expect(new Set(lines).size, explain(r)).toBe(lines.length);
    expect(lines.filter((l) => l.startsWith(`${pod}: container c: RunContainerError: `)), explain(r)).toHaveLength(1);
    expect(lines.filter((l) => l === `${pod}: container c: image ${rt.images.busybox} already present`), explain(r)).toHaveLength(1);
    const failed = lines.findIndex((l) => l.startsWith(`${pod}: FAILED: timed out after 8s`));
    const repeated = lines.findIndex((l) => /: container c: RunContainerError \(x\d+( over \d+s)?\)$/.test(l));
    expect(repeated, explain(r)).toBeGreaterThan(0);
    expect(repeated, explain(r)).toBeLessThan(failed);
  });
});

/**
 * bin/run.js runs `klet runonce` without oclif when src/cli/runonce-entry.ts
 * takes its arguments (KLET_ENTRY=oclif forces the oclif command). The same
 * invocations through both must end the same: exit code, stdout, stderr
 * (IDs, addresses and times aside).
 */
describe('runonce without oclif', () => {
  /** Output with runtime IDs and every number masked: what differs between two identical runs. */
  const masked = (s: string) => s.replace(/\b[0-9a-f]{12,64}\b/g, 'ID').replace(/[0-9]+/g, '0');

  /** A preload that reports on stderr how many @oclif/core modules the process loaded. */
  function oclifProbe(): string {
    const file = path.join(dir, 'oclif-probe.cjs');
    fs.writeFileSync(
      file,
      "process.on('exit', () => { const n = Object.keys(require.cache).filter((k) => k.includes('@oclif')).length; require('fs').writeSync(2, `[oclif modules: ${n}]\\n`); });\n",
    );
    return file;
  }

  /** A preload that reports on stderr how many files of dist/bundle/ and of the rest of dist/ the process loaded. */
  function distProbe(): string {
    const file = path.join(dir, 'dist-probe.mjs');
    fs.writeFileSync(
      file,
      [
        "import { registerHooks } from 'node:module'; import fs from 'node:fs';",
        "const dist = new URL('dist/', " + JSON.stringify(pathToFileURL(PROJECT_ROOT + '/').href) + ').href; const n = { bundle: 0, modules: 0 };',
        "registerHooks({ load(url, ctx, next) { if (url.startsWith(dist)) n[url.startsWith(dist + 'bundle/') ? 'bundle' : 'modules'] += 1; return next(url, ctx); } });",
        "process.on('exit', () => fs.writeSync(2, `[dist/bundle files: ${n.bundle}, other dist files: ${n.modules}]\\n`));",
        '',
      ].join('\n'),
    );
    return file;
  }

  it('a well-formed runonce loads no oclif and runs from dist/bundle/; --help, a bad flag or KLET_ENTRY=oclif load oclif', async () => {
    const manifests = path.join(dir, 'entry-probe');
    podManifest(manifests, 'probe', 'Always');
    const probe = { NODE_OPTIONS: `--require ${oclifProbe()} --import ${distProbe()}` };
    const fast = await runKlet(['runonce', '--manifest-dir', manifests, '--cleanup', '-o', 'json', ...common()], { extraEnv: probe });
    expect(fast.code, explain(fast)).toBe(0);
    expect(fast.stderr).toContain('[oclif modules: 0]');
    // npm run build bundles runonce's modules (scripts/bundle.js); bin/run.js loads them from there, not one by one.
    expect(fast.stderr).toMatch(/\[dist\/bundle files: [1-9][0-9]*, other dist files: 0\]/);
    const forced = await runKlet(['runonce', '--manifest-dir', manifests, '--cleanup', '-o', 'json', ...common()], { extraEnv: { ...probe, KLET_ENTRY: 'oclif' } });
    expect(forced.code, explain(forced)).toBe(0);
    expect(forced.stderr).toMatch(/\[oclif modules: [1-9]/);
    expect(forced.stderr).toMatch(/\[dist\/bundle files: 0, other dist files: [1-9]/);
    const bad = await runKlet(['runonce', '--manifest-dir', manifests, '--bogus', ...common()], { extraEnv: probe });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: Nonexistent flag: --bogus \(see: klet runonce --help\)\n\[oclif modules: [1-9]/);
    const help = await runKlet(['runonce', '--manifest-dir', manifests, '--help'], { extraEnv: probe });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--manifest-dir');
  });

  it('both entries end every invocation the same way', async () => {
    const manifests = path.join(dir, 'entries');
    podManifest(manifests, 'svc2', 'Always');
    fs.copyFileSync(path.join(PROJECT_ROOT, 'examples', 'job.yaml'), path.join(manifests, 'job.yaml'));
    const failing = path.join(dir, 'entries-failing');
    fs.mkdirSync(failing, { recursive: true });
    fs.writeFileSync(
      path.join(failing, 'fails.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: fails\nspec:\n  restartPolicy: Never\n  containers:\n    - name: c\n      image: ${rt.images.busybox}\n      command: ["sh", "-c", "exit 3"]\n`,
    );
    fs.writeFileSync(path.join(failing, 'broken.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\nspec:\n  containers: []\n');
    const invocations: string[][] = [
      ['--manifest-dir', manifests, '--cleanup'],
      ['--manifest-dir', manifests, '--cleanup', '-o', 'json'],
      ['--manifest-dir', manifests, '--cleanup', '-o', 'yaml', '--wait', 'ready'],
      ['--manifest-dir', failing, '--cleanup', '--exit-code-from', 'fails'],
      ['--manifest-dir', failing, '--cleanup', '--json'],
      ['--manifest-dir', path.join(dir, 'no-such-dir')],
      ['--manifest-dir', path.join(dir, 'no-such-dir'), '-o', 'json'],
      ['--manifest-dir', manifests, '--exit-code-from', 'nobody', '--cleanup'],
      ['--manifest-url', 'ftp://example/pods.yaml'],
      ['--manifest-url', 'http://127.0.0.1:9/pods.yaml', '--manifest-url-header', 'no colon'],
    ];
    const codes: (number | null)[] = [];
    for (const args of invocations) {
      const fast = await runKlet(['runonce', ...args, ...common()]);
      codes.push(fast.code);
      const oclif = await runKlet(['runonce', ...args, ...common()], { extraEnv: { KLET_ENTRY: 'oclif' } });
      const label = args.join(' ');
      expect(fast.code, `${label}\n${explain(fast)}`).toBe(oclif.code);
      expect(masked(fast.stdout), label).toBe(masked(oclif.stdout));
      // Pods start concurrently: their progress lines interleave differently from run to run.
      expect(masked(fast.stderr).split('\n').sort(), label).toEqual(masked(oclif.stderr).split('\n').sort());
    }
    // Successes, a job's exit code, an invalid manifest, and bad input of each kind: the runs above did what they say.
    expect(codes).toEqual([0, 0, 0, 3, 1, 2, 2, 2, 2, 2]);
  });
});
