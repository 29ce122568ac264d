/**
 * The sync loop's event bus: one producer side (`emit`), a ring of recent
 * events for late readers (`recent`), and any number of live subscriptions.
 *
 * The sync loop must never wait on, or be slowed by, whoever watches it: a
 * dashboard that stops drawing or an /events client on a stalled connection
 * would otherwise hold the loop or grow memory without bound. So `emit` is
 * synchronous and O(subscribers), each subscription has its own bounded
 * queue, and a subscriber that falls behind loses its oldest undelivered
 * events, which are replaced by one DroppedMarker saying how many and which.
 *
 * The ring is shared by every pod, so one pod must not be able to push the
 * others out of it (a container restarted in a loop makes several events a
 * second): each pod keeps at most `perPodCapacity` events in it, and a pod
 * over its share loses its own oldest, as client-go's event correlator
 * limits events by object. A reader of `recent()` can then see gaps in seq.
 */
import type { BusMessage, DroppedMarker, KletEvent, KletEventBody, KletEventMeta } from './types.js';

/** Events kept for `recent()` and `?since=`: enough for a few minutes of a busy node. */
export const DEFAULT_RING_CAPACITY = 1000;
/** Events of one pod the ring keeps at most (a tenth of it). */
export const DEFAULT_PER_POD_CAPACITY = 100;
/** Undelivered events one subscriber may hold before its oldest are dropped. */
export const DEFAULT_SUBSCRIBER_QUEUE = 256;

export interface EventBusOptions {
  /** How many recent events to keep. Default 1000. */
  capacity?: number;
  /** How many of one pod's events the ring keeps. Default 100 (at most `capacity`). */
  perPodCapacity?: number;
  /** Default bound of each subscriber's queue. Default 256. */
  subscriberQueueSize?: number;
  /** The clock for `time` (tests). */
  now?: () => Date;
}

export interface SubscribeOptions {
  /**
   * Replay the retained events after this seq before the live ones, with no
   * gap or duplicate between the two (0 replays the whole ring). The replay
   * is a snapshot taken at subscribe time and does not count against the
   * queue bound. Default: live events only.
   */
  since?: number;
  /** This subscriber's queue bound, instead of the bus default. */
  queueSize?: number;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`EventBus: ${name} must be a positive integer`);
  return value;
}

export class EventBus {
  private readonly capacity: number;
  private readonly perPod: number;
  private readonly queueSize: number;
  private readonly now: () => Date;
  /** The retained events, oldest first (seq ascending, with gaps where a pod's share was trimmed). */
  private ring: KletEvent[] = [];
  /** Where the ring's live part starts (the array is compacted now and then, not at every event). */
  private head = 0;
  /** Retained events by pod uid. */
  private readonly perPodCount = new Map<string, number>();
  private nextSeq = 1;
  private readonly subscriptions = new Set<Subscription>();

  constructor(opts: EventBusOptions = {}) {
    this.capacity = positiveInteger('capacity', opts.capacity ?? DEFAULT_RING_CAPACITY);
    this.perPod = Math.min(this.capacity, positiveInteger('perPodCapacity', opts.perPodCapacity ?? DEFAULT_PER_POD_CAPACITY));
    this.queueSize = positiveInteger('subscriberQueueSize', opts.subscriberQueueSize ?? DEFAULT_SUBSCRIBER_QUEUE);
    this.now = opts.now ?? (() => new Date());
  }

  /**
   * Stamps the event with the next seq and the current time, keeps it in the
   * ring and hands it to every subscription. Never blocks and never throws
   * because of a subscriber. The returned event is frozen (shallowly): all
   * readers share it.
   */
  emit<B extends KletEventBody>(body: B): B & KletEventMeta {
    const meta: KletEventMeta = { seq: this.nextSeq++, time: this.now().toISOString() };
    // seq and time first for readable JSON, and again last so that a caller
    // re-emitting an event it received cannot smuggle in its old seq.
    const event: B & KletEventMeta = Object.assign({}, meta, body, meta);
    Object.freeze(event);
    this.retain(event);
    for (const sub of this.subscriptions) sub.push(event);
    return event;
  }

  /** Keeps the event in the ring: over its pod's share, that pod's oldest goes; over the capacity, the oldest. */
  private retain(event: KletEvent): void {
    this.ring.push(event);
    const uid = podOf(event);
    if (uid !== undefined) {
      const n = (this.perPodCount.get(uid) ?? 0) + 1;
      this.perPodCount.set(uid, n);
      if (n > this.perPod) {
        const i = this.ring.findIndex((e, idx) => idx >= this.head && podOf(e) === uid);
        this.ring.splice(i, 1);
        this.perPodCount.set(uid, n - 1);
      }
    }
    if (this.ring.length - this.head > this.capacity) {
      const oldest = this.ring[this.head++] as KletEvent;
      const old = podOf(oldest);
      if (old !== undefined) {
        const n = (this.perPodCount.get(old) ?? 1) - 1;
        if (n === 0) this.perPodCount.delete(old);
        else this.perPodCount.set(old, n);
      }
    }
    if (this.head >= this.capacity) {
      this.ring = this.ring.slice(this.head);
      this.head = 0;
    }
  }

