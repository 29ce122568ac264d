/**
 * Compare klet's systemd cgroup driver with the real kubelet's, on the same
 * real systemd and runtime: the machine's systemd as the init of private
 * namespaces (test/helpers/systemd-box.ts), a klet-managed containerd with
 * SystemdCgroup = true in it. One Guaranteed, one Burstable and one
 * BestEffort static pod run under the kubelet (standalone, --cgroup-driver
 * systemd, cgroupsPerQOS), then under `klet sync --cgroup-driver systemd`,
 * one at a time, the kubepods slices stopped in between. For each agent: the
 * kubepods units with their properties (systemctl show), the cgroup files of
 * kubepods, the QoS and pod slices, the containers' scopes, and the units
 * left once the manifests are removed. The two snapshots are diffed.
 *
 *   node --import tsx scripts/compare-systemd.ts [OUT_DIR]
 *
 * Needs root, a built klet, the kubelet of scripts/build-k8s.sh. Exit 0 when
 * the snapshots are the same, 1 with the diff otherwise.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { k8sBinDir } from '../test/helpers/cluster.js';
import { KLET_BIN } from '../test/helpers/cli.js';
import { sleeperPod, startSystemdBox, type SystemdBox } from '../test/helpers/systemd-box.js';

const out = process.argv[2] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'klet-compare-systemd-'));
fs.mkdirSync(out, { recursive: true });
const PROPS = ['Description', 'Wants', 'DefaultDependencies', 'CPUAccounting', 'MemoryAccounting', 'TasksAccounting', 'BlockIOAccounting', 'CPUShares', 'MemoryLimit', 'CPUQuotaPerSecUSec', 'CPUQuotaPeriodUSec', 'TasksMax', 'ActiveState'];
const FILES: Array<[string, string]> = [['cpu', 'cpu.shares'], ['cpu', 'cpu.cfs_period_us'], ['cpu', 'cpu.cfs_quota_us'], ['memory', 'memory.limit_in_bytes'], ['pids', 'pids.max']];

const pod = (name: string, resources: string[]): string => sleeperPod('sdcompare', name, resources);

const PODS: Record<string, string> = {
  guaranteed: pod('guaranteed', ['requests: {cpu: 500m, memory: 128Mi}', 'limits: {cpu: 500m, memory: 128Mi}']),
  burstable: pod('burstable', ['requests: {cpu: 250m, memory: 64Mi}', 'limits: {cpu: 500m, memory: 128Mi}']),
  besteffort: pod('besteffort', []),
};

async function sleep(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/** The unit names under kubepods.slice in the cpu hierarchy (pod uids and container ids replaced by stable names). */
function walk(box: SystemdBox, rel = 'kubepods.slice'): string[] {
  const dir = path.join(box.cgroupDir('cpu'), rel);
  if (!fs.existsSync(dir)) return [];
  const subs = fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => path.join(rel, e.name));
  return [rel, ...subs.flatMap((s) => walk(box, s))];
}

async function snapshot(box: SystemdBox, label: string): Promise<string> {
  const lines: string[] = [];
  const rename = (s: string) =>
    s
      .replace(/kubepods-pod[0-9a-f_]+\.slice/g, 'kubepods-pod<guaranteed>.slice')
      .replace(/kubepods-burstable-pod[0-9a-f_]+\.slice/g, 'kubepods-burstable-pod<burstable>.slice')
      .replace(/kubepods-besteffort-pod[0-9a-f_]+\.slice/g, 'kubepods-besteffort-pod<besteffort>.slice')
      .replace(/cri-containerd-[0-9a-f]{64}\.scope/g, 'cri-containerd-<id>.scope');
  const cgroups = walk(box);
  const scopes = new Map<string, number>();
  for (const rel of cgroups) {
    if (rel.endsWith('.scope')) {
      const k = rename(path.dirname(rel));
      scopes.set(k, (scopes.get(k) ?? 0) + 1);
      continue;
    }
    const unit = path.basename(rel);
    const shown = (await box.run(['systemctl', 'show', ...PROPS.map((p) => `-p${p}`), unit])).stdout.trim().split('\n').sort();
    lines.push(`${rename(rel)}:`);
    for (const s of shown) lines.push(`  unit ${rename(s)}`);
    for (const [controller, file] of FILES) {
      const f = path.join(box.cgroupDir(controller), rel, file);
      lines.push(`  ${controller}/${file} = ${fs.existsSync(f) ? fs.readFileSync(f, 'utf8').trim() : '(none)'}`);
    }
  }
  for (const [k, n] of [...scopes].sort()) lines.push(`${k}: ${n} container scopes`);
  const text = lines.join('\n') + '\n';
  fs.writeFileSync(path.join(out, `${label}.txt`), text);
  return text;
}

