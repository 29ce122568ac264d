/**
 * `klet sync --kubeconfig` against a real kube-apiserver, on what the node
 * conformance specs check of an API pod: the service environment variables
 * (from klet's Service watch), unsafe sysctls refused at admission
 * (SysctlForbidden, --allowed-unsafe-sysctls), and Ready following the
 * readiness gates someone else sets through pods/status.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runKlet } from '../helpers/cli.js';
import { ensureNamespace, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { poll } from '../helpers/poll.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, startSync, type SyncProcess } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';

const NODE = 'klet-pod-api-node';
const NS = 'shop';
const IMAGE = 'localhost/klet/busybox:1.36';
let cluster: TestCluster;
let rt: TestRuntime;
let emptyDir: string;

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE] })]);
  emptyDir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
  await ensureNamespace(cluster, NS);
}, 240_000);
afterEach(async () => {
  await killAllSyncs();
});
afterAll(async () => {
  await teardown(rt, cluster);
}, 120_000);

interface ApiPod {
  status: { phase?: string; reason?: string; message?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

const apply = (o: unknown) => cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(o) });
const podJson = (name: string) => cluster.kubectlJson<ApiPod>(['get', 'pod', '-n', NS, name]);
const sync = (args: string[] = []): Promise<SyncProcess> =>
  startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: emptyDir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--port', '0', ...args] });
const pod = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS },
  spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, ...spec },
});
const phase = (name: string, want: string, s: SyncProcess) =>
  poll(`${name} ${want}`, 90_000, async () => {
    const p = await podJson(name);
    return p.status.phase === want ? p : undefined;
  }).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${s.tail()}`);
  });

describe('klet sync --kubeconfig: API pods as the node conformance specs see them', () => {
  it("gives containers the service environment variables: their namespace's services (enableServiceLinks), the default namespace's kubernetes always, never a headless one", async () => {
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'fooservice', namespace: NS }, spec: { selector: { app: 'x' }, ports: [{ port: 8765, targetPort: 8080 }] } });
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'quiet', namespace: NS }, spec: { clusterIP: 'None', selector: { app: 'x' }, ports: [{ port: 1 }] } });
    const svcIP = (await cluster.kubectlJson<{ spec: { clusterIP: string } }>(['get', 'service', '-n', NS, 'fooservice'])).spec.clusterIP;
    const master = (await cluster.kubectlJson<{ spec: { clusterIP: string; ports: Array<{ port: number }> } }>(['get', 'service', '-n', 'default', 'kubernetes'])).spec;
    const s = await sync();
    const envPod = (name: string, links: boolean) =>
      pod(name, { restartPolicy: 'Never', enableServiceLinks: links, containers: [{ name: 'c', image: IMAGE, command: ['sh', '-c', 'env | sort'], env: [{ name: 'FOO_URL', value: 'http://$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)' }] }] });
    await apply(envPod('linked', true));
    await apply(envPod('unlinked', false));
    await phase('linked', 'Succeeded', s);
    await phase('unlinked', 'Succeeded', s);
    const logs = async (name: string) => (await runKlet(['logs', `${NS}/${name}`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE])).stdout.split('\n');
    const linked = await logs('linked');
    expect(linked).toContain(`FOOSERVICE_SERVICE_HOST=${svcIP}`);
    expect(linked).toContain('FOOSERVICE_SERVICE_PORT=8765');
    expect(linked).toContain(`FOOSERVICE_PORT=tcp://${svcIP}:8765`);
    expect(linked).toContain(`FOOSERVICE_PORT_8765_TCP_ADDR=${svcIP}`);
    expect(linked).toContain(`FOO_URL=http://${svcIP}:8765`);
    expect(linked).toContain(`KUBERNETES_SERVICE_HOST=${master.clusterIP}`);
    expect(linked).toContain(`KUBERNETES_SERVICE_PORT=${master.ports[0]!.port}`);
    expect(linked.filter((l) => l.startsWith('QUIET_'))).toEqual([]);
    const unlinked = await logs('unlinked');
    expect(unlinked).toContain(`KUBERNETES_SERVICE_HOST=${master.clusterIP}`);
    expect(unlinked.filter((l) => l.startsWith('FOOSERVICE_'))).toEqual([]);
    // Not set, so not expanded (the kubelet keeps an unknown $(VAR) as it is).
    expect(unlinked).toContain('FOO_URL=http://$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)');
  }, 180_000);

  it('rejects a pod with an unsafe sysctl the node does not allow (SysctlForbidden, the kubelet message); --allowed-unsafe-sysctls lets it run', async () => {
    const sysctlPod = (name: string) =>
      pod(name, { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '65536' }] }, containers: [{ name: 'c', image: IMAGE, command: ['sh', '-c', 'cat /proc/sys/kernel/msgmax; sleep 3600'] }] });
    let s = await sync();
    await apply(sysctlPod('unsafe'));
    const rejected = await phase('unsafe', 'Failed', s);
    expect(rejected.status).toMatchObject({ reason: 'SysctlForbidden', message: 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted' });
    const events = await cluster.kubectlJson<{ items: Array<{ reason: string; message: string; involvedObject: { name: string } }> }>(['get', 'events', '-n', NS]);
    expect(events.items.filter((e) => e.involvedObject.name === 'unsafe' && e.reason === 'SysctlForbidden').map((e) => e.message)).toEqual(['forbidden sysctl: "kernel.msgmax" not allowlisted']);
    await s.stop();
    // A pattern that is not namespaced is refused before anything starts, naming the flag.
    const bad = await runKlet(['sync', '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--manifest-dir', emptyDir, '--node-name', NODE, '--allowed-unsafe-sysctls', 'vm.swappiness']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('error: --allowed-unsafe-sysctls: the sysctls "vm.swappiness" are not known to be namespaced');
    s = await sync(['--allowed-unsafe-sysctls', 'kernel.msg*,net.core.somaxconn']);
    await apply(sysctlPod('allowed'));
    await phase('allowed', 'Running', s);
    const out = await poll('the sysctl in the pod', 30_000, async () => {
      const r = await runKlet(['logs', `${NS}/allowed`, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE]);
      return r.stdout.trim() === '' ? undefined : r.stdout.trim();
    });
    expect(out).toBe('65536');
  }, 240_000);

  it('Ready follows the readiness gate conditions set through pods/status, with nothing changing on the node', async () => {
    const s = await sync();
    await apply(pod('gated', { readinessGates: [{ conditionType: 'k8s.io/c1' }, { conditionType: 'k8s.io/c2' }], containers: [{ name: 'c', image: IMAGE, command: ['sleep', '3600'] }] }));
    await phase('gated', 'Running', s);
    const ready = (want: string) =>
      poll(`gated Ready ${want}`, 30_000, async () => {
        const c = (await podJson('gated')).status.conditions?.find((x) => x.type === 'Ready');
        return c?.status === want ? c : undefined;
      }).catch((err: unknown) => {
        throw new Error(`${String(err)}\n${s.tail()}`);
      });
    const gate = (type: string, status: string) =>
      cluster.kubectl(['patch', 'pod', '-n', NS, 'gated', '--subresource', 'status', '--type', 'strategic', '-p', JSON.stringify({ status: { conditions: [{ type, status }] } })]);
    expect(await ready('False')).toMatchObject({ reason: 'ReadinessGatesNotReady' });
    await gate('k8s.io/c1', 'True');
    // One gate True: still not Ready, now for the other gate alone.
    await poll('Ready False for k8s.io/c2 alone', 30_000, async () =>
      (await podJson('gated')).status.conditions?.find((x) => x.type === 'Ready')?.message === 'corresponding condition of pod readiness gate "k8s.io/c2" does not exist.' ? true : undefined,
    );
    expect((await podJson('gated')).status.conditions?.find((x) => x.type === 'Ready')?.status).toBe('False');
    await gate('k8s.io/c2', 'True');
    await ready('True');
    await gate('k8s.io/c1', 'False');
    expect(await ready('False')).toMatchObject({ reason: 'ReadinessGatesNotReady', message: 'the status of pod readiness gate "k8s.io/c1" is not "True", but False' });
    const conditions = (await podJson('gated')).status.conditions ?? [];
    expect(conditions.filter((c) => c.type.startsWith('k8s.io/')).map((c) => `${c.type}=${c.status}`).sort()).toEqual(['k8s.io/c1=False', 'k8s.io/c2=True']);
  }, 180_000);
});
