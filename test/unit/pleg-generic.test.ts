/**
 * GenericPLEG against a fake CRI client: the relist (exactly one list of
 * each kind), the events it feeds to its channel, failures, the loop's
 * timing and stop(), and the health check with an injected clock.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  Container,
  ContainerState,
  CriCancelledError,
  CriDeadlineExceededError,
  CriUnavailableError,
  ListContainersResponse,
  ListPodSandboxResponse,
  PodSandbox,
  PodSandboxState,
  type CallOptions,
} from '../../src/lib/cri/index.js';
import { setLogSink } from '../../src/lib/log.js';
import { GenericPLEG, type PlegEvent, type PlegRuntime } from '../../src/lib/pleg/index.js';

const ENDPOINT = 'unix:///fake.sock';

function sandbox(id: string, uid: string, ready = true): PodSandbox {
  return PodSandbox.fromPartial({
    id,
    state: ready ? PodSandboxState.SANDBOX_READY : PodSandboxState.SANDBOX_NOTREADY,
    createdAt: 1n,
    metadata: { name: `pod-${uid}`, uid, namespace: 'default', attempt: 0 },
    labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.pod.name': `pod-${uid}`, 'io.kubernetes.pod.namespace': 'default' },
  });
}

function container(id: string, uid: string, state: ContainerState, name = 'app'): Container {
  return Container.fromPartial({
    id,
    podSandboxId: `sb-${uid}`,
    metadata: { name, attempt: 0 },
    state,
    createdAt: 2n,
    labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': name },
    annotations: { 'io.kubernetes.container.restartCount': '0', 'io.kubernetes.container.hash': 'abc' },
  });
}

const { CONTAINER_CREATED: CREATED, CONTAINER_RUNNING: RUNNING, CONTAINER_EXITED: EXITED } = ContainerState;

function cancelled(method: string): CriCancelledError {
  return new CriCancelledError(`${method}: cancelled`, { grpcCode: 1, method, endpoint: ENDPOINT });
}

/**
 * A fake runtime: lists whatever `sandboxes` / `containers` hold now. Calls
 * can be delayed, made to fail, or made to hang until their signal aborts.
 * Any other CRI method is a spy that must never be called.
 */
class FakeRuntime implements PlegRuntime {
  sandboxes: PodSandbox[] = [];
  containers: Container[] = [];
  delayMs = 0;
  failSandboxes: Error | null = null;
  failContainers: Error | null = null;
  hang = false;
  inFlight = 0;
  maxInFlight = 0;
  /** Start and end times of each ListPodSandbox call. */
  spans: { start: number; end: number }[] = [];
  signals: AbortSignal[] = [];
  readonly listPodSandbox = vi.fn((_req?: unknown, opts?: CallOptions) =>
    this.call('ListPodSandbox', opts, this.failSandboxes, () => ListPodSandboxResponse.fromPartial({ items: this.sandboxes })),
  );
  readonly listContainers = vi.fn((_req?: unknown, opts?: CallOptions) =>
    this.call('ListContainers', opts, this.failContainers, () => ListContainersResponse.fromPartial({ containers: this.containers })),
  );
  readonly containerStatus = vi.fn();
  readonly podSandboxStatus = vi.fn();

  private async call<T>(method: string, opts: CallOptions | undefined, fail: Error | null, answer: () => T): Promise<T> {
    const signal = opts?.signal;
    if (signal) this.signals.push(signal);
    const span = { start: performance.now(), end: 0 };
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.hang || this.delayMs > 0) {
        await new Promise<void>((resolve, reject) => {
          const timer = this.hang ? undefined : setTimeout(resolve, this.delayMs);
          signal?.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(cancelled(method));
          });
        });
      }
      if (fail) throw fail;
      return answer();
    } finally {
      this.inFlight--;
      span.end = performance.now();
      if (method === 'ListPodSandbox') this.spans.push(span);
    }
  }
}

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000) {
  let t = start;
  return { now: () => t, set: (v: number) => (t = v), advance: (ms: number) => (t += ms) };
}

const summary = (events: PlegEvent[]) => events.map((e) => `${e.type}:${e.podUid}/${e.containerId}`);

const plegs: GenericPLEG[] = [];
function newPleg(opts: ConstructorParameters<typeof GenericPLEG>[0]): GenericPLEG {
  const p = new GenericPLEG(opts);
  plegs.push(p);
  return p;
}

