/**
 * `klet sync --kubeconfig`: API pods' ConfigMaps, Secrets and service
 * account tokens come from the real kube-apiserver (Node authorizer and
 * NodeRestriction in force, so every read klet makes is one a kubelet may
 * make), and a pod with the DEFAULT service account settings runs with the
 * kube-api-access-* volume the ServiceAccount admission plugin injects.
 */
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runKlet, runKletJson } from '../helpers/cli.js';
import { ensureNamespace, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, startSync, type SyncProcess } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';
import { localApiEvents, localApiSocketPath } from '../../src/lib/server/client.js';

const NODE = 'klet-objects-node';
const NS = 'apps';
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const SECRET_VALUE = 'pa55-Wd-0f-the-db-7c1e9';
let cluster: TestCluster;
let rt: TestRuntime;
let emptyDir: string;

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE] })]);
  emptyDir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
  // No controller-manager runs here: the default ServiceAccount and kube-root-ca.crt come from the test.
  await ensureNamespace(cluster, NS);
}, 240_000);
afterEach(async () => {
  await killAllSyncs();
});
afterAll(async () => {
  await teardown(rt, cluster);
}, 120_000);

interface ApiPod {
  metadata: { uid: string; name: string };
  spec: { volumes: Array<{ name: string; projected?: { sources: Array<Record<string, unknown>> } }> };
  status: { phase?: string; containerStatuses?: Array<{ ready: boolean; state: Record<string, { reason?: string; message?: string }> }> };
}

async function poll<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>, sync?: SyncProcess): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${String(last)})` : ''}${sync ? `\n${sync.tail()}` : ''}`);
}

const apply = (o: unknown) => cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(o) });
const podJson = (name: string) => cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, name]);
const kletLogs = async (pod: string) => (await runKlet(['logs', `${NS}/${pod}`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE])).stdout;

