/**
 * Pod DNS and /etc/hosts end to end: `klet sync` (the built CLI) with a
 * private containerd, each pod's /etc/resolv.conf, /etc/hosts and hostname
 * read from inside its container (CRI exec), for each dnsPolicy, with and
 * without --cluster-dns, the host network with hostAliases, a subdomain.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ContainerState, CriClient } from '../../src/lib/cri/index.js';
import { explain, runKlet } from '../helpers/cli.js';
import { startTestRuntime, wipeNode, type TestRuntime } from '../helpers/runtime.js';
import { apiEvents, eventually, killAllSyncs, startSync, type SyncProcess } from '../helpers/sync.js';

const NODE = 'testnode';
const NS = 'kdns';
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";
const LOCALHOST =
  '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';

let rt: TestRuntime;
let cri: CriClient;
const tempDirs: string[] = [];

function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `klet-dns-${prefix}-`));
  tempDirs.push(d);
  return d;
}

/** The node's resolver file for the test: what Default pods start from. */
function resolvConf(): string {
  const file = path.join(tempDir('resolv'), 'resolv.conf');
  fs.writeFileSync(file, '# test\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nsearch corp.example lab.example.\noptions edns0 ndots:2\n');
  return file;
}

function manifest(dir: string, name: string, spec: Record<string, unknown>): void {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: rt.images.busybox, command: ['sh', '-c', SLEEP_FOREVER] }], ...spec },
  };
  fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(pod));
}

function sync(dir: string, args: string[]): Promise<SyncProcess> {
  return startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, nodeName: NODE, manifestDir: dir, fileCheckFrequency: '1s', args });
}

/** The running container of static pod `name` (throws until there is one: use with eventually). */
async function running(name: string): Promise<string> {
  const labels = { 'io.kubernetes.pod.name': `${name}-${NODE}`, 'io.kubernetes.pod.namespace': NS };
  const list = (await cri.listContainers({ filter: { labelSelector: labels } })).containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
  if (list.length !== 1) throw new Error(`pod ${name}: ${list.length} running containers`);
  return list[0]!.id;
}

async function exec(containerId: string, script: string): Promise<string> {
  const r = await cri.execSync({ containerId, cmd: ['sh', '-c', script], timeout: 20n });
  const out = Buffer.from(r.stdout).toString('utf8');
  if (r.exitCode !== 0) throw new Error(`exec ${script}: exit ${r.exitCode}: ${out} ${Buffer.from(r.stderr).toString('utf8')}`);
  return out;
}

/** /etc/resolv.conf, /etc/hosts and the hostname inside pod `name`'s container, once it runs. */
async function inside(name: string, s: SyncProcess): Promise<{ resolv: string; hosts: string; hostname: string; podIP: string }> {
  const id = await eventually(() => running(name), 60_000, 250).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${s.tail()}`);
  });
  const sandbox = (await cri.containerStatus({ containerId: id })).status?.labels['io.kubernetes.pod.uid'] ?? '';
  const sb = (await cri.listPodSandbox({ filter: { labelSelector: { 'io.kubernetes.pod.uid': sandbox } } })).items[0];
  const podIP = sb ? ((await cri.podSandboxStatus({ podSandboxId: sb.id })).status?.network?.ip ?? '') : '';
  return { resolv: await exec(id, 'cat /etc/resolv.conf'), hosts: await exec(id, 'cat /etc/hosts'), hostname: (await exec(id, 'hostname')).trim(), podIP };
}

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 30_000 });
});

afterEach(async () => {
  await killAllSyncs();
  if (rt) await wipeNode(cri, rt.rootDir, NS);
  for (const d of tempDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

afterAll(async () => {
  await killAllSyncs();
  cri?.close();
  await rt?.stop();
});

describe('with --cluster-dns and --cluster-domain', () => {
  it('each dnsPolicy gets the kubelet\'s resolv.conf; a subdomain, hostAliases and the host network their /etc/hosts', async () => {
    const dir = tempDir('m');
    const resolv = resolvConf();
    manifest(dir, 'cf', { hostname: 'box', subdomain: 'db', hostAliases: [{ ip: '123.45.67.89', hostnames: ['foo', 'bar'] }] });
    manifest(dir, 'fqdn', { hostname: 'box', subdomain: 'db', setHostnameAsFQDN: true });
    manifest(dir, 'dflt', { dnsPolicy: 'Default' });
    manifest(dir, 'none', {
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['1.1.1.1', '1.0.0.1'], searches: ['x.example', 'x.example'], options: [{ name: 'ndots', value: '1' }, { name: 'edns0' }] },
    });
    manifest(dir, 'cf-ns', { dnsConfig: { nameservers: ['1.1.1.1', '1.0.0.1', '8.8.8.8'] } });
    manifest(dir, 'hostnet', { hostNetwork: true, hostAliases: [{ ip: '123.45.67.89', hostnames: ['foo', 'bar'] }] });
    manifest(dir, 'hostnet-cf', { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet', dnsConfig: { options: [{ name: 'ndots', value: '3' }] } });
    const s = await sync(dir, ['--cluster-dns', '10.96.0.10', '--cluster-domain', 'cluster.local', '--resolv-conf', resolv]);

    const cf = await inside('cf', s);
    expect(lines(cf.resolv)).toEqual(['search kdns.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example', 'nameserver 10.96.0.10', 'options ndots:5']);
    expect(cf.hostname).toBe('box');
    expect(cf.podIP).not.toBe('');
    expect(cf.hosts).toBe(
      `# Kubernetes-managed hosts file.\n${LOCALHOST}${cf.podIP}\tbox.db.kdns.svc.cluster.local\tbox\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n`,
    );

    expect((await inside('fqdn', s)).hostname).toBe('box.db.kdns.svc.cluster.local');

    expect(lines((await inside('dflt', s)).resolv)).toEqual(['search corp.example lab.example', 'nameserver 10.0.0.2', 'nameserver 10.0.0.3', 'options edns0 ndots:2']);

    expect(lines((await inside('none', s)).resolv)).toEqual(['search x.example', 'nameserver 1.1.1.1', 'nameserver 1.0.0.1', 'options ndots:1 edns0']);
    // The cluster's nameserver and the pod's three: three at most, with the kubelet's DNSConfigForming event.
    expect(lines((await inside('cf-ns', s)).resolv)).toEqual([
      'search kdns.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example',
      'nameserver 10.96.0.10',
      'nameserver 1.1.1.1',
      'nameserver 1.0.0.1',
      'options ndots:5',
    ]);
    const forming = (await apiEvents(s.socketPath)).filter((e) => e.kind === 'Event' && e.reason === 'DNSConfigForming');
    expect(forming.map((e) => [e.pod, e.type, e.message])).toContainEqual([
      `${NS}/cf-ns-${NODE}`,
      'Warning',
      'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.96.0.10 1.1.1.1 1.0.0.1',
    ]);

    // The host network: the node's own /etc/hosts under the kubelet's header, then the aliases (a conformance spec);
    // ClusterFirst there is Default.
    const hn = await inside('hostnet', s);
    expect(hn.hosts).toBe(`# Kubernetes-managed hosts file (host network).\n${fs.readFileSync('/etc/hosts', 'utf8')}\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n`);
    expect(hn.hostname).toBe(os.hostname());
    expect(lines(hn.resolv)).toEqual(['search corp.example lab.example', 'nameserver 10.0.0.2', 'nameserver 10.0.0.3', 'options edns0 ndots:2']);

    const hcf = await inside('hostnet-cf', s);
    expect(lines(hcf.resolv)).toEqual(['search kdns.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example', 'nameserver 10.96.0.10', 'options ndots:3']);
    expect(hcf.hosts).toBe(`# Kubernetes-managed hosts file (host network).\n${fs.readFileSync('/etc/hosts', 'utf8')}`);
    // No MissingClusterDNS with a cluster DNS.
    expect((await apiEvents(s.socketPath)).filter((e) => e.reason === 'MissingClusterDNS')).toEqual([]);
  });
});

