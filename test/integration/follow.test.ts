/**
 * The streaming paths of the CLI against a real containerd: `klet logs -f`
 * prints lines as the container writes them and ends by itself when the
 * container exits; `klet status --watch -o json` streams a pod's changes as
 * ADDED/MODIFIED objects until interrupted.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN, PROJECT_ROOT, assertBuilt, cleanEnv, explain, flatCgroups, runKlet } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

let rt: TestRuntime;
let dir: string;

const common = () => ['--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', 'follownode'];

function podManifest(name: string, script: string, restartPolicy = 'Never'): string {
  const file = path.join(dir, `${name}.yaml`);
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      `  name: ${name}`,
      'spec:',
      `  restartPolicy: ${restartPolicy}`,
      '  terminationGracePeriodSeconds: 2',
      '  containers:',
      '    - name: c',
      `      image: ${rt.images.busybox}`,
      `      command: ["sh", "-c", ${JSON.stringify(script)}]`,
      '',
    ].join('\n'),
  );
  return file;
}

/** Start `klet ARGS` and collect stdout lines with the time each arrived. */
function startStreaming(args: string[]) {
  assertBuilt();
  const child = spawn(process.execPath, [KLET_BIN, ...flatCgroups([...args, ...common()])], { cwd: PROJECT_ROOT, env: cleanEnv() });
  const lines: { text: string; at: number }[] = [];
  let buf = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => {
    buf += b.toString('utf8');
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push({ text: buf.slice(0, i), at: Date.now() });
      buf = buf.slice(i + 1);
    }
  });
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, lines, exited, stderr: () => stderr };
}

async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  rt = await startTestRuntime();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-follow-'));
});

afterAll(async () => {
  await runKlet(['delete', '--all', '--force', ...common()]).catch(() => undefined);
  await rt?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('klet logs -f', () => {
  it('prints lines as they are written and ends when the container exits', async () => {
    const file = podManifest('ticker', 'for i in 1 2 3 4; do echo tick $i; sleep 1; done; echo done');
    const run = await runKlet(['run-pod', file, '--wait', 'running', ...common()]);
    expect(run.code, explain(run)).toBe(0);
    const t0 = Date.now();
    const logs = startStreaming(['logs', 'ticker-follownode', '-f']);
    const code = await Promise.race([logs.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 20_000))]);
    if (code === 'timeout') logs.child.kill('SIGKILL');
    expect(code, `logs -f did not end after the container exited; stderr: ${logs.stderr()}`).toBe(0);
    expect(logs.lines.map((l) => l.text)).toEqual(['tick 1', 'tick 2', 'tick 3', 'tick 4', 'done']);
    // Followed, not read at the end: the first line came well before the last.
    const first = logs.lines[0]!.at;
    const last = logs.lines.at(-1)!.at;
    expect(last - first, 'lines arrived as written').toBeGreaterThan(1500);
    expect(Date.now() - t0).toBeLessThan(15_000);
    const del = await runKlet(['delete', 'ticker-follownode', ...common()]);
    expect(del.code, explain(del)).toBe(0);
  });
});

describe('klet status --watch -o json', () => {
  it('streams the pod as ADDED, then MODIFIED when its container exits', async () => {
    const file = podManifest('blink', 'sleep 2; exit 4');
    const run = await runKlet(['run-pod', file, '--wait', 'running', ...common()]);
    expect(run.code, explain(run)).toBe(0);
    const watch = startStreaming(['status', 'blink-follownode', '--watch', '--interval', '200ms', '-o', 'json']);
    type Ev = { type: string; object: { metadata: { name: string }; status: { phase: string; containerStatuses?: { state: { terminated?: { exitCode: number } } }[] } } };
    const events = (): Ev[] => watch.lines.map((l) => JSON.parse(l.text) as Ev);
    await waitFor(() => events().some((e) => e.object.status.phase === 'Failed'), 20_000, 'a MODIFIED event with phase Failed');
    watch.child.kill('SIGINT');
    expect(await watch.exited).toBe(0);
    const evs = events();
    expect(evs[0]?.type).toBe('ADDED');
    expect(evs[0]?.object.metadata.name).toBe('blink-follownode');
    const failed = evs.find((e) => e.object.status.phase === 'Failed');
    expect(failed?.type).toBe('MODIFIED');
    expect(failed?.object.status.containerStatuses?.[0]?.state.terminated?.exitCode).toBe(4);
    const del = await runKlet(['delete', 'blink-follownode', ...common()]);
    expect(del.code, explain(del)).toBe(0);
  });
});
