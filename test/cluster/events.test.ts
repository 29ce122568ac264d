/**
 * `klet sync --kubeconfig` records the kubelet's events in the API server
 * (core/v1 Events, source kubelet/<node>), with client-go's correlation: a
 * crash loop patches `count` of a few BackOff objects instead of creating
 * hundreds; a static pod's events are about its mirror pod; the node's
 * events (Starting, NodeReady) are about the Node. All with a node identity
 * under the Node authorizer and NodeRestriction.
 */
import fs from 'node:fs';
import path from 'node:path';
import { poll as pollEvery } from '../helpers/poll.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/cli.js';
import { startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, startSync } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';

const NODE = 'klet-events-node';
const NS = 'apps';
let cluster: TestCluster;
let rt: TestRuntime;

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE] })]);
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }) });
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: NS } }) });
}, 240_000);
afterEach(async () => {
  await killAllSyncs();
});
afterAll(async () => {
  await teardown(rt, cluster);
}, 120_000);

interface ApiEvent {
  metadata: { name: string; namespace: string };
  involvedObject: { kind: string; namespace?: string; name: string; uid: string; fieldPath?: string; apiVersion?: string };
  reason: string;
  message: string;
  type: string;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string; host: string };
  reportingComponent: string;
  reportingInstance: string;
}

const events = async (ns: string, selector: string) => (await cluster.kubectlJson<{ items: ApiEvent[] }>(['get', 'events', '-n', ns, '--field-selector', selector])).items;

const poll = <T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> => pollEvery(what, timeoutMs, fn, 1000);