/** Watches of one object by name open on the API server now (its apiserver_longrunning_requests gauge; the API server watches a few itself). */
async function objectWatches(resource: 'configmaps' | 'secrets'): Promise<number> {
  const metrics = await cluster.kubectl(['get', '--raw', '/metrics']);
  return metrics
    .split('\n')
    .filter((l) => l.startsWith('apiserver_longrunning_requests{') && l.includes(`resource="${resource}"`) && l.includes('scope="resource"') && l.includes('verb="WATCH"'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}
const configMapWatches = () => objectWatches('configmaps');

/** The API server's own watches of `resource`, before klet's (the largest of a few samples: one may be reconnecting). */
async function baselineWatches(resource: 'configmaps' | 'secrets'): Promise<number> {
  let baseline = 0;
  for (let i = 0; i < 4; i++) {
    baseline = Math.max(baseline, await objectWatches(resource));
    await new Promise((r) => setTimeout(r, 250));
  }
  return baseline;
}

/** Every file under dir (not following symlinks), except the subtrees `skip` says to leave out. */
function filesUnder(dir: string, skip: (p: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (skip(p)) continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(p);
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out;
}

describe('klet sync --kubeconfig: ConfigMaps, Secrets and tokens from the API server', () => {
  it('a pod with default service account settings gets its kube-api-access volume (token calls the API server, namespace, ca.crt verifies it), its ConfigMap and Secret volumes and env; a ConfigMap update reaches the volume; secrets never reach klet\'s output', async () => {
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: NS }, data: { greeting: 'hello', LEVEL: 'debug' } });
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: NS }, stringData: { password: SECRET_VALUE } });
    const server = new URL(cluster.server);
    const script = [
      `D=${SA_DIR}`,
      'echo "namespace=$(cat $D/namespace)"',
      'echo "level=$LEVEL greeting=$(cat /etc/config/greeting)"',
      '[ "$PASSWORD" = "$(cat /etc/creds/password)" ] && echo "secret-env-matches-volume"',
      `wget -q -O - --header "Authorization: Bearer $(cat $D/token)" --header "Content-Type: application/json" --post-data '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' https://${server.host}/apis/authentication.k8s.io/v1/selfsubjectreviews | tr -d "\\n"; echo`,
      'echo "-----ca"; cat $D/ca.crt',
      'exec sleep 3600',
    ].join('\n');
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: emptyDir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--log-level', 'debug'] });
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'reader', namespace: NS },
      spec: {
        nodeName: NODE,
        // The API server on loopback is reachable from the host's network namespace.
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image: 'localhost/klet/busybox:1.36',
            command: ['sh', '-c', script],
            envFrom: [{ configMapRef: { name: 'app-config' } }],
            env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
            volumeMounts: [
              { name: 'config', mountPath: '/etc/config' },
              { name: 'creds', mountPath: '/etc/creds' },
            ],
          },
        ],
        volumes: [
          { name: 'config', configMap: { name: 'app-config' } },
          { name: 'creds', secret: { secretName: 'db' } },
        ],
      },
    });
    // Admission injected the standard projected volume: token, kube-root-ca.crt's ca.crt, the namespace.
    const created = await podJson('reader');
    const access = created.spec.volumes.find((v) => v.name.startsWith('kube-api-access-'));
    expect(access?.projected?.sources.map((s) => Object.keys(s)[0])).toEqual(['serviceAccountToken', 'configMap', 'downwardAPI']);

    const running = await poll('reader Running and Ready', 90_000, async () => {
      const p = await podJson('reader');
      return p.status.phase === 'Running' && p.status.containerStatuses?.every((c) => c.ready) ? p : undefined;
    }, sync);
    const logs = await poll('the container\'s output', 30_000, async () => {
      const out = await kletLogs('reader');
      return out.includes('-----END CERTIFICATE-----') ? out : undefined;
    }, sync);
    expect(logs).toContain(`namespace=${NS}\n`);
    expect(logs).toContain('level=debug greeting=hello\n');
    expect(logs).toContain('secret-env-matches-volume\n');
    // The token authenticated the container to the real API server as the pod's service account, bound to the pod.
    const reviewLine = logs.split('\n').find((l) => l.startsWith('{') && l.includes('SelfSubjectReview'));
    expect(reviewLine, logs).toBeDefined();
    const review = JSON.parse(reviewLine!) as {
      status?: { userInfo?: { username?: string; extra?: Record<string, string[]> } };
    };
    expect(review.status?.userInfo?.username).toBe(`system:serviceaccount:${NS}:default`);
    expect(review.status?.userInfo?.extra?.['authentication.kubernetes.io/pod-name']).toEqual(['reader']);
    expect(review.status?.userInfo?.extra?.['authentication.kubernetes.io/pod-uid']).toEqual([running.metadata.uid]);
    expect(review.status?.userInfo?.extra?.['authentication.kubernetes.io/node-name']).toEqual([NODE]);
    // The container's ca.crt verifies the API server's certificate.
    const ca = logs.slice(logs.indexOf('-----ca\n') + '-----ca\n'.length);
    expect(ca.trim()).toBe(fs.readFileSync(cluster.caFile, 'utf8').trim());
    const authorized = await new Promise<boolean>((resolve, reject) => {
      https
        .get(`${cluster.server}/api`, { ca, rejectUnauthorized: true }, (res) => {
          res.resume();
          resolve((res.socket as import('node:tls').TLSSocket).authorized);
        })
        .on('error', reject);
    });
    expect(authorized).toBe(true);

    // The token file on the node: the kubelet's mode (the projected volume's defaultMode 0644), the token klet was given.
    const volDir = path.join(rt.rootDir, 'pods', running.metadata.uid, 'volumes');
    const tokenFile = path.join(volDir, 'kubernetes.io~projected', access!.name, 'token');
    const token = fs.readFileSync(tokenFile, 'utf8');
    expect(token).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o644);

    // A ConfigMap update reaches the mounted volume through its watch (no restart).
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: NS }, data: { greeting: 'updated', LEVEL: 'debug' } });
    const greeting = path.join(volDir, 'kubernetes.io~configmap', 'config', 'greeting');
    await poll('the updated ConfigMap in the volume', 30_000, async () => (fs.readFileSync(greeting, 'utf8') === 'updated' ? true : undefined), sync);
    expect((await podJson('reader')).status.containerStatuses?.[0]).toMatchObject({ ready: true });

    // klet mount-volumes on the API pod reads the same objects through the API server (the node's kubeconfig).
    const mv = ['mount-volumes', `${NS}/reader`, '--root-dir', rt.rootDir, '--node-name', NODE];
    const { result: mvResult, json: mounted } = await runKletJson<{ exitCode: number; volumes: Array<{ name: string; state: string; message?: string }> }>([...mv, '-o', 'json', '--kubeconfig', cluster.nodes[NODE]!.kubeconfig]);
    expect(mvResult.code, mvResult.stderr).toBe(0);
    expect(mounted.volumes.map((v) => [v.name, v.state])).toEqual([
      ['config', 'Ready'],
      ['creds', 'Mounted'],
      [access!.name, 'Mounted'],
    ]);
    expect(fs.readFileSync(greeting, 'utf8')).toBe('updated');
    const without = await runKlet(mv);
    expect(without.code).toBe(2);
    expect(without.stderr.trim()).toBe(`error: ${NS}/reader: pod ${NS}/reader came from the API server: its ConfigMaps, Secrets and tokens need the API server's kubeconfig (--kubeconfig)`);

    // Secrets never reach what klet wrote: its log, its root dir (less the volumes that hold them
    // and containerd's own state), the pod's status on the server, `klet status -o json`.
    const { result: { stdout: statusJson } } = await runKletJson(['status', `${NS}/reader`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
    const serverPod = await cluster.kubectl(['get', 'pod', '-n', NS, 'reader', '-o', 'json']);
    // While the pod runs: its record, sync state and the rest of the root dir.
    const written = filesUnder(rt.rootDir, (p) => p === path.join(rt.rootDir, 'containerd') || p.endsWith(`${path.sep}volumes`) || p.includes(`${path.sep}.sock`));
    expect(written.some((f) => f.includes(running.metadata.uid))).toBe(true);
    const writtenText = written.map((f) => [f, fs.readFileSync(f, 'latin1')] as const);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'reader', '--wait=false']);
    await poll('reader gone from the server', 30_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).includes('reader') ? undefined : true), sync);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    // Every read and token request klet made was one the Node authorizer and NodeRestriction allow.
    expect(sync.stderr).not.toMatch(/forbidden|warning:/i);
    for (const [what, text] of [
      ['klet sync stderr', sync.stderr],
      ['klet status -o json', statusJson],
      ['the pod on the server', serverPod],
      ...writtenText,
    ] as const) {
      expect(text.includes(token), `${what} holds the token`).toBe(false);
      expect(text.includes(SECRET_VALUE), `${what} holds the secret's value`).toBe(false);
    }
  }, 300_000);

  it('a pod referencing a missing ConfigMap waits with FailedMount `configmap "late" not found` and starts once it exists; optional: true needs none; a missing env Secret is CreateContainerConfigError until it exists', async () => {
    const baseline = await baselineWatches('configmaps');
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: emptyDir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    const pod = (name: string, volumes: unknown[]) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: 'localhost/klet/busybox:1.36', command: ['sleep', '3600'], volumeMounts: [{ name: 'v', mountPath: '/etc/v' }] }],
        volumes,
      },
    });
    await apply(pod('waiter', [{ name: 'v', configMap: { name: 'late' } }]));
    await apply(pod('relaxed', [{ name: 'v', configMap: { name: 'never-there', optional: true } }]));
    const envPod = pod('env-waiter', []) as { spec: { containers: Array<Record<string, unknown>> } };
    envPod.spec.containers[0] = { name: 'main', image: 'localhost/klet/busybox:1.36', command: ['sleep', '3600'], env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'later', key: 't' } } }] };
    await apply(envPod);
    await poll('relaxed Running', 90_000, async () => ((await podJson('relaxed')).status.phase === 'Running' ? true : undefined), sync);
    // The kubelet's FailedMount event; the pod stays Pending and klet keeps retrying.
    const failedMount = async () => {
      const out: string[] = [];
      for await (const e of localApiEvents(localApiSocketPath(rt.rootDir), { follow: false })) {
        if (e.kind === 'Event' && e.reason === 'FailedMount' && e.pod === `${NS}/waiter`) out.push(e.message);
      }
      return out;
    };
    const messages = await poll('FailedMount events for waiter', 60_000, async () => ((await failedMount()).length >= 2 ? failedMount() : undefined), sync);
    expect(messages).toContain('MountVolume.SetUp failed for volume "v" : configmap "late" not found');
    expect((await podJson('waiter')).status.phase).toBe('Pending');
    // Retrying: more FailedMount events follow (the kubelet's mount back-off, 0.5 s doubling).
    await poll('FailedMount retried', 30_000, async () => ((await failedMount()).length > messages.length ? true : undefined), sync);
    expect((await podJson('waiter')).status.phase).toBe('Pending');

    // An env secretKeyRef to a missing Secret: the kubelet's CreateContainerConfigError, on the server too.
    await poll('env-waiter CreateContainerConfigError', 60_000, async () => {
      const w = (await podJson('env-waiter')).status.containerStatuses?.[0]?.state.waiting;
      return w?.reason === 'CreateContainerConfigError' && w.message === 'secret "later" not found' ? true : undefined;
    }, sync);
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'later', namespace: NS }, stringData: { t: 'x' } });
    await poll('env-waiter Running once the Secret exists', 60_000, async () => ((await podJson('env-waiter')).status.phase === 'Running' ? true : undefined), sync);

    // The ConfigMap appears: its watch (registered for the pod) sees it, and the pod starts.
    const t0 = Date.now();
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'late', namespace: NS }, data: { k: 'v' } });
    await poll('waiter Running', 60_000, async () => ((await podJson('waiter')).status.phase === 'Running' ? true : undefined), sync);
    expect(Date.now() - t0, sync.tail()).toBeLessThan(30_000);
    // One watch per referenced ConfigMap (late, never-there, and kube-root-ca.crt shared by both pods), as the API server counts them.
    // (Each watch is renewed every 25 s: poll past a reconnect.)
    await poll('three ConfigMap watches', 30_000, async () => ((await configMapWatches()) === baseline + 3 ? true : undefined), sync);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'waiter', 'relaxed', 'env-waiter', '--wait=false']);
    await poll('pods deleted', 40_000, async () => (/waiter|relaxed/.test(await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])) ? undefined : true), sync);
    // The last pod referencing them went: so did the watches.
    await poll('ConfigMap watches dropped', 30_000, async () => ((await configMapWatches()) === baseline ? true : undefined), sync);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    // Every read klet made was allowed by the Node authorizer.
    expect(sync.stderr).not.toMatch(/forbidden/i);
  }, 300_000);

  it('a Secret only an env var reads is watched while its container starts, not for the pod\'s life (the kubelet\'s idle watches, 5 × --sync-frequency); a volume\'s ConfigMap stays watched; a restarted container reads the Secret afresh', async () => {
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'rotating', namespace: NS }, stringData: { token: 'first-value' } });
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'idle-vol', namespace: NS }, data: { k: 'v' } });
    const [secretBase, cmBase] = [await baselineWatches('secrets'), await baselineWatches('configmaps')];
    // --sync-frequency 4s: a watch unread for 20 s stops at the next minute's check.
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: emptyDir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--sync-frequency', '4s'] });
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'rotator', namespace: NS },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'main',
            image: 'localhost/klet/busybox:1.36',
            command: ['sh', '-c', 'echo "token=$TOKEN"; rm -f /tmp/stop; while [ ! -f /tmp/stop ]; do sleep 1; done'],
            env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'rotating', key: 'token' } } }],
            volumeMounts: [{ name: 'v', mountPath: '/etc/v' }],
          },
        ],
        volumes: [{ name: 'v', configMap: { name: 'idle-vol' } }],
      },
    });
    await poll('rotator prints the first value', 90_000, async () => ((await kletLogs('rotator')).includes('token=first-value') ? true : undefined), sync);
    // (Each watch is renewed every 25 s: poll past a reconnect.)
    await poll('the env Secret watched', 30_000, async () => ((await objectWatches('secrets')) === secretBase + 1 ? true : undefined), sync);
    // Nothing reads the Secret after the start: its watch stops (20 s idle + up to a minute to the check).
    await poll('the env Secret\'s watch stopped', 120_000, async () => ((await objectWatches('secrets')) === secretBase ? true : undefined), sync);
    // The volume's ConfigMap is read at every resync: still watched.
    await poll('the volume\'s ConfigMap still watched', 30_000, async () => ((await configMapWatches()) === cmBase + 1 ? true : undefined), sync);
    // The Secret changes while nobody watches it; the container exits and is restarted: it gets the new value, not the stopped cache's.
    await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'rotating', namespace: NS }, stringData: { token: 'second-value' } });
    const exec = await runKlet(['exec', `${NS}/rotator`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '--', 'touch', '/tmp/stop']);
    expect(exec.code, exec.stderr).toBe(0);
    await poll('the restarted container prints the second value', 90_000, async () => ((await kletLogs('rotator')).includes('token=second-value') ? true : undefined), sync);
    await cluster.kubectl(['delete', 'pod', '-n', NS, 'rotator', '--wait=false']);
    await poll('rotator deleted', 40_000, async () => (/rotator/.test(await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])) ? undefined : true), sync);
    await poll('watches dropped', 30_000, async () => ((await configMapWatches()) === cmBase && (await objectWatches('secrets')) === secretBase ? true : undefined), sync);
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toMatch(/forbidden/i);
  }, 360_000);

  it('a static pod that references a ConfigMap is refused in cluster mode, with the kubelet\'s message, and gets no mirror pod', async () => {
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'static-'));
    fs.writeFileSync(
      path.join(dir, 'cm.yaml'),
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata: {name: uses-cm, namespace: default}',
        'spec:',
        '  containers: [{name: main, image: localhost/klet/busybox:1.36, command: [sleep, "3600"]}]',
        '  volumes: [{name: v, configMap: {name: app-config}}]',
        '',
      ].join('\n'),
    );
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    await sync.waitForStderr(/static pods may not reference configmaps/, 30_000);
    expect(sync.stderr).toContain(`${path.join(dir, 'cm.yaml')}`);
    const { json } = await runKletJson<{ items: Array<{ metadata: { name: string } }> }>(['status', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE, '-o', 'json']);
    expect(json.items.map((i) => i.metadata.name)).not.toContain(`uses-cm-${NODE}`);
    expect(await cluster.kubectl(['get', 'pods', '-n', 'default', '-o', 'name'])).not.toContain('uses-cm');
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
  }, 120_000);
});
