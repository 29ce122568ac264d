/**
 * Container log rotation under `klet sync`, against a real containerd (CRI
 * ReopenContainerLog), as the kubelet's container log manager does it: a
 * running container's log that reaches --container-log-max-size is renamed
 * `0.log.<time>` and the runtime reopens `0.log`; older rotated files are
 * gzipped and the oldest removed, so at most --container-log-max-files stay.
 * Nothing written is lost in the files kept, `klet logs -f` follows into the
 * new file, and another klet's container on the same runtime is never touched.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN, PROJECT_ROOT, assertBuilt, cleanEnv, explain, flatCgroups, runKlet } from '../helpers/cli.js';
import { CriClient } from '../../src/lib/cri/index.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { podYaml } from '../helpers/manifests.js';
import { eventually, killAllSyncs, startSync, writeAtomic } from '../helpers/sync.js';

const NODE = 'logrotnode';
const NS = 'klogrot';
const LOG_ROOT = '/var/log/pods';
const MAX_SIZE = 64 * 1024;

let rt: TestRuntime;
let tmp: string;

/** 200 numbered lines of ~230 bytes a second: a 64Ki log fills in about 1.5 s. */
const CHATTY =
  'n=0; pad=$(printf "%0200d" 0); trap "exit 0" TERM; while true; do for k in $(seq 1 200); do n=$((n+1)); echo "line $n $pad"; done; sleep 1; done';

function manifest(name: string): string {
  return podYaml({ name, namespace: NS, image: rt.images.busybox, script: CHATTY });
}

/** The container's log dir of static pod `name` run by node `node` (`<ns>_<name>-<node>_<uid>/c`). */
function containerLogDirOf(name: string, node: string): string {
  const prefix = `${NS}_${name}-${node}_`;
  const found = fs.readdirSync(LOG_ROOT).filter((d) => d.startsWith(prefix));
  if (found.length !== 1) throw new Error(`${found.length} log dirs named ${prefix}*`);
  return path.join(LOG_ROOT, found[0]!, 'c');
}

/** The line numbers of CRI log text (`<time> stdout F line N ...`). */
function lineNumbers(text: string): number[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const m = /^\S+ stdout [FP] line (\d+) 0+$/.exec(l);
      if (m === null) throw new Error(`not a line of the chatty container: ${JSON.stringify(l.slice(0, 80))}`);
      return Number(m[1]);
    });
}

function syncArgs(rootDir: string, manifestDir: string, extra: string[]) {
  return { rootDir, endpoint: rt.endpoint, manifestDir, nodeName: NODE, args: extra };
}

beforeAll(async () => {
  rt = await startTestRuntime();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-logrot-'));
}, 120_000);

afterEach(async () => {
  await killAllSyncs();
});

afterAll(async () => {
  const cri = CriClient.connect(rt.endpoint);
  await wipeNode(cri, rt.rootDir, NS);
  cri.close();
  await rt?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}, 120_000);

