/**
 * The dashboard's ink component, rendered by ink-testing-library and fed by
 * a recorded stream: test/fixtures/dashboard/ holds what a real `klet sync`
 * served (/events, /pods, /node) with three pods, one in CrashLoopBackOff
 * (recorded by test/e2e/dashboard-tmux.test.ts with KLET_RECORD_DASHBOARD).
 * Keys go in through stdin as a terminal sends them; what is asserted is
 * the text of the last frame, as a person would read it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createElement } from 'react';
import { render } from 'ink-testing-library';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BusMessage } from '../../src/lib/events/types.js';
import type { NodeStatus } from '../../src/lib/server/node-status.js';
import { DashboardStore, EVENT_LINES } from '../../src/lib/dashboard/store.js';
import { DashboardApp, lineText } from '../../src/ui/dashboard/app.js';

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'dashboard');
const events = fs
  .readFileSync(path.join(FIXTURES, 'events.ndjson'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as BusMessage);
const pods = (JSON.parse(fs.readFileSync(path.join(FIXTURES, 'pods.json'), 'utf8')) as { items: V1Pod[] }).items;
const node = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'node.json'), 'utf8')) as NodeStatus;
/** The recording's BackOff says the next restart is at this time. */
const backoff = events.find((e) => e.kind === 'Event' && e.reason === 'BackOff') as Extract<BusMessage, { kind: 'Event' }>;
const RETRY_AT = Date.parse(backoff.retryAt ?? '');

const KEY = { enter: '\r', esc: '\x1b', down: '\x1b[B', up: '\x1b[A', tab: '\t', backspace: '\x7f' };

let clock: number;
let store: DashboardStore;
const mounted: { unmount(): void }[] = [];

/** A store fed with the recording, the clock 10 s before the next restart. */
function recordedStore(): DashboardStore {
  clock = RETRY_AT - 10_000;
  const s = new DashboardStore({ now: () => clock });
  s.setConnection('live', 'connected');
  s.applyNode(node);
  s.applyPods(pods);
  for (const e of events) s.applyMessage(e);
  s.flush();
  return s;
}

function mount(props: Partial<Parameters<typeof DashboardApp>[0]> = {}, size = { columns: 100, rows: 30 }) {
  const app = render(createElement(DashboardApp, { store, color: false, size, ...props }));
  mounted.push(app);
  return app;
}

/** Let ink process input and render. */
const settle = () => new Promise((r) => setTimeout(r, 60));

async function press(app: ReturnType<typeof mount>, ...keys: string[]): Promise<string> {
  // After each key, wait for the frame it causes (or half a second, for keys that change nothing).
  for (const k of keys) {
    const before = app.frames.length;
    app.stdin.write(k);
    const until = Date.now() + 500;
    while (app.frames.length === before && Date.now() < until) await settle();
    await settle();
  }
  await settle();
  return app.lastFrame() ?? '';
}

/** The frame once it matches (a store update reaches the screen within a frame or two). */
async function frameMatching(app: ReturnType<typeof mount>, re: RegExp, timeoutMs = 2000): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const frame = app.lastFrame() ?? '';
    if (re.test(frame)) return frame;
    if (Date.now() > until) throw new Error(`the frame never matched ${re}:\n${frame}`);
    await settle();
  }
}

/** Advance the shared clock and publish. */
async function advance(ms: number): Promise<void> {
  clock += ms;
  store.tick();
  store.flush();
  await settle();
}

beforeEach(() => {
  store = recordedStore();
});
afterEach(() => {
  for (const m of mounted.splice(0)) m.unmount();
  store.close();
});

