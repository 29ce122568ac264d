/* eslint-disable no-control-regex -- the assertions are about terminal escape sequences */
/**
 * `klet dashboard` in a real terminal: tmux (a private server, `-L`, so no
 * other tmux is touched) runs a shell, the test types the command into it,
 * drives it with send-keys and reads what a person would see with
 * capture-pane. Behind it, the BUILT `klet sync` runs three real pods on a
 * private containerd: one serving (sleeps), one crash-looping, one whose
 * readiness probe fails, one writing a log line every half second.
 *
 * What it asserts is what someone at the terminal relies on: the pods are
 * listed with their status; the crash-looping pod shows CrashLoopBackOff
 * with a countdown to its next restart that goes down; Enter opens the
 * detail view with the container's state and exit code, `l` tails the log;
 * a filter and its Enter arriving in one write (fast typing, a paste) apply;
 * a 40x10 terminal gets the compact view with no line wider than the
 * terminal; a sync that goes away is reported (no stack trace) and the
 * screen comes back when the sync does; `q` exits 0 and leaves the
 * terminal as it was (primary screen, cursor visible).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { localApiRequest } from '../../src/lib/server/index.js';
import { KLET_BIN, explain, runKlet } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { eventually, killAllSyncs, sleep, startSync, type SyncProcess } from '../helpers/sync.js';

const execFileP = promisify(execFile);

const NODE = 'dashnode';
const NS = 'kdash';
const LOG_ROOT = '/var/log/pods';
/** A tmux server of this test file alone. */
const TMUX_SERVER = `klet-dash-${process.pid}`;
const SESSION = 'dash';
/** The pane's program: a plain shell with a minimal environment. */
const SHELL = ['env', '-i', `PATH=${process.env.PATH}`, 'TERM=xterm-256color', 'HOME=/tmp', 'PS1=$ ', 'bash', '--norc', '--noprofile'];

let rt: TestRuntime;
let cri: CriClient;
let manifestDir: string;
let sync: SyncProcess | undefined;
/** The sync's --listen TCP listener and the token file it requires. */
let listenAddr: string;
let tokenFile: string;
const TOKEN = 'dashboard-e2e-token-0123456789abcdef';

async function tmux(...args: string[]): Promise<string> {
  const { stdout } = await execFileP('tmux', ['-L', TMUX_SERVER, ...args]);
  return stdout;
}

/** The visible screen, as text. */
async function screen(): Promise<string> {
  return tmux('capture-pane', '-p', '-t', SESSION);
}

/** Wait until the screen matches, and return it. */
async function screenMatching(re: RegExp, timeoutMs = 20_000): Promise<string> {
  let last = '';
  try {
    return await eventually(async () => {
      last = await screen();
      if (!re.test(last)) throw new Error(`screen does not match ${re}`);
      return last;
    }, timeoutMs, 200);
  } catch {
    throw new Error(`the screen never matched ${re}; it shows:\n${last}\n--- sync:\n${sync?.tail() ?? ''}`);
  }
}

/** The command line of what runs in the pane's shell (the dashboard). */
async function paneCommandLine(): Promise<string> {
  const shell = (await tmux('display-message', '-p', '-t', SESSION, '#{pane_pid}')).trim();
  const { stdout } = await execFileP('pgrep', ['-P', shell]);
  const pid = stdout.trim().split('\n')[0] ?? '';
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
}

async function keys(...k: string[]): Promise<void> {
  await tmux('send-keys', '-t', SESSION, ...k);
}

function manifest(name: string, script: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'app', image: rt.images.busybox, command: ['sh', '-c', script], ...extra }],
    },
  });
}

function startKletSync(): Promise<SyncProcess> {
  return startSync({
    rootDir: rt.rootDir,
    endpoint: rt.endpoint,
    nodeName: NODE,
    manifestDir,
    // A long first back-off, so the countdown is seen going down for a while.
    args: ['--crash-loop-backoff-initial', '30s', '--listen', listenAddr, '--auth-token-file', tokenFile],
  });
}