describe('klet sync --kubeconfig: events in the API server', () => {
  it('a crash-looping API pod: Pulled/Created/Started and BackOff events whose count grows, not one object per back-off', async () => {
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
    const sync = await startSync({
      rootDir: rt.rootDir,
      endpoint: rt.endpoint,
      manifestDir: dir,
      nodeName: NODE,
      args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig, '--crash-loop-backoff-initial', '1s', '--crash-loop-backoff-max', '2s'],
    });
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'crasher', namespace: NS },
      spec: {
        nodeName: NODE,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: 'localhost/klet/busybox:1.36', command: ['sh', '-c', 'sleep 0.5; exit 1'] }],
      },
    };
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pod) });
    const uid = (await cluster.kubectlJson<{ metadata: { uid: string } }>(['get', 'pod', '-n', NS, 'crasher'])).metadata.uid;
    const selector = `involvedObject.name=crasher`;
    const backoffTotal = (evs: ApiEvent[]) => evs.filter((e) => e.reason === 'BackOff').reduce((n, e) => n + e.count, 0);
    const first = await poll('BackOff events with count > 3', 120_000, async () => {
      const evs = await events(NS, selector);
      return backoffTotal(evs) > 3 && evs.some((e) => e.reason === 'BackOff' && e.count >= 2) ? evs : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    // Let it crash a while longer: the count grows, the number of objects hardly.
    await new Promise((r) => setTimeout(r, 20_000));
    const later = await events(NS, selector);
    expect(backoffTotal(later), sync.tail()).toBeGreaterThan(backoffTotal(first));
    const backoffs = later.filter((e) => e.reason === 'BackOff');
    // The kubelet's one message for every back-off: one object, counted.
    expect(backoffs.map((e) => e.message)).toEqual([`Back-off restarting failed container main in pod crasher_${NS}(${uid})`]);
    expect(backoffTotal(later)).toBeGreaterThan(backoffs.length + 3);
    const starts = later.filter((e) => e.reason === 'Started');
    expect(starts.length).toBe(1);
    expect(starts[0]!.count).toBeGreaterThanOrEqual(3);
    for (const e of later) {
      expect(e.source).toEqual({ component: 'kubelet', host: NODE });
      expect(e.reportingComponent).toBe('kubelet');
      expect(e.reportingInstance).toBe(NODE);
      expect(e.involvedObject).toMatchObject({ kind: 'Pod', namespace: NS, name: 'crasher', uid, apiVersion: 'v1' });
      expect(e.metadata.name.startsWith('crasher.')).toBe(true);
    }
    // Without --cluster-dns the kubelet also warns MissingClusterDNS at each sync of a ClusterFirst pod.
    expect(new Set(later.map((e) => e.reason))).toEqual(new Set(['Pulled', 'Created', 'Started', 'BackOff', 'MissingClusterDNS']));
    expect(starts[0]!.involvedObject.fieldPath).toBe('spec.containers{main}');
    expect(starts[0]!.message).toBe('Started container main');
    expect(Date.parse(starts[0]!.lastTimestamp)).toBeGreaterThan(Date.parse(starts[0]!.firstTimestamp));
    expect(backoffs[0]!.type).toBe('Warning');
    // What `kubectl get events` prints.
    const table = await cluster.kubectl(['get', 'events', '-n', NS, '--field-selector', selector, '--no-headers']);
    expect(table).toMatch(/Warning\s+BackOff\s+pod\/crasher\s+Back-off restarting failed container main in pod crasher_apps\(/);

    await cluster.kubectl(['delete', 'pod', '-n', NS, 'crasher', '--wait=false']);
    await poll('crasher gone', 40_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).includes('crasher') ? undefined : true));
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toMatch(/warning: events/);
    expect(sync.stderr).not.toContain(cluster.nodes[NODE]!.token);
  }, 300_000);

  it("a static pod's events are about its mirror pod; the node's Starting and NodeReady about the Node", async () => {
    const dir = fs.mkdtempSync(path.join(cluster.dir, 'static-'));
    fs.copyFileSync(path.join(PROJECT_ROOT, 'examples', 'web.yaml'), path.join(dir, 'web.yaml'));
    const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', cluster.nodes[NODE]!.kubeconfig] });
    const name = `web-${NODE}`;
    const mirror = await poll('mirror pod Running', 90_000, async () => {
      const p = await cluster.kubectlJson<{ metadata: { uid: string }; status: { phase?: string } }>(['get', 'pod', '-n', 'default', name]);
      return p.status.phase === 'Running' ? p : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${sync.tail()}`);
    });
    const podEvents = await poll('Started events of the mirror pod', 30_000, async () => {
      const evs = await events('default', `involvedObject.uid=${mirror.metadata.uid}`);
      return evs.filter((e) => e.reason === 'Started').length === 2 ? evs : undefined;
    });
    expect(podEvents.filter((e) => e.reason === 'Started').map((e) => e.involvedObject.fieldPath).sort()).toEqual(['spec.containers{httpd}', 'spec.initContainers{write-page}']);
    expect(podEvents.map((e) => e.reason)).toContain('Created');
    expect(podEvents.map((e) => e.reason)).toContain('Pulled');
    // Nothing was recorded about the static pod's own UID (the API server does not know it).
    const all = await events('default', `involvedObject.name=${name}`);
    expect(all.every((e) => e.involvedObject.uid === mirror.metadata.uid)).toBe(true);

    const nodeEvents = await poll('node events', 30_000, async () => {
      const evs = await events('default', `involvedObject.kind=Node,involvedObject.name=${NODE}`);
      return evs.some((e) => e.reason === 'NodeReady') && evs.some((e) => e.reason === 'MissingClusterDNS') ? evs : undefined;
    });
    // No --cluster-dns: the kubelet's warning about the Node (and one about the pod) for a ClusterFirst pod.
    expect(nodeEvents.find((e) => e.reason === 'MissingClusterDNS')).toMatchObject({
      type: 'Warning',
      message: 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.',
      involvedObject: { kind: 'Node', name: NODE },
    });
    expect(podEvents.map((e) => e.reason)).toContain('MissingClusterDNS');
    const starting = nodeEvents.find((e) => e.reason === 'Starting');
    expect(starting).toMatchObject({ type: 'Normal', message: 'Starting kubelet.', involvedObject: { kind: 'Node', name: NODE, uid: NODE }, source: { component: 'kubelet', host: NODE } });
    expect(nodeEvents.find((e) => e.reason === 'NodeReady')?.message).toBe(`Node ${NODE} status is now: NodeReady`);
    expect(nodeEvents.map((e) => e.reason)).toEqual(expect.arrayContaining(['NodeHasSufficientMemory', 'NodeHasNoDiskPressure', 'NodeHasSufficientPID']));

    fs.rmSync(path.join(dir, 'web.yaml'));
    await poll('mirror pod deleted', 60_000, async () => ((await cluster.kubectl(['get', 'pods', '-n', 'default', '-o', 'name'])).includes(name) ? undefined : true));
    const exit = await sync.stop();
    expect(exit.code, sync.tail()).toBe(0);
    expect(sync.stderr).not.toMatch(/warning: events/);
  }, 240_000);
});