describe('DashboardApp: the panels', () => {
  it('header: node, runtime version and conditions, PLEG, sources, uptime', async () => {
    const frame = await press(mount());
    const [first, second] = frame.split('\n');
    expect(first).toMatch(/^klet node dashnode · containerd 1\.6\.20~ds1 RuntimeReady NetworkReady · up \d+s/);
    expect(second).toMatch(/^PLEG healthy relist 2\.0ms \d+s ago · file read \d+s ago/);
  });

  it('pods: every pod with READY, STATUS, RESTARTS, AGE, IP and source; the crash loop counts down', async () => {
    const app = mount();
    const frame = await press(app);
    expect(frame).toMatch(/NAMESPACE\/NAME +READY +STATUS +RESTARTS +AGE +IP +SOURCE/);
    expect(frame).toMatch(/kdash\/crash-dashnode +0\/1 +CrashLoopBackOff 10s +1 \(\S+ ago\) +\S+ +10\.89\.\d+\.\d+ +file/);
    expect(frame).toMatch(/kdash\/web-dashnode +1\/1 +Running +0 /);
    expect(frame).toMatch(/kdash\/worker-dashnode +1\/1 +Running +0 /);
    await advance(4000);
    await frameMatching(app, /kdash\/crash-dashnode +0\/1 +CrashLoopBackOff 6s/);
    await advance(20_000);
    await frameMatching(app, /CrashLoopBackOff 0s/); // never negative
  });

  it('sync loop: per-trigger rates, last durations, pod-worker queue', async () => {
    const frame = await press(mount());
    expect(frame).toMatch(/SYNC LOOP \d+ iterations · pod workers 0 queued, 0 running \(3 SyncPod\)/);
    expect(frame).toMatch(/house .* \d+\.\d\/s +0\.5ms/); // the recording's last housekeeping took 0.513 ms
    for (const t of ['config', 'pleg', 'sync', 'probe']) expect(frame).toMatch(new RegExp(`${t} `));
  });

  it('events: newest first, with reason and message', async () => {
    const frame = await press(mount());
    const lines = frame.split('\n');
    const at = lines.findIndex((l) => l.startsWith('EVENTS'));
    expect(lines[at + 1]).toMatch(/Warning BackOff +kdash\/crash-dashnode: back-off 30s restarting failed container=app/);
    expect(frame).toMatch(/Normal +Started +kdash\/web-dashnode: Started container app/);
    expect(frame).toMatch(/PLEG +ContainerDied +kdash\/crash-dashnode/);
  });

  it('fills the terminal and no more: 30 lines of at most 100 columns', async () => {
    const frame = await press(mount());
    const lines = frame.split('\n');
    expect(lines.length).toBeLessThanOrEqual(30);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(100);
    expect(lines.at(-1)).toMatch(/q quit · \? keys/);
  });

  it('says when the sync is gone, and draws the same amount of screen whatever the history', async () => {
    const app = mount();
    store.setConnection('lost', 'klet sync is not answering (retrying every 2s, attempt 3): local API at /x/klet.sock: no klet sync is running');
    for (let i = 0; i < 5000; i++) {
      store.applyMessage({ seq: 1000 + i, time: new Date(clock).toISOString(), kind: 'PLEG', type: 'ContainerStarted', podUid: 'u', pod: `ns/p${i}`, containerId: 'c'.repeat(64) });
    }
    store.flush();
    const frame = await frameMatching(app, /ns\/p4999/);
    expect(frame).toMatch(/^klet sync is not answering \(retrying every 2s, attempt 3\): local API at \/x\/klet.sock/m);
    expect(store.getSnapshot().events.length).toBeLessThanOrEqual(EVENT_LINES);
    expect(frame.split('\n').length).toBeLessThanOrEqual(30);
    expect(frame).toMatch(/ns\/p4999/); // the newest is on screen
  });
});

