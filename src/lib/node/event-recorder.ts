/**
 * The kubelet's EventRecorder towards the API server (client-go
 * tools/record: the broadcaster, its sink and the EventCorrelator): pod and
 * node events become core/v1 Events with source {component: kubelet, host:
 * the node}, reportingComponent/reportingInstance the same, named
 * `<object>.<hex UnixNano>` in the object's namespace ("default" for the
 * Node). Identical events patch `count`/`lastTimestamp` of the existing
 * object; similar ones are combined; each object's events are rate-limited
 * (lib/node/event-correlator.ts).
 *
 * Sending is asynchronous and bounded, never in the caller's way: record()
 * only queues (up to 1000 events, as the broadcaster's queue; beyond that
 * the event is dropped and counted); one sender writes them in order, and
 * tries an event up to 12 times, 10 s apart, while the server cannot be
 * reached (recordToSink), then drops it (counted). A refusal that a retry
 * cannot fix (4xx other than 404 on a patch, 429) drops the event at once.
 */
import type { CoreV1Event, V1ObjectReference } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import { pause } from '../util/sleep.js';
import { EventCorrelator, nanoHex, TokenBucket } from './event-correlator.js';

export const EVENT_QUEUE_MAX = 1000;
export const EVENT_MAX_TRIES = 12;
export const EVENT_RETRY_MS = 10_000;
/** The kubelet's eventRecordQPS / eventBurst defaults. */
export const EVENT_RECORD_QPS = 50;
export const EVENT_BURST = 100;

/** What the recorder needs from the API server (lib/kube/node-api.ts implements it). */
export interface EventApi {
  createEvent(namespace: string, event: CoreV1Event, signal: AbortSignal): Promise<CoreV1Event>;
  /** Strategic-merge patch of count, lastTimestamp and message. */
  patchEvent(namespace: string, name: string, patch: { count: number; lastTimestamp: Date; message: string }, signal: AbortSignal): Promise<CoreV1Event>;
}

export interface RecordedEvent {
  object: V1ObjectReference;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface EventRecorderStats {
  /** Events written (created or patched). */
  sent: number;
  created: number;
  patched: number;
  /** Dropped by the spam filter. */
  filtered: number;
  /** Dropped because the queue was full, the server kept failing, or refused them. */
  dropped: number;
  queued: number;
  lastError: string | null;
}

export interface EventRecorderOptions {
  api: EventApi;
  nodeName: string;
  signal: AbortSignal;
  now?: () => number;
  retryMs?: number;
  maxTries?: number;
  queueMax?: number;
  /** Called with each send failure (already free of credentials: ApiServerError redacts). */
  onError?: (message: string) => void;
}

export const KUBELET_COMPONENT = 'kubelet';

/** Messages are cut to 1 KiB (the events API's note limit). */
const MAX_MESSAGE = 1024;

/** The core/v1 Event the kubelet makes of `e` on node `nodeName` at `nowMs` (recorder.go makeEvent). */
export function makeKubeletEvent(e: RecordedEvent, nodeName: string, nowMs: number): CoreV1Event {
  const t = new Date(nowMs);
  const message = e.message.length > MAX_MESSAGE ? e.message.slice(0, MAX_MESSAGE) : e.message;
  return {
    metadata: { name: `${e.object.name}.${nanoHex(nowMs)}`, namespace: e.object.namespace || 'default' },
    involvedObject: e.object,
    reason: e.reason,
    message,
    type: e.type,
    firstTimestamp: t,
    lastTimestamp: t,
    count: 1,
    source: { component: KUBELET_COMPONENT, host: nodeName },
    reportingComponent: KUBELET_COMPONENT,
    reportingInstance: nodeName,
  };
}

export class EventRecorder {
  private readonly correlator = new EventCorrelator();
  /** Events waiting for the sender, each with when it was recorded (its timestamps). */
  private readonly queue: Array<{ e: RecordedEvent; at: number }> = [];
  private readonly limiter: TokenBucket;
  private wake: (() => void) | null = null;
  private readonly now: () => number;
  readonly stats: EventRecorderStats = { sent: 0, created: 0, patched: 0, filtered: 0, dropped: 0, queued: 0, lastError: null };
  /** Resolves when the sender has stopped (after the signal aborts). */
  readonly done: Promise<void>;