afterEach(async () => {
  await Promise.all(plegs.splice(0).map((p) => p.stop()));
  setLogSink((line) => process.stderr.write(line + '\n'));
});

/** Capture log lines for the test. */
function captureLog(): string[] {
  const lines: string[] = [];
  setLogSink((line) => lines.push(line));
  return lines;
}

describe('GenericPLEG.relist', () => {
  it('makes exactly one ListPodSandbox and one ListContainers, unfiltered, and no per-object status call', async () => {
    const rt = new FakeRuntime();
    rt.sandboxes = [sandbox('sb-a', 'a'), sandbox('sb-b', 'b')];
    rt.containers = [container('c-a', 'a', RUNNING), container('c-b', 'b', EXITED), container('c-b2', 'b', CREATED)];
    const pleg = newPleg({ cri: rt });
    for (let i = 1; i <= 3; i++) {
      await pleg.relist();
      expect(rt.listPodSandbox).toHaveBeenCalledTimes(i);
      expect(rt.listContainers).toHaveBeenCalledTimes(i);
    }
    expect(rt.listPodSandbox.mock.calls[0]?.[0]).toEqual({});
    expect(rt.listContainers.mock.calls[0]?.[0]).toEqual({});
    expect(rt.containerStatus).not.toHaveBeenCalled();
    expect(rt.podSandboxStatus).not.toHaveBeenCalled();
  });

  it('with a label selector (klet\'s owner label), both lists are filtered by it', async () => {
    const rt = new FakeRuntime();
    const pleg = newPleg({ cri: rt, labelSelector: { 'io.klet.instance': 'abc' } });
    await pleg.relist();
    expect(rt.listPodSandbox.mock.calls[0]?.[0]).toEqual({ filter: { labelSelector: { 'io.klet.instance': 'abc' } } });
    expect(rt.listContainers.mock.calls[0]?.[0]).toEqual({ filter: { labelSelector: { 'io.klet.instance': 'abc' } } });
  });

  it('follows a pod through its life, one relist at a time', async () => {
    const rt = new FakeRuntime();
    const clock = manualClock();
    const pleg = newPleg({ cri: rt, now: clock.now });

    expect(await pleg.relist()).toEqual([]);

    rt.sandboxes = [sandbox('sb', 'p')];
    rt.containers = [container('c1', 'p', CREATED)];
    clock.advance(1000);
    const first = await pleg.relist();
    expect(summary(first)).toEqual(['ContainerChanged:p/c1', 'ContainerStarted:p/sb']);
    expect(first.every((e) => e.at === clock.now())).toBe(true);

    rt.containers = [container('c1', 'p', RUNNING)];
    expect(summary(await pleg.relist())).toEqual(['ContainerStarted:p/c1']);
    expect(await pleg.relist()).toEqual([]); // steady state

    rt.containers = [container('c1', 'p', EXITED), container('c2', 'p', RUNNING)];
    expect(summary(await pleg.relist())).toEqual(['ContainerDied:p/c1', 'ContainerStarted:p/c2']);

    rt.containers = [container('c2', 'p', RUNNING)];
    expect(summary(await pleg.relist())).toEqual(['ContainerRemoved:p/c1']);

    rt.sandboxes = [sandbox('sb', 'p', false)];
    rt.containers = [container('c2', 'p', EXITED)];
    expect(summary(await pleg.relist())).toEqual(['ContainerDied:p/c2', 'ContainerDied:p/sb']);

    rt.sandboxes = [];
    rt.containers = [];
    expect(summary(await pleg.relist())).toEqual(['ContainerRemoved:p/c2', 'ContainerRemoved:p/sb']);
    expect(pleg.podRecords().size).toBe(0);
  });

  it('a running container that vanishes is reported dead, then removed', async () => {
    const rt = new FakeRuntime();
    rt.sandboxes = [sandbox('sb', 'p')];
    rt.containers = [container('c1', 'p', RUNNING)];
    const pleg = newPleg({ cri: rt });
    await pleg.relist();
    rt.containers = [];
    expect(summary(await pleg.relist())).toEqual(['ContainerDied:p/c1', 'ContainerRemoved:p/c1']);
  });

  it('feeds the channel in order, without ContainerChanged (as the kubelet filters it)', async () => {
    const rt = new FakeRuntime();
    rt.sandboxes = [sandbox('sb', 'p')];
    rt.containers = [container('c1', 'p', CREATED)];
    const pleg = newPleg({ cri: rt });
    const events = await pleg.relist();
    expect(summary(events)).toEqual(['ContainerChanged:p/c1', 'ContainerStarted:p/sb']);
    expect(pleg.events.size).toBe(1);
    expect(await pleg.events.next()).toEqual(events[1]);

    rt.containers = [container('c1', 'p', RUNNING)];
    const waiting = pleg.events.next(); // a consumer already waiting gets it directly
    await pleg.relist();
    expect(summary([await waiting])).toEqual(['ContainerStarted:p/c1']);
  });

  it('emitContainerChanged: true delivers ContainerChanged too', async () => {
    const rt = new FakeRuntime();
    rt.sandboxes = [sandbox('sb', 'p')];
    rt.containers = [container('c1', 'p', CREATED)];
    const pleg = newPleg({ cri: rt, emitContainerChanged: true });
    await pleg.relist();
    expect(summary([pleg.events.tryTake() as PlegEvent, pleg.events.tryTake() as PlegEvent])).toEqual([
      'ContainerChanged:p/c1',
      'ContainerStarted:p/sb',
    ]);
  });

  it('a full channel discards further events and counts them', async () => {
    const lines = captureLog();
    const rt = new FakeRuntime();
    rt.sandboxes = ['a', 'b', 'c', 'd', 'e'].map((u) => sandbox(`sb-${u}`, u));
    const pleg = newPleg({ cri: rt, channelCapacity: 2 });
    expect(await pleg.relist()).toHaveLength(5);
    expect(pleg.events.size).toBe(2);
    expect(pleg.discardedEvents).toBe(3);
    expect(lines.join('\n')).toMatch(/event channel is full \(2\); discarded 3 event/);
  });

  it('groups by the pod UID label; unlabelled sandboxes and containers are not the kubelet’s', async () => {
    const rt = new FakeRuntime();
    rt.sandboxes = [
      sandbox('sb-a', 'a'),
      sandbox('sb-b', 'b'),
      PodSandbox.fromPartial({ id: 'sb-x', state: PodSandboxState.SANDBOX_READY, labels: { app: 'other' } }),
    ];
    rt.containers = [
      container('c-a', 'a', RUNNING, 'web'),
      container('c-b', 'b', RUNNING, 'db'),
      Container.fromPartial({ id: 'c-x', podSandboxId: 'sb-x', state: RUNNING }),
    ];
    const pleg = newPleg({ cri: rt });
    const events = await pleg.relist();
    expect(summary(events).sort()).toEqual(
      ['ContainerStarted:a/c-a', 'ContainerStarted:a/sb-a', 'ContainerStarted:b/c-b', 'ContainerStarted:b/sb-b'].sort(),
    );
    const records = pleg.podRecords();
    expect([...records.keys()]).toEqual(['a', 'b']);
    expect(records.get('a')).toEqual({
      uid: 'a',
      name: 'pod-a',
      namespace: 'default',
      sandboxes: [{ id: 'sb-a', state: 'ready', createdAt: 1n, attempt: 0 }],
      containers: [
        { id: 'c-a', name: 'web', state: 'running', createdAt: 2n, sandboxId: 'sb-a', attempt: 0, restartCount: 0, hash: 'abc', imageRef: '' },
      ],
    });
  });

  it('podRecords() snapshots are immutable: a relist swaps in a new map', async () => {
    const rt = new FakeRuntime();
    rt.sandboxes = [sandbox('sb', 'p')];
    rt.containers = [container('c1', 'p', RUNNING)];
    const pleg = newPleg({ cri: rt });
    expect(pleg.podRecords().size).toBe(0);
    await pleg.relist();
    const before = pleg.podRecords();
    rt.containers = [container('c1', 'p', EXITED)];
    await pleg.relist();
    expect(before.get('p')?.containers[0]?.state).toBe('running');
    expect(pleg.podRecords().get('p')?.containers[0]?.state).toBe('exited');
  });
});

