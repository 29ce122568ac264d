/**
 * The built CLI against a real containerd it starts itself: `klet runtime
 * start|status|stop` and `klet images ls|import`, each run as a child process
 * (`node bin/run.js`), with a temp --root-dir and a temp socket.
 *
 * A managed runtime under a non-default root dir gets its own bridge and pod
 * subnet derived from the root dir (networkFor), so this test's pods never
 * share addresses with another klet runtime on the machine. The bridge is
 * deleted afterwards.
 *
 * Tests run in order and share the runtime; the last ones stop it and check
 * that nothing of it is left: no process, mount, netns or socket.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/client.js';
import { networkFor, stopManagedRuntime } from '../../src/lib/runtime/containerd.js';
import { BUSYBOX_IMAGE, PAUSE_IMAGE, type CniNetwork } from '../../src/lib/runtime/containerd-config.js';
import { buildOciImage } from '../../src/lib/runtime/oci-image.js';
import { findExecutable } from '../../src/lib/util/which.js';
import { cniNetnsNames, testContainerdBin } from '../helpers/runtime.js';
import { explain, nonEmptyLines, runKlet, runKletJson, type CliResult } from '../helpers/cli.js';

const execFileP = promisify(execFile);

let rootDir = '';
let socketPath = '';
let endpoint = '';
let bridgeExisted = true;
let netnsBefore: string[] = [];
/** The network namespace of the test's sandbox, e.g. cni-1234…, once known. */
let sandboxNetns: string | null = null;
let sandboxIp = '';
/** The address host-local's lease directory is seeded with. */
let network: CniNetwork;
let managedPid = 0;
let stopped = false;

/** The global flags that point klet at this test's runtime. */
function target(): string[] {
  return ['--root-dir', rootDir, '--container-runtime-endpoint', endpoint];
}

function klet(args: string[], timeoutMs = 60_000): Promise<CliResult> {
  return runKlet([...args, ...target()], { timeoutMs });
}

async function kletJson<T>(args: string[], timeoutMs = 60_000): Promise<{ result: CliResult; json: T }> {
  return runKletJson<T>([...args, ...target(), '-o', 'json'], { timeoutMs });
}

async function linkExists(name: string): Promise<boolean> {
  return execFileP('ip', ['link', 'show', name]).then(
    () => true,
    () => false,
  );
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes (other than this one) whose command line mentions any of `needles`. */
function processesMentioning(needles: string[]): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue; // exited while we looked
    }
    if (needles.some((n) => cmdline.includes(n))) found.push({ pid: Number(entry), cmdline });
  }
  return found;
}

/** Mount points at or below `dir`, read from /proc/self/mountinfo. */
function mountsBelow(dir: string): string[] {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map((p) => p.replace(/\\(\d{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8))))
    .filter((p) => p === dir || p.startsWith(dir + '/'));
}

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
}

function inSubnet(ip: string, cidr: string): boolean {
  const [net, bits] = cidr.split('/') as [string, string];
  const size = 2 ** (32 - Number(bits));
  const base = ipv4ToInt(net);
  const n = ipv4ToInt(ip);
  return /^\d+\.\d+\.\d+\.\d+$/.test(ip) && n >= base && n < base + size;
}

interface StatusJson {
  endpoint: string;
  managed: boolean;
  pid: number | null;
  reachable: boolean;
  runtimeName: string | null;
  runtimeVersion: string | null;
  runtimeApiVersion: string | null;
  conditions: { type: string; status: boolean }[];
  error: string | null;
}

interface ImagesJson {
  images: { id: string; repoTags: string[]; size: string }[];
}

beforeAll(async () => {
  rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-cli-rt-'));
  socketPath = path.join(rootDir, 'containerd.sock');
  endpoint = `unix://${socketPath}`;
  network = networkFor(rootDir);
  bridgeExisted = await linkExists(network.bridge);
  netnsBefore = await cniNetnsNames();
});

afterAll(async () => {
  if (!rootDir) return;
  if (!stopped) {
    // A test failed before `runtime stop` ran: tear down without the CLI.
    await stopManagedRuntime({ endpoint, rootDir }).catch(() => undefined);
  }
  if (!bridgeExisted && (await linkExists(network.bridge))) {
    await execFileP('ip', ['link', 'del', network.bridge]).catch(() => undefined);
  }
  // Never rm -rf through a live mount.
  const left = mountsBelow(rootDir);
  if (left.length > 0) throw new Error(`mounts left below ${rootDir}: ${left.join(', ')}`);
  fs.rmSync(rootDir, { recursive: true, force: true });
});

