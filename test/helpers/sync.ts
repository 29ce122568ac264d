/**
 * `klet sync` as a child process for integration tests: the BUILT CLI
 * (`node bin/run.js sync ...`), started and waited for until it prints its
 * "local API on" line, its stderr collected, stopped with SIGTERM (which
 * must exit 0 and leave the pods running) or killed with SIGKILL. Plus a
 * small client of its local API over the unix socket (node:http), and a
 * bounded polling helper.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { KLET_BIN, PROJECT_ROOT, assertBuilt, cleanEnv, explain, runKlet } from './cli.js';

export interface SyncOptions {
  rootDir: string;
  /** --container-runtime-endpoint; undefined: not passed (a --config file may name it). */
  endpoint: string | undefined;
  manifestDir?: string;
  manifestUrl?: string;
  nodeName?: string;
  /** --file-check-frequency. Default 2s. */
  fileCheckFrequency?: string;
  /** More flags. */
  args?: string[];
  /** How long to wait for the "local API on" line. Default 30 s. */
  readyTimeoutMs?: number;
  /** More environment variables. */
  env?: Record<string, string>;
  /** The command words in place of `sync` (e.g. ['join', SERVER]: klet join goes on as klet sync). */
  command?: string[];
}

export interface SyncExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** From the signal sent by stop()/kill() to the exit. */
  durationMs: number;
}

/** Every sync started and not yet exited, so afterEach can kill what a failed test left. */
const live = new Set<SyncProcess>();

/** Every node (root dir, runtime, node name) a sync of this file ran as, so the teardown can delete the pods it left. */
const nodesRun = new Map<string, { rootDir: string; endpoint: string; nodeName: string }>();