describe('GenericPLEG failures', () => {
  it('a runtime error: recorded, no events, previous snapshot kept; the next relist reports what changed meanwhile', async () => {
    const lines = captureLog();
    const rt = new FakeRuntime();
    const clock = manualClock();
    rt.sandboxes = [sandbox('sb', 'p')];
    rt.containers = [container('c1', 'p', RUNNING)];
    const pleg = newPleg({ cri: rt, now: clock.now });
    await pleg.relist();
    pleg.events.tryTake();
    pleg.events.tryTake();
    const good = pleg.podRecords();

    rt.containers = [container('c1', 'p', EXITED)];
    rt.failContainers = new CriUnavailableError('cannot reach the container runtime at x: no such socket', {
      grpcCode: 14,
      method: 'ListContainers',
      endpoint: ENDPOINT,
    });
    clock.advance(1000);
    expect(await pleg.relist()).toEqual([]);
    expect(pleg.lastRelist).toEqual({ at: clock.now(), durationMs: 0, error: 'cannot reach the container runtime at x: no such socket' });
    expect(pleg.podRecords()).toBe(good);
    expect(pleg.events.size).toBe(0);
    // Still failing, same error: logged once.
    await pleg.relist();
    expect(lines.filter((l) => l.includes('relist failed'))).toHaveLength(1);

    rt.failContainers = null;
    clock.advance(1000);
    expect(summary(await pleg.relist())).toEqual(['ContainerDied:p/c1']);
    expect(pleg.lastRelist).toEqual({ at: clock.now(), durationMs: 0, error: null });
    expect(lines.some((l) => l.includes('relisting works again'))).toBe(true);
  });

  it('when one list fails, the other call is cancelled rather than left running', async () => {
    captureLog();
    const rt = new FakeRuntime();
    rt.hang = true; // ListContainers would hang...
    rt.listPodSandbox.mockImplementationOnce(() =>
      Promise.reject(new CriDeadlineExceededError('ListPodSandbox: deadline exceeded', { grpcCode: 4, method: 'ListPodSandbox', endpoint: ENDPOINT })),
    );
    const pleg = newPleg({ cri: rt });
    expect(await pleg.relist()).toEqual([]);
    expect(pleg.lastRelist.error).toBe('ListPodSandbox: deadline exceeded');
    expect(rt.signals).toHaveLength(1); // ListContainers' signal
    expect(rt.signals[0]?.aborted).toBe(true);
    expect(rt.inFlight).toBe(0);
  });

  it('durationMs is measured with the PLEG clock', async () => {
    const rt = new FakeRuntime();
    let t = 5000;
    const pleg = newPleg({ cri: rt, now: () => (t += 7) });
    await pleg.relist();
    expect(pleg.lastRelist).toEqual({ at: 5007, durationMs: 7, error: null });
  });
});

