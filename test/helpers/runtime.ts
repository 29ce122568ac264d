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
import { mountsUnder } from '../../src/lib/util/mounts.js';
import { BUSYBOX_IMAGE, PAUSE_IMAGE } from '../../src/lib/runtime/containerd-config.js';
import {
  layoutFor,
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
  stop(): Promise<void>;
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
  try {
    const res = await startManagedRuntime(target, { timeoutMs: 60_000 });
    return {
      endpoint: res.endpoint,
      socketPath: res.layout.socketPath,
      rootDir,
      images: { pause: PAUSE_IMAGE, busybox: BUSYBOX_IMAGE },
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
