/**
 * `klet sync --kubeconfig` stops promptly on SIGTERM while the API server is
 * slow to answer: here the pod watch's next request gets no response
 * headers. The stop used to wait for them (client-node handed over the
 * watch's controller only then) until client-node's own 30 s timer: "did not
 * exit within 20000 ms of SIGTERM"; klet's own REST client aborts it.
 *
 * The proxy terminates TLS (with the API server's own serving certificate,
 * so klet's kubeconfig trusts it as it trusts the server) and stalls exactly
 * the watch requests (it offers only http/1.1 in ALPN, so klet falls back to
 * HTTP/1.1 as Go's transport does): whether klet reuses a kept-alive connection or
 * opens a new one, the next watch is the one that stalls.
 */
import fs from 'node:fs';
import https from 'node:https';
import type http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { killAllSyncs, startSync } from '../helpers/sync.js';
import { teardown } from '../helpers/teardown.js';

const NODE = 'klet-stop-node';
let cluster: TestCluster;
let rt: TestRuntime;
let proxy: https.Server | undefined;
const sockets = new Set<net.Socket>();

beforeAll(async () => {
  [rt, cluster] = await Promise.all([startTestRuntime(), startTestCluster({ nodes: [NODE] })]);
}, 240_000);
afterEach(async () => {
  await killAllSyncs();
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  proxy?.close();
  await teardown(rt, cluster);
}, 120_000);

function isWatch(req: http.IncomingMessage): boolean {
  return /[?&]watch=(true|1)(&|$)/.test(req.url ?? '');
}

/**
 * An HTTPS proxy to the API server. `stallWatches()` ends the watches in
 * flight as the server ends one at its timeoutSeconds (a clean end of the
 * response), and from then on a watch request gets no response at all;
 * every other request is passed on.
 */
async function watchStallingProxy(target: URL): Promise<{ port: number; stallWatches(): void; watchStalled: Promise<void> }> {
  let stalling = false;
  let onStalled: () => void = () => undefined;
  const watchStalled = new Promise<void>((resolve) => (onStalled = resolve));
  const inFlight = new Map<http.ServerResponse, { up: http.ClientRequest; res?: http.IncomingMessage }>();
  const ca = fs.readFileSync(path.join(cluster.dir, 'ca.crt'));
  proxy = https.createServer(
    { cert: fs.readFileSync(path.join(cluster.dir, 'serving.crt')), key: fs.readFileSync(path.join(cluster.dir, 'serving.key')) },
    (req, res) => {
      if (stalling && isWatch(req)) {
        onStalled();
        return; // no headers, ever
      }
      const up = https.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers, ca }, (ures) => {
        res.writeHead(ures.statusCode ?? 502, ures.headers);
        ures.pipe(res);
        const f = inFlight.get(res);
        if (f) f.res = ures;
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
      if (isWatch(req)) {
        inFlight.set(res, { up });
        res.on('close', () => inFlight.delete(res));
      }
    },
  );
  proxy.on('connection', (s: net.Socket) => sockets.add(s));
  await new Promise<void>((r) => proxy!.listen(0, '127.0.0.1', () => r()));
  return {
    port: (proxy.address() as net.AddressInfo).port,
    watchStalled,
    stallWatches() {
      stalling = true;
      for (const [res, f] of inFlight) {
        f.res?.unpipe(res);
        f.up.destroy();
        res.end();
      }
    },
  };
}

it('stops within seconds of SIGTERM while the pod watch waits for the API server', async () => {
  const p = await watchStallingProxy(new URL(cluster.server));
  const kubeconfig = path.join(cluster.dir, 'proxied.kubeconfig');
  await cluster.writeKubeconfig(kubeconfig, { token: cluster.nodes[NODE]!.token, server: `https://127.0.0.1:${p.port}`, user: `system:node:${NODE}` });
  const dir = fs.mkdtempSync(path.join(cluster.dir, 'empty-'));
  const sync = await startSync({ rootDir: rt.rootDir, endpoint: rt.endpoint, manifestDir: dir, nodeName: NODE, args: ['--kubeconfig', kubeconfig] });
  await sync.waitForStderr(/registered node/, 30_000);
  // The pod watch ends (as at its timeoutSeconds) and its next request gets no headers.
  p.stallWatches();
  await Promise.race([p.watchStalled, new Promise((_, reject) => setTimeout(() => reject(new Error(`no watch request within 20 s\n${sync.tail()}`)), 20_000))]);
  const exit = await sync.stop(60_000);
  expect(exit.code, sync.tail()).toBe(0);
  // The stalled watch is cancelled with the stop (klet's REST client aborts a request still
  // waiting for its headers; client-node could not, and klet's 5 s straggler exit — "still running
  // 5 s after the sync stopped (open: …TCP…)" — was what ended it): nothing is left open.
  expect(exit.durationMs, sync.tail()).toBeLessThan(5_000);
  expect(sync.tail()).not.toMatch(/still running/);
}, 200_000);
