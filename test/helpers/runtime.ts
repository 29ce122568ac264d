/**
 * A private containerd for integration tests: its own root dir, socket,
 * CNI bridge and subnet under a temp dir, with the locally built pause and
 * busybox images imported. stop() tears everything down and checks that
 * no shim, mount or netns of it is left.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { CriClient } from '../../src/lib/cri/client.js';
import { mountsUnder } from '../../src/lib/util/mounts.js';
import { BUSYBOX_IMAGE, PAUSE_IMAGE, type ContainerdVersion } from '../../src/lib/runtime/containerd-config.js';
import {
  layoutFor,
  managedPid,
  shimPids,
  startManagedRuntime,
  stopManagedRuntime,
} from '../../src/lib/runtime/containerd.js';

const execFileP = promisify(execFile);

export interface TestRuntime {
  endpoint: string;
  socketPath: string;
  /** klet root dir for this test (the runtime lives in rootDir/containerd). */
  rootDir: string;
  images: { pause: string; busybox: string };
  /** The containerd it runs (KLET_CONTAINERD, else containerd on PATH) and its version: where 1.6 and 2.x answer CRI differently, tests say which they expect. */
  containerd: { bin: string; version: ContainerdVersion };
  stop(): Promise<void>;
  /** The pid of this runtime's containerd, or null when it is not running. */
  pid(): Promise<number | null>;
  /**
   * SIGKILL containerd (a crash: its shims and containers keep running) and
   * wait until the process is gone. Returns the pid it had.
   */
  killContainerd(): Promise<number>;
  /** Start containerd again on the same root, socket and network (after killContainerd). */
  restart(): Promise<void>;
}

/** Gone or a zombie: the process will never answer again. */
async function processGone(pid: number): Promise<boolean> {
  try {
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/**
 * The containerd the runtime tier runs on: KLET_CONTAINERD (a path, as
 * `klet runtime start` takes it: e.g. scripts/build-containerd.sh's
 * containerd 2.x), else containerd on PATH.
 */
export function testContainerdBin(): string | undefined {
  const bin = process.env.KLET_CONTAINERD;
  return bin === undefined || bin === '' ? undefined : bin;
}

export async function startTestRuntime(): Promise<TestRuntime> {
  const rootDir = await fs.mkdtemp(path.join(os.tmpdir(), 'klet-test-'));
  const n = Math.floor(Math.random() * 200) + 20;
  const tag = `${process.pid % 10000}${n}`;
  const target = {
    endpoint: `unix://${path.join(rootDir, 'containerd.sock')}`,
    rootDir,
    network: { bridge: `kt${tag}`.slice(0, 15), subnet: `10.89.${n}.0/24`, name: `klet-test-${tag}` },
  };
  const bin = testContainerdBin();
  const startOpts = { timeoutMs: 60_000, ...(bin === undefined ? {} : { containerdBin: bin }) };
  try {
    const res = await startManagedRuntime(target, startOpts);
    if (res.containerd === null) throw new Error(`the test runtime's containerd (pid ${res.pid}) has no readable version`);
    const containerd = res.containerd;
    return {
      endpoint: res.endpoint,
      socketPath: res.layout.socketPath,
      rootDir,
      images: { pause: PAUSE_IMAGE, busybox: BUSYBOX_IMAGE },
      containerd,
      pid: () => managedPid(layoutFor(target)),
      async killContainerd() {
        const pid = await managedPid(layoutFor(target));
        if (pid === null) throw new Error('the test runtime\'s containerd is not running');
        process.kill(pid, 'SIGKILL');
        const deadline = Date.now() + 10_000;
        while (!(await processGone(pid))) {
          if (Date.now() > deadline) throw new Error(`containerd pid ${pid} survived SIGKILL for 10 s`);
          await new Promise((r) => setTimeout(r, 20));
        }
        return pid;
      },
      async restart() {
        await startManagedRuntime(target, startOpts);
      },
      async stop() {
        const layout = layoutFor(target);
        await stopManagedRuntime(target);
        await execFileP('ip', ['link', 'del', target.network.bridge]).catch(() => undefined);
        const leftMounts = await mountsUnder(rootDir);
        const leftShims = await shimPids(layout.socketPath);
        if (leftMounts.length > 0 || leftShims.length > 0) {
          // Never rm -rf through a live mount.
          throw new Error(`test runtime left behind mounts ${leftMounts.join(',')} shims ${leftShims.join(',')}`);
        }
        await fs.rm(rootDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopManagedRuntime(target).catch(() => undefined);
    await fs.rm(rootDir, { recursive: true, force: true });
    throw err;
  }
}

/** Network namespaces CNI created for sandboxes (containerd names them cni-<uuid>). */
export async function cniNetnsNames(): Promise<string[]> {
  try {
    return (await fs.readdir('/var/run/netns')).filter((n) => n.startsWith('cni-'));
  } catch {
    return [];
  }
}

/** Stop and remove every container and sandbox on a test's private runtime (ignoring errors). */
export async function removeAllPods(cri: CriClient): Promise<void> {
  for (const c of (await cri.listContainers()).containers) {
    await cri.stopContainer({ containerId: c.id, timeout: 0n }).catch(() => undefined);
    await cri.removeContainer({ containerId: c.id }).catch(() => undefined);
  }
  for (const s of (await cri.listPodSandbox()).items) {
    await cri.stopPodSandbox({ podSandboxId: s.id }).catch(() => undefined);
    await cri.removePodSandbox({ podSandboxId: s.id }).catch(() => undefined);
  }
}

/**
 * Remove what a failed test left on its private runtime: every container and
 * sandbox, the mounts and pod dirs under `rootDir`, and the pod log dirs of
 * namespace `ns` (only that namespace: other tests' log dirs are not ours).
 */
export async function wipeNode(cri: CriClient, rootDir: string, ns: string, logRoot = '/var/log/pods'): Promise<void> {
  await removeAllPods(cri);
  // Never rm -rf through a live mount (a volume tmpfs, a subPath bind).
  for (const m of await mountsUnder(path.join(rootDir, 'pods'))) await execFileP('umount', ['-l', m]).catch(() => undefined);
  await fs.rm(path.join(rootDir, 'pods'), { recursive: true, force: true });
  const logDirs = await fs.readdir(logRoot).catch(() => [] as string[]);
  for (const d of logDirs.filter((x) => x.startsWith(`${ns}_`))) await fs.rm(path.join(logRoot, d), { recursive: true, force: true });
}
