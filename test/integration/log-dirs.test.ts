/**
 * A pod's log dir under /var/log/pods goes with the pod and is never left
 * behind with nothing that knows of it: when it cannot be removed yet (here a
 * mount inside it makes the removal fail with EBUSY), the pod's record under
 * the root dir is kept, so that the next `klet delete`, or the next
 * `klet sync` (even a new process), removes both once it can.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { explain, runKlet, type CliResult } from '../helpers/cli.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { eventually, killAllSyncs, sleep, startSync } from '../helpers/sync.js';
import { podYaml, SLEEP_FOREVER } from '../helpers/manifests.js';

const NODE = 'logdirnode';
const NS = 'klogd';
const LOG_ROOT = '/var/log/pods';

let rt: TestRuntime;
let cri: CriClient;
let tmp: string;
/** Mount points made by a test, unmounted after it whatever happened. */
const pins: string[] = [];

function klet(args: string[], timeoutMs = 120_000): Promise<CliResult> {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs });
}

function manifest(name: string): string {
  return podYaml({ name, namespace: NS, image: rt.images.busybox, script: `echo hello; ${SLEEP_FOREVER}`, terminationGracePeriodSeconds: 1 });
}

/** The pod's log dir (`<ns>_<name>-<node>_<uid>`), found by its prefix. */
function logDirOf(name: string): string {
  const prefix = `${NS}_${name}-${NODE}_`;
  const found = fs.readdirSync(LOG_ROOT).filter((d) => d.startsWith(prefix));
  if (found.length !== 1) throw new Error(`${found.length} log dirs named ${prefix}*`);
  return path.join(LOG_ROOT, found[0]!);
}

function uidOf(logDir: string): string {
  return path.basename(logDir).split('_')[2]!;
}

/** Run pod `name` with `klet runonce`; its log dir and UID. */
async function runOnce(name: string): Promise<{ logDir: string; uid: string }> {
  const dir = fs.mkdtempSync(path.join(tmp, 'm-'));
  fs.writeFileSync(path.join(dir, `${name}.yaml`), manifest(name));
  const run = await klet(['runonce', '--manifest-dir', dir]);
  expect(run.code, explain(run)).toBe(0);
  const logDir = logDirOf(name);
  return { logDir, uid: uidOf(logDir) };
}

/** A mount inside the log dir: removing the dir fails (EBUSY) until unpin(). */
function pin(logDir: string): string {
  const src = fs.mkdtempSync(path.join(tmp, 'pin-'));
  const at = path.join(logDir, 'pin');
  fs.mkdirSync(at);
  execFileSync('mount', ['--bind', src, at]);
  pins.push(at);
  return at;
}

function unpin(at: string): void {
  execFileSync('umount', [at]);
  pins.splice(pins.indexOf(at), 1);
}

const podDirExists = (uid: string) => fs.existsSync(path.join(rt.rootDir, 'pods', uid));

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-logd-'));
}, 120_000);

afterEach(async () => {
  await killAllSyncs();
  for (const at of pins.splice(0)) execFileSync('umount', ['-l', at]);
  if (rt) await wipeNode(cri, rt.rootDir, NS);
});

afterAll(async () => {
  cri?.close();
  await rt?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
}, 120_000);

describe('a log dir that cannot be removed yet', () => {
  it('klet delete fails naming it and keeps the pod; the next delete removes the pod and its log dir', async () => {
    const { logDir, uid } = await runOnce('a');
    const at = pin(logDir);

    const first = await klet(['delete', `${NS}/a-${NODE}`]);
    expect(first.code, explain(first)).not.toBe(0);
    expect(first.stderr).toContain(`cannot remove ${logDir}`);
    expect((await cri.listPodSandbox()).items).toEqual([]);
    // The record stays: klet still knows the pod, so nothing is orphaned.
    expect(podDirExists(uid)).toBe(true);
    const list = await klet(['status', '-o', 'json']);
    expect(list.code, explain(list)).toBe(0);
    expect(list.stdout).toContain(uid);

    unpin(at);
    const second = await klet(['delete', `${NS}/a-${NODE}`]);
    expect(second.code, explain(second)).toBe(0);
    expect(fs.existsSync(logDir)).toBe(false);
    expect(podDirExists(uid)).toBe(false);
  }, 180_000);

  it('klet sync keeps the record while it cannot remove the log dir, and so does a new klet sync process, which removes both once it can', async () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'm-'));
    fs.writeFileSync(path.join(dir, 'b.yaml'), manifest('b'));
    const s1 = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, fileCheckFrequency: '1s' });
    const logDir = await eventually(() => {
      const d = logDirOf('b');
      if (!fs.existsSync(path.join(d, 'c', '0.log'))) throw new Error('no container log yet');
      return d;
    }, 60_000);
    const uid = uidOf(logDir);
    const at = pin(logDir);

    fs.rmSync(path.join(dir, 'b.yaml'));
    await eventually(async () => expect((await cri.listPodSandbox()).items, s1.tail()).toEqual([]), 60_000);
    await s1.waitForStderr(new RegExp(`cannot remove ${logDir.replace(/[.]/g, '\\.')}`), 30_000);
    expect(podDirExists(uid), s1.tail()).toBe(true);
    const exit = await s1.stop();
    expect(exit.code, s1.tail()).toBe(0);

    // A new process finds the pod by its record alone; while the log dir is still pinned it keeps the record too.
    const s2 = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, fileCheckFrequency: '1s' });
    await s2.waitForStderr(new RegExp(`cannot remove ${logDir.replace(/[.]/g, '\\.')}`), 30_000);
    expect(podDirExists(uid), s2.tail()).toBe(true);
    // Retried at every housekeeping pass (2 s), warned of once.
    await sleep(5000);
    expect(s2.stderr.split('\n').filter((l) => l.includes(`cannot remove ${logDir}`)), s2.tail()).toHaveLength(1);
    unpin(at);
    await eventually(() => {
      expect(fs.existsSync(logDir), s2.tail()).toBe(false);
      expect(podDirExists(uid), s2.tail()).toBe(false);
    }, 30_000);
    const exit2 = await s2.stop();
    expect(exit2.code, s2.tail()).toBe(0);
  }, 240_000);
});

describe('klet runtime stop', () => {
  it("keeps the pods' records and logs, as the kubelet's are kept when its runtime stops: once a runtime runs again, klet logs reads them and delete --all removes them", async () => {
    const { logDir, uid } = await runOnce('c');
    await eventually(() => expect(fs.readFileSync(path.join(logDir, 'c', '0.log'), 'utf8')).toContain('hello'), 10_000);

    const stop = await klet(['runtime', 'stop']);
    expect(stop.code, explain(stop)).toBe(0);
    expect(stop.stdout).toContain('1 pod sandbox(es) stopped and removed');
    expect(fs.existsSync(logDir)).toBe(true);
    expect(podDirExists(uid)).toBe(true);

    await rt.restart();
    const logs = await klet(['logs', `${NS}/c-${NODE}`]);
    expect(logs.code, explain(logs)).toBe(0);
    expect(logs.stdout).toBe('hello\n');
    const del = await klet(['delete', '--all']);
    expect(del.code, explain(del)).toBe(0);
    expect(fs.existsSync(logDir)).toBe(false);
    expect(podDirExists(uid)).toBe(false);
  }, 180_000);
});