describe('DashboardApp: keys', () => {
  it('s sorts by name, status, restarts, age', async () => {
    const app = mount();
    const order = (f: string) => [...f.matchAll(/^kdash\/(\w+)-dashnode/gm)].map((m) => m[1]);
    expect(order(await press(app))).toEqual(['crash', 'web', 'worker']);
    let frame = await press(app, 's');
    expect(frame).toMatch(/sorted by status/);
    expect(order(frame)[0]).toBe('crash'); // failing first
    frame = await press(app, 's');
    expect(frame).toMatch(/sorted by restarts/);
    expect(order(frame)[0]).toBe('crash');
    frame = await press(app, 's', 's');
    expect(frame).toMatch(/sorted by name/);
  });

  it('/ filters (Enter applies, Esc clears), backspace edits', async () => {
    const app = mount();
    let frame = await press(app, '/', 'w', 'x');
    expect(frame).toMatch(/^\/wx▏/m);
    frame = await press(app, KEY.backspace, 'e', 'b', KEY.enter);
    expect(frame).toMatch(/PODS 1\/3 sorted by name filter "web"/);
    expect(frame).toMatch(/kdash\/web-dashnode/);
    expect(frame).not.toMatch(/kdash\/crash-dashnode +0\/1/);
    frame = await press(app, '/', 'n', 'o', 'p', 'e', KEY.enter);
    expect(frame).toMatch(/no pod matches the filter/);
    frame = await press(app, KEY.esc);
    expect(frame).toMatch(/PODS 3 sorted by name/);
  });

  it('Enter shows the detail view: containers, state, last state, exit code, restarts; Esc goes back', async () => {
    const app = mount();
    const frame = await press(app, KEY.enter);
    expect(frame).toMatch(/^kdash\/crash-dashnode · CrashLoopBackOff 10s · ready 0\/1/m);
    expect(frame).toMatch(/CONTAINER +STATE +LAST STATE +EXIT +RESTARTS +READY/);
    expect(frame).toMatch(/›app +Waiting: CrashLoopBackOff 10s +Terminated: Error +3 +1 +false/);
    expect(frame).toMatch(/back-off 30s restarting failed container=app/);
    expect(await press(app, KEY.esc)).toMatch(/PODS 3/);
  });

  it('↓ selects the next pod; in details l follows the selected container\'s log and stops it again', async () => {
    const followed: string[] = [];
    let aborted = 0;
    const followLog = (pod: V1Pod, container: string, signal: AbortSignal) => {
      const target = `${pod.metadata?.namespace}/${pod.metadata?.name}/${container}`;
      followed.push(target);
      store.setLogTarget(target);
      store.appendLog(target, 'tick 1');
      store.appendLog(target, 'tick 2');
      signal.addEventListener('abort', () => aborted++);
    };
    const app = mount({ followLog });
    await press(app, KEY.down, KEY.down, KEY.enter);
    let frame = await press(app, 'l');
    expect(frame).toMatch(/^kdash\/worker-dashnode/m);
    expect(followed).toEqual(['kdash/worker-dashnode/app']);
    store.flush();
    await frameMatching(app, /LOG app following[\s\S]*tick 1\s+tick 2/);
    frame = await press(app, 'l');
    expect(aborted).toBe(1);
    expect(frame).not.toMatch(/tick 1/);
  });

  it('keys that arrive in one chunk each count ("jj" moves two rows)', async () => {
    const app = mount();
    const frame = await press(app, 'jj', KEY.enter);
    expect(frame).toMatch(/^kdash\/worker-dashnode · Running/m);
  });

  it('a chunk ending in a newline is its text followed by Enter (a paste, or keys typed faster than a frame)', async () => {
    const app = mount();
    // `/` then the filter and its Enter in one read, as a terminal delivers a paste (CR) or tmux send-keys -l (LF).
    let frame = await press(app, '/', 'crash\r');
    expect(frame).toMatch(/PODS 1\/3 sorted by name filter "crash"/);
    expect(frame).toMatch(/kdash\/crash-dashnode +0\/1/);
    expect(frame).not.toMatch(/kdash\/web-dashnode +1\/1/);
    frame = await press(app, KEY.esc, '/web\n');
    expect(frame).toMatch(/PODS 1\/3 sorted by name filter "web"/);
    expect(frame).toMatch(/kdash\/web-dashnode +1\/1/);
    // Outside a filter the newline opens the selected pod, after the keys before it.
    frame = await press(app, KEY.esc, 'jj\r\n');
    expect(frame).toMatch(/^kdash\/worker-dashnode · Running/m);
  });

  it('the detail view shows each probe with its current result from ProbeResult events', async () => {
    const withProbe = structuredClone(pods);
    const web = withProbe.find((p) => p.metadata?.name === 'web-dashnode')!;
    web.spec!.containers[0]!.readinessProbe = { httpGet: { path: '/healthz', port: 8080 as never }, periodSeconds: 2 };
    store.applyPods(withProbe);
    store.applyMessage({ seq: 1000, time: new Date(clock - 5000).toISOString(), kind: 'ProbeResult', pod: 'kdash/web-dashnode', uid: web.metadata!.uid!, container: 'app', containerId: 'c', probe: 'Readiness', result: 'Failure', message: 'HTTP probe failed with statuscode: 503' });
    store.flush();
    const app = mount();
    expect(await press(app)).toMatch(/Probe +Readiness Failure kdash\/web-dashnode\/app: HTTP probe failed/);
    const frame = await press(app, KEY.down, KEY.enter);
    expect(frame).toMatch(/probe readiness http-get :8080\/healthz every 2s · Failure since 5s ago: HTTP probe failed with/);
  });

  it('? shows the keys, any key closes them', async () => {
    const app = mount();
    const frame = await press(app, '?');
    expect(frame).toMatch(/KEYS/);
    expect(frame).toMatch(/Enter +details of the selected pod/);
    expect(await press(app, 'x')).toMatch(/PODS 3/);
  });

  it('q and Ctrl-C quit', async () => {
    let quits = 0;
    const a = mount({ onQuit: () => quits++ });
    await press(a, 'q');
    expect(quits).toBe(1);
    const b = mount({ onQuit: () => quits++ });
    await press(b, '\x03');
    expect(quits).toBe(2);
  });
});

