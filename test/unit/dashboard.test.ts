/**
 * The dashboard's pure parts: the store (batching to one snapshot a second, bounded
 * buffers, the crash-loop countdown from BackOff events, seq handling), the
 * key reducer, the screen layout at any size, and the feed (reconnecting
 * after the sync goes away; refusing sockets that are not klet's).
 */
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BusMessage, KletEvent } from '../../src/lib/events/types.js';
import { InputError } from '../../src/lib/errors.js';
import { LocalApiUnavailableError } from '../../src/lib/server/client.js';
import type { NodeStatus } from '../../src/lib/server/node-status.js';
import { NotKletApiError, remoteSource, runFeed, type DashboardSource } from '../../src/lib/dashboard/feed.js';
import { clip, colorWanted, countdown, fit, lineText, renderScreen, sparkline } from '../../src/lib/dashboard/screen.js';
import { DashboardStore, EVENT_LINES, FRAME_MS } from '../../src/lib/dashboard/store.js';
import { INITIAL_VIEW, keyPresses, reduceKey, visiblePods, type ViewState } from '../../src/lib/dashboard/view.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function node(over: Partial<NodeStatus> = {}): NodeStatus {
  return {
    kind: 'KletNodeStatus',
    nodeName: 'n1',
    startedAt: iso(T0),
    runtime: { name: 'containerd', version: '2.0', conditions: [], error: null },
    sources: [],
    pleg: { healthy: true, message: 'ok', lastRelistAt: iso(T0), lastRelistDurationMs: 1, error: null },
    podWorkers: { counts: {}, pending: 0, running: 0 },
    lastEventSeq: 0,
    ...over,
  };
}

function pod(name: string, status: 'Running' | 'CrashLoopBackOff', restarts = 0) {
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, creationTimestamp: iso(T0) as unknown as Date },
    spec: { containers: [{ name: 'app' }] },
    status: {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'app',
          image: 'i',
          imageID: '',
          ready: status === 'Running',
          restartCount: restarts,
          state: status === 'Running' ? { running: {} } : { waiting: { reason: 'CrashLoopBackOff' } },
        },
      ],
    },
  };
}

let seq = 0;
function ev(body: Record<string, unknown>, at = T0): KletEvent {
  return { seq: ++seq, time: iso(at), ...body } as unknown as KletEvent;
}