async function podsRunning(box: SystemdBox): Promise<boolean> {
  const all = walk(box);
  return ['kubepods-pod', 'kubepods-burstable-pod', 'kubepods-besteffort-pod'].every((p) => all.filter((c) => c.includes(`/${p}`) && c.endsWith('.scope') && /cri-containerd/.test(c)).length === 2);
}

async function units(box: SystemdBox): Promise<string> {
  return (await box.run(['systemctl', 'list-units', '--all', '--plain', '--no-legend', 'kubepods*'])).stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean)
    .sort()
    .join(' ');
}

async function agent(box: SystemdBox, root: string, endpoint: string, name: 'kubelet' | 'klet'): Promise<string> {
  const manifests = path.join(root, `manifests-${name}`);
  fs.mkdirSync(manifests, { recursive: true });
  for (const [n, y] of Object.entries(PODS)) fs.writeFileSync(path.join(manifests, `${n}.yaml`), y);
  let argv: string[];
  if (name === 'kubelet') {
    const dir = path.join(root, 'kubelet');
    fs.mkdirSync(path.join(dir, 'pod-logs'), { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'config.yaml'),
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        'enableServer: false',
        'authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}',
        'authorization: {mode: AlwaysAllow}',
        'readOnlyPort: 0',
        'healthzPort: 0',
        'cgroupDriver: systemd',
        'cgroupsPerQOS: true',
        'enforceNodeAllocatable: [pods]',
        'failSwapOn: false',
        'failCgroupV1: false',
        `staticPodPath: ${manifests}`,
        'fileCheckFrequency: 1s',
        `containerRuntimeEndpoint: ${endpoint}`,
        `podLogsDir: ${path.join(dir, 'pod-logs')}`,
        'resolvConf: /etc/resolv.conf',
        'evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}',
        '',
      ].join('\n'),
    );
    argv = [path.join(k8sBinDir(), 'kubelet'), `--config=${path.join(dir, 'config.yaml')}`, `--root-dir=${path.join(dir, 'root')}`, '--hostname-override=sdcompare', '--v=2'];
  } else {
    argv = [process.execPath, KLET_BIN, 'sync', '--manifest-dir', manifests, '--file-check-frequency', '1s', '--cgroup-driver', 'systemd', '--root-dir', root, '--container-runtime-endpoint', endpoint, '--node-name', 'sdcompare', '--log-level', 'debug'];
  }
  const log = fs.openSync(path.join(out, `${name}.log`), 'w');
  const proc = spawn('nsenter', ['-t', String(box.pid), '-a', '--', ...argv], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  try {
    const deadline = Date.now() + 90_000;
    while (!(await podsRunning(box))) {
      if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`${name}: the three pods did not run (see ${out}/${name}.log)`);
      await sleep(500);
    }
    await sleep(3000);
    const running = await snapshot(box, name);
    for (const f of fs.readdirSync(manifests)) fs.rmSync(path.join(manifests, f));
    const gone = Date.now() + 60_000;
    while (walk(box).some((c) => /pod[0-9a-f_]+\.slice$/.test(c))) {
      if (Date.now() > gone) break;
      await sleep(500);
    }
    await sleep(2000);
    return `${running}units left after the manifests were removed: ${await units(box)}\n`;
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
  }
}

const box = await startSystemdBox();
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-sdcmp-'));
const endpoint = `unix://${root}/containerd.sock`;
let differ = false;
try {
  const klet = (args: string[]) => box.run([process.execPath, KLET_BIN, ...args, '--root-dir', root, '--container-runtime-endpoint', endpoint]);
  const started = await klet(['runtime', 'start', '--cgroup-driver', 'systemd']);
  if (started.code !== 0) throw new Error(`klet runtime start: ${started.stderr}`);
  const kubelet = process.env.ONLY === 'klet' ? '' : await agent(box, root, endpoint, 'kubelet');
  await box.run(['systemctl', 'stop', 'kubepods.slice']);
  console.log('between the agents:', walk(box).join(' ') || '(nothing under kubepods.slice)');
  const kletText = await agent(box, root, endpoint, 'klet');
  fs.writeFileSync(path.join(out, 'kubelet.txt'), kubelet);
  fs.writeFileSync(path.join(out, 'klet.txt'), kletText);
  try {
    execFileSync('diff', ['-u', path.join(out, 'kubelet.txt'), path.join(out, 'klet.txt')], { stdio: 'inherit' });
    console.log(`same: ${out}/kubelet.txt and klet.txt`);
  } catch {
    differ = true;
  }
  await klet(['delete', '--all']);
  await klet(['runtime', 'stop']);
} finally {
  await box.stop();
  fs.rmSync(root, { recursive: true, force: true });
}
process.exit(differ ? 1 : 0);