async function podLogDirs(): Promise<string[]> {
  return (await fs.promises.readdir(LOG_ROOT).catch(() => [] as string[])).filter((d) => d.startsWith(`${NS}_`));
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
  manifestDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-dash-m-'));
  tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'klet-dash-t-')), 'token');
  fs.writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  // A free loopback port for the sync's --listen.
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen({ host: '127.0.0.1', port: 0 }, r));
  listenAddr = `127.0.0.1:${(probe.address() as net.AddressInfo).port}`;
  await new Promise((r) => probe.close(r));
  fs.writeFileSync(path.join(manifestDir, 'web.json'), manifest('web', "trap 'exit 0' TERM; sleep 1000000 & wait"));
  fs.writeFileSync(path.join(manifestDir, 'crash.json'), manifest('crash', 'echo starting; sleep 1; echo failing >&2; exit 3'));
  fs.writeFileSync(
    path.join(manifestDir, 'unready.json'),
    manifest('unready', "trap 'exit 0' TERM; sleep 1000000 & wait", {
      readinessProbe: { exec: { command: ['sh', '-c', 'echo not yet; exit 1'] }, periodSeconds: 1 },
    }),
  );
  fs.writeFileSync(
    path.join(manifestDir, 'worker.json'),
    manifest('worker', "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.5; done"),
  );
  sync = await startKletSync();
  // A terminal of 100x30 with a plain shell in it.
  await tmux('-f', '/dev/null', 'new-session', '-d', '-s', SESSION, '-x', '100', '-y', '30', ...SHELL);
  await tmux('set-option', '-t', SESSION, 'remain-on-exit', 'on');
});

// A test that failed may have left its dashboard (or sync --tui) running in
// the pane: the next one starts from a fresh shell, not typing into that.
afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail') {
    await tmux('respawn-pane', '-k', '-t', SESSION, ...SHELL).catch(() => undefined);
    await tmux('resize-window', '-t', SESSION, '-x', '100', '-y', '30').catch(() => undefined);
  }
});

afterAll(async () => {
  await tmux('kill-server').catch(() => undefined);
  // The pods go with their manifests: the sync stops them and removes them.
  if (sync !== undefined && manifestDir !== undefined) {
    for (const f of fs.readdirSync(manifestDir)) fs.rmSync(path.join(manifestDir, f));
    await eventually(async () => {
      expect((await cri.listPodSandbox()).items).toEqual([]);
    }, 60_000).catch(() => undefined);
  }
  await killAllSyncs();
  for (const c of (await cri?.listContainers().catch(() => null))?.containers ?? []) {
    await cri.stopContainer({ containerId: c.id, timeout: 0n }).catch(() => undefined);
    await cri.removeContainer({ containerId: c.id }).catch(() => undefined);
  }
  for (const s of (await cri?.listPodSandbox().catch(() => null))?.items ?? []) {
    await cri.stopPodSandbox({ podSandboxId: s.id }).catch(() => undefined);
    await cri.removePodSandbox({ podSandboxId: s.id }).catch(() => undefined);
  }
  for (const d of await podLogDirs()) fs.rmSync(path.join(LOG_ROOT, d), { recursive: true, force: true });
  cri?.close();
  await rt?.stop();
  if (manifestDir) fs.rmSync(manifestDir, { recursive: true, force: true });
  if (tokenFile) fs.rmSync(path.dirname(tokenFile), { recursive: true, force: true });
}, 180_000);