describe('GenericPLEG loop', () => {
  it('relists every period; relists never overlap, even when one takes longer than the period', async () => {
    const rt = new FakeRuntime();
    rt.delayMs = 30;
    const pleg = newPleg({ cri: rt, relistPeriodMs: 5 });
    pleg.start();
    pleg.start(); // idempotent
    // Manual relists race with the loop's.
    const manual = [pleg.relist(), pleg.relist()];
    await new Promise((r) => setTimeout(r, 250));
    await Promise.all(manual);
    await pleg.stop();
    expect(pleg.running).toBe(false);
    expect(rt.spans.length).toBeGreaterThanOrEqual(4);
    // One ListPodSandbox + one ListContainers at a time, never two relists' worth.
    expect(rt.maxInFlight).toBe(2);
    const spans = rt.spans.sort((a, b) => a.start - b.start);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end - 1);
    expect(rt.listPodSandbox.mock.calls.length).toBe(rt.listContainers.mock.calls.length);
  });

  it('waits a whole period after a relist ends before the next (wait.Until)', async () => {
    const rt = new FakeRuntime();
    rt.delayMs = 20;
    const pleg = newPleg({ cri: rt, relistPeriodMs: 60 });
    pleg.start();
    await new Promise((r) => setTimeout(r, 300));
    await pleg.stop();
    const spans = rt.spans;
    expect(spans.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start - spans[i - 1]!.end).toBeGreaterThanOrEqual(55);
  });

  it('never throws out of its timer: failing relists keep being retried', async () => {
    captureLog();
    const rt = new FakeRuntime();
    rt.failSandboxes = new Error('boom');
    const pleg = newPleg({ cri: rt, relistPeriodMs: 5 });
    pleg.start();
    // At least three failed relists (up to 2 s: a loaded machine runs 5 ms timers late).
    for (let i = 0; i < 200 && rt.listPodSandbox.mock.calls.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    expect(pleg.running).toBe(true);
    expect(rt.listPodSandbox.mock.calls.length).toBeGreaterThanOrEqual(3);
    expect(pleg.lastRelist.error).toBe('boom');
    rt.failSandboxes = null;
    rt.sandboxes = [sandbox('sb', 'p')];
    const e = await pleg.events.next(AbortSignal.timeout(1000));
    expect(e).toMatchObject({ type: 'ContainerStarted', containerId: 'sb' });
    await pleg.stop();
  });

  it('stop() does not wait for a hung runtime: it cancels the calls in flight', async () => {
    const rt = new FakeRuntime();
    const pleg = newPleg({ cri: rt, relistPeriodMs: 5 });
    await pleg.relist();
    const before = pleg.lastRelist;
    rt.signals = [];
    rt.hang = true;
    pleg.start();
    const manual = pleg.relist(); // queued behind the hung one
    await new Promise((r) => setTimeout(r, 30));
    expect(rt.inFlight).toBe(2);
    const t0 = performance.now();
    await pleg.stop();
    expect(performance.now() - t0).toBeLessThan(100);
    expect(await manual).toEqual([]);
    expect(rt.inFlight).toBe(0);
    expect(rt.signals.every((s) => s.aborted)).toBe(true);
    // A cancelled relist is not a failed one.
    expect(pleg.lastRelist).toBe(before);
    // And the PLEG works again afterwards.
    rt.hang = false;
    rt.sandboxes = [sandbox('sb', 'p')];
    expect(summary(await pleg.relist())).toEqual(['ContainerStarted:p/sb']);
    pleg.start();
    expect(pleg.running).toBe(true);
    await pleg.stop();
  }, 5000);
});

