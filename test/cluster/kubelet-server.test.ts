/**
 * The kubelet server of `klet sync --kubeconfig` against a real
 * kube-apiserver and the real kubectl: kubectl logs, exec, port-forward and
 * the node proxy reach the pods of a klet node through it, with the
 * kubelet's authentication (client certificates, TokenReview) and
 * authorization (SubjectAccessReview).
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { poll } from '../helpers/poll.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNamespace, freePort, k8sBinDir, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { startKubeletAgent } from '../helpers/kubelet-agent.js';
import { startSync } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';
import { hostIPs } from '../../src/lib/node/addresses.js';

const NODE = 'klet-server-node';
const NS = 'debug';
let cluster: TestCluster;
let rt: TestRuntime;
/**
 * KLET_TEST_AGENT=kubelet runs the same list against the real kubelet v1.34 on the same control
 * plane and runtime (the README names what differs); klet otherwise, and always in CI.
 */
const AGENT = process.env.KLET_TEST_AGENT === 'kubelet' ? 'kubelet' : 'klet';
/** The agent under test: its log (stderr for klet) and whether it still runs. */
let agent: { log(): string; tail(): string; running(): boolean; stop(): Promise<void> };
let port: number;
/**
 * The node's address: the machine's own (default-route) address, not loopback: the API server's node
 * proxy refuses loopback addresses ("address not allowed"). Traffic to it never leaves the machine.
 */
const nodeIP = hostIPs()[0] ?? '127.0.0.1';

/** kubectl as the admin, with its exit code (never rejects). */
function kubectl(args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(path.join(k8sBinDir(), 'kubectl'), [`--kubeconfig=${cluster.adminKubeconfig}`, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const t = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.once('close', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** A request straight to the kubelet server (no API server in between). */
function kubeletGet(urlPath: string, o: { token?: string; cert?: string; key?: string; method?: string } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: nodeIP,
        port,
        path: urlPath,
        method: o.method ?? 'GET',
        rejectUnauthorized: false,
        ...(o.cert ? { cert: fs.readFileSync(o.cert), key: fs.readFileSync(o.key!) } : {}),
        headers: o.token ? { Authorization: `Bearer ${o.token}` } : {},
      },
      (res) => {
        let body = '';
        res.on('data', (b: Buffer) => (body += b.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const execFileP = promisify(execFile);
/** A tmux server of this file alone (-L), so no other tmux is touched. */
const TMUX = `klet-kubelet-server-${process.pid}`;
const tmux = async (...args: string[]): Promise<string> => (await execFileP('tmux', ['-L', TMUX, ...args])).stdout;

const pod = (name: string, command: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: 'localhost/klet/busybox:1.36', command: ['sh', '-c', command], ...extra }],
    },
  });

async function running(name: string): Promise<void> {
  await poll(`pod ${NS}/${name} Running`, 90_000, async () => {
    const p = await cluster.kubectlJson<{ status: { phase?: string } }>(['get', 'pod', '-n', NS, name]);
    return p.status.phase === 'Running' ? true : undefined;
  }).catch((err: Error) => {
    throw new Error(`${err.message}\n${agent.tail()}`);
  });
}

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE] })]);
  port = await freePort();
  const manifests = fs.mkdtempSync(path.join(cluster.dir, 'manifests-'));
  if (AGENT === 'kubelet') {
    const k = await startKubeletAgent({ dir: fs.mkdtempSync(path.join(cluster.dir, 'kubelet-')), endpoint: rt.endpoint, kubeconfig: cluster.nodes[NODE]!.kubeconfig, nodeName: NODE, nodeIP, port, clientCaFile: cluster.caFile, manifestDir: manifests });
    let stopped = false;
    agent = { log: () => fs.readFileSync(k.logFile, 'utf8'), tail: k.tail, running: () => !stopped, stop: async () => { stopped = true; await k.stop(); } };
  } else {
    const sync = await startSync({
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      manifestDir: manifests,
      nodeName: NODE,
      args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--node-ip', nodeIP, '--address', nodeIP, '--port', String(port), '--client-ca-file', cluster.caFile],
    });
    agent = { log: () => sync.stderr, tail: () => sync.tail(), running: () => sync.running, stop: async () => void (await sync.stop()) };
  }
  await ensureNamespace(cluster, NS);
  await cluster.kubectl(['apply', '-f', '-'], {
    input: pod('counter', 'i=0; while true; do i=$((i+1)); echo "line $i"; echo "err $i" >&2; sleep 1; done'),
  });
  await cluster.kubectl(['apply', '-f', '-'], {
    input: pod('web', 'mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www'),
  });
  await cluster.kubectl(['apply', '-f', '-'], {
    input: pod('talker', 'i=0; while read line; do echo "got: $line"; done', { stdin: true, tty: false }),
  });
  await running('counter');
  await running('web');
  await running('talker');
}, 300_000);

