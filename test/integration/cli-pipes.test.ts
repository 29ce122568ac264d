/**
 * A stdout its reader closes early, as in `klet logs POD | head -1`: klet
 * ends quietly, as kubectl and crictl do — killed by SIGPIPE (141 from the
 * shell) or exit 0, nothing on stderr (no EPIPE stack, no "unsettled
 * top-level await" warning), and at once, also when following logs. Through
 * oclif (logs, status) and the entry without it (runonce), against a real
 * containerd.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN, PROJECT_ROOT, assertBuilt, cleanEnv, explain, runKlet } from '../helpers/cli.js';
import { poll } from '../helpers/poll.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

const NODE = 'pipenode';
const POD = `pipes-${NODE}`;
let rt: TestRuntime;
let dir: string;
let manifests: string;

const common = () => ['--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
const flat = ['--cgroups-per-qos=false', '--enforce-node-allocatable=none'];

interface PipeResult {
  /** klet's exit status as the shell reports it (141: killed by SIGPIPE). */
  status: number | null;
  /** What the reader printed. */
  stdout: string;
  /** klet's stderr (and the reader's, which says nothing). */
  stderr: string;
  timedOut: boolean;
}

/** `sh -c 'klet ARGS | READER'`: klet's own exit status, not the reader's, through a file. */
async function piped(args: string[], reader: string, timeoutMs = 30_000): Promise<PipeResult> {
  assertBuilt();
  const statusFile = path.join(dir, `status-${Math.random().toString(36).slice(2)}`);
  const script = `{ "$0" "$@"; echo $? > "$KLET_STATUS_FILE"; } | ${reader}`;
  const child = spawn('sh', ['-c', script, process.execPath, KLET_BIN, ...args], {
    cwd: PROJECT_ROOT,
    env: { ...cleanEnv(), KLET_STATUS_FILE: statusFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  await new Promise((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  const text = fs.existsSync(statusFile) ? fs.readFileSync(statusFile, 'utf8').trim() : '';
  return { status: text === '' ? null : Number(text), stdout, stderr, timedOut };
}

const describeRun = (r: PipeResult) => `status ${r.status}${r.timedOut ? ' (timed out)' : ''}\n--- stdout:\n${r.stdout}\n--- stderr:\n${r.stderr}`;

function expectQuietEnd(r: PipeResult, stderr = ''): void {
  expect(r.timedOut, describeRun(r)).toBe(false);
  expect([0, 141], describeRun(r)).toContain(r.status);
  expect(r.stderr, describeRun(r)).toBe(stderr);
}

beforeAll(async () => {
  rt = await startTestRuntime();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-pipes-'));
  manifests = path.join(dir, 'manifests');
  fs.mkdirSync(manifests);
  // ~200 KB of log, more than a pipe holds, then a line every tenth of a second.
  const script = 'i=0; while [ $i -lt 20000 ]; do echo line $i; i=$((i+1)); done; echo burst done; while true; do echo tick; sleep 0.1; done';
  fs.writeFileSync(
    path.join(manifests, 'pipes.yaml'),
    [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      '  name: pipes',
      'spec:',
      '  terminationGracePeriodSeconds: 1',
      '  containers:',
      '    - name: c',
      `      image: ${rt.images.busybox}`,
      `      command: ["sh", "-c", ${JSON.stringify(script)}]`,
      '',
    ].join('\n'),
  );
  const r = await runKlet(['runonce', '--manifest-dir', manifests, '--settle', '0', ...flat, ...common()]);
  expect(r.code, explain(r)).toBe(0);
  await poll('the burst in the pod\'s log', 30_000, async () => {
    const logs = await runKlet(['logs', POD, ...common()]);
    return logs.stdout.includes('burst done\n') ? true : undefined;
  });
});

afterAll(async () => {
  await runKlet(['delete', '--all', '--force', ...common()]).catch(() => undefined);
  await rt?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a stdout closed by its reader', () => {
  it('klet logs POD | head -1', async () => {
    const r = await piped(['logs', POD, ...common()], 'head -1');
    expectQuietEnd(r);
    expect(r.stdout).toBe('line 0\n');
  });

  it('klet logs -f POD | head -1: ends at the next line the container writes', async () => {
    const r = await piped(['logs', '-f', POD, ...common()], 'head -1');
    expectQuietEnd(r);
    expect(r.stdout).toBe('line 0\n');
  });

  it('klet status | head -1, and a reader that reads nothing (head -n 0)', async () => {
    // Whether klet writes again after head has gone is a race: a few tries, and one that always loses it.
    for (let i = 0; i < 3; i++) {
      const r = await piped(['status', ...common()], 'head -1');
      expectQuietEnd(r);
      expect(r.stdout).toMatch(/^Node:\s+pipenode\n$/);
    }
    expectQuietEnd(await piped(['status', ...common()], 'head -n 0'));
  });

  it('klet runonce (the entry without oclif) | head -n 0: its progress on stderr, nothing else', async () => {
    const r = await piped(['runonce', '--manifest-dir', manifests, '--settle', '0', ...flat, ...common()], 'head -n 0');
    expectQuietEnd(r, `pod default/${POD}: syncing\npod default/${POD}: Running\n`);
  });
});
