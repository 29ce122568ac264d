/**
 * The systemd cgroup driver (--cgroup-driver systemd) against a real systemd
 * and a klet-managed containerd whose runc uses systemd cgroups
 * (SystemdCgroup = true), all in a test box (test/helpers/systemd-box.ts:
 * systemd as the init of private namespaces, its cgroups under a cgroup of
 * this test's own). Pods land in the kubelet's slices with its settings, both
 * as unit properties and in the cgroup files, their containers are runc's
 * scopes inside them, and a removed pod's slice is stopped.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KLET_BIN } from '../helpers/cli.js';
import { sleeperPod, startSystemdBox, type BoxResult, type SystemdBox } from '../helpers/systemd-box.js';

let box: SystemdBox;
let rootDir: string;
let manifests: string;
let endpoint: string;

function explainBox(r: BoxResult): string {
  return `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
}

async function klet(args: string[]): Promise<BoxResult> {
  return box.run([process.execPath, KLET_BIN, ...args, '--root-dir', rootDir, '--container-runtime-endpoint', endpoint], { env: { ...process.env, NO_COLOR: '1' } });
}

const pod = (name: string, resources: string[]): string => sleeperPod('sdtest', name, resources);

/** The one child cgroup of `dir` whose name matches. */
function onlyChild(dir: string, re: RegExp): string {
  const names = fs.readdirSync(dir).filter((n) => re.test(n));
  expect(names, `${dir}: ${fs.readdirSync(dir).join(' ')}`).toHaveLength(1);
  return names[0]!;
}

function read(controller: string, rel: string, file: string): string {
  return fs.readFileSync(path.join(box.cgroupDir(controller), rel, file), 'utf8').trim();
}

beforeAll(async () => {
  box = await startSystemdBox();
  rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-sd-'));
  endpoint = `unix://${rootDir}/containerd.sock`;
  manifests = path.join(rootDir, 'manifests');
  fs.mkdirSync(manifests);
  const started = await klet(['runtime', 'start', '--cgroup-driver', 'systemd']);
  expect(started.code, explainBox(started)).toBe(0);
}, 180_000);

afterAll(async () => {
  if (box) {
    await klet(['delete', '--all']).catch(() => undefined);
    await klet(['runtime', 'stop']).catch(() => undefined);
    await box.stop();
  }
  if (rootDir) fs.rmSync(rootDir, { recursive: true, force: true });
}, 180_000);

