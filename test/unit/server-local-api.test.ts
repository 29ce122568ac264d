import { chmod, link, lstat, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InputError, KletError } from '../../src/lib/errors.js';
import { EventBus, type BusMessage, type KletEventBody } from '../../src/lib/events/index.js';
import { setLogLevel, setLogSink } from '../../src/lib/log.js';
import { KletMetrics } from '../../src/lib/metrics/index.js';
import { LastSyncs } from '../../src/lib/syncloop/last-syncs.js';
import {
  bearerTokenMatches,
  isLoopbackHost,
  LocalApiUnavailableError,
  localApiEvents,
  isNodeStatus,
  localApiRequest,
  localApiSocketPath,
  parseListen,
  readAuthTokenFile,
  startLocalApi,
  type Health,
  type LocalApi,
  type LocalApiHandlers,
} from '../../src/lib/server/index.js';

const TOKEN = 'c2VjcmV0LXRva2VuLWZvci10ZXN0cw-_.~+/==';

let dir: string;
let logs: string[];
const metrics = new KletMetrics({ defaultMetrics: false });

beforeAll(() => {
  logs = [];
  setLogLevel('debug');
  setLogSink((line) => logs.push(line));
});
afterAll(() => {
  setLogLevel('info');
  setLogSink((line) => process.stderr.write(line + '\n'));
});
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'klet-api-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const pod = (n: number): KletEventBody => ({ kind: 'PodLifecycle', pod: `default/p${n}`, uid: `u${n}`, state: 'SyncPod' });

function handlers(over: Partial<LocalApiHandlers> = {}): LocalApiHandlers {
  return {
    healthz: () => ({ ok: true, checks: { runtime: { ok: true, message: 'RuntimeReady' } } }),
    pods: async () => ({
      apiVersion: 'v1',
      kind: 'PodList',
      items: [{ metadata: { name: 'web', creationTimestamp: new Date('2024-05-01T10:00:00.123Z') }, status: { restarts: 3n } }],
    }),
    node: async () => ({
      kind: 'KletNodeStatus',
      nodeName: 'node1',
      startedAt: '2024-05-01T10:00:00.000Z',
      runtime: { name: 'containerd', version: 'v2.1.4', conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }], error: null },
      sources: [{ name: '/etc/kubernetes/manifests', lastReadAt: '2024-05-01T10:00:01.000Z', errors: [] }],
      pleg: { healthy: true, message: 'ok', lastRelistAt: '2024-05-01T10:00:02.000Z', lastRelistDurationMs: 3.2, error: null },
      podWorkers: { counts: { SyncPod: 1 }, pending: 0, running: 1 },
      lastEventSeq: 0,
    }),
    plans: () => [],
    events: new EventBus(),
    metrics,
    summary: async () => ({ node: { nodeName: 'node1', startTime: '2024-05-01T10:00:00.000Z' }, pods: [] }),
    ...over,
  };
}

/** Start an API on a fresh socket in `dir`, closed after the test. */
const started: LocalApi[] = [];
async function start(over: Partial<LocalApiHandlers> = {}, listen?: { host: string; port: number; token: string }) {
  const h = handlers(over);
  const api = await startLocalApi({ socketPath: localApiSocketPath(dir), handlers: h, listen });
  started.push(api);
  return { api, h, socket: api.address.socketPath };
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((a) => a.close()));
});

