/**
 * `klet sync --config FILE`: a KubeletConfiguration as kubeadm v1.34 writes
 * /var/lib/kubelet/config.yaml, end to end with the built CLI and a private
 * containerd. A field changed in the file changes what the node does
 * (staticPodPath: which pods run; port: where the kubelet server listens); a
 * flag given wins over the file; an unknown field is a one-line error and
 * leaves nothing behind; --print-config shows the effective values.
 */
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/lib/cri/index.js';
import { explain, runKlet } from '../helpers/cli.js';
import { freePort } from '../helpers/cluster.js';
import { podYaml, SLEEP_FOREVER } from '../helpers/manifests.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { eventually, killAllSyncs, startSync } from '../helpers/sync.js';
import { KUBEADM_CONFIG_HERE as KUBEADM_CONFIG } from '../helpers/kubeadm-config.js';

const NODE = 'cfgnode';
const NS = 'kcfgt';

let rt: TestRuntime;
let cri: CriClient;
let tmp: string;

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
});

afterEach(async () => {
  await killAllSyncs();
  if (rt) await wipeNode(cri, rt.rootDir, NS);
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

afterAll(async () => {
  await killAllSyncs();
  cri?.close();
  await rt?.stop();
});

/** GET a path of the kubelet server (TLS unverified: its certificate is self-signed here). */
function kubeletGet(port: number, urlPath: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path: urlPath, rejectUnauthorized: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (s: string) => (body += s));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once('timeout', () => req.destroy(new Error('no answer')));
    req.once('error', reject);
  });
}

/** The names of this file's pods running in the runtime. */
async function podNames(): Promise<string[]> {
  const { items } = await cri.listPodSandbox({ filter: { labelSelector: { 'io.kubernetes.pod.namespace': NS } } });
  return items.filter((s) => s.state === 0).map((s) => s.metadata?.name ?? '').sort();
}

/**
 * kubeadm's config.yaml for a node whose manifests are in `manifestDir`, its
 * kubelet server on `port` (standalone: anonymous requests allowed,
 * AlwaysAllow; without `ca`, no client CA file, which this host does not have).
 */
function kubeadmConfig(manifestDir: string, port: number, ca = false, healthzPort = 0): string {
  return KUBEADM_CONFIG.replace('healthzPort: 10248', `healthzPort: ${healthzPort}`).replace('clientCAFile: /etc/kubernetes/pki/ca.crt', ca ? 'clientCAFile: /etc/kubernetes/pki/ca.crt' : 'clientCAFile: ""').replace('staticPodPath: /etc/kubernetes/manifests', `staticPodPath: ${manifestDir}`)
    .replace('authentication:\n  anonymous:\n    enabled: false', 'authentication:\n  anonymous:\n    enabled: true')
    .replace('  mode: Webhook', '  mode: AlwaysAllow')
    .replace('  webhook:\n    cacheTTL: 0s\n    enabled: true', '  webhook:\n    cacheTTL: 0s\n    enabled: false')
    .replace('kind: KubeletConfiguration', `kind: KubeletConfiguration\nport: ${port}`);
}

function setup(): { dirA: string; dirB: string; file: string } {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-config-'));
  const dirA = path.join(tmp, 'manifests-a');
  const dirB = path.join(tmp, 'manifests-b');
  fs.mkdirSync(dirA);
  fs.mkdirSync(dirB);
  fs.writeFileSync(path.join(dirA, 'a.yaml'), podYaml({ name: 'from-file', namespace: NS, image: rt.images.busybox, script: SLEEP_FOREVER }));
  fs.writeFileSync(path.join(dirB, 'b.yaml'), podYaml({ name: 'from-flag', namespace: NS, image: rt.images.busybox, script: SLEEP_FOREVER }));
  return { dirA, dirB, file: path.join(tmp, 'config.yaml') };
}