describe('DashboardStore', () => {
  it('publishes at most one snapshot per frame, however many events arrive', async () => {
    const store = new DashboardStore();
    let published = 0;
    store.subscribe(() => published++);
    const start = Date.now();
    // An event every 2 ms for 600 ms: 300 events.
    while (Date.now() - start < 600) {
      store.applyMessage(ev({ kind: 'SyncLoopIteration', trigger: 'pleg', durationMs: 1, pods: [] }, Date.now()));
      await new Promise((r) => setTimeout(r, 2));
    }
    await new Promise((r) => setTimeout(r, FRAME_MS * 2));
    expect(published).toBeGreaterThanOrEqual(1);
    // 600 ms at one snapshot per FRAME_MS, plus the trailing one.
    expect(published).toBeLessThanOrEqual(Math.ceil(600 / FRAME_MS) + 2);
    expect(store.getSnapshot().loop.total).toBeGreaterThan(published);
    store.close();
  });

  describe('frame clock', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('a change on a quiet store shows at once; changes within the next second wait for its end, as one snapshot', async () => {
      vi.useFakeTimers({ now: T0 });
      const store = new DashboardStore({ now: () => Date.now() });
      const at: number[] = [];
      store.subscribe(() => at.push(Date.now() - T0));
      await vi.advanceTimersByTimeAsync(5000); // quiet
      at.length = 0;
      store.applyMessage(ev({ kind: 'PLEG', type: 'ContainerStarted', podUid: 'u', containerId: 'c' }));
      await vi.advanceTimersByTimeAsync(0);
      expect(at).toEqual([5000]);
      // A busy second and a half: a change every 10 ms.
      for (let i = 0; i < 150; i++) {
        store.applyMessage(ev({ kind: 'PLEG', type: 'ContainerDied', podUid: 'u', containerId: 'c' }));
        await vi.advanceTimersByTimeAsync(10);
      }
      await vi.advanceTimersByTimeAsync(FRAME_MS);
      // One snapshot a second: at 6 s (the changes of 5.00–5.99 s) and at 7 s (those of 6.00–6.49 s), none in between.
      expect(at).toEqual([5000, 5000 + FRAME_MS, 5000 + 2 * FRAME_MS]);
      expect(store.getSnapshot().events.at(-1)?.text).toMatch(/ContainerDied/);
      store.close();
    });
  });

  it('keeps bounded event history, ignores replayed seqs, counts dropped events', () => {
    const store = new DashboardStore({ now: () => T0 });
    for (let i = 0; i < EVENT_LINES * 5; i++) store.applyMessage(ev({ kind: 'PLEG', type: 'ContainerStarted', podUid: 'u', containerId: 'c' }));
    const last = store.flush().lastSeq;
    expect(store.getSnapshot().events.length).toBe(EVENT_LINES);
    store.applyMessage({ ...ev({ kind: 'PLEG', type: 'ContainerDied', podUid: 'u', containerId: 'c' }), seq: last } as KletEvent);
    expect(store.flush().events.at(-1)?.text).toMatch(/ContainerStarted/);
    store.applyMessage({ kind: 'Dropped', count: 7, firstSeq: 1, lastSeq: 7, time: iso(T0) } as BusMessage);
    expect(store.flush().dropped).toBe(7);
    store.resetSeq();
    store.applyMessage({ ...ev({ kind: 'PLEG', type: 'ContainerDied', podUid: 'u', containerId: 'c' }), seq: 1 } as KletEvent);
    expect(store.flush().lastSeq).toBe(1);
    store.close();
  });

  it('counts down to the restart a BackOff event announces, until the container starts', () => {
    let now = T0;
    const store = new DashboardStore({ now: () => now });
    store.applyPods([pod('crash', 'CrashLoopBackOff', 2)] as never);
    store.applyMessage(ev({ kind: 'Event', pod: 'ns/crash', uid: 'uid-crash', type: 'Warning', reason: 'BackOff', message: 'back-off 20s', container: 'app', retryAt: iso(T0 + 20_000) }));
    const at = (s: ReturnType<DashboardStore['flush']>) => renderScreen(s, INITIAL_VIEW, { columns: 100, rows: 30 }).map(lineText).join('\n');
    expect(at(store.flush())).toMatch(/ns\/crash +0\/1 +CrashLoopBackOff 20s/);
    now += 7_500;
    store.tick();
    expect(at(store.flush())).toMatch(/CrashLoopBackOff 13s/);
    store.applyMessage(ev({ kind: 'Event', pod: 'ns/crash', uid: 'uid-crash', type: 'Normal', reason: 'Started', message: 'Started container app', container: 'app' }));
    expect(store.flush().retryAt.get('ns/crash')?.size).toBe(0);
    store.close();
  });

  it('sparklines: iterations per second by trigger over the last 30 s, and the last duration', () => {
    let now = T0 + 100_000;
    const store = new DashboardStore({ now: () => now });
    for (let i = 0; i < 5; i++) store.applyMessage(ev({ kind: 'SyncLoopIteration', trigger: 'housekeeping', durationMs: 2.5 + i, pods: [] }, now - 1000));
    store.applyMessage(ev({ kind: 'SyncLoopIteration', trigger: 'config', durationMs: 9, pods: [] }, now - 40_000)); // too old to show
    const s = store.flush();
    expect(s.loop.perSecond.housekeeping.at(-2)).toBe(5);
    expect(s.loop.perSecond.config.every((n) => n === 0)).toBe(true);
    expect(s.loop.lastDurationMs.housekeeping).toBe(6.5);
    now += 60_000;
    store.tick();
    expect(store.flush().loop.perSecond.housekeeping.every((n) => n === 0)).toBe(true);
    store.close();
  });
});