describe('klet with --cgroup-driver systemd on a real systemd', () => {
  it("makes the kubelet's slices, with its settings as unit properties and in the cgroup files; containers are runc's scopes in them; a removed pod's slice is stopped", async () => {
    const limits = ['requests: {cpu: 500m, memory: 128Mi}', 'limits: {cpu: 500m, memory: 128Mi}'];
    fs.writeFileSync(path.join(manifests, 'guaranteed.yaml'), pod('guaranteed', limits));
    fs.writeFileSync(path.join(manifests, 'burstable.yaml'), pod('burstable', ['requests: {cpu: 250m, memory: 64Mi}', 'limits: {cpu: 500m, memory: 128Mi}']));
    fs.writeFileSync(path.join(manifests, 'besteffort.yaml'), pod('besteffort', []));
    const ran = await klet(['runonce', '--manifest-dir', manifests, '--cgroup-driver', 'systemd', '--wait', 'running', '--timeout', '90s']);
    expect(ran.code, explainBox(ran)).toBe(0);

    // The kubelet's names: kubepods.slice, kubepods-<qos>.slice, kubepods[-<qos>]-pod<uid with _ for ->.slice.
    const guaranteed = `kubepods.slice/${onlyChild(path.join(box.cgroupDir('cpu'), 'kubepods.slice'), /^kubepods-pod.+\.slice$/)}`;
    const burstable = `kubepods.slice/kubepods-burstable.slice/${onlyChild(path.join(box.cgroupDir('cpu'), 'kubepods.slice/kubepods-burstable.slice'), /^kubepods-burstable-pod.+\.slice$/)}`;
    const besteffort = `kubepods.slice/kubepods-besteffort.slice/${onlyChild(path.join(box.cgroupDir('cpu'), 'kubepods.slice/kubepods-besteffort.slice'), /^kubepods-besteffort-pod.+\.slice$/)}`;

    // The cgroup files, as the kubelet's pod container manager sets them.
    expect(read('cpu', guaranteed, 'cpu.shares')).toBe('512');
    expect(read('cpu', guaranteed, 'cpu.cfs_quota_us')).toBe('50000');
    expect(read('memory', guaranteed, 'memory.limit_in_bytes')).toBe(String(128 * 1024 * 1024));
    expect(read('cpu', burstable, 'cpu.shares')).toBe('256');
    expect(read('cpu', burstable, 'cpu.cfs_quota_us')).toBe('50000');
    expect(read('memory', burstable, 'memory.limit_in_bytes')).toBe(String(128 * 1024 * 1024));
    expect(read('cpu', besteffort, 'cpu.shares')).toBe('2');
    expect(read('cpu', 'kubepods.slice/kubepods-besteffort.slice', 'cpu.shares')).toBe('2');
    expect(read('cpu', 'kubepods.slice/kubepods-burstable.slice', 'cpu.shares')).toBe('256');

    // systemd's units carry the same settings (or it would write its own back).
    const unit = path.basename(burstable);
    const shown = await box.run(['systemctl', 'show', '-p', 'CPUShares', '-p', 'MemoryLimit', '-p', 'CPUQuotaPerSecUSec', '-p', 'ActiveState', unit]);
    expect(shown.code, explainBox(shown)).toBe(0);
    expect(shown.stdout.trim().split('\n').sort()).toEqual(['ActiveState=active', 'CPUQuotaPerSecUSec=500ms', 'CPUShares=256', `MemoryLimit=${128 * 1024 * 1024}`]);

    // runc put the sandbox and the container in the pod's slice as scopes (containerd's cgroup_parent was the slice).
    const scopes = fs.readdirSync(path.join(box.cgroupDir('cpu'), burstable)).filter((n) => /^cri-containerd-[0-9a-f]{64}\.scope$/.test(n));
    expect(scopes).toHaveLength(2);
    const procs = fs.readFileSync(path.join(box.cgroupDir('name=systemd'), burstable, scopes[0]!, 'cgroup.procs'), 'utf8').trim().split('\n').filter(Boolean);
    expect(procs.length).toBeGreaterThan(0);

    // klet recorded what it made: the slices' paths.
    const recorded = fs.readdirSync(path.join(rootDir, 'cgroups')).map(decodeURIComponent).sort();
    expect(recorded).toEqual(['/kubepods.slice', '/kubepods.slice/kubepods-besteffort.slice', '/kubepods.slice/kubepods-burstable.slice', `/${besteffort}`, `/${burstable}`, `/${guaranteed}`].sort());

    // Deleting the pods stops their slices (systemd forgets them) and removes their cgroups; kubepods and the QoS slices stay, as the kubelet leaves them.
    const deleted = await klet(['delete', '--all']);
    expect(deleted.code, explainBox(deleted)).toBe(0);
    const units = await box.run(['systemctl', 'list-units', '--all', '--plain', '--no-legend', 'kubepods*']);
    expect(units.stdout.split('\n').map((l) => l.trim().split(/\s+/)[0]).filter(Boolean).sort()).toEqual(['kubepods-besteffort.slice', 'kubepods-burstable.slice', 'kubepods.slice']);
    for (const slice of [guaranteed, burstable, besteffort]) {
      for (const controller of ['cpu', 'memory', 'name=systemd', 'cpuset']) expect(fs.existsSync(path.join(box.cgroupDir(controller), slice)), `${controller} ${slice}`).toBe(false);
    }
    expect(fs.readdirSync(path.join(rootDir, 'cgroups')).map(decodeURIComponent).sort()).toEqual(['/kubepods.slice', '/kubepods.slice/kubepods-besteffort.slice', '/kubepods.slice/kubepods-burstable.slice']);
  }, 240_000);

  it('klet sync: a pod added to the manifest dir gets its slice; removed, its slice is stopped', async () => {
    for (const f of fs.readdirSync(manifests)) fs.rmSync(path.join(manifests, f));
    const log = path.join(rootDir, 'sync.log');
    const fd = fs.openSync(log, 'w');
    const sync = spawn('nsenter', ['-t', String(box.pid), '-a', '--', process.execPath, KLET_BIN, 'sync', '--manifest-dir', manifests, '--file-check-frequency', '1s', '--cgroup-driver', 'systemd', '--root-dir', rootDir, '--container-runtime-endpoint', endpoint, '--node-name', 'sdtest'], { stdio: ['ignore', fd, fd], env: { ...process.env, NO_COLOR: '1' } });
    fs.closeSync(fd);
    const burstableDir = path.join(box.cgroupDir('cpu'), 'kubepods.slice/kubepods-burstable.slice');
    const podSlices = () => fs.readdirSync(burstableDir).filter((n) => /^kubepods-burstable-pod.+\.slice$/.test(n));
    const until = async (what: string, ok: () => boolean | Promise<boolean>) => {
      const deadline = Date.now() + 60_000;
      while (!(await ok())) {
        if (Date.now() > deadline || sync.exitCode !== null) throw new Error(`${what}; klet sync's log:\n${fs.readFileSync(log, 'utf8')}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    try {
      fs.writeFileSync(path.join(manifests, 'web.yaml'), pod('web', ['requests: {cpu: 100m, memory: 32Mi}', 'limits: {memory: 64Mi}']));
      await until('the pod slice with its two scopes', () => podSlices().length === 1 && fs.readdirSync(path.join(burstableDir, podSlices()[0]!)).filter((n) => n.endsWith('.scope')).length === 2);
      const unit = podSlices()[0]!;
      expect(read('memory', `kubepods.slice/kubepods-burstable.slice/${unit}`, 'memory.limit_in_bytes')).toBe(String(64 * 1024 * 1024));
      expect((await box.run(['systemctl', 'show', '-p', 'ActiveState', '-p', 'MemoryLimit', unit])).stdout.trim().split('\n').sort()).toEqual(['ActiveState=active', `MemoryLimit=${64 * 1024 * 1024}`]);
      fs.rmSync(path.join(manifests, 'web.yaml'));
      await until('the pod slice stopped', async () => podSlices().length === 0 && (await box.run(['systemctl', 'list-units', '--all', '--plain', '--no-legend', unit])).stdout.trim() === '');
    } finally {
      sync.kill('SIGTERM');
      await new Promise((r) => sync.once('exit', r));
    }
    expect(fs.readFileSync(log, 'utf8')).not.toMatch(/error|Error/);
  }, 180_000);
});