  constructor(private readonly o: EventRecorderOptions) {
    this.now = o.now ?? Date.now;
    this.limiter = new TokenBucket(EVENT_RECORD_QPS, EVENT_BURST, this.now());
    this.done = this.run();
  }

  /** Queue an event; never blocks, never throws. */
  record(e: RecordedEvent): void {
    if (this.o.signal.aborted) return;
    if (this.queue.length >= (this.o.queueMax ?? EVENT_QUEUE_MAX)) {
      this.stats.dropped++;
      return;
    }
    // Stamped now, as the kubelet's recorder makes the Event when it is recorded: a sender busy retrying does not make it late.
    this.queue.push({ e, at: this.now() });
    this.stats.queued = this.queue.length;
    this.wake?.();
  }

  /** The core/v1 Event the kubelet would make (recorder.go makeEvent). */
  makeEvent(e: RecordedEvent, nowMs: number): CoreV1Event {
    return makeKubeletEvent(e, this.o.nodeName, nowMs);
  }

  private async run(): Promise<void> {
    const signal = this.o.signal;
    while (!signal.aborted) {
      const next = this.queue.shift();
      this.stats.queued = this.queue.length;
      if (!next) {
        await new Promise<void>((resolve) => {
          const onAbort = () => resolve();
          this.wake = () => {
            signal.removeEventListener('abort', onAbort);
            resolve();
          };
          signal.addEventListener('abort', onAbort, { once: true });
        });
        this.wake = null;
        continue;
      }
      // The client's own rate limit (the kubelet's eventRecordQPS/eventBurst).
      while (!this.limiter.tryAccept(this.now()) && !signal.aborted) await pause(1000 / EVENT_RECORD_QPS, signal);
      const r = this.correlator.correlate(this.makeEvent(next.e, next.at), this.now());
      if (r.skip) {
        this.stats.filtered++;
        continue;
      }
      await this.send(r.event, r.patch);
    }
  }

  /** recordToSink: create, or patch (create when the old object is gone); retry while the server is away. */
  private async send(event: CoreV1Event, patch: { count: number; lastTimestamp: Date; message: string } | undefined): Promise<void> {
    const signal = this.o.signal;
    const ns = event.metadata?.namespace ?? 'default';
    const max = this.o.maxTries ?? EVENT_MAX_TRIES;
    for (let attempt = 1; attempt <= max && !signal.aborted; attempt++) {
      try {
        let written: CoreV1Event | undefined;
        if (patch) {
          try {
            written = await this.o.api.patchEvent(ns, event.metadata?.name ?? '', patch, signal);
            this.stats.patched++;
          } catch (err) {
            if ((err as { status?: number }).status !== 404) throw err;
          }
        }
        if (!written) {
          // Gone from the server (events expire after an hour): create it again.
          const fresh: CoreV1Event = { ...event, metadata: { ...event.metadata, resourceVersion: undefined } };
          written = await this.o.api.createEvent(ns, fresh, signal);
          this.stats.created++;
        }
        this.stats.sent++;
        this.correlator.updateState(written);
        return;
      } catch (err) {
        if (signal.aborted) return;
        const m = errorMessage(err);
        this.stats.lastError = m;
        this.o.onError?.(m);
        const status = (err as { status?: number }).status;
        // The server answered and refused it: a retry would not help (AlreadyExists, Invalid, Forbidden…).
        if (status !== undefined && status >= 400 && status < 500 && status !== 429) break;
        if (attempt < max) await pause(this.o.retryMs ?? EVENT_RETRY_MS, signal);
      }
    }
    if (!signal.aborted) this.stats.dropped++;
  }
}