describe('the key reducer', () => {
  const rows = visiblePods(
    [pod('a', 'Running'), pod('b', 'CrashLoopBackOff', 4), pod('c', 'Running')].map((p) => ({
      key: `ns/${p.metadata.name}`,
      uid: p.metadata.uid,
      namespace: 'ns',
      name: p.metadata.name,
      ready: '1/1',
      status: p.status.containerStatuses[0]!.state.waiting ? 'CrashLoopBackOff' : 'Running',
      restarts: p.status.containerStatuses[0]!.restartCount,
      restartsText: '0',
      createdAt: T0,
      ip: '',
      source: 'file',
      pod: p as never,
    })),
    INITIAL_VIEW,
  );
  const press = (v: ViewState, input: string, k: Record<string, boolean> = {}) => reduceKey(v, { input, ...k }, rows, 2) as ViewState;

  it('moves, pages and clamps the selection', () => {
    let v = press(INITIAL_VIEW, '', { downArrow: true });
    expect(v.selected).toBe('ns/b');
    v = press(v, '', { pageDown: true });
    expect(v.selected).toBe('ns/c');
    v = press(v, 'j');
    expect(v.selected).toBe('ns/c');
    v = press(v, '', { pageUp: true });
    expect(v.selected).toBe('ns/a');
  });

  it('filter typing takes every key as text, q included; Esc cancels', () => {
    let v = press(INITIAL_VIEW, '/');
    v = press(v, 'q');
    v = press(v, 's');
    expect(v.filterDraft).toBe('qs');
    expect(v.sort).toBe('name');
    expect(press(v, '', { escape: true })).toMatchObject({ filterDraft: null, filter: '' });
    expect(press(v, '', { return: true })).toMatchObject({ filterDraft: null, filter: 'qs' });
  });

  it('q and Ctrl-C quit from anywhere (Ctrl-C even while typing a filter)', () => {
    expect(reduceKey(INITIAL_VIEW, { input: 'q' }, rows)).toBe('quit');
    expect(reduceKey({ ...INITIAL_VIEW, mode: 'detail' }, { input: 'q' }, rows)).toBe('quit');
    expect(reduceKey({ ...INITIAL_VIEW, filterDraft: 'x' }, { input: 'c', ctrl: true }, rows)).toBe('quit');
  });

  it('a chunk of input is key by key: text, then Enter for its CR, LF or CR LF; Tab; control characters dropped', () => {
    expect(keyPresses({ input: 'jj' })).toEqual([{ input: 'j' }, { input: 'j' }]);
    expect(keyPresses({ input: 'web\r' })).toEqual([{ input: 'w' }, { input: 'e' }, { input: 'b' }, { input: '', return: true }]);
    expect(keyPresses({ input: 'a\r\nb\n' })).toEqual([{ input: 'a' }, { input: '', return: true }, { input: 'b' }, { input: '', return: true }]);
    expect(keyPresses({ input: 'x\ty\x01\x7f' })).toEqual([{ input: 'x' }, { input: '', tab: true }, { input: 'y' }, { input: '', backspace: true }]);
    expect(keyPresses({ input: 'é😀' })).toEqual([{ input: 'é' }, { input: '😀' }]);
    // A lone LF (Ctrl-J; ink calls it "enter", not "return") is Enter; named keys pass unchanged.
    expect(keyPresses({ input: '\n' })).toEqual([{ input: '', return: true }]);
    expect(keyPresses({ input: '', downArrow: true })).toEqual([{ input: '', downArrow: true }]);
    expect(keyPresses({ input: 'c', ctrl: true })).toEqual([{ input: 'c', ctrl: true }]);
    expect(keyPresses({ input: 'q' })).toEqual([{ input: 'q' }]);
    // Fed to the reducer: "/" then "crash⏎" in one chunk applies the filter "crash".
    let v = press(INITIAL_VIEW, '/');
    for (const k of keyPresses({ input: 'crash\n' })) v = reduceKey(v, k, rows) as ViewState;
    expect(v).toMatchObject({ filter: 'crash', filterDraft: null });
  });

  it('sort by status puts failing pods first; by restarts the most first', () => {
    expect(visiblePods(rows, { sort: 'status', filter: '' })[0]?.key).toBe('ns/b');
    expect(visiblePods(rows, { sort: 'restarts', filter: '' })[0]?.key).toBe('ns/b');
    expect(visiblePods(rows, { sort: 'name', filter: 'crash' }).map((r) => r.key)).toEqual(['ns/b']);
  });
});