describe('klet dashboard in a terminal', () => {
  it('shows the pods and a crash loop counting down, opens details, survives a sync restart, goes compact, and quits cleanly', async () => {
    await keys(`node ${KLET_BIN} dashboard --root-dir ${rt.rootDir}; echo "exit=$?"`, 'Enter');

    // The pods, with the node and the sync loop around them. (Waits for web and
    // worker both running: a first screen may show one still ContainerCreating.)
    const first = await screenMatching(/kdash\/web-dashnode .*Running[\s\S]*kdash\/worker-dashnode .*Running/);
    expect(first).toMatch(/node dashnode/);
    expect(first).toMatch(/SYNC LOOP/);
    // On a terminal it re-executed itself in place with fixed 8 MB semi-spaces (its RSS stays flat; bench/dashboard.js).
    expect(await paneCommandLine()).toMatch(/ --min-semi-space-size=8 --max-semi-space-size=8 .*bin\/run\.js dashboard --root-dir /);
    // The pod whose readiness probe fails runs but is not ready.
    await screenMatching(/kdash\/unready-dashnode +0\/1 +Running/);
    expect(first).toMatch(/EVENTS/);

    // The crash-looping pod: CrashLoopBackOff with a countdown that goes down.
    const a = await screenMatching(/kdash\/crash-dashnode .*CrashLoopBackOff \d+s/, 60_000);
    const left = (s: string) => Number(/kdash\/crash-dashnode .*CrashLoopBackOff (\d+)s/.exec(s)?.[1]);
    const t0 = left(a);
    await sleep(3000);
    const b = await screenMatching(/kdash\/crash-dashnode .*CrashLoopBackOff \d+s/);
    const t1 = left(b);
    expect(t1, `${a}\n---\n${b}`).toBeLessThan(t0);
    expect(t0 - t1, `${a}\n---\n${b}`).toBeGreaterThanOrEqual(2);

    // KLET_RECORD_DASHBOARD=DIR keeps this moment: the screen (the README's
    // capture) and what the local API served (the component tests' recordings).
    const record = process.env.KLET_RECORD_DASHBOARD;
    if (record) {
      fs.mkdirSync(record, { recursive: true });
      fs.writeFileSync(path.join(record, 'screen-100x30.txt'), b);
      const get = async (p: string) => (await localApiRequest(sync!.socketPath, p)).body;
      fs.writeFileSync(path.join(record, 'events.ndjson'), await get('/events?follow=false'));
      fs.writeFileSync(path.join(record, 'pods.json'), await get('/pods'));
      fs.writeFileSync(path.join(record, 'node.json'), await get('/node'));
    }

    // Enter: the detail view of the selected pod (the first by name: crash).
    await keys('Enter');
    const detail = await screenMatching(/CONTAINER +STATE/);
    expect(detail).toMatch(/kdash\/crash/);
    expect(detail).toMatch(/app +Waiting: CrashLoopBackOff \d+s +Terminated: Error +3 /);
    // Down to the pod whose readiness probe fails: the probe and its result.
    await keys('j');
    await screenMatching(/probe readiness exec sh -c echo not yet; exit 1 every 1s · Failure since/);
    // Down to the worker (crash, unready, web, worker) and follow its log.
    await keys('j');
    await keys('j');
    await keys('l');
    await screenMatching(/kdash\/worker[\s\S]*LOG app following[\s\S]*tick \d+/);
    // Esc: back to the table.
    await keys('Escape');
    await screenMatching(/PODS 4/);

    // A filter and its Enter in one write (typed faster than a frame: send-keys -l
    // writes "crash\n" to the terminal at once), then pasted (paste-buffer: "web\r").
    await keys('/');
    await screenMatching(/^\/▏/m);
    await tmux('send-keys', '-t', SESSION, '-l', 'crash\n');
    const filtered = await screenMatching(/PODS 1\/4 sorted by name filter "crash"/);
    expect(filtered).toMatch(/kdash\/crash-dashnode +0\/1/);
    expect(filtered).not.toMatch(/kdash\/web-dashnode +1\/1/);
    await keys('Escape');
    await screenMatching(/PODS 4 /);
    await keys('/');
    await screenMatching(/^\/▏/m);
    await tmux('set-buffer', '-b', 'filter', 'web\n');
    await tmux('paste-buffer', '-d', '-b', 'filter', '-t', SESSION);
    const pasted = await screenMatching(/PODS 1\/4 sorted by name filter "web"/);
    expect(pasted).toMatch(/kdash\/web-dashnode +1\/1 +Running/);
    expect(pasted).not.toMatch(/kdash\/crash-dashnode +0\/1/);
    await keys('Escape');
    await screenMatching(/PODS 4 /);

    // The sync goes away: the screen says so, without a stack trace, and keeps trying.
    await sync!.stop();
    const lost = await screenMatching(/klet sync is not answering/);
    expect(lost).not.toMatch(/\s+at \S+ \(/); // no stack frame
    sync = await startKletSync();
    await screenMatching(/PODS 4/);
    await eventually(async () => expect(await screen()).not.toMatch(/not answering/), 20_000);

    // A 40x10 terminal: the compact view, nothing wider than the terminal.
    await tmux('resize-window', '-t', SESSION, '-x', '40', '-y', '10');
    const compact = await screenMatching(/^klet dashnode PLEG ok\s*$/m);
    expect(compact).toMatch(/crash-dashnode +(CrashLoop|Running|Error)/);
    for (const line of compact.split('\n')) expect(line.length).toBeLessThanOrEqual(40);
    expect(compact).not.toMatch(/SYNC LOOP/);
    await tmux('resize-window', '-t', SESSION, '-x', '100', '-y', '30');
    await screenMatching(/SYNC LOOP/);

    // In colour (CrashLoopBackOff in red, Running in green).
    expect(await tmux('capture-pane', '-e', '-p', '-t', SESSION)).toMatch(/\x1b\[(?:[0-9;]*;)?3[12]m/);

    // q: exit 0, back on the primary screen with the cursor shown.
    await keys('q');
    await screenMatching(/exit=0/);
    expect((await tmux('display-message', '-p', '-t', SESSION, '#{alternate_on} #{cursor_flag}')).trim()).toBe('0 1');
    const after = await screen();
    expect(after).not.toMatch(/SYNC LOOP|PODS 4/);
  }, 240_000);

  it('NO_COLOR: no colour, the selection still shown in reverse video', async () => {
    await keys('clear', 'Enter');
    await keys(`NO_COLOR=1 node ${KLET_BIN} dashboard --root-dir ${rt.rootDir}; echo "exit=$?"`, 'Enter');
    await screenMatching(/kdash\/web-dashnode .*Running/);
    const styled = await tmux('capture-pane', '-e', '-p', '-t', SESSION);
    expect(styled).not.toMatch(/\x1b\[(?:[0-9;]*;)?(?:3[0-7]|38;[25];[0-9;]+|9[0-7])m/);
    expect(styled).toMatch(/\x1b\[(?:[0-9;]*;)?7m/);
    await keys('q');
    await screenMatching(/exit=0/);
  }, 60_000);

  it('prints one plain snapshot when stdout is not a terminal', async () => {
    const r = await runKlet(['dashboard', '--root-dir', rt.rootDir]);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/kdash\/web-dashnode +1\/1 +Running/);
    expect(r.stdout).toMatch(/kdash\/crash-dashnode /);
    expect(r.stdout).toMatch(/SYNC LOOP/);
    expect(r.stdout).not.toContain('\x1b');
    expect(r.stderr).toBe('');
  }, 60_000);

  it('--server: the same snapshot over the TCP listener of klet sync --listen (plain HTTP, bearer token); https:// and a wrong token get one line', async () => {
    const r = await runKlet(['dashboard', '--server', `http://${listenAddr}`, '--token-file', tokenFile]);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/node dashnode/);
    expect(r.stdout).toMatch(/kdash\/web-dashnode +1\/1 +Running/);
    expect(r.stdout).toMatch(/kdash\/crash-dashnode /);
    expect(r.stdout).toMatch(/SYNC LOOP/);
    expect(r.stderr).toBe('');

    // The listener speaks no TLS: https:// is refused before anything is sent.
    const tls = await runKlet(['dashboard', '--server', `https://${listenAddr}`, '--token-file', tokenFile]);
    expect(tls.code, explain(tls)).toBe(2);
    expect(tls.stderr.trim()).toBe(`error: --server "https://${listenAddr}": the local API's TCP listener serves plain HTTP on loopback; use http://${listenAddr}`);

    // A token the sync does not hold: one line, and never the token itself.
    const wrong = path.join(path.dirname(tokenFile), 'wrong');
    fs.writeFileSync(wrong, 'not-the-token-of-this-sync-0123456789\n', { mode: 0o600 });
    const refused = await runKlet(['dashboard', '--server', `http://${listenAddr}`, '--token-file', wrong]);
    expect(refused.code, explain(refused)).not.toBe(0);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/bearer token was refused \(HTTP 401\)/);
    expect(refused.stderr + refused.stdout).not.toContain('not-the-token');
    expect(refused.stderr + refused.stdout).not.toContain(TOKEN);
  }, 60_000);

  it('klet sync --tui: the same screen in the sync itself; q stops the sync and restores the terminal, the pods keep running', async () => {
    await sync!.stop();
    sync = undefined;
    await keys('clear', 'Enter');
    // The runtime's cgroups (as test/helpers/sync.ts syncArgs gives every other sync): a test never makes the host's /kubepods.
    const args = ['sync', '--tui', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '--manifest-dir', manifestDir, '--crash-loop-backoff-initial', '30s', '--cgroups-per-qos=false', '--enforce-node-allocatable=none'];
    await keys(`node ${KLET_BIN} ${args.join(' ')} 2>/tmp/klet-dash-tui-${process.pid}.err; echo "exit=$?"`, 'Enter');
    const s = await screenMatching(/kdash\/crash-dashnode .*(CrashLoopBackOff|Running|Error)/);
    expect(s).toMatch(/kdash\/web-dashnode +1\/1 +Running/);
    expect(s).toMatch(/SYNC LOOP/);
    await keys('q');
    await screenMatching(/exit=0/);
    expect((await tmux('display-message', '-p', '-t', SESSION, '#{alternate_on} #{cursor_flag}')).trim()).toBe('0 1');
    const err = fs.readFileSync(`/tmp/klet-dash-tui-${process.pid}.err`, 'utf8');
    fs.rmSync(`/tmp/klet-dash-tui-${process.pid}.err`);
    expect(err).toMatch(/dashboard closed: stopping the sync loop; pods keep running/);
    expect(err).not.toMatch(/\s+at \S+ \(/);
    // The pods are still there for the next sync to adopt (and afterAll to remove).
    expect((await cri.listPodSandbox()).items.length).toBe(4);
    sync = await startKletSync();
  }, 120_000);
});
