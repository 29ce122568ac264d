/**
 * The pod list+watch of lib/kube/node-api.ts against a fake API server
 * (plain HTTP, insecure-skip-tls-verify): it ends as soon as its signal
 * aborts, also while the watch request still waits for its response headers
 * (client-node hands over the watch's controller only once they are in);
 * watches share the connection pool of the other requests and last 5 to 10
 * minutes each (ConfigMap and Secret watches 30 to 60).
 */
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { connectNodeApi, watchTimeoutSeconds } from '../../src/lib/kube/node-api.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanups.splice(0)) fn();
});

/** An API server whose pod list answers and whose watches never do. */
async function stallingWatchServer(): Promise<{ url: string; watches: () => number }> {
  let watches = 0;
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/api/v1/pods' && url.searchParams.get('watch') !== 'true') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '7' }, items: [] }));
      return;
    }
    if (url.pathname === '/api/v1/pods') {
      watches++; // held: no headers until the server closes
      return;
    }
    res.writeHead(404).end();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, watches: () => watches };
}

function kubeconfig(server: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-kubeconfig-'));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'kubeconfig');
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: c',
      '  cluster:',
      `    server: ${server}`,
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: u',
      '  user:',
      '    token: t0ken',
      'contexts:',
      '- name: x',
      '  context: {cluster: c, user: u}',
      'current-context: x',
      '',
    ].join('\n'),
  );
  return file;
}

it('the pod watch ends at once when its signal aborts before the watch has its response headers', async () => {
  const srv = await stallingWatchServer();
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const errors: string[] = [];
  let lists = 0;
  const done = api.watchNodePods('n1', { pods: () => lists++, error: (m) => errors.push(m) }, ctrl.signal);
  while (srv.watches() === 0) await new Promise((r) => setTimeout(r, 10));
  const t0 = Date.now();
  ctrl.abort();
  await done;
  expect(Date.now() - t0).toBeLessThan(1000);
  expect(errors).toEqual([]);
}, 10_000);

/** An API server whose pod list answers and whose watches each send one bookmark and end (as at their timeoutSeconds). */
async function shortWatchServer(): Promise<{ url: string; connections: () => number; watchTimeouts: number[] }> {
  let connections = 0;
  const watchTimeouts: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const kind = url.pathname === '/api/v1/pods' ? 'Pod' : url.pathname === '/api/v1/namespaces/ns1/configmaps' ? 'ConfigMap' : undefined;
    if (kind === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'application/json' });
    if (url.searchParams.get('watch') !== 'true') {
      res.end(JSON.stringify({ apiVersion: 'v1', kind: `${kind}List`, metadata: { resourceVersion: '7' }, items: [] }));
      return;
    }
    watchTimeouts.push(Number(url.searchParams.get('timeoutSeconds')));
    res.end(JSON.stringify({ type: 'BOOKMARK', object: { kind, apiVersion: 'v1', metadata: { resourceVersion: String(7 + watchTimeouts.length) } } }) + '\n');
  });
  server.on('connection', (s) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, connections: () => connections, watchTimeouts };
}

it('watches go over the connection the other requests use, and ask the server for 5 to 10 minutes each (the reflector\'s)', async () => {
  const srv = await shortWatchServer();
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const errors: string[] = [];
  const done = api.watchNodePods('n1', { pods: () => undefined, error: (m) => errors.push(m) }, ctrl.signal);
  while (srv.watchTimeouts.length < 8) await new Promise((r) => setTimeout(r, 10));
  ctrl.abort();
  await done;
  expect(errors).toEqual([]);
  // One list and eight watches one after the other over the shared pool: at most two connections (the
  // list's may not be back in the pool when the first watch starts); a new pool per watch made one each.
  expect(srv.connections()).toBeLessThanOrEqual(2);
  for (const t of srv.watchTimeouts) {
    expect(t).toBeGreaterThanOrEqual(300);
    expect(t).toBeLessThan(600);
  }
}, 10_000);

it('a ConfigMap or Secret watch asks the server for 30 to 60 minutes (the kubelet\'s watch-based manager)', async () => {
  const srv = await shortWatchServer();
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const errors: string[] = [];
  const done = api.watchObject('configmaps', 'ns1', 'cm1', { items: () => undefined, error: (m) => errors.push(m) }, ctrl.signal);
  while (srv.watchTimeouts.length < 4) await new Promise((r) => setTimeout(r, 10));
  ctrl.abort();
  await done;
  expect(errors).toEqual([]);
  for (const t of srv.watchTimeouts) {
    expect(t).toBeGreaterThanOrEqual(1800);
    expect(t).toBeLessThan(3600);
  }
}, 10_000);

it('draws each watch\'s timeoutSeconds between 5 and 10 minutes', () => {
  expect(watchTimeoutSeconds(() => 0)).toBe(300);
  expect(watchTimeoutSeconds(() => 0.5)).toBe(450);
  expect(watchTimeoutSeconds(() => 0.999)).toBe(599);
});

it('a watch cut off by the server going away resumes from its resourceVersion once the server is back, without a list (the reflector\'s)', async () => {
  let lists = 0;
  const watchRvs: string[] = [];
  const sockets = new Set<net.Socket>();
  const servers: http.Server[] = [];
  let port = 0;
  const handler: http.RequestListener = (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/v1/pods') return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'application/json' });
    if (url.searchParams.get('watch') !== 'true') {
      lists++;
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '7' }, items: [] }));
      return;
    }
    watchRvs.push(url.searchParams.get('resourceVersion') ?? '');
    const pod = { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p1', namespace: 'default', uid: 'u1', resourceVersion: '9' } };
    if (watchRvs.length > 1) return void res.write(''); // held open
    // The first watch brings a pod, then the server goes away (the connection cut, nothing listening) and comes back.
    res.write(JSON.stringify({ type: 'ADDED', object: pod }) + '\n', () => {
      setTimeout(() => {
        servers[0]!.close();
        for (const s of sockets) s.destroy();
        setTimeout(() => void listen(port), 700);
      }, 50);
    });
  };
  const listen = (p: number) =>
    new Promise<void>((r) => {
      const server = http.createServer(handler);
      server.on('connection', (s) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      });
      servers.push(server);
      server.listen(p, '127.0.0.1', () => {
        port = (server.address() as net.AddressInfo).port;
        r();
      });
    });
  await listen(0);
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    for (const s of servers) s.close();
  });
  const api = await connectNodeApi(kubeconfig(`http://127.0.0.1:${port}`));
  const ctrl = new AbortController();
  const errors: string[] = [];
  const seq: string[] = [];
  const done = api.watchNodePods('n1', { pods: (p) => seq.push(`pods ${p.length}`), error: (m) => (errors.push(m), seq.push('error')) }, ctrl.signal);
  while (watchRvs.length < 2) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  ctrl.abort();
  await done;
  // One list; the watch started again from the pod's resourceVersion once the server was back.
  expect(lists).toBe(1);
  expect(watchRvs[0]).toBe('7');
  expect(watchRvs.at(-1)).toBe('9');
  expect(errors.length).toBeGreaterThan(0);
  // The set handed over after the list and after the pod came; and again once the watch ran again (current again).
  expect(seq.slice(0, 3)).toEqual(['pods 0', 'pods 1', 'error']);
  expect(seq.at(-1)).toBe('pods 1');
}, 15_000);