describe('the screen', () => {
  it('fit, clip, countdown and sparkline', () => {
    expect(fit('abcdef', 4)).toBe('abc…');
    expect(fit('ab', 4)).toBe('ab  ');
    expect(lineText(clip([{ text: 'abc' }, { text: 'def' }], 5))).toBe('abcd…');
    expect(countdown(T0 + 9_001, T0)).toBe('10s');
    expect(countdown(T0 - 5000, T0)).toBe('0s');
    expect(countdown(T0 + 299_000, T0)).toBe('4m59s');
    expect(sparkline([0, 1, 2, 4, 8])).toBe(' ▁▂▄█');
  });

  it('cluster mode: the header shows the API server and the lease age from /node; no such line without a cluster', () => {
    const cluster = (over: Partial<NonNullable<NodeStatus['cluster']>> = {}): NonNullable<NodeStatus['cluster']> => ({
      server: 'https://127.0.0.1:6443',
      nodeName: 'n1',
      registered: true,
      nodeUid: 'u1',
      lease: { renewTime: iso(T0 - 7_000), ageSeconds: 7 },
      lastError: null,
      watch: { state: 'watching', pods: 2, error: null },
      events: { sent: 3, created: 2, patched: 1, filtered: 0, dropped: 0, queued: 0 },
      requests: { list: 1, watch: 1 },
      ...over,
    });
    const header = (n: NodeStatus) => {
      const store = new DashboardStore({ now: () => T0 });
      store.applyNode(n);
      const lines = renderScreen(store.flush(), INITIAL_VIEW, { columns: 160, rows: 30 }).map(lineText);
      store.close();
      return lines.slice(0, 4).map((l) => l.trimEnd());
    };
    expect(header(node({ cluster: cluster() }))).toContain('API server https://127.0.0.1:6443 · lease 7s ago');
    expect(header(node())).not.toEqual(expect.arrayContaining([expect.stringContaining('API server')]));
    // A failure after the last renewal shows; one before it is old news.
    const failing = header(node({ cluster: cluster({ lastError: { message: 'API server https://127.0.0.1:6443: update lease n1: connection refused', at: iso(T0 - 1000) } }) }));
    expect(failing.find((l) => l.startsWith('API server'))).toContain('· API server https://127.0.0.1:6443: update lease n1: connection refused');
    const old = header(node({ cluster: cluster({ lastError: { message: 'old', at: iso(T0 - 60_000) } }) }));
    expect(old.find((l) => l.startsWith('API server'))).not.toContain('old');
    expect(header(node({ cluster: cluster({ registered: false, lease: { renewTime: null, ageSeconds: null } }) }))).toContain('API server https://127.0.0.1:6443 · not registered');
  });

  it('an event message with a newline or escape codes (the output of an exec probe) stays on its one line', () => {
    const store = new DashboardStore({ now: () => T0 });
    store.applyNode(node());
    store.applyMessage(ev({ kind: 'Event', pod: 'ns/x', uid: 'u', type: 'Warning', reason: 'Unhealthy', message: 'Readiness probe failed: not yet\n\u001b[31mred\r\tx' }));
    const lines = renderScreen(store.flush(), INITIAL_VIEW, { columns: 100, rows: 30 }).map(lineText);
    const hit = lines.filter((l) => l.includes('Readiness probe failed'));
    expect(hit).toHaveLength(1);
    expect(hit[0]).toContain("not yet  [31mred  x");
    // eslint-disable-next-line no-control-regex
    for (const l of lines) expect(l).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    store.close();
  });

  it('never draws more than the terminal holds, at any size, in any view', () => {
    const store = new DashboardStore({ now: () => T0 });
    store.applyNode(node());
    store.applyPods(Array.from({ length: 110 }, (_, i) => pod(`pod-with-a-rather-long-name-${i}`, i % 7 === 0 ? 'CrashLoopBackOff' : 'Running', i)) as never);
    for (let i = 0; i < 50; i++) store.applyMessage(ev({ kind: 'Event', pod: 'ns/x', uid: 'u', type: 'Warning', reason: 'BackOff', message: 'm'.repeat(300) }));
    store.setConnection('lost', 'klet sync is not answering: '.repeat(10));
    const snap = store.flush();
    for (const mode of ['main', 'detail', 'help'] as const) {
      for (const [columns, rows] of [[1, 1], [10, 3], [40, 10], [59, 15], [60, 16], [80, 24], [200, 60]] as const) {
        const lines = renderScreen(snap, { ...INITIAL_VIEW, mode, selected: 'ns/pod-with-a-rather-long-name-7' }, { columns, rows });
        expect(lines.length, `${mode} ${columns}x${rows}`).toBeLessThanOrEqual(rows);
        for (const l of lines) expect(lineText(l).length, `${mode} ${columns}x${rows}`).toBeLessThanOrEqual(columns);
      }
    }
    store.close();
  });
});