describe('container log rotation (klet sync)', () => {
  it('rotates, compresses and prunes a running container log as the kubelet does, losing no line, and never touches another klet\'s container', async () => {
    // Another klet root dir on the same runtime, its rotation off: its container's log only grows.
    const otherManifests = fs.mkdtempSync(path.join(tmp, 'other-'));
    writeAtomic(otherManifests, 'foreign.yaml', manifest('rot-foreign'));
    const other = await startSync(syncArgs(path.join(tmp, 'other-root'), otherManifests, ['--container-log-max-size=-1']));

    const manifests = fs.mkdtempSync(path.join(tmp, 'm-'));
    const config = path.join(tmp, 'config.yaml');
    fs.writeFileSync(config, ['apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', 'containerLogMonitorInterval: 3s', ''].join('\n'));
    writeAtomic(manifests, 'chatty.yaml', manifest('rot-chatty'));
    const sync = await startSync(syncArgs(rt.rootDir, manifests, ['--config', config, '--container-log-max-size', '64Ki', '--container-log-max-files', '3']));

    const dir = await eventually(() => containerLogDirOf('rot-chatty', NODE), 60_000, 500);
    // `klet logs -f` from before the first rotation: it must go on into each new 0.log.
    assertBuilt();
    const follow = spawn(process.execPath, [KLET_BIN, ...flatCgroups(['logs', '-f', `${NS}/rot-chatty-${NODE}`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE])], {
      cwd: PROJECT_ROOT,
      env: cleanEnv(),
    });
    let followed = '';
    let followErr = '';
    follow.stdout.on('data', (b: Buffer) => (followed += b.toString('utf8')));
    follow.stderr.on('data', (b: Buffer) => (followErr += b.toString('utf8')));

    // Rotations: gzipped files appear (the second rotation compresses the first's file).
    const gzSeen = new Set<string>();
    await eventually(
      () => {
        for (const f of fs.readdirSync(dir)) if (f.endsWith('.gz')) gzSeen.add(f);
        if (gzSeen.size < 3) throw new Error(`${gzSeen.size} gzipped logs so far: ${fs.readdirSync(dir).join(' ')}`);
      },
      90_000,
      250,
    );
    const stopped = await sync.stop();
    expect(stopped.code, sync.tail()).toBe(0);
    follow.kill('SIGINT');

    // At most --container-log-max-files: the live file, the last rotated one (uncompressed), the rest gzipped; nothing half done.
    const files = fs.readdirSync(dir).sort();
    expect(files.length, files.join(' ')).toBeLessThanOrEqual(3);
    expect(files).toContain('0.log');
    expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    for (const f of files.filter((x) => x !== '0.log')) expect(f).toMatch(/^0\.log\.\d{8}-\d{6}(\.gz)?$/);
    expect(files.filter((f) => f.endsWith('.gz')).length).toBeGreaterThanOrEqual(1);
    // Each rotated file was at least the limit when it was renamed.
    for (const f of files.filter((x) => x !== '0.log')) {
      const raw = fs.readFileSync(path.join(dir, f));
      const text = f.endsWith('.gz') ? zlib.gunzipSync(raw) : raw;
      expect(text.length, f).toBeGreaterThanOrEqual(MAX_SIZE);
    }

    // Oldest first (the timestamps sort), then the live file: consecutive line numbers, none lost or doubled at a rotation.
    const rotated = files.filter((x) => x !== '0.log');
    const all = [
      ...rotated.flatMap((f) => {
        const raw = fs.readFileSync(path.join(dir, f));
        return lineNumbers((f.endsWith('.gz') ? zlib.gunzipSync(raw) : raw).toString('utf8'));
      }),
      ...lineNumbers(fs.readFileSync(path.join(dir, '0.log'), 'utf8')),
    ];
    expect(all.length).toBeGreaterThan(0);
    const gaps = all.slice(1).filter((n, i) => n !== all[i]! + 1);
    expect(gaps, `first ${all[0]}, last ${all.at(-1)}`).toEqual([]);

    // The follower went on across the rotations: its lines are consecutive well past the first rotated file's end.
    const seen = followed
      .split('\n')
      .filter((l) => l.startsWith('line '))
      .map((l) => Number(l.split(' ')[1]));
    expect(seen.length, `klet logs -f: ${followErr}`).toBeGreaterThan(0);
    expect(seen.slice(1).filter((n, i) => n !== seen[i]! + 1)).toEqual([]);
    expect(seen.at(-1)! - seen[0]!, 'lines followed').toBeGreaterThan((3 * MAX_SIZE) / 240);

    // The other klet's container: one live file, far over the limit, never rotated.
    const otherDir = containerLogDirOf('rot-foreign', NODE);
    const otherFiles = fs.readdirSync(otherDir);
    expect(otherFiles).toEqual(['0.log']);
    expect(fs.statSync(path.join(otherDir, '0.log')).size).toBeGreaterThan(2 * MAX_SIZE);
    await other.stop();
  }, 240_000);

  it('refuses a rotation setting the kubelet refuses, naming it', async () => {
    const manifests = fs.mkdtempSync(path.join(tmp, 'bad-'));
    const args = ['sync', '--manifest-dir', manifests, '--root-dir', path.join(tmp, 'bad-root'), '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE];
    const files = await runKlet([...args, '--container-log-max-files', '1']);
    expect(files.code, explain(files)).not.toBe(0);
    expect(files.stderr.trim().split('\n')).toHaveLength(1);
    expect(files.stderr).toMatch(/--container-log-max-files.*1: must be greater than 1/);
    const size = await runKlet([...args, '--container-log-max-size', '10Mb']);
    expect(size.code, explain(size)).not.toBe(0);
    expect(size.stderr).toMatch(/--container-log-max-size.*"10Mb"/);
    expect(fs.existsSync(path.join(tmp, 'bad-root'))).toBe(false);
  }, 60_000);
});