describe('klet runtime and images, as a CLI, against a real containerd', () => {
  it('runtime start starts containerd and prints the endpoint', async () => {
    const r = await klet(['runtime', 'start'], 120_000);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toContain(endpoint);
    expect(r.stdout).toMatch(/^started containerd \(pid \d+\)/);
    expect(fs.statSync(socketPath).isSocket()).toBe(true);
  }, 150_000);

  it('runtime status -o json reports the managed runtime', async () => {
    const { result, json } = await kletJson<StatusJson>(['runtime', 'status']);
    expect(result.code, explain(result)).toBe(0);
    expect(json).toMatchObject({
      endpoint,
      managed: true,
      reachable: true,
      runtimeName: 'containerd',
      runtimeApiVersion: 'v1',
      error: null,
    });
    // containerd's version word: 1.6.20~ds1 (Debian), v2.4.2 (upstream 2.x).
    expect(json.runtimeVersion).toMatch(/^v?\d+\.\d+/);
    expect(json.pid).toBeGreaterThan(1);
    managedPid = json.pid as number;
    expect(pidAlive(managedPid)).toBe(true);
    expect(fs.readFileSync(`/proc/${managedPid}/cmdline`, 'utf8')).toContain(rootDir);
    // containerd 2.x adds ContainerdHasNoDeprecationWarnings (false on cgroup v1 hosts).
    expect(Object.fromEntries(json.conditions.map((c) => [c.type, c.status]))).toMatchObject({
      RuntimeReady: true,
      NetworkReady: true,
    });
    expect(json.conditions.map((c) => c.type).filter((t) => t !== 'ContainerdHasNoDeprecationWarnings')).toEqual(['RuntimeReady', 'NetworkReady']);
  });

  it('runtime status without -o prints the table and exits 0', async () => {
    const r = await klet(['runtime', 'status']);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/^ENDPOINT\s+unix:\/\//m);
    expect(r.stdout).toMatch(/^MANAGED\s+yes \(pid \d+/m);
    expect(r.stderr).toBe('');
  });

  it('a second runtime start reuses the running runtime', async () => {
    const { result, json } = await kletJson<{ endpoint: string; pid: number; started: boolean; images: string[]; containerd: string; version: string }>(
      ['runtime', 'start'],
      120_000,
    );
    expect(result.code, explain(result)).toBe(0);
    expect(json).toMatchObject({ endpoint, pid: managedPid, started: false });
    expect(json.images).toEqual([PAUSE_IMAGE, BUSYBOX_IMAGE]);
    // The containerd KLET_CONTAINERD names (the runtime tier on 2.x), else the one on PATH.
    const asked = testContainerdBin();
    const onPath = await findExecutable('containerd');
    expect(json.containerd).toBe(fs.realpathSync(asked ?? onPath ?? 'containerd'));
    expect(json.version).toMatch(/^v?\d+\.\d+\.\d+/);
  }, 150_000);

  it('images ls -o json lists the built-in images', async () => {
    const { result, json } = await kletJson<ImagesJson>(['images', 'ls']);
    expect(result.code, explain(result)).toBe(0);
    const tags = json.images.flatMap((i) => i.repoTags);
    expect(tags).toEqual(expect.arrayContaining([PAUSE_IMAGE, BUSYBOX_IMAGE]));
    for (const img of json.images) expect(img.id).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('images ls prints a table', async () => {
    const r = await klet(['images', 'ls']);
    expect(r.code, explain(r)).toBe(0);
    const lines = nonEmptyLines(r.stdout);
    expect(lines[0]).toMatch(/^IMAGE\s+TAG\s+IMAGE ID\s+SIZE$/);
    expect(lines.some((l) => /^localhost\/klet\/pause\s+3\.10\s/.test(l))).toBe(true);
    expect(lines.some((l) => /^localhost\/klet\/busybox\s+1\.36\s/.test(l))).toBe(true);
  });

  describe('images import', () => {
    let archive = '';
    let configDigest = '';
    const name = `localhost/klet-test/cli-import:${process.pid}`;
    const renamed = `localhost/klet-test/renamed:${process.pid}`;

    beforeAll(async () => {
      archive = path.join(rootDir, 'cli-import.tar');
      const built = await buildOciImage({
        name,
        files: [{ path: 'hello.txt', content: Buffer.from('hello from klet images import\n') }],
        config: { cmd: ['/hello.txt'], labels: { 'klet.io/test': 'cli-runtime' } },
        outFile: archive,
      });
      configDigest = built.configDigest;
    });

    it('imports an OCI archive under the name it carries', async () => {
      const r = await klet(['images', 'import', archive]);
      expect(r.code, explain(r)).toBe(0);
      expect(r.stdout.trim()).toBe(`imported ${name}`);

      const { json } = await kletJson<ImagesJson>(['images', 'ls']);
      const img = json.images.find((i) => i.repoTags.includes(name));
      expect(img, JSON.stringify(json)).toBeDefined();
      // The image ID CRI reports is the config digest of the built image.
      expect(img?.id).toBe(configDigest);
    });

    it('imports with --name, and reports the names with -o json', async () => {
      const { result, json } = await kletJson<{ name: string; refs: string[] }>(['images', 'import', archive, '--name', renamed]);
      expect(result.code, explain(result)).toBe(0);
      expect(json).toEqual({ name: renamed, refs: [renamed] });

      const ls = await kletJson<ImagesJson>(['images', 'ls']);
      const img = ls.json.images.find((i) => i.id === configDigest);
      expect(img?.repoTags).toEqual(expect.arrayContaining([name, renamed]));
    });
  });

  it('a pod sandbox started in this runtime gets an IP from the klet network', async () => {
    const logDir = path.join(rootDir, 'pods', 'cli-rt');
    fs.mkdirSync(logDir, { recursive: true });
    const cri = CriClient.connect(endpoint, { timeoutMs: 60_000 });
    try {
      const { podSandboxId } = await cri.runPodSandbox({
        config: {
          metadata: { name: 'cli-rt', uid: `cli-rt-${process.pid}`, namespace: 'klet-test', attempt: 0 },
          hostname: 'cli-rt',
          logDirectory: logDir,
        },
      });
      expect(podSandboxId).toMatch(/^[0-9a-f]{64}$/);
      const { status, info } = await cri.podSandboxStatus({ podSandboxId, verbose: true });
      sandboxIp = status?.network?.ip ?? '';
      // The root dir's own pod subnet, not the default runtime's 10.88.0.0/16.
      expect(network.subnet).toMatch(/^10\.90\.\d+\.0\/24$/);
      expect(inSubnet(sandboxIp, network.subnet), `sandbox IP ${sandboxIp}`).toBe(true);

      // The sandbox's netns, from the runtime spec containerd reports…
      const spec = JSON.parse(info.info ?? '{}') as {
        runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } };
      };
      const netnsPath = spec.runtimeSpec?.linux?.namespaces?.find((n) => n.type === 'network')?.path;
      if (netnsPath !== undefined && netnsPath !== '') {
        sandboxNetns = path.basename(netnsPath);
      } else {
        // …or else the cni-* namespace that appeared since the test began.
        const fresh = (await cniNetnsNames()).filter((n) => !netnsBefore.includes(n));
        expect(fresh.length, `new netns: ${fresh.join(', ')}`).toBe(1);
        sandboxNetns = fresh[0] as string;
      }
      expect(sandboxNetns).toMatch(/^cni-/);
      expect(await cniNetnsNames()).toContain(sandboxNetns);
    } finally {
      cri.close();
    }
  }, 90_000);

  it('runtime stop stops the pods and containerd, leaving no process, mount, netns or socket', async () => {
    expect(sandboxNetns, 'the sandbox test ran').not.toBeNull();
    const shimsBefore = processesMentioning([socketPath]).filter((p) => p.cmdline.includes('containerd-shim'));
    expect(shimsBefore.length, 'the sandbox has a shim').toBeGreaterThan(0);

    const r = await klet(['runtime', 'stop'], 120_000);
    stopped = r.code === 0;
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toContain(`stopped containerd on ${endpoint} (1 pod sandbox(es) stopped and removed)`);

    expect(pidAlive(managedPid), `containerd pid ${managedPid}`).toBe(false);
    expect(processesMentioning([rootDir, socketPath])).toEqual([]);
    expect(mountsBelow(rootDir)).toEqual([]);
    expect(await cniNetnsNames()).not.toContain(sandboxNetns);
    expect(fs.existsSync(path.join('/var/run/netns', sandboxNetns as string))).toBe(false);
    expect(fs.existsSync(socketPath)).toBe(false);
    expect(fs.existsSync(socketPath + '.ttrpc')).toBe(false);
    expect(fs.existsSync(path.join(rootDir, 'containerd', 'containerd.pid'))).toBe(false);
  }, 150_000);

  it('runtime status then exits 1 and reports the runtime unreachable', async () => {
    const { result, json } = await kletJson<StatusJson>(['runtime', 'status']);
    expect(result.code, explain(result)).toBe(1);
    expect(json).toMatchObject({ endpoint, managed: false, pid: null, reachable: false, runtimeName: null });
    expect(json.error).toContain('is containerd running?');
    // The report is the output; no second error line on stderr.
    expect(result.stderr).toBe('');

    const table = await klet(['runtime', 'status']);
    expect(table.code, explain(table)).toBe(1);
    expect(table.stdout).toMatch(/^MANAGED\s+no$/m);
    expect(table.stdout).toMatch(/^ERROR\s+cannot reach the container runtime at /m);
  });

  it('a second runtime stop is a no-op that succeeds', async () => {
    const r = await klet(['runtime', 'stop']);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout.trim()).toBe(`no klet-managed containerd was running for ${endpoint}`);
  });
});
