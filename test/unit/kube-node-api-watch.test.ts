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

/**
 * The fakes below answer as kube-apiserver 1.33 does by default (WatchList
 * off): a watch asking for its initial events is refused with 422, and klet
 * lists instead. The watch-list itself is tested at the end.
 */
function refuseWatchList(url: URL, res: http.ServerResponse): boolean {
  if (url.searchParams.get('watch') !== 'true' || url.searchParams.get('sendInitialEvents') === null) return false;
  res.writeHead(422, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Invalid', code: 422, message: 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled' }));
  return true;
}

/** Listens on a loopback port; the test's cleanup closes the server and its connections. Its URL. */
async function serve(server: http.Server): Promise<string> {
  const sockets = new Set<net.Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** An API server whose pod list answers and whose watches never do. */
async function stallingWatchServer(): Promise<{ url: string; watches: () => number }> {
  let watches = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (refuseWatchList(url, res)) return;
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
  const url = await serve(server);
  return { url, watches: () => watches };
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
    if (refuseWatchList(url, res)) return;
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

/**
 * A fake API server that can go away (nothing listening, its connections cut)
 * and come back on the same port; the test's cleanup closes it.
 */
async function restartableServer(handler: http.RequestListener): Promise<{ url: string; down(): void; up(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let server: http.Server | undefined;
  let port = 0;
  const up = () =>
    new Promise<void>((r) => {
      server = http.createServer(handler);
      server.on('connection', (s) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        r();
      });
    });
  const down = () => {
    server?.close();
    for (const s of sockets) s.destroy();
  };
  await up();
  cleanups.push(down);
  return { url: `http://127.0.0.1:${port}`, down, up };
}

it('a watch cut off by the server going away resumes from its resourceVersion once the server is back, without a list (the reflector\'s)', async () => {
  let lists = 0;
  const watchRvs: string[] = [];
  const handler: http.RequestListener = (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (refuseWatchList(url, res)) return;
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
        srv.down();
        setTimeout(() => void srv.up(), 700);
      }, 50);
    });
  };
  // The handler's callbacks run once requests come, after srv is set.
  const srv = await restartableServer(handler);
  const api = await connectNodeApi(kubeconfig(srv.url));
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

/** A fake API server that streams a watch's initial events (WatchList, kube-apiserver 1.34's default); `answer` writes the n-th watch's answer. */
async function watchListServer(answer: (n: number, url: URL, res: http.ServerResponse) => void): Promise<{ url: string; requests: URL[] }> {
  const requests: URL[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(url);
    if (url.pathname !== '/api/v1/pods') return void res.writeHead(404).end();
    if (url.searchParams.get('watch') !== 'true') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '7' }, items: [ev('', 'p0', '6', undefined, true)] }));
      return;
    }
    answer(requests.filter((u) => u.searchParams.get('watch') === 'true').length, url, res);
  });
  const url = await serve(server);
  return { url, requests };
}
function ev(type: string, name: string, rv: string, annotations?: Record<string, string>): string;
function ev(type: string, name: string, rv: string, annotations: Record<string, string> | undefined, bare: true): object;
function ev(type: string, name: string, rv: string, annotations?: Record<string, string>, bare?: boolean): string | object {
  const object = { kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'default', uid: `u-${name}`, resourceVersion: rv, ...(annotations ? { annotations } : {}) } };
  return bare ? object : JSON.stringify({ type, object }) + '\n';
}
const END = { 'k8s.io/initial-events-end': 'true' };
const streaming = (res: http.ServerResponse) => res.writeHead(200, { 'Content-Type': 'application/json' });

it('where the server streams initial events, one watch request gives the whole set (no list), handed over once, and the next watch resumes from the bookmark that ended them', async () => {
  const srv = await watchListServer((n, _url, res) => {
    streaming(res);
    if (n === 1) {
      res.write(ev('ADDED', 'p1', '11') + ev('ADDED', 'p2', '12') + ev('BOOKMARK', '', '20', END));
      setTimeout(() => res.end(ev('ADDED', 'p3', '21')), 50); // a change, then the server ends the watch
    } else res.write(''); // held open
  });
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const errors: string[] = [];
  const seq: string[] = [];
  const done = api.watchNodePods('n1', { pods: (p) => seq.push(`pods ${p.map((x) => x.metadata?.name).join(',')}`), error: (m) => errors.push(m) }, ctrl.signal);
  while (srv.requests.length < 2) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 50));
  ctrl.abort();
  await done;
  expect(errors).toEqual([]);
  expect(srv.requests.every((u) => u.searchParams.get('watch') === 'true')).toBe(true); // no LIST
  const [first, second] = srv.requests;
  expect(first!.searchParams.get('sendInitialEvents')).toBe('true');
  expect(first!.searchParams.get('resourceVersionMatch')).toBe('NotOlderThan');
  expect(first!.searchParams.get('allowWatchBookmarks')).toBe('true');
  expect(first!.searchParams.get('resourceVersion')).toBeNull();
  expect(first!.searchParams.get('fieldSelector')).toBe('spec.nodeName=n1');
  expect(second!.searchParams.get('sendInitialEvents')).toBeNull();
  expect(second!.searchParams.get('resourceVersion')).toBe('21');
  // Never the partial set (p1 alone): the set once the bookmark ended the initial events, then the change.
  expect(seq).toEqual(['pods p1,p2', 'pods p1,p2,p3']);
}, 10_000);