describe('startLocalApi: the unix socket', () => {
  it('creates the socket with mode 0600 and removes it on close', async () => {
    const { api, socket } = await start();
    expect(socket).toBe(path.join(dir, 'klet.sock'));
    const st = await stat(socket);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    // No temporary directory left behind.
    expect(await readdir(dir)).toEqual(['klet.sock']);
    await api.close();
    await api.close(); // idempotent
    await expect(lstat(socket)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('replaces a stale socket', async () => {
    // A socket file nobody listens on: bind one, keep a second name, close the first.
    const stale = path.join(dir, 'klet.sock');
    const server: Server = createServer();
    const first = path.join(dir, 'first.sock');
    await new Promise<void>((r) => server.listen(first, r));
    await link(first, stale);
    await new Promise<void>((r) => server.close(() => r()));
    expect((await lstat(stale)).isSocket()).toBe(true);

    const { socket } = await start();
    const res = await localApiRequest(socket, '/healthz');
    expect(res.status).toBe(200);
  });

  it('refuses a socket another process serves on, and leaves it alone', async () => {
    const { socket } = await start();
    const err = await startLocalApi({ socketPath: socket, handlers: handlers() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KletError);
    expect((err as Error).message).toMatch(/in use: is another klet sync running/);
    expect((await localApiRequest(socket, '/healthz')).body).toBe('ok');
  });

  it('never removes a file that is not a socket', async () => {
    const file = path.join(dir, 'klet.sock');
    await writeFile(file, 'precious');
    const err = await startLocalApi({ socketPath: file, handlers: handlers() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toContain('is not a socket');
    expect(await readFile(file, 'utf8')).toBe('precious');
  });

  it('rejects a path too long for a unix socket', async () => {
    const long = path.join(dir, 'x'.repeat(120), 'klet.sock');
    await expect(startLocalApi({ socketPath: long, handlers: handlers() })).rejects.toThrow(/too long for a unix socket/);
  });
});

describe('startLocalApi: routes', () => {
  it('GET /healthz: ok, failing checks, verbose JSON', async () => {
    let health: Health = { ok: true, checks: { runtime: { ok: true, message: 'RuntimeReady' } } };
    const { socket } = await start({ healthz: () => health });
    expect(await localApiRequest(socket, '/healthz')).toMatchObject({ status: 200, body: 'ok' });

    health = {
      ok: false,
      checks: {
        runtime: { ok: false, message: 'container runtime is down' },
        pleg: { ok: true, message: 'relisted 1s ago' },
        sources: { ok: false, message: '/etc/klet/manifests: permission denied' },
      },
    };
    const failing = await localApiRequest(socket, '/healthz');
    expect(failing.status).toBe(500);
    expect(failing.body).toBe(
      '[-]runtime failed: container runtime is down\n' +
        '[-]sources failed: /etc/klet/manifests: permission denied\n' +
        'healthz check failed\n',
    );

    const verbose = await localApiRequest(socket, '/healthz?verbose');
    expect(verbose.status).toBe(500);
    expect(verbose.contentType).toMatch(/^application\/json/);
    expect(JSON.parse(verbose.body)).toEqual(health);
    expect(JSON.parse((await localApiRequest(socket, '/healthz?verbose=true')).body)).toEqual(health);
  });

  it('GET /pods: JSON with Dates and bigints as klet prints them', async () => {
    const { socket } = await start();
    const res = await localApiRequest(socket, '/pods');
    expect(res.status).toBe(200);
    expect(res.contentType).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual({
      apiVersion: 'v1',
      kind: 'PodList',
      items: [{ metadata: { name: 'web', creationTimestamp: '2024-05-01T10:00:00Z' }, status: { restarts: '3' } }],
    });
  });

  it('GET /node: the node status as JSON', async () => {
    const { socket } = await start();
    const res = await localApiRequest(socket, '/node');
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(isNodeStatus(body)).toBe(true);
    expect(body).toMatchObject({ nodeName: 'node1', runtime: { name: 'containerd' }, podWorkers: { pending: 0, running: 1 } });
  });

  it('GET /plans: each pod\'s last sync, as the sync loop keeps them', async () => {
    const syncs = new LastSyncs();
    const bus = new EventBus();
    const plan = { killPod: false, createSandbox: false, initContainersToStart: [], containersToStart: ['app'], ephemeralContainersToStart: [], containersToKill: [] };
    const body = (retryAt: string) => ({
      kind: 'PodSync' as const,
      pod: 'default/web',
      uid: 'u1',
      plan,
      failures: [{ container: 'app', reason: 'CrashLoopBackOff', message: 'back-off 5m0s restarting failed container=app pod=web_default(u1)', retryAt }],
    });
    syncs.record(body('2024-05-01T10:05:00.000Z'), new Date('2024-05-01T10:00:00.000Z'), (e) => bus.emit(e));
    // The same plan again (at the back-off cap, only its end moved): not emitted again, but served as the latest.
    syncs.record(body('2024-05-01T10:10:00.000Z'), new Date('2024-05-01T10:05:00.000Z'), (e) => bus.emit(e));
    expect(bus.recent().map((e) => e.kind)).toEqual(['PodSync']);
    const { socket } = await start({ plans: () => syncs.list() });
    const res = await localApiRequest(socket, '/plans');
    expect(res.status).toBe(200);
    const items = (JSON.parse(res.body) as { items: unknown[] }).items;
    expect(items).toEqual([{ ...body('2024-05-01T10:10:00.000Z'), seq: 1, time: bus.recent()[0]!.time, lastSyncAt: '2024-05-01T10:05:00.000Z' }]);
    // Another plan is emitted; a removed pod is forgotten.
    syncs.record({ ...body('2024-05-01T10:10:00.000Z'), failures: [] }, new Date('2024-05-01T10:06:00.000Z'), (e) => bus.emit(e));
    expect(bus.lastSeq).toBe(2);
    syncs.forget('u1');
    expect(JSON.parse((await localApiRequest(socket, '/plans')).body)).toEqual({ items: [] });
  });

  it('GET /pods: 500 with the reason when listing fails', async () => {
    const { socket } = await start({ pods: () => Promise.reject(new Error('runtime went away')) });
    const res = await localApiRequest(socket, '/pods');
    expect(res.status).toBe(500);
    expect(JSON.parse(res.body)).toEqual({ error: 'listing pods: runtime went away', status: 500 });
  });

  it('GET /metrics: the Prometheus exposition', async () => {
    const { socket } = await start();
    const res = await localApiRequest(socket, '/metrics');
    expect(res.status).toBe(200);
    expect(res.contentType).toBe(metrics.contentType);
    expect(res.body).toContain('# TYPE kubelet_running_pods gauge');
  });

  it('404 JSON for other paths, 405 for other methods', async () => {
    const { socket } = await start();
    const missing = await localApiRequest(socket, '/nope?x=1');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toEqual({ error: 'no such endpoint: /nope', status: 404 });

    const http = await import('node:http');
    const res = await new Promise<{ status: number; allow: string | undefined; body: string }>((resolve, reject) => {
      const req = http.request({ socketPath: socket, path: '/pods', method: 'DELETE' }, (r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, allow: r.headers.allow, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(res.status).toBe(405);
    expect(res.allow).toBe('GET');
    expect(JSON.parse(res.body)).toMatchObject({ status: 405 });
  });
});

describe('startLocalApi: /events', () => {
  it('?follow=false: the retained events after since, as NDJSON', async () => {
    const bus = new EventBus();
    for (let i = 1; i <= 4; i++) bus.emit(pod(i));
    const { socket } = await start({ events: bus });
    const res = await localApiRequest(socket, '/events?since=2&follow=false');
    expect(res.status).toBe(200);
    expect(res.contentType).toBe('application/x-ndjson; charset=utf-8');
    const lines = res.body.trimEnd().split('\n').map((l) => JSON.parse(l) as BusMessage);
    expect(lines.map((e) => (e.kind === 'Dropped' ? 0 : e.seq))).toEqual([3, 4]);
    expect(lines[0]).toMatchObject({ kind: 'PodLifecycle', pod: 'default/p3', uid: 'u3' });

    const all = await localApiRequest(socket, '/events?follow=false');
    expect(all.body.trimEnd().split('\n')).toHaveLength(4);
  });

  it('400 for a bad since or follow', async () => {
    const { socket } = await start();
    expect((await localApiRequest(socket, '/events?since=-1')).status).toBe(400);
    expect((await localApiRequest(socket, '/events?since=abc')).status).toBe(400);
    const bad = await localApiRequest(socket, '/events?follow=maybe');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ error: '?follow: expected true or false' });
  });

  it('streams the backlog after since, then live events, until the client goes away', async () => {
    const bus = new EventBus();
    for (let i = 1; i <= 3; i++) bus.emit(pod(i));
    const { socket } = await start({ events: bus });

    const ac = new AbortController();
    const got: number[] = [];
    const reader = (async () => {
      for await (const m of localApiEvents(socket, { since: 1, signal: ac.signal })) {
        if (m.kind !== 'Dropped') got.push(m.seq);
        if (got.length === 4) ac.abort();
      }
    })();
    await waitFor(() => bus.subscriberCount === 1);
    bus.emit(pod(4));
    bus.emit(pod(5));
    await reader;
    expect(got).toEqual([2, 3, 4, 5]);
    // The server notices the client left and unsubscribes.
    await waitFor(() => bus.subscriberCount === 0);
  });

  it('passes on the Dropped marker of a client that fell behind', async () => {
    const bus = new EventBus({ subscriberQueueSize: 5 });
    const { socket } = await start({ events: bus });
    const ac = new AbortController();
    const got: BusMessage[] = [];
    const reader = (async () => {
      for await (const m of localApiEvents(socket, { signal: ac.signal })) {
        got.push(m);
        if (m.kind !== 'Dropped' && m.seq === 50) ac.abort();
      }
    })();
    await waitFor(() => bus.subscriberCount === 1);
    // Faster than any reader: the server's waiting next() takes #1, the
    // queue of 5 keeps #46..#50, and #2..#45 are reported as dropped.
    for (let i = 1; i <= 50; i++) bus.emit(pod(i));
    await reader;
    expect(got[0]).toMatchObject({ kind: 'PodLifecycle', seq: 1 });
    expect(got[1]).toMatchObject({ kind: 'Dropped', count: 44, firstSeq: 2, lastSeq: 45 });
    expect(got.slice(2).map((m) => (m.kind === 'Dropped' ? 0 : m.seq))).toEqual([46, 47, 48, 49, 50]);
  });

  it('close() ends open streams', async () => {
    const bus = new EventBus();
    const { api, socket } = await start({ events: bus });
    const got: BusMessage[] = [];
    const reader = (async () => {
      for await (const m of localApiEvents(socket)) got.push(m);
    })();
    await waitFor(() => bus.subscriberCount === 1);
    bus.emit(pod(1));
    await waitFor(() => got.length === 1);
    await api.close();
    await reader; // ends, does not hang
    expect(bus.subscriberCount).toBe(0);
  });
});

describe('startLocalApi: TCP with a bearer token', () => {
  const listen = { host: '127.0.0.1', port: 0, token: TOKEN };

  it('answers 401 without or with a wrong token, 200 with the right one', async () => {
    const { api } = await start({}, listen);
    expect(api.address.tcp).toMatch(/^127\.0\.0\.1:\d+$/);
    const url = (p: string) => `http://${api.address.tcp}${p}`;

    const none = await fetch(url('/pods'));
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="klet"');
    const noneBody = await none.text();

    const wrong = await fetch(url('/pods'), { headers: { Authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    const prefix = await fetch(url('/nope'), { headers: { Authorization: `Bearer ${TOKEN.slice(0, -1)}` } });
    expect(prefix.status).toBe(401); // 401 before 404: unauthenticated clients learn nothing
    const basic = await fetch(url('/healthz'), { headers: { Authorization: `Basic ${TOKEN}` } });
    expect(basic.status).toBe(401);

    const ok = await fetch(url('/pods'), { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ kind: 'PodList' });
    const health = await fetch(url('/healthz'), { headers: { authorization: `bearer ${TOKEN}` } });
    expect(await health.text()).toBe('ok');

    const bodies = [noneBody, await wrong.text(), await prefix.text(), await basic.text()];
    for (const body of bodies) {
      expect(body).not.toContain(TOKEN.slice(0, 12));
      expect(JSON.parse(body)).toMatchObject({ status: 401 });
    }
    // Debug logging was on for this file: the token is in no log line.
    expect(logs.some((l) => l.includes('/pods'))).toBe(true);
    expect(logs.join('\n')).not.toContain(TOKEN.slice(0, 12));
  });

  it('the client reaches the TCP listener with a URL and the token, never naming the token', async () => {
    const { api } = await start({}, listen);
    const target = { url: `http://${api.address.tcp}`, token: TOKEN };
    const res = await localApiRequest(target, '/node');
    expect(res.status).toBe(200);
    expect(isNodeStatus(JSON.parse(res.body))).toBe(true);
    const refused = await localApiRequest({ ...target, token: `${TOKEN}x` }, '/node');
    expect(refused.status).toBe(401);
    await api.close();
    const err = await localApiRequest(target, '/node').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LocalApiUnavailableError);
    expect(String((err as Error).message)).toContain(`local API at http://${api.address.tcp}`);
    expect(String((err as Error).message)).not.toContain(TOKEN.slice(0, 12));
  });

  it('the unix socket needs no token even with TCP on', async () => {
    const { socket } = await start({}, listen);
    expect((await localApiRequest(socket, '/healthz')).status).toBe(200);
  });

  it('rejects a non-loopback host naming the listen input, and a missing token', async () => {
    const err = await start({}, { host: '0.0.0.0', port: 0, token: TOKEN }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).input).toBe('listen');
    expect((err as Error).message).toContain('0.0.0.0:0: only a loopback address');
    expect((err as Error).message).not.toContain(TOKEN);
    await expect(start({}, { host: '127.0.0.1', port: 0, token: '' })).rejects.toThrow(/^the bearer token is empty/);
    // Nothing was left listening.
    await expect(lstat(path.join(dir, 'klet.sock'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('reports a port in use and cleans up the socket', async () => {
    const { api } = await start({}, listen);
    const port = Number(api.address.tcp?.split(':')[1]);
    const other = await mkdtemp(path.join(os.tmpdir(), 'klet-api2-'));
    try {
      const err = await startLocalApi({
        socketPath: path.join(other, 'klet.sock'),
        handlers: handlers(),
        listen: { ...listen, port },
      }).catch((e: unknown) => e);
      expect((err as Error).message).toBe(`127.0.0.1:${port}: the address is in use`);
      expect((err as InputError).input).toBe('listen');
      await expect(lstat(path.join(other, 'klet.sock'))).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});

describe('localApiRequest', () => {
  it('says no sync is running when there is no socket', async () => {
    const err = await localApiRequest(path.join(dir, 'klet.sock'), '/pods').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LocalApiUnavailableError);
    expect((err as Error).message).toContain('no klet sync is running');
  });

  it('rejects with the abort reason when aborted', async () => {
    const { socket } = await start({ pods: () => new Promise(() => undefined) });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('user gave up')), 20);
    await expect(localApiRequest(socket, '/pods', { signal: ac.signal })).rejects.toThrow('user gave up');
    await expect(localApiRequest(socket, '/pods', { timeoutMs: 30 })).rejects.toThrow(/no answer to \/pods in time/);
  });
});

describe('parseListen', () => {
  it('accepts loopback addresses', () => {
    expect(parseListen('127.0.0.1:10255')).toEqual({ host: '127.0.0.1', port: 10255 });
    expect(parseListen('localhost:8080')).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListen('127.1.2.3:1')).toEqual({ host: '127.1.2.3', port: 1 });
  });

  it.each([
    ['0.0.0.0:10255', /only a loopback address/],
    ['[::]:10255', /only a loopback address/],
    ['192.168.1.10:10255', /only a loopback address/],
    ['example.com:80', /must be an IP address or localhost/],
    ['127.0.0.1', /expected HOST:PORT/],
    [':10255', /expected HOST:PORT/],
    ['127.0.0.1:99999', /between 0 and 65535/],
    ['::1:80', /expected HOST:PORT/],
    ['[127.0.0.1]:80', /brackets are only for IPv6/],
  ])('rejects %s naming the value and the listen input', (value, why) => {
    const err = (() => {
      try {
        parseListen(value);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/^"/);
    expect((err as InputError).input).toBe('listen');
    expect((err as Error).message).toMatch(why);
  });

  it('knows loopback hosts', () => {
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('::1')).toBe(true);
    expect(isLoopbackHost('0:0:0:0:0:0:0:1')).toBe(true);
    expect(isLoopbackHost('::ffff:127.0.0.1')).toBe(true);
    expect(isLoopbackHost('::ffff:10.0.0.1')).toBe(false);
    expect(isLoopbackHost('::')).toBe(false);
    expect(isLoopbackHost('localhost')).toBe(false); // a name: resolved by parseListen, not here
  });
});

describe('readAuthTokenFile', () => {
  it('reads the token, trimming the newline', async () => {
    const file = path.join(dir, 'token');
    await writeFile(file, `${TOKEN}\n`, { mode: 0o600 });
    expect(await readAuthTokenFile(file)).toBe(TOKEN);
  });

  it('names the file when it is missing, empty, shared with others or malformed, never showing the token', async () => {
    const file = path.join(dir, 'token');
    await expect(readAuthTokenFile(file)).rejects.toThrow(`token file ${file}: no such file`);
    await writeFile(file, ' \n', { mode: 0o600 });
    await expect(readAuthTokenFile(file)).rejects.toThrow(`token file ${file} is empty`);
    await writeFile(file, TOKEN);
    await chmod(file, 0o644);
    const shared = await readAuthTokenFile(file).catch((e: unknown) => e);
    expect(shared).toBeInstanceOf(InputError);
    expect((shared as InputError).message).toBe(`token file ${file}: readable or writable by other users`);
    expect((shared as InputError).suggestions).toEqual([`chmod 600 ${file}`]);
    await chmod(file, 0o600);
    await writeFile(file, 'two words');
    const malformed = await readAuthTokenFile(file).catch((e: unknown) => e);
    expect((malformed as Error).message).toMatch(/characters a bearer token cannot have/);
    expect((malformed as Error).message).not.toContain('two words');
    await expect(readAuthTokenFile(dir)).rejects.toThrow(/not a regular file/);
  });
});

describe('bearerTokenMatches', () => {
  it('matches only "Bearer <token>"', () => {
    expect(bearerTokenMatches(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerTokenMatches(`bearer  ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerTokenMatches(undefined, TOKEN)).toBe(false);
    expect(bearerTokenMatches('', TOKEN)).toBe(false);
    expect(bearerTokenMatches(TOKEN, TOKEN)).toBe(false);
    expect(bearerTokenMatches(`Bearer ${TOKEN} extra`, TOKEN)).toBe(false);
    expect(bearerTokenMatches(`Bearer ${TOKEN.toUpperCase()}`, TOKEN)).toBe(false);
  });
});

async function waitFor(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}
