/**
 * `klet mount-volumes` (the built CLI) on the real file system and mount
 * table, no container runtime: set-up, dry run, JSON, unmount, and bad
 * input (each a validation error naming the field, nothing written).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mountsUnder, unmountAll } from '../../src/lib/util/mounts.js';
import { PROJECT_ROOT, explain, runKlet, type CliResult } from '../helpers/cli.js';

let root: string;
let work: string;
let hostDir: string;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-mv-root-'));
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-mv-work-'));
  hostDir = path.join(work, 'host', 'seeded');
});

afterEach(async () => {
  await unmountAll(root);
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(work, { recursive: true, force: true });
});

function klet(args: string[]): Promise<CliResult> {
  // No runtime: --unmount asks CRI whether the pod runs; a missing socket means nothing runs.
  return runKlet([...args, '--root-dir', root, '--node-name', 'n1', '--container-runtime-endpoint', `unix://${path.join(work, 'no.sock')}`]);
}

const CONFIG = `apiVersion: v1
kind: ConfigMap
metadata: { name: cfg }
data:
  app.conf: "listen = 9000"
  extra: "x"
---
apiVersion: v1
kind: Secret
metadata: { name: sec }
stringData:
  token: t0k3n-value
`;

function podYaml(volumes: string, mounts = ''): string {
  return `${CONFIG}---
apiVersion: v1
kind: Pod
metadata: { name: vols }
spec:
  securityContext: { fsGroup: 2000 }
  containers:
    - name: app
      image: localhost/klet/busybox:1.36
      resources: { limits: { memory: 32Mi } }
${mounts}
  volumes:
${volumes}
`;
}

const GOOD_VOLUMES = `    - name: config
      configMap: { name: cfg, items: [{ key: app.conf, path: conf/app.conf, mode: 0600 }] }
    - name: secret
      secret: { secretName: sec }
    - name: mem
      emptyDir: { medium: Memory, sizeLimit: 8Mi }
    - name: scratch
      emptyDir: {}
    - name: seeded
      hostPath: { path: HOSTDIR, type: DirectoryOrCreate }`;

function write(name: string, text: string): string {
  const f = path.join(work, name);
  fs.writeFileSync(f, text.replaceAll('HOSTDIR', hostDir));
  return f;
}

interface Json {
  pod: string;
  uid: string;
  mode: string;
  volumes: { name: string; plugin: string; hostPath: string; medium: string; sizeBytes?: number; usedBytes?: number; state: string; message?: string }[];
  exitCode: number;
}

describe('klet mount-volumes', () => {
  it('sets up every volume kind and prints the table; again changes nothing; --unmount removes it all', async () => {
    const file = write('pod.yaml', podYaml(GOOD_VOLUMES));
    const r = await klet(['mount-volumes', file]);
    expect(r.code, explain(r)).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^VOLUME\s+PLUGIN\s+HOST PATH\s+MEDIUM\s+SIZE\/USED\s+STATE$/);
    expect(lines.find((l) => l.startsWith('mem '))).toMatch(/kubernetes\.io~empty-dir\s+\S+\/mem\s+Memory\s+8\.39MB\/0B\s+Mounted$/);
    expect(lines.find((l) => l.startsWith('secret '))).toMatch(/kubernetes\.io~secret .*Memory\s+33\.6MB\/\S+\s+Mounted$/);
    expect(lines.find((l) => l.startsWith('seeded '))).toMatch(/kubernetes\.io~host-path\s+\S+seeded\s+disk\s+-\s+Ready$/);

    const uid = fs.readdirSync(path.join(root, 'pods'))[0]!;
    const vols = path.join(root, 'pods', uid, 'volumes');
    // The kubelet's layout and the atomic writer's files.
    expect(fs.readFileSync(path.join(vols, 'kubernetes.io~configmap', 'config', 'conf', 'app.conf'), 'utf8')).toBe('listen = 9000');
    expect(fs.statSync(path.join(vols, 'kubernetes.io~configmap', 'config', 'conf', 'app.conf')).mode & 0o777).toBe(0o640);
    expect(fs.readlinkSync(path.join(vols, 'kubernetes.io~secret', 'secret', 'token'))).toBe('..data/token');
    expect(fs.statSync(path.join(vols, 'kubernetes.io~empty-dir', 'scratch')).gid).toBe(2000);
    expect(fs.statSync(hostDir).isDirectory()).toBe(true);
    const mounts = await mountsUnder(root);
    expect(mounts.sort()).toEqual([path.join(vols, 'kubernetes.io~empty-dir', 'mem'), path.join(vols, 'kubernetes.io~secret', 'secret')].sort());
    const gen = fs.readlinkSync(path.join(vols, 'kubernetes.io~secret', 'secret', '..data'));

    // Idempotent: nothing mounted twice, nothing rewritten.
    const again = await klet(['mount-volumes', file]);
    expect(again.code, explain(again)).toBe(0);
    expect((await mountsUnder(root)).sort()).toEqual(mounts.sort());
    expect(fs.readlinkSync(path.join(vols, 'kubernetes.io~secret', 'secret', '..data'))).toBe(gen);
    // The secret's value is never printed.
    expect(r.stdout + r.stderr + again.stdout).not.toContain('t0k3n-value');

    fs.writeFileSync(path.join(hostDir, 'keep'), 'host data');
    const un = await klet(['mount-volumes', file, '--unmount', '-o', 'json']);
    expect(un.code, explain(un)).toBe(0);
    const json = JSON.parse(un.stdout) as Json;
    expect(json.mode).toBe('unmount');
    expect(Object.fromEntries(json.volumes.map((v) => [v.name, v.state]))).toEqual({
      config: 'Unmounted',
      secret: 'Unmounted',
      mem: 'Unmounted',
      scratch: 'Unmounted',
      seeded: 'Unchanged (hostPath)',
    });
    expect(await mountsUnder(root)).toEqual([]);
    expect(fs.existsSync(path.join(root, 'pods', uid))).toBe(false);
    expect(fs.readFileSync(path.join(hostDir, 'keep'), 'utf8')).toBe('host data');
  });

  it('-o json carries the rows with sizes in bytes', async () => {
    const file = write('pod.yaml', podYaml(GOOD_VOLUMES));
    const r = await klet(['mount-volumes', file, '-o', 'json']);
    expect(r.code, explain(r)).toBe(0);
    const json = JSON.parse(r.stdout) as Json;
    expect(json.pod).toBe('default/vols-n1');
    expect(json.mode).toBe('mount');
    const mem = json.volumes.find((v) => v.name === 'mem');
    expect(mem).toMatchObject({ plugin: 'kubernetes.io~empty-dir', medium: 'Memory', sizeBytes: 8 * 1024 * 1024, usedBytes: 0, state: 'Mounted' });
    const config = json.volumes.find((v) => v.name === 'config');
    expect(config).toMatchObject({ plugin: 'kubernetes.io~configmap', medium: '', state: 'Ready' });
    // Disk use as du counts it (allocated blocks): at least the one file's block.
    expect(config?.usedBytes).toBeGreaterThanOrEqual(4096);
    expect(json.volumes.map((v) => v.name)).toEqual(['config', 'secret', 'mem', 'scratch', 'seeded']);
  });

  it('--dry-run says what it would do and touches nothing; a failing reference fails the row and the exit code', async () => {
    const file = write('pod.yaml', podYaml(GOOD_VOLUMES));
    const r = await klet(['mount-volumes', file, '--dry-run', '-o', 'json']);
    expect(r.code, explain(r)).toBe(0);
    const json = JSON.parse(r.stdout) as Json;
    expect(Object.fromEntries(json.volumes.map((v) => [v.name, v.state]))).toEqual({
      config: 'would create dir, project 1 file',
      secret: `would create dir, mount tmpfs size=${32 * 1024 * 1024}, project 1 file`,
      mem: `would create dir, mount tmpfs size=${8 * 1024 * 1024}`,
      scratch: 'would create dir',
      seeded: 'would create (DirectoryOrCreate)',
    });
    expect(fs.existsSync(path.join(root, 'pods'))).toBe(false);
    expect(fs.existsSync(hostDir)).toBe(false);
    expect(await mountsUnder(root)).toEqual([]);

    const missing = path.join(work, 'nope.sock');
    const bad = write('bad.yaml', podYaml(`    - name: sock\n      hostPath: { path: ${missing}, type: Socket }\n    - name: config\n      configMap: { name: cfg, items: [{ key: nokey, path: x }] }`));
    const d = await klet(['mount-volumes', bad, '--dry-run']);
    expect(d.code, explain(d)).toBe(1);
    expect(d.stdout).toContain(`Failed: hostPath type check failed: ${missing} is not a socket file`);
    expect(d.stdout).toContain('Failed: configmap references non-existent config key: nokey');
    const m = await klet(['mount-volumes', bad]);
    expect(m.code, explain(m)).toBe(1);
    expect(m.stdout).toContain(`Failed: hostPath type check failed: ${missing} is not a socket file`);
  });

  it.each([
    ['an item path with ..', `configMap: { name: cfg, items: [{ key: extra, path: ../escape }] }`, `spec.volumes[0].configMap.items[0].path: Invalid value: "../escape": must not contain '..'`],
    ['an absolute item path', `secret: { secretName: sec, items: [{ key: token, path: /etc/token }] }`, `spec.volumes[0].secret.items[0].path: Invalid value: "/etc/token": must be a relative path`],
    ['an item path with an empty segment', `configMap: { name: cfg, items: [{ key: extra, path: "a//b" }] }`, `spec.volumes[0].configMap.items[0].path: Invalid value: "a//b": must not contain empty path segments`],
    ['an invalid key', `configMap: { name: cfg, items: [{ key: "bad key!", path: x }] }`, `spec.volumes[0].configMap.items[0].key: Invalid value: "bad key!"`],
    ['two items writing the same path', `configMap: { name: cfg, items: [{ key: extra, path: x }, { key: app.conf, path: x }] }`, `spec.volumes[0].configMap.items[1].path: Invalid value: "x": conflicting duplicate paths`],
    ['two projected sources writing the same path', `projected: { sources: [{ configMap: { name: cfg, items: [{ key: extra, path: x }] } }, { secret: { name: sec, items: [{ key: token, path: x }] } }] }`, `spec.volumes[0].projected.sources[1].secret.items[0].path: Invalid value: "x": conflicting duplicate paths`],
    ['defaultMode above 0777', `secret: { secretName: sec, defaultMode: 01000 }`, `spec.volumes[0].secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive`],
    ['a negative item mode', `configMap: { name: cfg, items: [{ key: extra, path: x, mode: -1 }] }`, `spec.volumes[0].configMap.items[0].mode: Invalid value: -1`],
  ])('bad input: %s → one error naming the field, nothing written', async (_what, source, message) => {
    const file = write('bad.yaml', podYaml(`    - name: v\n      ${source}`));
    const r = await klet(['mount-volumes', file]);
    expect(r.code, explain(r)).not.toBe(0);
    expect(r.stderr).toContain(message);
    expect(r.stderr.trim().split('\n')[0]).toContain(`${file}:`);
    expect(fs.existsSync(path.join(root, 'pods'))).toBe(false);
  });

  it('bad input: a mount naming an undeclared volume; a ConfigMap over 1 MiB', async () => {
    const undeclared = write('undeclared.yaml', podYaml(`    - name: v\n      emptyDir: {}`, `      volumeMounts: [{ name: nope, mountPath: /x }]`));
    const r = await klet(['mount-volumes', undeclared]);
    expect(r.code, explain(r)).not.toBe(0);
    expect(r.stderr).toContain('spec.containers[0].volumeMounts[0].name: Not found: "nope"');
    const big = write('big.yaml', `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: big }\ndata:\n  k: "${'x'.repeat(1024 * 1024 + 1)}"\n---\n` + podYaml(`    - name: v\n      configMap: { name: big }`));
    const b = await klet(['mount-volumes', big]);
    expect(b.code, explain(b)).not.toBe(0);
    expect(b.stderr).toContain('Too long: must have at most 1048576 bytes');
    expect(fs.existsSync(path.join(root, 'pods'))).toBe(false);
  });

  it('the example manifest its --help names sets up', async () => {
    const example = path.join(PROJECT_ROOT, 'examples', 'volumes', 'pod-with-volumes.yaml');
    const help = await runKlet(['mount-volumes', '--help']);
    expect(help.stdout).toContain('examples/volumes/pod-with-volumes.yaml');
    const r = await klet(['mount-volumes', example, '--dry-run']);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toContain('kubernetes.io~downward-api');
  });
});