it('a watch cut off before its initial events ended hands over nothing and asks for the whole set again', async () => {
  const srv = await watchListServer((n, _url, res) => {
    streaming(res);
    if (n === 1) res.end(ev('ADDED', 'p1', '11')); // cut off before the bookmark
    else if (n === 2) res.write(ev('ADDED', 'p1', '11') + ev('ADDED', 'p2', '12') + ev('BOOKMARK', '', '20', END));
    else res.write('');
  });
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const errors: string[] = [];
  const seq: string[] = [];
  const done = api.watchNodePods('n1', { pods: (p) => seq.push(`pods ${p.length}`), error: (m) => (errors.push(m), seq.push('error')) }, ctrl.signal);
  while (!seq.includes('pods 2')) await new Promise((r) => setTimeout(r, 10));
  ctrl.abort();
  await done;
  expect(srv.requests.map((u) => u.searchParams.get('sendInitialEvents'))).toEqual(['true', 'true']);
  expect(seq).toEqual(['error', 'pods 2']);
  expect(errors[0]).toMatch(/pods on node n1: the watch ended before its initial events were all sent/);
}, 10_000);

it('a server that refuses initial events (422, as kube-apiserver 1.33) is listed instead, without an error, and not asked for them again', async () => {
  const srv = await watchListServer((n, url, res) => {
    if (refuseWatchList(url, res)) return;
    streaming(res);
    if (n === 2) res.end(); // the first plain watch ends (its timeoutSeconds): the next resumes from the list's resourceVersion
    else res.write('');
  });
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const errors: string[] = [];
  const seq: string[] = [];
  const done = api.watchNodePods('n1', { pods: (p) => seq.push(`pods ${p.length}`), error: (m) => errors.push(m) }, ctrl.signal);
  while (srv.requests.length < 4) await new Promise((r) => setTimeout(r, 10));
  ctrl.abort();
  await done;
  expect(errors).toEqual([]);
  expect(seq).toEqual(['pods 1']);
  const shape = (u: URL) => (u.searchParams.get('watch') !== 'true' ? 'list' : u.searchParams.get('sendInitialEvents') ? 'watch-list' : `watch rv=${u.searchParams.get('resourceVersion')}`);
  expect(srv.requests.map(shape)).toEqual(['watch-list', 'list', 'watch rv=7', 'watch rv=7']);
}, 10_000);

it('a server that takes the watch-list but answers with an ERROR event before the initial events end (an etcd without progress notifications) is listed instead, and not asked again', async () => {
  const srv = await watchListServer((n, url, res) => {
    streaming(res);
    if (url.searchParams.get('sendInitialEvents')) {
      res.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'InternalError', code: 500, message: 'a watch stream was requested by the client but the required storage feature RequestWatchProgress is disabled' } }) + '\n');
    } else res.write('');
  });
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const seq: string[] = [];
  const done = api.watchNodePods('n1', { pods: (p) => seq.push(`pods ${p.length}`), error: () => seq.push('error') }, ctrl.signal);
  while (srv.requests.length < 3) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 50));
  ctrl.abort();
  await done;
  const shape = (u: URL) => (u.searchParams.get('watch') !== 'true' ? 'list' : u.searchParams.get('sendInitialEvents') ? 'watch-list' : `watch rv=${u.searchParams.get('resourceVersion')}`);
  expect(srv.requests.map(shape)).toEqual(['watch-list', 'list', 'watch rv=7']);
  expect(seq).toEqual(['pods 1']);
}, 10_000);

it('a watch the server refuses with 429 resumes from its resourceVersion after the back-off, without a list (the reflector\'s)', async () => {
  const srv = await watchListServer((n, url, res) => {
    if (refuseWatchList(url, res)) return;
    if (n === 2) return void res.writeHead(429, { 'Retry-After': '1' }).end(); // too many requests
    streaming(res);
    res.write('');
  });
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const errors: string[] = [];
  const done = api.watchNodePods('n1', { pods: () => undefined, error: (m) => errors.push(m) }, ctrl.signal);
  while (srv.requests.length < 4) await new Promise((r) => setTimeout(r, 10));
  ctrl.abort();
  await done;
  const shape = (u: URL) => (u.searchParams.get('watch') !== 'true' ? 'list' : u.searchParams.get('sendInitialEvents') ? 'watch-list' : `watch rv=${u.searchParams.get('resourceVersion')}`);
  expect(srv.requests.map(shape)).toEqual(['watch-list', 'list', 'watch rv=7', 'watch rv=7']);
  expect(errors).toEqual([expect.stringMatching(/watch pods on node n1: 429: Too Many Requests/)]);
}, 10_000);

