/**
 * Debugging a pod on the node against a real containerd, no klet sync and no
 * API server: `klet exec` (output, exit code, stdin to its end, a TTY that
 * follows the window), `klet attach -i`, `klet port-forward` (two
 * connections at once, a closed port's error, Ctrl-C).
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN, PROJECT_ROOT, assertBuilt, type CliResult, cleanEnv, explain, flatCgroups, nonEmptyLines, runKlet } from '../helpers/cli.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

const execFileP = promisify(execFile);
let rt: TestRuntime;
let dir: string;
const TMUX = `klet-debug-pod-${process.pid}`;
const tmux = async (...args: string[]): Promise<string> => (await execFileP('tmux', ['-L', TMUX, ...args])).stdout;

const common = () => ['--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', 'dbgnode'];

function manifest(name: string, containers: Array<Record<string, unknown>>): string {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { terminationGracePeriodSeconds: 1, containers } }));
  return file;
}

async function poll<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

/** klet with `args` and the runtime flags (before `after`, the words after `--`); its stdin stays open until ended. */
function startKlet(args: string[], after: string[] = []) {
  assertBuilt();
  const child = spawn(process.execPath, [KLET_BIN, ...flatCgroups([...args, ...common()]), ...after], { cwd: PROJECT_ROOT, env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

beforeAll(async () => {
  rt = await startTestRuntime();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-debug-'));
  const busybox = rt.images.busybox;
  const web = manifest('web', [
    { name: 'main', image: busybox, command: ['sh', '-c', 'mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www'] },
    { name: 'side', image: busybox, command: ['sleep', '3600'] },
  ]);
  const talker = manifest('talker', [{ name: 'main', image: busybox, stdin: true, command: ['sh', '-c', 'while read line; do echo "got: $line"; done'] }]);
  for (const f of [web, talker]) {
    const r = await runKlet(['run-pod', f, '--wait', 'running', ...common()]);
    expect(r.code, explain(r)).toBe(0);
  }
}, 120_000);

afterAll(async () => {
  await tmux('kill-server').catch(() => undefined);
  await runKlet(['delete', '--all', '--force', ...common()]).catch(() => undefined);
  await rt?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('klet exec', () => {
  it('prints the output, exits with the command\'s code, names the defaulted container', async () => {
    const r = await runKlet(['exec', 'web-dbgnode', ...common(), '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
    expect(r.code, explain(r)).toBe(3);
    expect(r.stdout).toBe('out\n');
    expect(nonEmptyLines(r.stderr)).toEqual(['Defaulted container "main" out of: main, side', 'err']);
    const side = await runKlet(['exec', 'web-dbgnode', '-c', 'side', ...common(), '--', 'cat', '/proc/1/cmdline']);
    expect(side.code, explain(side)).toBe(0);
    expect(side.stdout).toBe('sleep\u00003600\u0000');
  });

  it('the words after -- are the command\'s, word for word, as kubectl passes them: a -c, -i or --root-dir there is not klet\'s', async () => {
    const r = await runKlet(['exec', 'web-dbgnode', '-c', 'side', ...common(), '--', 'sh', '-c', 'echo "$0|$1|$2|$3"; cat /proc/1/cmdline', 'a', '-c', '-i', '--container']);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toBe('a|-c|-i|--container\nsleep\u00003600\u0000');
    const bare = await runKlet(['exec', 'web-dbgnode', ...common(), '--', 'echo', '-c', 'side', '-i', '-t', '--root-dir', '/nowhere']);
    expect(bare.code, explain(bare)).toBe(0);
    expect(bare.stdout).toBe('-c side -i -t --root-dir /nowhere\n');
    // The default container: no -c was given to klet.
    expect(nonEmptyLines(bare.stderr)).toEqual(['Defaulted container "main" out of: main, side']);
  });

  it('-i: stdin reaches the command, and its end ends the command\'s stdin', async () => {
    const big = 'x'.repeat(200_000) + '\n';
    const r = await runKlet(['exec', '-i', 'talker-dbgnode', ...common(), '--', 'sh', '-c', 'tr a-z A-Z | wc -c; echo done'], { input: 'hello\n' + big });
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout.trim().split(/\s+/)).toEqual([String(6 + big.length), 'done']);
  });

  it('errors: a missing container, a container not running, no command', async () => {
    let r = await runKlet(['exec', 'web-dbgnode', '-c', 'nosuch', ...common(), '--', 'true']);
    expect(r.code, explain(r)).toBe(1);
    expect(nonEmptyLines(r.stderr)).toEqual(['error: --container container nosuch is not valid for pod default/web-dbgnode, choose one of: [main side]']);
    r = await runKlet(['exec', 'web-dbgnode', ...common()]);
    expect(r.code, explain(r)).toBe(2);
    expect(nonEmptyLines(r.stderr)[0]).toMatch(/no command given: put it after --/);
  });

  it('-it in a terminal: a prompt, the window size, a resize, exit 3', async () => {
    await tmux('-f', '/dev/null', 'new-session', '-d', '-s', 'tty', '-x', '100', '-y', '30', 'sh', '-c',
      `${process.execPath} ${KLET_BIN} exec -it talker-dbgnode ${common().join(' ')} -- sh; echo "klet exited $?"; sleep 600`);
    const screen = () => tmux('capture-pane', '-p', '-t', 'tty');
    await poll('the prompt', 30_000, async () => (/^\/ # ?$/m.test(await screen()) ? true : undefined));
    await tmux('send-keys', '-t', 'tty', 'stty size', 'Enter');
    await poll('stty size', 10_000, async () => ((await screen()).includes('30 100') ? true : undefined));
    await tmux('resize-window', '-t', 'tty', '-x', '70', '-y', '20');
    await new Promise((r) => setTimeout(r, 500));
    await tmux('send-keys', '-t', 'tty', 'clear; stty size', 'Enter');
    await poll('the resize', 10_000, async () => ((await screen()).includes('20 70') ? true : undefined));
    await tmux('send-keys', '-t', 'tty', 'exit 3', 'Enter');
    await poll('klet exited 3', 15_000, async () => ((await screen()).includes('klet exited 3') ? true : undefined));
  }, 90_000);
});

describe('klet attach', () => {
  it('-i: input to the main process, its output back', async () => {
    const a = startKlet(['attach', '-i', 'talker-dbgnode']);
    try {
      await new Promise((r) => setTimeout(r, 1500));
      a.child.stdin.write('hello attach\n');
      await poll('the echo', 15_000, () => (a.out().includes('got: hello attach') ? true : undefined));
    } finally {
      a.child.kill('SIGINT');
    }
    await a.exited;
  });
});

describe('klet port-forward', () => {
  it('forwards two connections at once, reports a closed port, stops on Ctrl-C', async () => {
    const pf = startKlet(['port-forward', 'web-dbgnode', ':8080', ':9']);
    // Both ports listening: each has its own "Forwarding from" line (the second may come a moment after the first).
    const [local, closed] = await poll('listening', 20_000, () => {
      const a = /Forwarding from 127\.0\.0\.1:(\d+) -> 8080\n/.exec(pf.out());
      const b = /Forwarding from 127\.0\.0\.1:(\d+) -> 9\n/.exec(pf.out());
      return a && b ? [Number(a[1]), Number(b[1])] : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${pf.out()}\n${pf.err()}`);
    });
    const [a, b] = await Promise.all([fetch(`http://127.0.0.1:${local}/`), fetch(`http://127.0.0.1:${local}/index.html`)]);
    expect(await a.text()).toBe('hello-from-web\n');
    expect(await b.text()).toBe('hello-from-web\n');
    // Nothing listens on 9 in the pod: the connection is closed and the runtime's error is printed.
    await new Promise<void>((resolve) => {
      const s = net.connect(closed, '127.0.0.1');
      s.on('error', () => resolve());
      s.on('close', () => resolve());
    });
    await poll('the forwarding error', 10_000, () => (new RegExp(`an error occurred forwarding ${closed} -> 9: .*connection refused`).test(pf.err()) ? true : undefined));
    pf.child.kill('SIGINT');
    // A stream: Ctrl-C ends it normally, as with klet logs -f and kubectl port-forward.
    expect(await pf.exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${local}/`)).rejects.toThrow();
  }, 60_000);
});

interface DebugPodJson {
  spec: { ephemeralContainers?: Array<{ name: string; image: string; targetContainerName?: string }> };
  status: { ephemeralContainerStatuses?: Array<{ name: string; restartCount: number; state: { terminated?: { exitCode: number }; running?: object } }> };
}

/** Run klet debug with stdin open (not at its end: that would end the attach), to its exit. */
async function debugAttached(args: string[], after: string[], withCommon = true): Promise<CliResult> {
  const started = Date.now();
  const k = withCommon ? startKlet(args, after) : startBare([...args, ...after]);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    k.child.kill('SIGKILL');
  }, 60_000);
  const code = await k.exited;
  clearTimeout(timer);
  k.child.stdin.end();
  return { code, signal: null, stdout: k.out(), stderr: k.err(), durationMs: Date.now() - started, timedOut };
}

/** klet with exactly these arguments, stdin open. */
function startBare(args: string[]) {
  const child = spawn(process.execPath, [KLET_BIN, ...flatCgroups(args)], { cwd: PROJECT_ROOT, env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

describe('klet debug', () => {
  it('--target -i: the debug container sees the target\'s processes, kubectl debug\'s lines, its exit code', async () => {
    // Attached with stdin open (a terminal's, as kubectl debug -i is used); the sleep lets the attach begin before ps prints.
    const r = await debugAttached(['debug', '-i', 'web-dbgnode', '--image', rt.images.busybox, '--target', 'main'], ['--', 'sh', '-c', 'sleep 1; ps; exit 4']);
    expect(r.code, explain(r)).toBe(4);
    const lines = nonEmptyLines(r.stdout);
    expect(lines[0]).toMatch(/^Defaulting debug container name to debugger-[bcdfghjklmnpqrstvwxz2456789]{5}\.$/);
    expect(lines[1]).toBe('Targeting container "main". If you don\'t see processes from this container it may be because the container runtime doesn\'t support this feature.');
    expect(r.stdout).toMatch(/httpd -f -p 8080/);
    expect(r.stderr).toContain("If you don't see a command prompt, try pressing enter.");
    const name = /debugger-\w{5}/.exec(lines[0]!)![0];

    // Without --target it has a process namespace of its own: the target's processes are not there.
    const plain = await debugAttached(['debug', '-i', 'web-dbgnode', '--image', rt.images.busybox, '-c', 'plain'], ['--', 'sh', '-c', 'sleep 1; ps']);
    expect(plain.code, explain(plain)).toBe(0);
    expect(plain.stdout).not.toMatch(/httpd/);

    // In the pod's spec and ephemeralContainerStatuses, ended, never restarted; the app containers untouched.
    await new Promise((res) => setTimeout(res, 2_000));
    const s = await runKlet(['status', 'web-dbgnode', '-o', 'json', ...common()]);
    expect(s.code, explain(s)).toBe(0);
    const pod = JSON.parse(s.stdout) as DebugPodJson & { status: { containerStatuses: Array<{ restartCount: number }> } };
    expect(pod.spec.ephemeralContainers?.map((c) => [c.name, c.targetContainerName])).toEqual([
      [name, 'main'],
      ['plain', undefined],
    ]);
    const st = pod.status.ephemeralContainerStatuses!;
    expect(st.map((c) => [c.name, c.restartCount, c.state.terminated?.exitCode])).toEqual([
      [name, 0, 4],
      ['plain', 0, 0],
    ]);
    expect(pod.status.containerStatuses.every((c) => c.restartCount === 0)).toBe(true);

    // klet logs reads a debug container's log, as kubectl logs reads an ephemeral container's.
    const logs = await runKlet(['logs', 'web-dbgnode', '-c', 'plain', ...common()]);
    expect(logs.code, explain(logs)).toBe(0);
    expect(logs.stdout).toMatch(/PID\s+USER/);
  }, 90_000);

  it('without -i, a command that exits at once: its run is recorded (ephemeralContainerStatuses, klet logs), as kubectl debug\'s is', async () => {
    const r = await runKlet(['debug', 'web-dbgnode', '--image', rt.images.busybox, '-c', 'quick', ...common(), '--', 'sh', '-c', 'echo quick-output; exit 5']);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toBe('');
    const status = await poll('the quick container terminated in the pod\'s status', 15_000, async () => {
      const s = await runKlet(['status', 'web-dbgnode', '-o', 'json', ...common()]);
      const st = (JSON.parse(s.stdout) as DebugPodJson).status.ephemeralContainerStatuses?.find((c) => c.name === 'quick');
      return st?.state.terminated ? st : undefined;
    });
    expect([status.restartCount, status.state.terminated?.exitCode]).toEqual([0, 5]);
    const logs = await runKlet(['logs', 'web-dbgnode', '-c', 'quick', ...common()]);
    expect(logs.code, explain(logs)).toBe(0);
    expect(logs.stdout).toBe('quick-output\n');
  });

  it('errors: a taken name, an unknown target, -t without -i', async () => {
    let r = await runKlet(['debug', 'web-dbgnode', '--image', rt.images.busybox, '-c', 'side', ...common(), '--', 'true']);
    expect(r.code, explain(r)).toBe(2);
    expect(nonEmptyLines(r.stderr)).toEqual(['error: --container container "side" already exists in pod default/web-dbgnode: name another with -c']);
    r = await runKlet(['debug', 'web-dbgnode', '--image', rt.images.busybox, '--target', 'nosuch', ...common(), '--', 'true']);
    expect(r.code, explain(r)).toBe(1);
    expect(nonEmptyLines(r.stderr)).toEqual(['error: --target target container "nosuch" is not a container of pod default/web-dbgnode, choose one of: [main side]']);
    r = await runKlet(['debug', '-t', 'web-dbgnode', '--image', rt.images.busybox, ...common(), '--', 'true']);
    expect(r.code, explain(r)).toBe(2);
    expect(nonEmptyLines(r.stderr)).toEqual(['error: --tty -i/--stdin is required for containers with -t/--tty=true']);
  });

  it('beside a running klet sync: started once, kept in the pod by the sync, never restarted', async () => {
    const rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-debug-sync-'));
    const manifests = fs.mkdtempSync(path.join(dir, 'manifests-'));
    fs.writeFileSync(
      path.join(manifests, 'app.json'),
      JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'app' }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: rt.images.busybox, command: ['sleep', '3600'] }] } }),
    );
    const { apiGet, startSync, killAllSyncs } = await import('../helpers/sync.js');
    const at = ['--root-dir', rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', 'syncnode'];
    const sync = await startSync({ rootDir, endpoint: rt.endpoint, nodeName: 'syncnode', manifestDir: manifests });
    try {
      await poll('app running', 60_000, async () => {
        const r = await runKlet(['status', 'app-syncnode', '-o', 'json', ...at]);
        return r.code === 0 && (JSON.parse(r.stdout) as { status: { phase: string } }).status.phase === 'Running' ? true : undefined;
      });
      const r = await debugAttached(['debug', '-i', 'app-syncnode', '--image', rt.images.busybox, '--target', 'main', '-c', 'dbg', ...at], ['--', 'sh', '-c', 'sleep 1; ps; exit 7'], false);
      expect(r.code, explain(r)).toBe(7);
      expect(r.stdout).toMatch(/sleep 3600/);
      // The sync's PLEG sees it exit and resyncs the pod: still one run, reported by the sync itself.
      await new Promise((res) => setTimeout(res, 4_000));
      const list = JSON.parse((await apiGet(sync.socketPath, '/pods')).body) as { items: Array<DebugPodJson & { metadata: { name: string } }> };
      const pod = list.items.find((p) => p.metadata.name === 'app-syncnode')!;
      expect(pod.spec.ephemeralContainers?.map((c) => c.name)).toEqual(['dbg']);
      expect(pod.status.ephemeralContainerStatuses?.map((c) => [c.name, c.restartCount, c.state.terminated?.exitCode])).toEqual([['dbg', 0, 7]]);
      expect(sync.running).toBe(true);
      expect(sync.stderr).not.toMatch(/dbg.*(Started|BackOff)/);
    } finally {
      await sync.stop();
      await killAllSyncs();
      await runKlet(['delete', '--all', '--force', ...at]).catch(() => undefined);
      fs.rmSync(rootDir, { recursive: true, force: true });
    }
  }, 120_000);
});