describe('without --cluster-dns (the kubelet\'s default)', () => {
  it('ClusterFirst falls back to Default with MissingClusterDNS about the pod and the node; --resolv-conf "" gives a loopback nameserver', async () => {
    const dir = tempDir('m');
    manifest(dir, 'cf', { subdomain: 'db' });
    const s = await sync(dir, ['--resolv-conf', '']);
    const cf = await inside('cf', s);
    expect(lines(cf.resolv)).toEqual(['search .', 'nameserver 127.0.0.1']);
    // No --cluster-domain: the kubelet's FQDN ends in "svc.".
    expect(cf.hosts).toContain(`${cf.podIP}\tcf-${NODE}.db.kdns.svc.\tcf-${NODE}\n`);
    const msg = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
    const events = await apiEvents(s.socketPath);
    const uid = events.find((e) => e.kind === 'Event' && e.pod === `${NS}/cf-${NODE}`)?.uid as string;
    expect(events.filter((e) => e.kind === 'Event' && e.reason === 'MissingClusterDNS').map((e) => e.message)).toContain(`pod: "cf-${NODE}_${NS}(${uid})". ${msg}`);
    expect(events.filter((e) => e.kind === 'NodeEvent' && e.reason === 'MissingClusterDNS').map((e) => [e.type, e.message])).toContainEqual(['Warning', msg]);
  });

  it('an unreadable --resolv-conf: CheckLimitsForResolvConf about the node, and each sandbox refused with the kubelet\'s error', async () => {
    const dir = tempDir('m');
    const missing = path.join(tempDir('r'), 'missing.conf');
    manifest(dir, 'dflt', { dnsPolicy: 'Default' });
    const s = await sync(dir, ['--resolv-conf', missing, '--crash-loop-backoff-initial', '1s']);
    await eventually(
      async () => {
        const events = await apiEvents(s.socketPath);
        expect(events.filter((e) => e.kind === 'NodeEvent').map((e) => [e.reason, e.message])).toContainEqual(['CheckLimitsForResolvConf', `open ${missing}: no such file or directory`]);
        expect(events.filter((e) => e.kind === 'Event' && e.reason === 'FailedCreatePodSandBox').map((e) => e.message)).toContain(
          `Failed to create pod sandbox: open ${missing}: no such file or directory`,
        );
      },
      30_000,
      250,
    );
    expect((await cri.listPodSandbox()).items).toEqual([]);
    // Once the file is there, the next try makes the sandbox.
    fs.writeFileSync(missing, 'nameserver 10.0.0.9\n');
    expect(lines((await inside('dflt', s)).resolv)).toEqual(['nameserver 10.0.0.9']);
  });

  it('refuses a --cluster-dns entry that is not an IP, naming it', async () => {
    const r = await runKlet(['sync', '--cluster-dns', '10.96.0.10,kube-dns', '--root-dir', tempDir('root'), '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code, explain(r)).toBe(2);
    expect(r.stderr.trim()).toBe('error: --cluster-dns "kube-dns" is not an IP address');
  });
});