/** An API server for ConfigMap cm1 in ns1 whose lists answer `status` for the first `forbidden` of them (the Node authorizer's 403), then the ConfigMap; watches stream nothing. */
async function authorizerLagServer(forbidden: number, after?: { forbidAgain: () => boolean }): Promise<{ url: string; lists: () => number; watches: () => number; endWatches: () => void }> {
  let lists = 0;
  let watches = 0;
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (refuseWatchList(url, res)) return;
    if (url.pathname !== '/api/v1/namespaces/ns1/configmaps') return void res.writeHead(404).end();
    if (url.searchParams.get('watch') === 'true') {
      watches++;
      if (after?.forbidAgain()) return void forbid(res);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('');
      open.add(res);
      return;
    }
    lists++;
    if (lists <= forbidden || after?.forbidAgain()) return void forbid(res);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '5' }, items: [{ metadata: { name: 'cm1', namespace: 'ns1', uid: 'u1', resourceVersion: '4' }, data: { k: 'v' } }] }));
  });
  const forbid = (res: http.ServerResponse) => {
    res.writeHead(403, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'configmaps "cm1" is forbidden: User "system:node:n1" cannot list resource "configmaps" in API group "" in the namespace "ns1": no relationship found between node \'n1\' and this object' }));
  };
  const url = await serve(server);
  const endWatches = () => {
    for (const res of open) res.end();
    open.clear();
  };
  return { url, lists: () => lists, watches: () => watches, endWatches };
}

it('a 403 before a ConfigMap was ever listed is the Node authorizer catching up: retried without a word; one after it was listed is reported at once', async () => {
  let forbidAgain = false;
  const srv = await authorizerLagServer(2, { forbidAgain: () => forbidAgain });
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const errors: string[] = [];
  const sets: number[] = [];
  const done = api.watchObject('configmaps', 'ns1', 'cm1', { items: (items) => sets.push(items.length), error: (m) => errors.push(m) }, ctrl.signal);
  while (srv.watches() === 0) await new Promise((r) => setTimeout(r, 10));
  expect(srv.lists()).toBe(3);
  expect(errors).toEqual([]);
  await new Promise((r) => setTimeout(r, 20));
  expect(sets).toEqual([1]);
  // Listed once: a later 403 (the pod went, or RBAC changed) is no lag.
  forbidAgain = true;
  srv.endWatches();
  while (errors.length === 0) await new Promise((r) => setTimeout(r, 10));
  ctrl.abort();
  await done;
  expect(errors[0]).toMatch(/403 Forbidden: configmaps "cm1" is forbidden/);
}, 10_000);

it('after an API server restart, one watch resumes and meets 410 Gone; the others list again without trying to resume', async () => {
  const names = ['cm1', 'cm2', 'cm3', 'cm4'];
  let restarted = false;
  const requests: Array<{ name: string; watch: boolean; rv: string }> = [];
  const handler: http.RequestListener = (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (refuseWatchList(url, res)) return;
    const name = (url.searchParams.get('fieldSelector') ?? '').replace('metadata.name=', '');
    const watch = url.searchParams.get('watch') === 'true';
    requests.push({ name, watch, rv: url.searchParams.get('resourceVersion') ?? '' });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    const item = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'ns1', uid: `u-${name}`, resourceVersion: restarted ? '50' : '5' } };
    if (!watch) return void res.end(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: restarted ? '50' : '5' }, items: [item] }));
    // A restarted server's watch cache starts at etcd's revision: an older resourceVersion is too old.
    if (restarted && Number(url.searchParams.get('resourceVersion')) < 50) {
      return void res.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410, message: 'too old resource version: 5 (50)' } }) + '\n');
    }
    res.write(''); // held open
  };
  const srv = await restartableServer(handler);
  const api = await connectNodeApi(kubeconfig(srv.url));
  const ctrl = new AbortController();
  const sets = new Map<string, string[]>();
  const done = names.map((n) =>
    api.watchObject('configmaps', 'ns1', n, { items: (items) => sets.set(n, [...(sets.get(n) ?? []), items[0]?.metadata?.resourceVersion ?? '']), error: () => undefined }, ctrl.signal),
  );
  const watching = () => names.every((n) => requests.some((r) => r.name === n && r.watch));
  while (!watching()) await new Promise((r) => setTimeout(r, 10));
  // The server goes away for a while (nothing listening), then comes back restarted.
  srv.down();
  await new Promise((r) => setTimeout(r, 1500));
  const before = requests.length;
  restarted = true;
  await srv.up();
  const current = () => names.every((n) => sets.get(n)?.at(-1) === '50') && names.every((n) => requests.slice(before).some((r) => r.name === n && r.watch && r.rv === '50'));
  while (!current()) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  ctrl.abort();
  await Promise.all(done);
  const after = requests.slice(before);
  // One resumed watch (from 5: answered 410), then a list and a watch from 50 for each ConfigMap: 9 requests, not 12.
  expect(after.filter((r) => r.watch && r.rv === '5')).toHaveLength(1);
  expect(after.filter((r) => !r.watch).map((r) => r.name).sort()).toEqual(names);
  expect(after.filter((r) => r.watch && r.rv === '50').map((r) => r.name).sort()).toEqual(names);
  expect(after).toHaveLength(9);
}, 15_000);