afterAll(async () => {
  await tmux('kill-server').catch(() => undefined);
  await agent?.stop();
  await teardown(rt, cluster);
}, 120_000);

describe('the kubelet server of a klet node', () => {
  it('the Node says where it listens, and the sync names it', async () => {
    const node = await cluster.kubectlJson<{ status: { daemonEndpoints: { kubeletEndpoint: { Port: number } } } }>(['get', 'node', NODE]);
    expect(node.status.daemonEndpoints.kubeletEndpoint.Port).toBe(port);
    if (AGENT === 'klet') expect(agent.log()).toContain(`kubelet server on https://${nodeIP}:${port}`);
  });

  it('kubectl logs: whole, --tail, --timestamps, --since, -f', async () => {
    await poll('three lines logged', 30_000, async () => ((await kubectl(['logs', '-n', NS, 'counter'])).stdout.includes('line 3') ? true : undefined));
    const all = await kubectl(['logs', '-n', NS, 'counter']);
    expect(all.code, all.stderr).toBe(0);
    // Both streams, in the order written (the two lines of one second may come either way).
    expect(all.stdout.split('\n').slice(0, 4).sort()).toEqual(['err 1', 'err 2', 'line 1', 'line 2']);

    const tail = await kubectl(['logs', '-n', NS, 'counter', '--tail=2']);
    expect(tail.code, tail.stderr).toBe(0);
    expect(tail.stdout.trim().split('\n')).toHaveLength(2);

    const ts = await kubectl(['logs', '-n', NS, 'counter', '--tail=1', '--timestamps']);
    expect(ts.stdout).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z (line|err) \d+\n$/);

    const since = await kubectl(['logs', '-n', NS, 'counter', '--since=1h']);
    expect(since.stdout).toContain('line 1\n');

    // -f: lines written after the request arrive while it is open.
    const lines = await new Promise<string>((resolve) => {
      const child = spawn(path.join(k8sBinDir(), 'kubectl'), [`--kubeconfig=${cluster.adminKubeconfig}`, 'logs', '-f', '-n', NS, 'counter', '--tail=0']);
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if ((out.match(/line \d+/g) ?? []).length >= 2) child.kill('SIGTERM');
      });
      const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('close', () => {
        clearTimeout(t);
        resolve(out);
      });
    });
    expect(lines.match(/line \d+/g)?.length ?? 0).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it('kubectl logs of a pod that has finished (Succeeded: no longer one the node runs, still one it has)', async () => {
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ ...JSON.parse(pod('done', 'echo finished-output')), spec: { ...JSON.parse(pod('done', 'echo finished-output')).spec, restartPolicy: 'Never' } }) });
    await poll('pod done Succeeded', 60_000, async () => ((await cluster.kubectlJson<{ status: { phase?: string } }>(['get', 'pod', '-n', NS, 'done'])).status.phase === 'Succeeded' ? true : undefined));
    const r = await kubectl(['logs', '-n', NS, 'done']);
    expect(r.code, `${r.stderr} direct: ${JSON.stringify(await kubeletGet(`/containerLogs/${NS}/done/main`, { token: cluster.adminToken }))}`).toBe(0);
    expect(r.stdout).toBe('finished-output\n');
  }, 90_000);

  it('kubectl exec: output, exit code, stdin', async () => {
    const r = await kubectl(['exec', '-n', NS, 'counter', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
    expect(r.stdout).toBe('out\n');
    expect(r.stderr).toContain('err\n');
    expect(r.code).toBe(3);

    const cat = await kubectl(['exec', '-i', '-n', NS, 'counter', '--', 'sh', '-c', 'tr a-z A-Z'], { input: 'through stdin\n' });
    expect(cat.code, cat.stderr).toBe(0);
    expect(cat.stdout).toBe('THROUGH STDIN\n');
  }, 60_000);

  it('kubectl exec -it in a terminal: prompt, typed command, resize seen by stty, exit 3 is kubectl\'s exit code', async () => {
    const kubectlBin = path.join(k8sBinDir(), 'kubectl');
    await tmux('-f', '/dev/null', 'new-session', '-d', '-s', 'tty', '-x', '100', '-y', '30', 'sh', '-c',
      `${kubectlBin} --kubeconfig=${cluster.adminKubeconfig} exec -it -n ${NS} counter -- sh; echo "kubectl exited $?"; sleep 600`);
    const screen = () => tmux('capture-pane', '-p', '-t', 'tty');
    await poll('the shell prompt', 30_000, async () => (/^\/ # ?$/m.test(await screen()) ? true : undefined)).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await screen()}`);
    });
    await tmux('send-keys', '-t', 'tty', 'echo typed-$((6*7))', 'Enter');
    await poll('the typed command ran', 10_000, async () => ((await screen()).includes('typed-42') ? true : undefined));
    await tmux('send-keys', '-t', 'tty', 'stty size', 'Enter');
    await poll('stty size', 10_000, async () => ((await screen()).includes('30 100') ? true : undefined));
    await tmux('resize-window', '-t', 'tty', '-x', '80', '-y', '20');
    await new Promise((r) => setTimeout(r, 500));
    await tmux('send-keys', '-t', 'tty', 'clear; stty size', 'Enter');
    await poll('the resize reached the container', 10_000, async () => ((await screen()).includes('20 80') ? true : undefined));
    await tmux('send-keys', '-t', 'tty', 'exit 3', 'Enter');
    await poll('kubectl exited 3', 15_000, async () => ((await screen()).includes('kubectl exited 3') ? true : undefined));
  }, 90_000);

  it('kubectl attach: stdin to the main process, its output back', async () => {
    const child = spawn(path.join(k8sBinDir(), 'kubectl'), [`--kubeconfig=${cluster.adminKubeconfig}`, 'attach', '-i', '-n', NS, 'talker']);
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    try {
      // The attach is up once kubectl says so; what is written then reaches the container's stdin.
      await poll('attached', 20_000, async () => (/If you don't see a command prompt/.test(out) ? true : undefined));
      child.stdin.write('hello attach\n');
      await poll('the echo', 15_000, async () => (out.includes('got: hello attach') ? true : undefined));
    } finally {
      child.kill('SIGKILL');
    }
    const logs = await kubectl(['logs', '-n', NS, 'talker']);
    expect(logs.stdout).toContain('got: hello attach\n');
  }, 60_000);

  it('kubectl cp both ways', async () => {
    const local = path.join(cluster.dir, 'cp-src.txt');
    fs.writeFileSync(local, 'copied through exec and tar\n'.repeat(1000));
    const up = await kubectl(['cp', local, `${NS}/counter:/tmp/in.txt`]);
    expect(up.code, up.stderr).toBe(0);
    const inside = await kubectl(['exec', '-n', NS, 'counter', '--', 'md5sum', '/tmp/in.txt']);
    const { createHash } = await import('node:crypto');
    expect(inside.stdout.split(' ')[0]).toBe(createHash('md5').update(fs.readFileSync(local)).digest('hex'));
    const back = path.join(cluster.dir, 'cp-back.txt');
    const down = await kubectl(['cp', `${NS}/counter:/tmp/in.txt`, back]);
    expect(down.code, down.stderr).toBe(0);
    expect(fs.readFileSync(back, 'utf8')).toBe(fs.readFileSync(local, 'utf8'));
  }, 60_000);

  it('kubectl debug: an ephemeral container in the pod, in the target\'s process namespace, reported and never restarted', async () => {
    const r = await kubectl(['debug', '-n', NS, 'counter', '--image=localhost/klet/busybox:1.36', '--target=main', '--container=dbg', '--', 'sh', '-c', 'ps; echo debugged']);
    expect(r.code, r.stderr).toBe(0);
    const status = await poll('the debug container terminated', 60_000, async () => {
      const p = await cluster.kubectlJson<{ status: { ephemeralContainerStatuses?: Array<{ name: string; ready: boolean; restartCount: number; state: { terminated?: { exitCode: number; reason: string } } }> } }>(['get', 'pod', '-n', NS, 'counter']);
      const st = p.status.ephemeralContainerStatuses?.find((c) => c.name === 'dbg');
      return st?.state.terminated ? st : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${agent.tail()}`);
    });
    expect(status).toMatchObject({ ready: false, restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed' } } });
    const logs = await kubectl(['logs', '-n', NS, 'counter', '-c', 'dbg']);
    // The target's processes are visible: its shell loop is in `ps`.
    expect(logs.stdout).toContain('while true');
    expect(logs.stdout).toContain('debugged\n');
    // Never restarted: still one run, still terminated, a while later.
    await new Promise((r) => setTimeout(r, 3000));
    const again = await cluster.kubectlJson<{ status: { ephemeralContainerStatuses: Array<{ name: string; restartCount: number; state: Record<string, unknown> }> } }>(['get', 'pod', '-n', NS, 'counter']);
    expect(again.status.ephemeralContainerStatuses.find((c) => c.name === 'dbg')).toMatchObject({ restartCount: 0, state: { terminated: {} } });

    // -i: kubectl attaches to it once it runs; what is typed then reaches its shell, and its output comes back.
    const child = spawn(path.join(k8sBinDir(), 'kubectl'), [`--kubeconfig=${cluster.adminKubeconfig}`, 'debug', '-i', '-n', NS, 'counter', '--image=localhost/klet/busybox:1.36', '--container=dbg2', '--', 'sh']);
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    try {
      await poll('attached', 30_000, async () => (/If you don't see a command prompt/.test(out) ? true : undefined));
      child.stdin.write('echo from-debug-$((40+2))\n');
      await poll('the debug shell answered', 15_000, async () => (out.includes('from-debug-42') ? true : undefined));
      child.stdin.write('exit 0\n');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 150_000);

  it('kubectl port-forward: two connections through it; a closed port gives an error', async () => {
    const local = await freePort();
    const child = spawn(path.join(k8sBinDir(), 'kubectl'), [`--kubeconfig=${cluster.adminKubeconfig}`, 'port-forward', '-n', NS, 'pod/web', `${local}:8080`, `${local + 1}:9`]);
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    try {
      await poll('port-forward listening', 20_000, async () => (out.includes(`127.0.0.1:${local} -> 8080`) ? true : undefined));
      const [a, b] = await Promise.all([fetch(`http://127.0.0.1:${local}/`), fetch(`http://127.0.0.1:${local}/index.html`)]);
      expect(await a.text()).toBe('hello-from-pod\n');
      expect(await b.text()).toBe('hello-from-pod\n');
      // Nothing listens on 9 in the pod: the connection fails and kubectl reports the runtime's error.
      await fetch(`http://127.0.0.1:${local + 1}/`).catch(() => undefined);
      await poll('the forwarding error', 10_000, async () => (/error forwarding port 9/.test(out) ? true : undefined));
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('the node proxy: healthz, pods, metrics', async () => {
    const healthz = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/healthz`]);
    expect(healthz.stdout, healthz.stderr).toBe('ok');
    const pods = JSON.parse((await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/pods`])).stdout) as { kind: string; items: Array<{ metadata: { name: string } }> };
    expect(pods.kind).toBe('PodList');
    expect(pods.items.map((p) => p.metadata.name)).toEqual(expect.arrayContaining(['counter', 'web']));
    const metrics = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics`]);
    expect(metrics.stdout).toMatch(/^kubelet_http_requests_total\{long_running="false",method="GET",path="containerLogs",server_type="readwrite"\} \d+$/m);
    // No stream of the exec tests above is left open (a finished one closes within a couple of seconds).
    await poll('no exec stream open', 10_000, async () => {
      const m = (await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics`])).stdout;
      return /^kubelet_http_inflight_requests\{long_running="true",method="POST",path="exec",server_type="readwrite"\} 0$/m.test(m) ? true : undefined;
    });
  });

  it("the node proxy: /logs/ lists the node's /var/log and reads its files (the kubelet's system log handler)", async () => {
    const dir = fs.mkdtempSync('/var/log/klet-test-');
    try {
      fs.writeFileSync(path.join(dir, 'node.log'), 'first line\nsecond line\n');
      const base = `/api/v1/nodes/${NODE}/proxy/logs/${path.basename(dir)}`;
      const listing = await kubectl(['get', '--raw', `${base}/`]);
      expect(listing.stdout, listing.stderr).toBe('<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n<a href="node.log">node.log</a>\n</pre>\n');
      const file = await kubectl(['get', '--raw', `${base}/node.log`]);
      expect(file.stdout, file.stderr).toBe('first line\nsecond line\n');
      const root = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/logs/`]);
      expect(root.stdout).toContain(`<a href="${path.basename(dir)}/">${path.basename(dir)}/</a>`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the node proxy: /stats/summary and /metrics/resource as metrics-server reads them', async () => {
    type Fs = { capacityBytes?: number; usedBytes?: number };
    type Summary = {
      node: { nodeName: string; cpu?: { usageCoreNanoSeconds?: number }; memory?: { workingSetBytes?: number; availableBytes?: number }; fs?: Fs; runtime?: { imageFs?: Fs }; rlimit?: { maxpid?: number } };
      pods: Array<{
        podRef: { name: string; namespace: string; uid: string };
        cpu?: { usageCoreNanoSeconds?: number };
        memory?: { workingSetBytes?: number };
        'ephemeral-storage'?: Fs;
        containers: Array<{ name: string; startTime: string; cpu?: { usageNanoCores?: number; usageCoreNanoSeconds?: number }; memory?: { workingSetBytes?: number }; rootfs?: Fs; logs?: Fs }>;
      }>;
    };
    // Both agents take a moment for their first figures (the kubelet's cAdvisor housekeeping, klet's first sample).
    const s = await poll('a summary with the web pod\'s CPU rate', 60_000, async () => {
      const got = JSON.parse((await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/stats/summary`])).stdout) as Summary;
      const web = got.pods.find((p) => p.podRef.name === 'web' && p.podRef.namespace === NS);
      return web?.containers.find((c) => c.name === 'main')?.cpu?.usageNanoCores !== undefined ? got : undefined;
    });
    expect(s.node.nodeName).toBe(NODE);
    expect(s.node.cpu?.usageCoreNanoSeconds).toBeGreaterThan(0);
    expect(s.node.memory?.workingSetBytes).toBeGreaterThan(0);
    expect(s.node.memory?.availableBytes).toBeGreaterThan(0);
    expect(s.node.fs?.capacityBytes).toBeGreaterThan(0);
    // The kubelet's figure for the image filesystem's usage was 0 in one run of two (containerd updates it now and then).
    expect(s.node.runtime?.imageFs?.capacityBytes).toBeGreaterThan(0);
    expect(s.node.runtime?.imageFs?.usedBytes).toBeGreaterThanOrEqual(0);
    expect(s.node.rlimit?.maxpid).toBeGreaterThan(0);
    const web = s.pods.find((p) => p.podRef.name === 'web' && p.podRef.namespace === NS)!;
    const uid = (await cluster.kubectlJson<{ metadata: { uid: string } }>(['get', 'pod', '-n', NS, 'web'])).metadata.uid;
    expect(web.podRef.uid).toBe(uid);
    const main = web.containers.find((c) => c.name === 'main')!;
    expect(Date.parse(main.startTime)).toBeGreaterThan(0);
    expect(main.cpu?.usageCoreNanoSeconds).toBeGreaterThan(0);
    expect(main.memory?.workingSetBytes).toBeGreaterThan(0);
    expect(main.rootfs?.usedBytes).toBeGreaterThanOrEqual(0);
    expect(main.logs?.usedBytes).toBeGreaterThanOrEqual(0);
    expect(web.cpu?.usageCoreNanoSeconds).toBeGreaterThanOrEqual(main.cpu!.usageCoreNanoSeconds!);
    expect(web.memory?.workingSetBytes).toBeGreaterThan(0);
    expect(web['ephemeral-storage']?.usedBytes).toBeGreaterThanOrEqual(0);
    const slim = JSON.parse((await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/stats/summary?only_cpu_and_memory=true`])).stdout) as Summary;
    expect(slim.node.fs).toBeUndefined();
    expect(slim.node.memory?.workingSetBytes).toBeGreaterThan(0);
    expect(slim.pods.find((p) => p.podRef.name === 'web')?.containers[0]?.rootfs).toBeUndefined();

    const resource = (await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics/resource`])).stdout;
    expect(resource).toContain('# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds\n# TYPE container_cpu_usage_seconds_total counter\n');
    expect(resource).toMatch(new RegExp(`^container_cpu_usage_seconds_total\\{container="main",namespace="${NS}",pod="web"\\} \\S+ \\d{13}$`, 'm'));
    expect(resource).toMatch(new RegExp(`^container_memory_working_set_bytes\\{container="main",namespace="${NS}",pod="web"\\} \\S+ \\d{13}$`, 'm'));
    expect(resource).toMatch(new RegExp(`^container_start_time_seconds\\{container="main",namespace="${NS}",pod="web"\\} \\S+$`, 'm'));
    expect(resource).toMatch(new RegExp(`^pod_memory_working_set_bytes\\{namespace="${NS}",pod="web"\\} \\S+ \\d{13}$`, 'm'));
    expect(resource).toMatch(/^node_cpu_usage_seconds_total \S+ \d{13}$/m);
    expect(resource).toMatch(/^resource_scrape_error 0$/m);
  });

  it('refuses requests without credentials (401), with a token whose user may not (403), and certificates of another CA (401)', async () => {
    expect(await kubeletGet('/pods')).toEqual({ status: 401, body: 'Unauthorized' });
    expect(await kubeletGet('/pods', { token: 'not-a-token' })).toEqual({ status: 401, body: 'Unauthorized' });
    const denied = await kubeletGet('/pods', { token: cluster.nobodyToken });
    expect(denied.status).toBe(403);
    expect(denied.body).toBe('Forbidden (user=nobody, verb=get, resource=nodes, subresource(s)=[pods proxy])\n');
    const logs = await kubeletGet(`/containerLogs/${NS}/counter/main`, { token: cluster.nobodyToken });
    expect(logs.body).toBe('Forbidden (user=nobody, verb=get, resource=nodes, subresource(s)=[proxy])\n');
    // The admin's token passes the TokenReview and the SubjectAccessReview.
    const ok = await kubeletGet('/healthz', { token: cluster.adminToken });
    expect(ok).toEqual({ status: 200, body: 'ok' });
    // The API server's own client certificate is accepted; one from another CA is not.
    expect((await kubeletGet('/healthz', { cert: path.join(cluster.dir, 'kubelet-client.crt'), key: path.join(cluster.dir, 'kubelet-client.key') })).status).toBe(200);
    const other = path.join(cluster.dir, 'other-client');
    await new Promise<void>((resolve, reject) => {
      const p = spawn('sh', ['-c', `openssl req -newkey rsa:2048 -nodes -keyout ${other}.key -out ${other}.csr -subj /O=system:masters/CN=intruder && openssl x509 -req -in ${other}.csr -CA ${cluster.dir}/other-ca.crt -CAkey ${cluster.dir}/other-ca.key -CAcreateserial -out ${other}.crt -days 2`], { stdio: 'ignore' });
      p.once('close', (c) => (c === 0 ? resolve() : reject(new Error(`openssl exit ${c}`))));
    });
    expect(await kubeletGet('/healthz', { cert: `${other}.crt`, key: `${other}.key` })).toEqual({ status: 401, body: 'Unauthorized' });
    // Tokens never reach the log.
    expect(agent.log()).not.toContain(cluster.nobodyToken);
    expect(agent.log()).not.toContain(cluster.adminToken);
  });

  it("answers the kubelet's errors for what does not exist or is malformed, and survives hostile paths", async () => {
    const admin = { token: cluster.adminToken };
    expect(await kubeletGet(`/containerLogs/${NS}/nosuch/main`, admin)).toEqual({ status: 404, body: 'pod "nosuch" does not exist' });
    expect(await kubeletGet(`/containerLogs/${NS}/counter/nosuch`, admin)).toEqual({ status: 404, body: 'container "nosuch" not found in pod "counter"' });
    expect(await kubeletGet(`/containerLogs/${NS}/counter/main?tailLines=x`, admin)).toEqual({ status: 400, body: '{"message": "Unable to decode query."}' });
    expect(await kubeletGet(`/containerLogs/${NS}/counter/main?tailLines=-1`, admin)).toEqual({ status: 422, body: '{"message": "Invalid request."}' });
    expect((await kubeletGet(`/containerLogs/${NS}/counter/main?previous=true`, admin)).body).toBe('previous terminated container "main" in pod "counter" not found');
    expect(await kubeletGet(`/exec/${NS}/counter/main?command=true`, { ...admin, method: 'POST' })).toEqual({ status: 400, body: 'you must specify at least 1 of stdin, stdout, stderr' });
    expect(await kubeletGet(`/exec/${NS}/nosuch/main?command=true&output=1`, { ...admin, method: 'POST' })).toEqual({ status: 404, body: 'pod does not exist' });
    expect(await kubeletGet(`/exec/${NS}/counter/main?command=true&output=1`, { ...admin, method: 'POST' })).toEqual({ status: 500, body: 'Upgrade request required\n' });
    // Unclean paths are redirected to their clean form (Go's ServeMux, before any handler); the rest get a 4xx.
    expect(await kubeletGet('/containerLogs/../../etc/passwd/x', admin)).toMatchObject({ status: 307 });
    for (const p of ['/containerLogs/%2e%2e/%2e%2e/x', `/exec/${NS}/counter/main/x/y/z`, '/nosuch', `/containerLogs/${NS}/${'a'.repeat(5000)}/main`, '/%zz', `/containerLogs/${NS}/counter/main?tailLines=99999999999999999999`, `/containerLogs/${NS}/counter/main?sinceTime=yesterday`]) {
      const r = await kubeletGet(p, admin);
      expect(r.status, p).toBeGreaterThanOrEqual(400);
      expect(r.status, p).toBeLessThan(500);
    }
    expect(agent.running()).toBe(true);
  });

  it('a kubectl killed mid-exec leaves no stream open in klet, and the command reading its stdin ends', async () => {
    // An interactive command (a shell, cat) sees its stdin end when the stream goes. A command that never reads
    // stdin keeps running, with the real kubelet too: containerd 1.6 runs execs outside the request's context.
    const child = spawn(path.join(k8sBinDir(), 'kubectl'), [`--kubeconfig=${cluster.adminKubeconfig}`, 'exec', '-i', '-n', NS, 'counter', '--', 'sh', '-c', 'echo started; exec cat /dev/stdin -']);
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    await poll('the exec started', 20_000, async () => (out.includes('started') ? true : undefined));
    const inflight = async () => {
      const m = (await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics`])).stdout;
      return Number(/^kubelet_http_inflight_requests\{long_running="true",method="POST",path="exec",server_type="readwrite"\} (\d+)$/m.exec(m)?.[1] ?? '0');
    };
    expect(await inflight(), (await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics`])).stdout.split('\n').filter((l) => l.startsWith('kubelet_http')).join('\n')).toBe(1);
    child.kill('SIGKILL');
    await poll('the stream closed', 20_000, async () => ((await inflight()) === 0 ? true : undefined));
    await poll('no exec process left', 30_000, async () => {
      const ps = await kubectl(['exec', '-n', NS, 'counter', '--', 'ps']);
      return /cat \/dev\/stdin/.test(ps.stdout) ? undefined : true;
    });
  }, 90_000);
});
