/**
 * Run the BUILT klet CLI (`node bin/run.js ARGS...`) as a child process, the
 * way a user runs it: same Node binary as the tests, its own environment, a
 * timeout. Needs `npm run build` first (scripts/test.sh does it); without
 * dist/ or oclif.manifest.json it fails with a message saying so rather than
 * testing a stale or missing build.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const KLET_BIN = path.join(PROJECT_ROOT, 'bin', 'run.js');

export interface CliResult {
  /** Exit code; null when the process was killed by a signal (see `signal`). */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time of the run in milliseconds. */
  durationMs: number;
  /** True when the helper killed the process because `timeoutMs` passed. */
  timedOut: boolean;
}

export interface CliOptions {
  /**
   * Environment of the child. Default: the test's environment without the
   * variables that klet flags read (KLET_ROOT_DIR, CONTAINER_RUNTIME_ENDPOINT),
   * so a developer's shell cannot point a test at a real runtime.
   */
  env?: NodeJS.ProcessEnv;
  /** Merged over the (default or given) environment. */
  extraEnv?: NodeJS.ProcessEnv;
  /** Kill the child (SIGKILL) after this long. Default 60 s. */
  timeoutMs?: number;
  cwd?: string;
  /** Written to the child's stdin, which is then closed. */
  input?: string;
}

let checked = false;

/** Throw a clear error unless the CLI has been built. */
export function assertBuilt(): void {
  if (checked) return;
  const missing = [
    path.join(PROJECT_ROOT, 'dist', 'commands'),
    path.join(PROJECT_ROOT, 'dist', 'base-command.js'),
    path.join(PROJECT_ROOT, 'oclif.manifest.json'),
  ].filter((p) => !fs.existsSync(p));
  if (missing.length > 0) {
    throw new Error(
      `the klet CLI is not built (missing ${missing.map((p) => path.relative(PROJECT_ROOT, p)).join(', ')}): ` +
        'run `npm run build` before the CLI tests (scripts/test.sh does)',
    );
  }
  checked = true;
}

/** The test environment minus what would silently redirect klet. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.KLET_ROOT_DIR;
  delete env.CONTAINER_RUNTIME_ENDPOINT;
  // Plain output: no colours from chalk or oclif in what the tests compare.
  env.NO_COLOR = '1';
  delete env.FORCE_COLOR;
  return env;
}

/**
 * `klet runonce` and `klet run-pod` make pod and QoS cgroups as `klet sync`
 * does: a test runs them in the runtime's cgroups (the flat flags, as
 * syncArgs gives sync), never in the host's /kubepods, unless it names a
 * cgroup flag itself (a private --cgroup-root it made).
 */
export function flatCgroups(args: string[]): string[] {
  if (!['runonce', 'run-pod'].includes(args[0] ?? '') || args.some((a) => a.startsWith('--cgroup'))) return args;
  return [...args, '--cgroups-per-qos=false', '--enforce-node-allocatable=none'];
}

/** Run `klet ARGS...` and collect its exit code and output. Never rejects for a non-zero exit. */
export async function runKlet(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  assertBuilt();
  const env = { ...(opts.env ?? cleanEnv()), ...opts.extraEnv };
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const started = Date.now();
  return new Promise<CliResult>((resolve, reject) => {
    const child = spawn(process.execPath, [KLET_BIN, ...flatCgroups(args)], {
      cwd: opts.cwd ?? PROJECT_ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        durationMs: Date.now() - started,
        timedOut,
      });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** `runKlet`, then JSON.parse of stdout (with the whole result in the error when it is not JSON). */
export async function runKletJson<T = unknown>(args: string[], opts: CliOptions = {}): Promise<{ result: CliResult; json: T }> {
  const result = await runKlet(args, opts);
  try {
    return { result, json: JSON.parse(result.stdout) as T };
  } catch {
    throw new Error(`klet ${args.join(' ')} did not print JSON: ${explain(result)}`);
  }
}

/** A one-paragraph account of a run, for assertion messages. */
export function explain(r: CliResult): string {
  const status = r.timedOut ? `timed out after ${r.durationMs} ms` : r.signal ? `killed by ${r.signal}` : `exit ${r.code}`;
  return `${status}\n--- stdout:\n${r.stdout}\n--- stderr:\n${r.stderr}`;
}

/** The non-empty lines of a text. */
export function nonEmptyLines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}
