/**
 * `klet events`' table is kubectl events' table: the same Events, served to
 * the real kubectl (v1.34, built by scripts/build-k8s.sh) by a minimal API
 * server, print the same lines as klet's formatter, across namespaces (-A)
 * and in one, with counts, a time not known, and control characters.
 *
 * Where they differ on purpose: kubectl 1.34 lets a message's newline break
 * the row; klet ends the message there with "...", as later kubectl does.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { CoreV1Event } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sortEvents } from '../../src/lib/events/event-list.js';
import { formatEventTable } from '../../src/lib/status/format.js';
import { kubectlBin } from '../helpers/cluster.js';

const execFileP = promisify(execFile);

let server: http.Server;
let dir: string;
let items: CoreV1Event[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const ns = /^\/api\/v1\/namespaces\/([^/]+)\/events/.exec(req.url ?? '')?.[1];
    const list = ns === undefined ? items : items.filter((e) => e.metadata?.namespace === ns);
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'EventList', metadata: { resourceVersion: '1' }, items: list }));
  });
  await new Promise<void>((r) => server.listen({ host: '127.0.0.1', port: 0 }, r));
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-events-kubectl-'));
  const server_ = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fs.writeFileSync(
    path.join(dir, 'kubeconfig'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: server_ } }],
      users: [{ name: 'u', user: {} }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
});

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await execFileP(kubectlBin(), ['--kubeconfig', path.join(dir, 'kubeconfig'), 'events', ...args]);
  return stdout.trimEnd();
}

it('kubectl events and klet print the same table for the same Events', async () => {
  // Ages between 10 m and 3 h read in whole minutes: the same for both whatever the second they run in.
  const now = Date.now();
  const ago = (minutes: number) => new Date(now - minutes * 60_000 - 5000);
  const ev = (ns: string, pod: string, over: Partial<CoreV1Event>): CoreV1Event => ({
    metadata: { namespace: ns, name: `${pod}.${Math.random().toString(16).slice(2)}` },
    involvedObject: { kind: 'Pod', namespace: ns, name: pod, uid: `uid-${pod}`, fieldPath: 'spec.containers{app}' },
    source: { component: 'kubelet', host: 'node1' },
    type: 'Normal',
    count: 1,
    ...over,
  });
  items = [
    ev('kdash', 'crash-node1', { type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container app in pod crash-node1_kdash(u)', count: 17, firstTimestamp: ago(50), lastTimestamp: ago(12) }),
    ev('kdash', 'web-node1', { reason: 'Started', message: 'Started container app', firstTimestamp: ago(55), lastTimestamp: ago(55) }),
    ev('kube-system', 'etcd-node1', { type: 'Warning', reason: 'Unhealthy', message: 'Readiness probe failed: \x1b[31mnot yet\x07 ', count: 240, firstTimestamp: ago(170), lastTimestamp: ago(20) }),
    ev('kdash', 'cfg-node1', { type: 'Warning', reason: 'Failed', message: 'Error: configmap "missing" not found', firstTimestamp: undefined, lastTimestamp: undefined }),
    ev('kdash', 'crash-node1', { reason: 'Created', message: 'Created container: app', count: 18, firstTimestamp: ago(50), lastTimestamp: ago(11) }),
  ];
  const mine = (ns?: string) => formatEventTable(sortEvents(items.filter((e) => ns === undefined || e.metadata?.namespace === ns)), new Date(), { namespaces: ns === undefined });
  expect(mine()).toBe(await kubectl('-A'));
  expect(mine('kdash')).toBe(await kubectl('-n', 'kdash'));
  // What the table shows (so a change to both is seen too).
  // eslint-disable-next-line no-control-regex -- the BEL passes through, as kubectl lets it
  expect(mine()).toMatch(/^kube-system +20m \(x240 over 170m\) +Warning +Unhealthy +Pod\/etcd-node1 +Readiness probe failed: \^\[\[31mnot yet\x07$/m);
  expect(mine().split('\n')[1]).toMatch(/^kdash +<unknown> +Warning +Failed +Pod\/cfg-node1 +Error: configmap "missing" not found$/);
});