  /** The seq of the newest event, 0 before the first. */
  get lastSeq(): number {
    return this.nextSeq - 1;
  }

  /** Live subscriptions (for tests and the dashboard's status line). */
  get subscriberCount(): number {
    return this.subscriptions.size;
  }

  /**
   * Retained events with seq > sinceSeq, oldest first. Without sinceSeq (or
   * with 0) all retained events. A sinceSeq older than the ring returns what
   * is left; compare the first seq with sinceSeq + 1 to see what was lost.
   */
  recent(sinceSeq = 0): KletEvent[] {
    const after = Math.floor(sinceSeq);
    // The first retained event with seq > sinceSeq (seqs ascend).
    let lo = this.head;
    let hi = this.ring.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.ring[mid] as KletEvent).seq <= after) lo = mid + 1;
      else hi = mid;
    }
    return this.ring.slice(lo);
  }

  /**
   * A live view of the bus, from now on (or from `opts.since`). The
   * subscription is registered before this returns, so nothing emitted after
   * the call is missed even if iteration starts later. It ends (the iterator
   * reports done, nothing is thrown) when `signal` aborts or the consumer
   * stops iterating (`break`); queued events are then discarded.
   */
  subscribe(signal: AbortSignal, opts: SubscribeOptions = {}): AsyncIterable<BusMessage> {
    const queueSize = positiveInteger('queueSize', opts.queueSize ?? this.queueSize);
    const backlog = opts.since === undefined ? [] : this.recent(opts.since);
    const sub = new Subscription(queueSize, backlog, this.now, () => this.subscriptions.delete(sub));
    if (signal.aborted) {
      sub.close();
      return sub;
    }
    this.subscriptions.add(sub);
    const onAbort = (): void => sub.close();
    signal.addEventListener('abort', onAbort, { once: true });
    sub.onClose(() => signal.removeEventListener('abort', onAbort));
    return sub;
  }
}

/** One subscriber's queue and iterator. */
class Subscription implements AsyncIterableIterator<BusMessage> {
  /** Live events not yet taken, oldest first, at most `queueSize`. */
  private readonly queue: KletEvent[] = [];
  /** Events discarded since the last delivery. */
  private dropped: { count: number; firstSeq: number; lastSeq: number } | null = null;
  /** Pending next() calls (more than one only if a consumer does not await). */
  private readonly waiters: ((r: IteratorResult<BusMessage>) => void)[] = [];
  private closed = false;
  private readonly closeHooks: (() => void)[] = [];

  constructor(
    private readonly queueSize: number,
    /** The replay requested with `since`, delivered before the queue. */
    private readonly backlog: KletEvent[],
    private readonly now: () => Date,
    unregister: () => void,
  ) {
    this.closeHooks.push(unregister);
  }

  onClose(hook: () => void): void {
    this.closeHooks.push(hook);
  }

  push(event: KletEvent): void {
    if (this.closed) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      // A waiter exists only when nothing was pending: deliver directly.
      waiter({ value: event, done: false });
      return;
    }
    this.queue.push(event);
    if (this.queue.length > this.queueSize) {
      const lost = this.queue.shift() as KletEvent;
      if (this.dropped) {
        this.dropped.count++;
        this.dropped.lastSeq = lost.seq;
      } else {
        this.dropped = { count: 1, firstSeq: lost.seq, lastSeq: lost.seq };
      }
    }
  }

  /** The next message without waiting: replay first, then the gap marker, then the queue. */
  private take(): BusMessage | undefined {
    const replayed = this.backlog.shift();
    if (replayed) return replayed;
    // The dropped events were the oldest queued, so the gap comes before what is left.
    if (this.dropped) {
      const marker: DroppedMarker = { kind: 'Dropped', ...this.dropped, time: this.now().toISOString() };
      this.dropped = null;
      return marker;
    }
    return this.queue.shift();
  }

  next(): Promise<IteratorResult<BusMessage>> {
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    const value = this.take();
    if (value) return Promise.resolve({ value, done: false });
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  return(): Promise<IteratorResult<BusMessage>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Ends the subscription: unregisters it, drops what is queued, ends pending next() calls. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.backlog.length = 0;
    this.dropped = null;
    for (const hook of this.closeHooks.splice(0)) hook();
    for (const waiter of this.waiters.splice(0)) waiter({ value: undefined, done: true });
  }
}

/** The pod an event is about (its uid), or undefined for the node's own and the loop's events. */
function podOf(e: KletEvent): string | undefined {
  if ('uid' in e && typeof e.uid === 'string' && e.uid !== '') return e.uid;
  if ('podUid' in e && typeof e.podUid === 'string' && e.podUid !== '') return e.podUid;
  return undefined;
}