describe('GenericPLEG metrics', () => {
  it('records every relist it runs (failed ones as not ok) with its duration and start, and none cancelled by stop()', async () => {
    captureLog();
    const rt = new FakeRuntime();
    rt.delayMs = 5;
    const seen: { durationMs: number; startedAt: number; ok: boolean }[] = [];
    const pleg = newPleg({ cri: rt, metrics: { observePlegRelist: (durationMs, startedAt, ok) => seen.push({ durationMs, startedAt, ok }) } });
    await pleg.relist();
    rt.failSandboxes = new Error('runtime down');
    await pleg.relist();
    rt.failSandboxes = null;
    await pleg.relist();
    expect(seen.map((o) => o.ok)).toEqual([true, false, true]);
    for (const o of seen) expect(o.durationMs).toBeGreaterThanOrEqual(4);
    expect(seen[1]!.startedAt).toBeGreaterThan(seen[0]!.startedAt);
    expect(seen[2]!.startedAt).toBeGreaterThan(seen[1]!.startedAt);
    rt.hang = true;
    const hung = pleg.relist();
    await new Promise((r) => setTimeout(r, 20));
    await pleg.stop();
    await hung;
    expect(seen).toHaveLength(3);
  });
});

describe('GenericPLEG.healthy', () => {
  it('is unhealthy until the first successful relist', async () => {
    captureLog();
    const rt = new FakeRuntime();
    const pleg = newPleg({ cri: rt });
    expect(pleg.healthy()).toEqual({ ok: false, message: 'pleg has yet to be successful' });
    rt.failSandboxes = new Error('runtime down');
    await pleg.relist();
    expect(pleg.healthy()).toEqual({ ok: false, message: 'pleg has yet to be successful; last relist failed: runtime down' });
  });

  it('turns unhealthy when the last successful relist started more than the threshold ago', async () => {
    captureLog();
    const rt = new FakeRuntime();
    const clock = manualClock();
    const pleg = newPleg({ cri: rt, now: clock.now });
    expect(pleg.relistThresholdMs).toBe(180_000);
    await pleg.relist();
    expect(pleg.healthy()).toEqual({ ok: true, message: 'pleg was last seen active 0s ago' });
    clock.advance(180_000);
    expect(pleg.healthy().ok).toBe(true); // at the threshold, not past it
    // Failing relists do not count as activity.
    rt.failContainers = new Error('hung');
    await pleg.relist();
    clock.advance(10_000);
    expect(pleg.healthy()).toEqual({
      ok: false,
      message: 'pleg was last seen active 3m10s ago; threshold is 3m0s; last relist failed: hung',
    });
    rt.failContainers = null;
    await pleg.relist();
    expect(pleg.healthy()).toEqual({ ok: true, message: 'pleg was last seen active 0s ago' });
  });

  it('uses the configured threshold', async () => {
    const rt = new FakeRuntime();
    const clock = manualClock();
    const pleg = newPleg({ cri: rt, now: clock.now, relistThresholdMs: 1500 });
    await pleg.relist();
    clock.advance(1600);
    expect(pleg.healthy()).toEqual({ ok: false, message: 'pleg was last seen active 1.6s ago; threshold is 1.5s' });
  });
});