export class SyncProcess {
  readonly socketPath: string;
  readonly args: string[];
  private out = '';
  private err = '';
  private exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly child: ChildProcessWithoutNullStreams,
    rootDir: string,
    args: string[],
  ) {
    this.socketPath = path.join(rootDir, 'klet.sock');
    this.args = args;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (s: string) => {
      this.out += s;
    });
    child.stderr.on('data', (s: string) => {
      this.err += s;
      for (const fn of [...this.waiters]) fn();
    });
    this.exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        this.exit = { code, signal };
        // Post-mortems: KLET_TEST_SYNC_LOG_DIR=DIR keeps every sync's stderr there.
        const logDir = process.env.KLET_TEST_SYNC_LOG_DIR;
        if (logDir) {
          fs.mkdirSync(logDir, { recursive: true });
          fs.writeFileSync(path.join(logDir, `sync-${child.pid}.log`), `${args.join(' ')}\n${JSON.stringify(this.exit)}\n${this.err}`);
        }
        live.delete(this);
        for (const fn of [...this.waiters]) fn();
        resolve({ code, signal });
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get stderr(): string {
    return this.err;
  }

  get stdout(): string {
    return this.out;
  }

  get running(): boolean {
    return this.exit === null;
  }

  /** The last lines of stderr, for assertion messages. */
  tail(lines = 40): string {
    return `--- klet sync stderr (last ${lines} lines):\n${this.err.split('\n').slice(-lines).join('\n')}`;
  }

  /**
   * Resolves with the first stderr line (after `fromOffset` characters)
   * matching `re`; rejects after `timeoutMs` or when the process exits.
   */
  waitForStderr(re: RegExp, timeoutMs = 15_000, fromOffset = 0): Promise<string> {
    const find = (): string | undefined => this.err.slice(fromOffset).split('\n').find((l) => re.test(l));
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const line = find();
        if (line !== undefined) {
          done();
          resolve(line);
        } else if (this.exit !== null) {
          done();
          reject(new Error(`klet sync exited (${JSON.stringify(this.exit)}) before printing ${re}\n${this.tail()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`klet sync did not print ${re} within ${timeoutMs} ms\n${this.tail()}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** SIGTERM, and wait for the exit (SIGKILL after `timeoutMs`, and then throw). */
  async stop(timeoutMs = 20_000): Promise<SyncExit> {
    if (this.exit !== null) return { ...this.exit, durationMs: 0 };
    const t0 = Date.now();
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const res = await this.exited;
    clearTimeout(timer);
    const durationMs = Date.now() - t0;
    if (durationMs >= timeoutMs) throw new Error(`klet sync did not exit within ${timeoutMs} ms of SIGTERM\n${this.tail()}`);
    return { ...res, durationMs };
  }

  /** SIGKILL (no clean-up at all, like a crash or the OOM killer), and wait for the exit. */
  async kill(): Promise<SyncExit> {
    if (this.exit !== null) return { ...this.exit, durationMs: 0 };
    const t0 = Date.now();
    this.child.kill('SIGKILL');
    const res = await this.exited;
    return { ...res, durationMs: Date.now() - t0 };
  }

  /** The exit, whenever it happens. */
  wait(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }
}

/** The argv of `klet sync` for these options (without `node bin/run.js`). */
export function syncArgs(opts: SyncOptions): string[] {
  return [
    ...(opts.command ?? ['sync']),
    ...(opts.manifestDir !== undefined ? ['--manifest-dir', opts.manifestDir] : []),
    ...(opts.manifestUrl !== undefined ? ['--manifest-url', opts.manifestUrl] : []),
    '--root-dir',
    opts.rootDir,
    ...(opts.endpoint !== undefined ? ['--container-runtime-endpoint', opts.endpoint] : []),
    '--node-name',
    opts.nodeName ?? 'testnode',
    '--file-check-frequency',
    opts.fileCheckFrequency ?? '2s',
    ...(opts.args ?? []),
    // The pods' cgroups stay the runtime's unless a test asks for them (with a private --cgroup-root):
    // a test never makes cgroups in the host's /kubepods, which a real kubelet may share.
    ...(opts.args?.some((a) => a.startsWith('--cgroup')) ? [] : ['--cgroups-per-qos=false', '--enforce-node-allocatable=none']),
    // A cluster-mode sync serves the kubelet server on 0.0.0.0:10250 by default: tests that do not ask for it
    // leave it off (a test with --config sets its port in the file, which a --port flag would override).
    ...(opts.args?.includes('--kubeconfig') && !opts.args.includes('--port') && !opts.args.includes('--config') ? ['--port', '0'] : []),
    // So does the localhost healthz endpoint, on 127.0.0.1:10248.
    ...(opts.args?.includes('--kubeconfig') && !opts.args.some((a) => a.startsWith('--healthz-port')) && !opts.args.includes('--config') ? ['--healthz-port', '0'] : []),
  ];
}

/** Start `klet sync` and wait until it serves its local API. */
export async function startSync(opts: SyncOptions): Promise<SyncProcess> {
  assertBuilt();
  const args = syncArgs(opts);
  const child = spawn(process.execPath, [KLET_BIN, ...args], { cwd: PROJECT_ROOT, env: { ...cleanEnv(), ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end();
  const p = new SyncProcess(child, opts.rootDir, args);
  live.add(p);
  if (opts.endpoint !== undefined) {
    const node = { rootDir: opts.rootDir, endpoint: opts.endpoint, nodeName: opts.nodeName ?? 'testnode' };
    nodesRun.set(JSON.stringify(node), node);
  }
  try {
    await p.waitForStderr(/local API on /, opts.readyTimeoutMs ?? 30_000);
  } catch (err) {
    await p.kill();
    throw err;
  }
  return p;
}

/** Write a file atomically (a dotfile, which the manifest source ignores, renamed into place). */
export function writeAtomic(dir: string, file: string, text: string): string {
  const full = path.join(dir, file);
  const tmp = path.join(dir, `.${file}.tmp`);
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, full);
  return full;
}

/** SIGKILL every sync a test left running (afterEach). */
export async function killAllSyncs(): Promise<void> {
  await Promise.all([...live].map((p) => p.kill()));
}

/**
 * Kill the syncs still running, then `klet delete --all --force` on every node
 * a sync of this file ran as (while its runtime still runs). A sync stops as the
 * kubelet does, leaving its pods running and their volumes (a projected
 * kube-api-access tmpfs) mounted under <root-dir>/pods, and the test runtime's
 * stop() refuses to remove a root dir with mounts in it. Throws when a delete fails.
 */
export async function deleteSyncedPods(): Promise<void> {
  await killAllSyncs();
  const failed: string[] = [];
  for (const [key, n] of nodesRun) {
    const r = await runKlet(['delete', '--all', '--force', '--root-dir', n.rootDir, '--container-runtime-endpoint', n.endpoint, '--node-name', n.nodeName], { timeoutMs: 120_000 });
    if (r.code === 0) nodesRun.delete(key);
    else failed.push(`klet delete --all on node ${n.nodeName} (${n.rootDir}): ${explain(r)}`);
  }
  if (failed.length > 0) throw new Error(failed.join('\n'));
}

// ------------------------------------------------------------ local API

export interface ApiResponse {
  status: number;
  contentType: string;
  body: string;
}

/** GET `urlPath` from the local API on `socketPath`; rejects on connection failure or after `timeoutMs`. */
export function apiGet(socketPath: string, urlPath: string, timeoutMs = 10_000): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: urlPath, timeout: timeoutMs }, (res) => {
      res.setEncoding('utf8');
      let body = '';
      res.on('data', (s: string) => {
        body += s;
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body }));
      res.once('error', reject);
    });
    req.once('timeout', () => req.destroy(new Error(`local API ${urlPath}: no answer within ${timeoutMs} ms`)));
    req.once('error', reject);
  });
}

/** A sync loop event as /events serves it (see src/lib/events/types.ts). */
export interface SyncEvent {
  seq: number;
  time: string;
  kind: string;
  [k: string]: unknown;
}

/** The events the sync holds after `since` (no following). */
export async function apiEvents(socketPath: string, since = 0): Promise<SyncEvent[]> {
  const res = await apiGet(socketPath, `/events?follow=false&since=${since}`);
  if (res.status !== 200) throw new Error(`/events: HTTP ${res.status}: ${res.body}`);
  return res.body
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as SyncEvent);
}

/** /healthz?verbose: the status code and the JSON body. */
export async function apiHealth(socketPath: string): Promise<{ status: number; body: { ok?: boolean; checks?: Record<string, { ok: boolean; message: string }> } | string }> {
  const res = await apiGet(socketPath, '/healthz?verbose');
  try {
    return { status: res.status, body: JSON.parse(res.body) as { ok?: boolean } };
  } catch {
    return { status: res.status, body: res.body };
  }
}

// ------------------------------------------------------------ waiting

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Retry `fn` until it resolves (it asserts by throwing), every `intervalMs`,
 * for at most `timeoutMs`; then rethrow its last error.
 */
export async function eventually<T>(fn: () => Promise<T> | T, timeoutMs = 15_000, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() + intervalMs > deadline) throw err;
      await sleep(intervalMs);
    }
  }
}