describe('DashboardApp: small terminals', () => {
  it('40x10: the compact view, pods and status, never wider or taller than the terminal', async () => {
    const app = mount({}, { columns: 40, rows: 10 });
    const frame = await press(app);
    const lines = frame.split('\n');
    expect(lines.length).toBeLessThanOrEqual(10);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(40);
    expect(frame).toMatch(/^klet dashnode PLEG ok/);
    expect(frame).toMatch(/crash-dashnode +CrashLoopBackOff 10s/);
    expect(frame).not.toMatch(/SYNC LOOP/);
    // The details fit too.
    const detail = await press(app, KEY.enter);
    for (const l of detail.split('\n')) expect(l.length).toBeLessThanOrEqual(40);
    expect(detail.split('\n').length).toBeLessThanOrEqual(10);
  });

  it('a resize switches between the full and the compact view', async () => {
    const app = mount();
    expect(await press(app)).toMatch(/SYNC LOOP/);
    app.rerender(createElement(DashboardApp, { store, color: false, size: { columns: 50, rows: 12 } }));
    const small = await frameMatching(app, /^klet dashnode PLEG ok/);
    expect(small).not.toMatch(/SYNC LOOP/);
    for (const l of small.split('\n')) expect(l.length).toBeLessThanOrEqual(50);
    app.rerender(createElement(DashboardApp, { store, color: false, size: { columns: 120, rows: 40 } }));
    await frameMatching(app, /SYNC LOOP/);
  });
});

describe('dashboard screen: one styled string per line, and the off-screen warm-up', () => {
  it('lineText styles each segment as ink would (colour only when asked), bold and inverse always', async () => {
    const { default: chalk } = await import('chalk');
    const level = chalk.level;
    chalk.level = 1;
    try {
      const line = [{ text: 'pod ' }, { text: 'CrashLoopBackOff', color: 'red' as const }, { text: ' sel', bold: true, inverse: true }];
      expect(lineText(line, true)).toBe(`pod ${chalk.red('CrashLoopBackOff')}${chalk.inverse(chalk.bold(' sel'))}`);
      expect(lineText(line, false)).toBe(`pod CrashLoopBackOff${chalk.inverse(chalk.bold(' sel'))}`);
      expect(lineText([], true)).toBe(' ');
    } finally {
      chalk.level = level;
    }
  });

  it('warmUp draws the screen off screen, writes nothing to the terminal, and unsubscribes from the store', async () => {
    const { render: inkRender } = await import('ink');
    const { warmUp } = await import('../../src/ui/dashboard/warm-up.js');
    let active = 0;
    const counted = Object.create(store) as DashboardStore;
    Object.defineProperty(counted, 'subscribe', {
      value: (l: () => void) => {
        active++;
        const off = store.subscribe(l);
        return () => {
          active--;
          return off();
        };
      },
    });
    let drawn = 0;
    const Counting = (props: Parameters<typeof DashboardApp>[0]) => {
      drawn++;
      return DashboardApp(props);
    };
    const written: unknown[] = [];
    const realWrite = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
      written.push(chunk);
      return realWrite(chunk as string, ...(rest as []));
    }) as typeof process.stdout.write;
    try {
      await warmUp({ render: inkRender, createElement, DashboardApp: Counting as typeof DashboardApp }, { store: counted, color: false, columns: 120, rows: 40, frames: 5 });
    } finally {
      process.stdout.write = realWrite;
    }
    expect(drawn).toBeGreaterThanOrEqual(5);
    expect(active).toBe(0);
    expect(written).toEqual([]);
  });
});
