/**
 * Large input, real runtime: a 2 MB pod (2000 env vars of 1 KB each, as a
 * generated manifest carries them) runs through `klet run-pod --rm` with its
 * environment intact, and klet's peak memory grows in proportion to the
 * input: tens of MB over a one-variable pod, not hundreds (it peaked at
 * 430-490 MB before the YAML reader and $(VAR) expansion stopped building a
 * heap node per character). Peak RSS is the kernel's figure for the whole
 * klet process, from /usr/bin/time.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN, PROJECT_ROOT, assertBuilt, cleanEnv, flatCgroups } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

const execFileP = promisify(execFile);
const NODE = 'memnode';
let rt: TestRuntime;

beforeAll(async () => {
  assertBuilt();
  rt = await startTestRuntime();
}, 120_000);

afterAll(async () => {
  await rt?.stop();
}, 120_000);

/** A pod with `count` env vars whose values are written `quote`d; the container prints the length of the last one. */
function envPod(name: string, count: number, quote: '"' | "'" | ''): string {
  const env = Array.from({ length: count }, (_, i) => `        - name: V${i}\n          value: ${quote}${'x'.repeat(1000)}${quote}`).join('\n');
  const file = path.join(rt.rootDir, `${name}.yaml`);
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      `  name: ${name}`,
      '  namespace: memtest',
      'spec:',
      '  restartPolicy: Never',
      '  containers:',
      '    - name: c',
      `      image: ${rt.images.busybox}`,
      `      command: ["sh", "-c", "echo len=\${#V${count - 1}}"]`,
      '      env:',
      env,
      '',
    ].join('\n'),
  );
  return file;
}

/** `klet run-pod FILE --rm`: its stdout and the process's peak RSS in MB. */
async function runPodPeak(file: string): Promise<{ stdout: string; peakMb: number }> {
  const args = ['-v', process.execPath, KLET_BIN, ...flatCgroups(['run-pod', file, '--rm', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE])];
  const r = await execFileP('/usr/bin/time', args, { cwd: PROJECT_ROOT, env: cleanEnv(), maxBuffer: 1 << 24 });
  const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr);
  if (!m) throw new Error(`no peak RSS in /usr/bin/time's output:\n${r.stderr.slice(-2000)}`);
  return { stdout: r.stdout, peakMb: Number(m[1]) / 1024 };
}

describe('a 2 MB pod', () => {
  it('runs with its 2000 env vars, and klet peaks tens of MB above a one-variable pod, whatever the quoting', async () => {
    const small = await runPodPeak(envPod('small', 1, '"'));
    expect(small.stdout).toContain('len=1000');
    for (const [name, quote] of [
      ['dquoted', '"'],
      ['squoted', "'"],
      ['plain', ''],
    ] as const) {
      const file = envPod(name, 2000, quote);
      expect(fs.statSync(file).size).toBeGreaterThan(2_000_000);
      const big = await runPodPeak(file);
      expect(big.stdout, name).toContain('len=1000');
      // ~65 MB above the small pod now (about 30x the input); 330 MB above it before.
      expect(big.peakMb - small.peakMb, `${name}: ${big.peakMb.toFixed(0)} MB vs ${small.peakMb.toFixed(0)} MB`).toBeLessThan(120);
    }
  }, 300_000);
});