describe('the feed', () => {
  it('says the sync is gone, keeps retrying, and resumes (from 1 again after a sync restart)', async () => {
    const store = new DashboardStore({ frameMs: 0 });
    let phase = 0;
    const states: string[] = [];
    store.subscribe(() => {
      const c = store.getSnapshot().connection;
      if (states.at(-1) !== c.message) states.push(c.message);
    });
    const ac = new AbortController();
    const source: DashboardSource = {
      name: '/r/klet.sock',
      async node() {
        if (phase === 1) throw new LocalApiUnavailableError('local API at /r/klet.sock: no klet sync is running');
        return node({ lastEventSeq: phase === 0 ? 50 : 3 });
      },
      pods: async () => [],
      async *events(since) {
        if (phase === 0) {
          yield { seq: 50, time: iso(T0), kind: 'PLEG', type: 'ContainerDied', podUid: 'u', containerId: 'c' } as BusMessage;
          phase = 1; // the stream ends: the sync went away
          return;
        }
        expect(since).toBe(0); // the new sync numbers from 1
        yield { seq: 1, time: iso(T0), kind: 'PLEG', type: 'ContainerStarted', podUid: 'u', containerId: 'c' } as BusMessage;
        ac.abort();
      },
      history: async function* () {},
    };
    setTimeout(() => (phase = 2), 150);
    await runFeed(store, source, ac.signal, { retryMs: 40 });
    const snap = store.flush();
    expect(snap.lastSeq).toBe(1);
    expect(states.some((s) => /^klet sync is not answering \(retrying every 0s, attempt 1\): klet sync closed the event stream/.test(s))).toBe(true);
    expect(states.some((s) => /attempt \d+\): local API at \/r\/klet.sock: no klet sync is running/.test(s))).toBe(true);
    expect(snap.events.some((e) => /reconnected after/.test(e.text))).toBe(true);
    store.close();
  });

  describe('remoteSource refuses what is not a klet local API', () => {
    let dir: string;
    const servers: (http.Server | net.Server)[] = [];
    const sockets: net.Socket[] = [];
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-dash-unit-'));
    });
    afterAll(async () => {
      await Promise.all(
        servers.map((s) => {
          const closed = new Promise((r) => s.close(r));
          if (s instanceof http.Server) s.closeAllConnections();
          else for (const c of sockets) c.destroy();
          return closed;
        }),
      );
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const listen = async (server: http.Server | net.Server, name: string) => {
      servers.push(server);
      const p = path.join(dir, name);
      await new Promise<void>((r) => server.listen(p, r));
      return p;
    };
    const signal = new AbortController().signal;

    it('a socket that does not speak HTTP', async () => {
      const p = await listen(
        net.createServer((c) => {
          sockets.push(c);
          c.end('\x00\x00\x12\x04garbage\n');
        }),
        'raw.sock',
      );
      await expect(remoteSource(p).node(signal)).rejects.toThrow(new NotKletApiError(`${p}: not a klet local API (it does not answer HTTP)`));
    });

    it('an HTTP server without /node, or with something else there', async () => {
      const p404 = await listen(http.createServer((_q, s) => s.writeHead(404).end('nope')), '404.sock');
      await expect(remoteSource(p404).node(signal)).rejects.toThrow(`${p404}: not a klet local API (GET /node answered HTTP 404)`);
      const pJson = await listen(http.createServer((_q, s) => s.writeHead(200).end('{"hello":1}')), 'json.sock');
      await expect(remoteSource(pJson).node(signal)).rejects.toThrow(`${pJson}: not a klet local API (GET /node is not a klet node status)`);
      const pText = await listen(http.createServer((_q, s) => s.writeHead(200).end('<html>')), 'html.sock');
      await expect(remoteSource(pText).node(signal)).rejects.toThrow(`${pText}: not a klet local API (GET /node did not answer JSON)`);
    });

    it('nothing there: LocalApiUnavailableError', async () => {
      await expect(remoteSource(path.join(dir, 'none.sock')).node(signal)).rejects.toBeInstanceOf(LocalApiUnavailableError);
    });
  });
});

describe('colour', () => {
  it('NO_COLOR with any value turns it off', () => {
    expect(colorWanted({})).toBe(true);
    expect(colorWanted({ NO_COLOR: '' })).toBe(true);
    expect(colorWanted({ NO_COLOR: '1' })).toBe(false);
  });
});

describe('dashboardTarget', () => {
  it('defaults to the root dir socket and takes a given socket', async () => {
    const { dashboardTarget } = await import('../../src/lib/services/dashboard.js');
    expect(await dashboardTarget({ rootDir: '/var/lib/klet-x' })).toBe('/var/lib/klet-x/klet.sock');
    expect(await dashboardTarget({ rootDir: '/r', socket: '/tmp/s.sock' })).toBe('/tmp/s.sock');
  });

  it('refuses https:// and what is not an http URL before reading any token file, naming the input', async () => {
    const { dashboardTarget } = await import('../../src/lib/services/dashboard.js');
    for (const [server, text] of [
      ['https://127.0.0.1:10250', /"https:\/\/127\.0\.0\.1:10250": the local API's TCP listener serves plain HTTP on loopback; use http:\/\/127\.0\.0\.1:10250/],
      ['ftp://h', /expected an http:\/\/ URL/],
      ['::', /not a URL/],
    ] as const) {
      const err = await dashboardTarget({ rootDir: '/r', server, tokenFile: '/nonexistent/token' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InputError);
      expect((err as InputError).input).toBe('server');
      expect((err as InputError).text).toMatch(text);
    }
  });
});
