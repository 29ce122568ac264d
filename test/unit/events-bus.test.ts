import { describe, expect, it } from 'vitest';
import { EventBus, type BusMessage, type KletEventBody } from '../../src/lib/events/index.js';

const source = (n: number): KletEventBody => ({ kind: 'SourceError', source: `/etc/klet/${n}.yaml`, message: 'bad' });

/** A clock that advances one second per call, from a fixed instant. */
function clock(): () => Date {
  let t = Date.parse('2024-05-01T10:00:00.000Z');
  return () => new Date((t += 1000));
}

/** Take `n` messages from an iterator. */
async function take(it: AsyncIterator<BusMessage>, n: number): Promise<BusMessage[]> {
  const out: BusMessage[] = [];
  for (let i = 0; i < n; i++) {
    const r = await it.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

const seqs = (ms: BusMessage[]): (number | string)[] => ms.map((m) => (m.kind === 'Dropped' ? `dropped:${m.count}` : m.seq));

describe('EventBus.emit', () => {
  it('stamps consecutive seqs from 1 and the time, keeping the body', () => {
    const bus = new EventBus({ now: clock() });
    expect(bus.lastSeq).toBe(0);
    const a = bus.emit({ kind: 'PodLifecycle', pod: 'default/web', uid: 'u1', state: 'SyncPod' });
    const b = bus.emit({ kind: 'SyncLoopIteration', trigger: 'pleg', durationMs: 12, pods: ['default/web'] });
    expect(a).toEqual({
      seq: 1,
      time: '2024-05-01T10:00:01.000Z',
      kind: 'PodLifecycle',
      pod: 'default/web',
      uid: 'u1',
      state: 'SyncPod',
    });
    expect(b.seq).toBe(2);
    expect(b.time).toBe('2024-05-01T10:00:02.000Z');
    expect(bus.lastSeq).toBe(2);
    // Shared by every reader: frozen.
    expect(Object.isFrozen(a)).toBe(true);
  });

  it('ignores a seq or time carried by a re-emitted event', () => {
    const bus = new EventBus();
    const first = bus.emit(source(1));
    const again = bus.emit({ ...first });
    expect(again.seq).toBe(2);
  });

  it('rejects a capacity that is not a positive integer', () => {
    expect(() => new EventBus({ capacity: 0 })).toThrow(RangeError);
    expect(() => new EventBus({ subscriberQueueSize: 1.5 })).toThrow(RangeError);
  });
});

describe('EventBus.recent', () => {
  it('keeps the last N events, oldest first', () => {
    const bus = new EventBus({ capacity: 3 });
    expect(bus.recent()).toEqual([]);
    for (let i = 1; i <= 5; i++) bus.emit(source(i));
    expect(bus.recent().map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(bus.recent(0).map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(bus.recent(1).map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(bus.recent(3).map((e) => e.seq)).toEqual([4, 5]);
    expect(bus.recent(5)).toEqual([]);
    expect(bus.recent(99)).toEqual([]);
    expect(bus.recent(4)[0]).toMatchObject({ seq: 5, kind: 'SourceError', source: '/etc/klet/5.yaml' });
  });

  it("cannot be flooded by one pod: a pod over its share (100 by default) loses its own oldest, not the others' events", () => {
    const bus = new EventBus();
    const podEvent = (uid: string, n: number): KletEventBody => ({ kind: 'Event', pod: `ns/${uid}`, uid, type: 'Warning', reason: 'BackOff', message: `back-off ${n}` });
    const quiet = bus.emit(podEvent('quiet', 0));
    const node = bus.emit(source(0));
    // A crash-looping pod's storm: far more events than the whole ring holds.
    for (let i = 1; i <= 5000; i++) bus.emit(podEvent('storm', i));
    const all = bus.recent();
    expect(all.filter((e) => 'uid' in e && e.uid === 'storm')).toHaveLength(100);
    // Its newest are kept, in order.
    expect(all.filter((e) => 'uid' in e && e.uid === 'storm').map((e) => (e as { message: string }).message).slice(-2)).toEqual(['back-off 4999', 'back-off 5000']);
    // The other pod's event and the node's are still there.
    expect(all[0]).toBe(quiet);
    expect(all[1]).toBe(node);
    expect(all).toHaveLength(102);
    // recent(since) finds its place across the gaps the trimming left.
    expect(bus.recent(node.seq).map((e) => e.seq)[0]).toBe(bus.lastSeq - 99);
    expect(bus.recent(quiet.seq)[0]).toBe(node);
  });

  it('the per-pod share is configurable and never above the capacity', () => {
    const bus = new EventBus({ capacity: 5, perPodCapacity: 2 });
    for (let i = 1; i <= 4; i++) bus.emit({ kind: 'PodLifecycle', pod: 'ns/a', uid: 'a', state: 'SyncPod' });
    for (let i = 1; i <= 4; i++) bus.emit(source(i));
    expect(bus.recent().map((e) => e.seq)).toEqual([4, 5, 6, 7, 8]);
    expect(() => new EventBus({ perPodCapacity: 0 })).toThrow(RangeError);
  });

  it('defaults to 1000 events', () => {
    const bus = new EventBus();
    for (let i = 1; i <= 1005; i++) bus.emit(source(i));
    const all = bus.recent();
    expect(all).toHaveLength(1000);
    expect(all[0]?.seq).toBe(6);
    expect(all.at(-1)?.seq).toBe(1005);
  });
});

describe('EventBus.subscribe', () => {
  it('delivers events emitted after subscribing, in order, to each subscriber', async () => {
    const bus = new EventBus();
    bus.emit(source(1));
    const ac = new AbortController();
    const a = bus.subscribe(ac.signal)[Symbol.asyncIterator]();
    const b = bus.subscribe(ac.signal)[Symbol.asyncIterator]();
    expect(bus.subscriberCount).toBe(2);
    bus.emit(source(2));
    bus.emit(source(3));
    expect(seqs(await take(a, 2))).toEqual([2, 3]);
    expect(seqs(await take(b, 2))).toEqual([2, 3]);
    ac.abort();
    expect(bus.subscriberCount).toBe(0);
  });

  it('resolves a waiting next() when an event arrives', async () => {
    const bus = new EventBus();
    const it = bus.subscribe(new AbortController().signal)[Symbol.asyncIterator]();
    const pending = it.next();
    setTimeout(() => bus.emit(source(1)), 5);
    expect(await pending).toMatchObject({ done: false, value: { seq: 1 } });
    await it.return?.();
  });

  it('replays from `since` with no gap or duplicate before the live events', async () => {
    const bus = new EventBus();
    for (let i = 1; i <= 4; i++) bus.emit(source(i));
    const ac = new AbortController();
    const it = bus.subscribe(ac.signal, { since: 2 })[Symbol.asyncIterator]();
    bus.emit(source(5));
    expect(seqs(await take(it, 3))).toEqual([3, 4, 5]);
    const all = bus.subscribe(ac.signal, { since: 0 })[Symbol.asyncIterator]();
    expect(seqs(await take(all, 5))).toEqual([1, 2, 3, 4, 5]);
    ac.abort();
  });

  it('ends iteration when the signal aborts, also while waiting, and discards what is queued', async () => {
    const bus = new EventBus();
    const ac = new AbortController();
    const got: number[] = [];
    const loop = (async () => {
      for await (const m of bus.subscribe(ac.signal)) if (m.kind !== 'Dropped') got.push(m.seq);
    })();
    bus.emit(source(1));
    await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    await loop; // ends without throwing
    bus.emit(source(2));
    expect(got).toEqual([1]);
    expect(bus.subscriberCount).toBe(0);
  });

  it('is closed at once for an already aborted signal', async () => {
    const bus = new EventBus();
    const it = bus.subscribe(AbortSignal.abort())[Symbol.asyncIterator]();
    bus.emit(source(1));
    expect(await it.next()).toEqual({ value: undefined, done: true });
    expect(bus.subscriberCount).toBe(0);
  });

  it('unsubscribes when the consumer breaks out', async () => {
    const bus = new EventBus();
    bus.emit(source(1));
    for await (const m of bus.subscribe(new AbortController().signal, { since: 0 })) {
      expect(m).toMatchObject({ seq: 1 });
      break;
    }
    expect(bus.subscriberCount).toBe(0);
  });

  it('drops the oldest events of a slow subscriber and says so, without slowing the others', async () => {
    const bus = new EventBus({ now: clock() });
    const ac = new AbortController();
    const slow = bus.subscribe(ac.signal, { queueSize: 2 })[Symbol.asyncIterator]();
    const fast = bus.subscribe(ac.signal)[Symbol.asyncIterator]();
    for (let i = 1; i <= 5; i++) bus.emit(source(i));

    const first = await take(slow, 3);
    expect(first[0]).toMatchObject({ kind: 'Dropped', count: 3, firstSeq: 1, lastSeq: 3 });
    expect(typeof (first[0] as { time: unknown }).time).toBe('string');
    expect(seqs(first)).toEqual(['dropped:3', 4, 5]);
    // Caught up: no more markers until it falls behind again.
    bus.emit(source(6));
    expect(seqs(await take(slow, 1))).toEqual([6]);
    for (let i = 7; i <= 10; i++) bus.emit(source(i));
    const second = await take(slow, 3);
    expect(second[0]).toMatchObject({ kind: 'Dropped', count: 2, firstSeq: 7, lastSeq: 8 });
    expect(seqs(second)).toEqual(['dropped:2', 9, 10]);

    expect(seqs(await take(fast, 10))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    ac.abort();
  });

  it('holds at most the queue bound per subscriber however much is emitted', async () => {
    const bus = new EventBus({ capacity: 10, subscriberQueueSize: 4 });
    const ac = new AbortController();
    const it = bus.subscribe(ac.signal)[Symbol.asyncIterator]();
    for (let i = 1; i <= 100_000; i++) bus.emit(source(i));
    const got = await take(it, 5);
    expect(got[0]).toMatchObject({ kind: 'Dropped', count: 99_996, firstSeq: 1, lastSeq: 99_996 });
    expect(seqs(got.slice(1))).toEqual([99_997, 99_998, 99_999, 100_000]);
    ac.abort();
  });
});