describe('klet sync --config', () => {
  it('the file\'s staticPodPath, port and healthzPort take effect; nothing in it is left unimplemented', async () => {
    const { dirA, file } = setup();
    const [port, healthzPort] = [await freePort(), await freePort()];
    fs.writeFileSync(file, kubeadmConfig(dirA, port, false, healthzPort));
    const s = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, args: ['--config', file] });
    await eventually(async () => expect(await podNames(), s.tail()).toEqual([`from-file-${NODE}`]), 30_000);
    expect(s.stderr).not.toContain('cgroupDriver'); // taken (cgroupfs on this host: KUBEADM_CONFIG_HERE)
    expect(s.stderr).not.toMatch(/not implemented/);
    // What kubeadm waits on: plain HTTP on 127.0.0.1, no credentials.
    const healthz = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${healthzPort}/healthz`);
      return { status: r.status, body: await r.text() };
    });
    expect(healthz).toEqual({ status: 200, body: 'ok' });
    // The system log handler is on by default: /logs/ lists the node's /var/log.
    const logs = await kubeletGet(port, '/logs/');
    expect(logs.status, logs.body).toBe(200);
    expect(logs.body).toMatch(/^<!doctype html>\n/);
    expect(s.stderr).not.toMatch(/cpuManagerReconcilePeriod|memorySwap|logging/); // zero values: not set
    const configz = await eventually(async () => kubeletGet(port, '/configz'));
    expect(configz.status, configz.body).toBe(200);
    expect(JSON.parse(configz.body).kubeletconfig).toMatchObject({ staticPodPath: dirA, port, authorization: { mode: 'AlwaysAllow' } });
    await s.stop();
  });

  it('the file\'s podLogsDir is where the pods\' logs go (not /var/log/pods), and the kubelet server serves them from there', async () => {
    const { dirA, file } = setup();
    const port = await freePort();
    const logs = path.join(tmp, 'pod-logs');
    fs.writeFileSync(path.join(dirA, 'a.yaml'), podYaml({ name: 'from-file', namespace: NS, image: rt.images.busybox, script: `echo written-under-podLogsDir; ${SLEEP_FOREVER}` }));
    fs.writeFileSync(file, kubeadmConfig(dirA, port).replace('kind: KubeletConfiguration', `kind: KubeletConfiguration\npodLogsDir: ${logs}`));
    const s = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, args: ['--config', file] });
    const prefix = `${NS}_from-file-${NODE}_`;
    const dir = await eventually(async () => {
      const d = (fs.existsSync(logs) ? fs.readdirSync(logs) : []).find((x) => x.startsWith(prefix));
      expect(d, s.tail()).toBeDefined();
      expect(fs.readFileSync(path.join(logs, d!, 'c', '0.log'), 'utf8')).toContain('written-under-podLogsDir');
      return d!;
    }, 30_000);
    expect(s.stderr).not.toContain('podLogsDir');
    expect(fs.existsSync(path.join('/var/log/pods', dir))).toBe(false);
    const r = await eventually(async () => kubeletGet(port, `/containerLogs/${NS}/from-file-${NODE}/c`));
    expect(r, r.body).toEqual({ status: 200, body: 'written-under-podLogsDir\n' });
    const configz = await kubeletGet(port, '/configz');
    expect(JSON.parse(configz.body).kubeletconfig).toMatchObject({ podLogsDir: logs });
    // The pod's removal takes its log dir from there.
    fs.rmSync(path.join(dirA, 'a.yaml'));
    await eventually(async () => expect(fs.existsSync(path.join(logs, dir)), s.tail()).toBe(false), 30_000);
    await s.stop();
  });

  it("the file's seccompDefault: containers that name no seccomp profile run under the runtime's default, a named Unconfined stays unconfined; the sandbox always runs under the default", async () => {
    const { dirA, file } = setup();
    const port = await freePort();
    const show = (name: string, profile = '') =>
      [
        `    - name: ${name}`,
        `      image: ${rt.images.busybox}`,
        `      command: ["sh", "-c", ${JSON.stringify(`grep Seccomp: /proc/self/status; ${SLEEP_FOREVER}`)}]`,
        ...(profile ? [`      securityContext: {seccompProfile: {type: ${profile}}}`] : []),
      ].join('\n');
    fs.writeFileSync(
      path.join(dirA, 'a.yaml'),
      ['apiVersion: v1', 'kind: Pod', 'metadata:', '  name: from-file', `  namespace: ${NS}`, 'spec:', '  terminationGracePeriodSeconds: 1', '  containers:', show('plain'), show('unconfined', 'Unconfined'), ''].join('\n'),
    );
    fs.writeFileSync(file, kubeadmConfig(dirA, port).replace('kind: KubeletConfiguration', 'kind: KubeletConfiguration\nseccompDefault: true'));
    const s = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, args: ['--config', file] });
    // Seccomp: 2 is a filter (the runtime's default profile), 0 none.
    const logOf = (c: string) => eventually(async () => {
      const r = await kubeletGet(port, `/containerLogs/${NS}/from-file-${NODE}/${c}`);
      expect(r.body, s.tail()).toMatch(/Seccomp:/);
      return r.body.trim();
    }, 30_000);
    expect(await logOf('plain')).toBe('Seccomp:\t2');
    expect(await logOf('unconfined')).toBe('Seccomp:\t0');
    const { items } = await cri.listPodSandbox({ filter: { labelSelector: { 'io.kubernetes.pod.namespace': NS } } });
    const { info } = await cri.podSandboxStatus({ podSandboxId: items[0]!.id, verbose: true });
    const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid ?? 0;
    expect(pid).toBeGreaterThan(0);
    expect(fs.readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^Seccomp:\t2$/m);
    const configz = await kubeletGet(port, '/configz');
    expect(JSON.parse(configz.body).kubeletconfig).toMatchObject({ seccompDefault: true });
    await s.stop();
  });

  it("the file's enableSystemLogHandler: false turns the kubelet server's /logs/ off with the kubelet's answer", async () => {
    const { dirA, file } = setup();
    const port = await freePort();
    fs.writeFileSync(file, kubeadmConfig(dirA, port).replace('kind: KubeletConfiguration', 'kind: KubeletConfiguration\nenableSystemLogHandler: false'));
    const s = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, args: ['--config', file] });
    const logs = await eventually(async () => kubeletGet(port, '/logs/'));
    expect(logs).toEqual({ status: 405, body: 'logs endpoint is disabled.\n' });
    expect(JSON.parse((await kubeletGet(port, '/configz')).body).kubeletconfig).toMatchObject({ enableSystemLogHandler: false });
    await s.stop();
  });

  it('flags win over the file: --manifest-dir and --port', async () => {
    const { dirA, dirB, file } = setup();
    const [portFile, portFlag] = [await freePort(), await freePort()];
    fs.writeFileSync(file, kubeadmConfig(dirA, portFile));
    const s = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir: dirB, args: ['--config', file, '--port', String(portFlag)] });
    await eventually(async () => expect(await podNames(), s.tail()).toEqual([`from-flag-${NODE}`]), 30_000);
    const configz = await eventually(async () => kubeletGet(portFlag, '/configz'));
    expect(JSON.parse(configz.body).kubeletconfig).toMatchObject({ staticPodPath: dirB, port: portFlag });
    await expect(kubeletGet(portFile, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
    await s.stop();
  });

  it('the file\'s containerRuntimeEndpoint is the runtime the node uses when no flag names one', async () => {
    const { dirA, file } = setup();
    fs.writeFileSync(file, KUBEADM_CONFIG.replace('healthzPort: 10248', 'healthzPort: 0').replace('staticPodPath: /etc/kubernetes/manifests', `staticPodPath: ${dirA}`).replace('containerRuntimeEndpoint: ""', `containerRuntimeEndpoint: ${rt.endpoint}`));
    const s = await startSync({ rootDir: rt.rootDir, endpoint: undefined, nodeName: NODE, args: ['--config', file] });
    await eventually(async () => expect(await podNames(), s.tail()).toEqual([`from-file-${NODE}`]), 30_000);
    expect(s.stderr).not.toContain('klet-managed containerd');
    await s.stop();
  });

  it('an unknown field: a one-line error naming file:line and the field, exit 2, nothing made (no root dir, no runtime contact)', async () => {
    const { dirA, file } = setup();
    const text = kubeadmConfig(dirA, 10250).replace('rotateCertificates: true', 'rotateCertificates: true\nrotateCertificate: true');
    fs.writeFileSync(file, text);
    const line = text.split('\n').indexOf('rotateCertificate: true') + 1;
    const rootDir = path.join(tmp, 'root');
    const missing = `unix://${path.join(tmp, 'no-containerd.sock')}`;
    const r = await runKlet(['sync', '--config', file, '--root-dir', rootDir, '--container-runtime-endpoint', missing, '--node-name', NODE]);
    expect(r.code, explain(r)).toBe(2);
    expect(r.stderr.trim().split('\n'), explain(r)).toEqual([`error: ${file}:${line}: unknown field "rotateCertificate" (not a field of kubelet.config.k8s.io/v1beta1 KubeletConfiguration)`]);
    expect(fs.existsSync(rootDir)).toBe(false);
    // klet join checks it before discovery: nothing written either.
    const j = await runKlet(['join', '127.0.0.1:1', '--token', 'abcdef.0123456789abcdef', '--discovery-token-unsafe-skip-ca-verification', '--config', file, '--root-dir', rootDir, '--container-runtime-endpoint', missing]);
    expect(j.code, explain(j)).toBe(2);
    expect(j.stderr).toContain('unknown field "rotateCertificate"');
    expect(fs.existsSync(rootDir)).toBe(false);
  });

  it('a bad cgroup or image GC setting from the file: one line naming file:line and the field (not the flag), exit 2, nothing made', async () => {
    const { dirA, file } = setup();
    const rootDir = path.join(tmp, 'root');
    const missing = `unix://${path.join(tmp, 'no-containerd.sock')}`;
    const header = `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: ${dirA}\n`;
    const absent = `/klet-config-test-${process.pid}-absent`;
    for (const [field, error] of [
      ['imageGCHighThresholdPercent: 101', 'imageGCHighThresholdPercent 101: invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive'],
      ['enforceNodeAllocatable: [bogus]', 'enforceNodeAllocatable bogus: invalid configuration: option "bogus" specified for enforceNodeAllocatable (--enforce-node-allocatable).'],
      ['cgroupRoot: klet', 'cgroupRoot klet: must be an absolute cgroupfs path (e.g. / or /klet)'],
      [`cgroupRoot: ${absent}`, `cgroupRoot ${absent}: invalid configuration: cgroup "${absent}" has some missing paths: `],
      ['cgroupsPerQOS: false', 'cgroupsPerQOS false, --enforce-node-allocatable pods: invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when "pods" contained'],
      ['cgroupDriver: upstart', 'cgroupDriver upstart: invalid configuration: cgroupDriver (--cgroup-driver) must be cgroupfs or systemd'],
      // kubeadm's value, on a host whose init is not systemd (as this one): refused before anything starts, as the kubelet refuses it.
      ...(fs.existsSync('/run/systemd/system') ? [] : [['cgroupDriver: systemd', 'cgroupDriver systemd: cannot reach systemd over D-Bus'] as const]),
    ] as const) {
      fs.writeFileSync(file, `${header}${field}\n`);
      const r = await runKlet(['sync', '--config', file, '--root-dir', rootDir, '--container-runtime-endpoint', missing, '--node-name', NODE]);
      expect(r.code, explain(r)).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines, explain(r)).toHaveLength(1);
      expect(lines[0], explain(r)).toContain(`error: ${file}:4: ${error}`);
      expect(fs.existsSync(rootDir)).toBe(false);
    }
    // The same values given as flags are named by their flags.
    fs.writeFileSync(file, header);
    const r = await runKlet(['sync', '--config', file, '--cgroup-root', 'klet', '--root-dir', rootDir, '--container-runtime-endpoint', missing, '--node-name', NODE]);
    expect(r.code, explain(r)).toBe(2);
    expect(r.stderr.trim(), explain(r)).toBe('error: --cgroup-root klet: must be an absolute cgroupfs path (e.g. / or /klet)');
  });

  // This host is cgroup v1 (hybrid: /sys/fs/cgroup a tmpfs of v1 controllers); on a cgroup v2 host failCgroupV1: true is fine (unit tests).
  it(
    "failCgroupV1: true: on a cgroup v1 host the kubelet v1.37's message naming file:line and the field, exit 2, nothing made or run; on cgroup v2 accepted",
    async () => {
      const { dirA, file } = setup();
      const text = `${kubeadmConfig(dirA, 10250)}failCgroupV1: true\n`;
      fs.writeFileSync(file, text);
      const line = text.split('\n').indexOf('failCgroupV1: true') + 1;
      const rootDir = path.join(tmp, 'root');
      if (fs.existsSync('/sys/fs/cgroup/cgroup.controllers')) {
        // cgroup v2: nothing to refuse; the configuration is valid as it stands.
        const ok = await runKlet(['sync', '--config', file, '--print-config', '--root-dir', rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs: 30_000 });
        expect(ok.code, explain(ok)).toBe(0);
        expect(ok.stdout).toMatch(/^kind: KubeletConfiguration$/m);
        return;
      }
      // The test runtime's endpoint and a manifest dir with a pod in it: had klet started, the pod would run.
      const r = await runKlet(['sync', '--config', file, '--root-dir', rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs: 30_000 });
      expect(r.code, explain(r)).toBe(2);
      expect(r.stderr.trim().split('\n'), explain(r)).toEqual([
        `error: ${file}:${line}: failCgroupV1 true: kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release`,
      ]);
      expect(fs.existsSync(rootDir)).toBe(false);
      expect(await podNames()).toEqual([]);
      // --print-config checks it too, as the kubelet validates before anything.
      const p = await runKlet(['sync', '--config', file, '--print-config', '--root-dir', rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs: 30_000 });
      expect(p.code, explain(p)).toBe(2);
      expect(p.stdout).toBe('');
      expect(fs.existsSync(rootDir)).toBe(false);
    },
  );

  it('--print-config prints the effective configuration (defaults, file, flags) and exits 0 without starting anything', async () => {
    const { dirA, file } = setup();
    fs.writeFileSync(file, kubeadmConfig(dirA, 10260, true).replace('syncFrequency: 0s', 'syncFrequency: 30s'));
    const rootDir = path.join(tmp, 'root');
    const r = await runKlet(['sync', '--config', file, '--max-pods', '42', '--print-config', '--root-dir', rootDir, '--container-runtime-endpoint', `unix://${path.join(tmp, 'none.sock')}`]);
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/^apiVersion: kubelet.config.k8s.io\/v1beta1\nkind: KubeletConfiguration\n/);
    for (const line of [`staticPodPath: ${dirA}`, 'port: 10260', 'maxPods: 42', 'syncFrequency: 30s', 'fileCheckFrequency: 20s', 'clientCAFile: /etc/kubernetes/pki/ca.crt', `containerRuntimeEndpoint: unix://${path.join(tmp, 'none.sock')}`]) {
      expect(r.stdout).toContain(line);
    }
    expect(fs.existsSync(rootDir)).toBe(false);
  });
});
