/**
 * client-go's EventCorrelator (tools/record/events_cache.go), which the
 * kubelet's EventRecorder runs every event through before it reaches the
 * API server, as a pure object (the clock is passed in):
 *
 * - the aggregator: events with the same source, object, type and reason
 *   but different messages are counted per 10-minute window; from the
 *   10th distinct message on, they become one event "(combined from
 *   similar events): <message>" under the aggregate key;
 * - the logger: an event seen before (same source, object, fieldPath,
 *   type, reason, message) is not created again: the server's object gets
 *   `count` + 1 and the new `lastTimestamp` by a PATCH;
 * - the spam filter: per source and object and type, a token bucket of 25
 *   that refills one token every 5 minutes; an event without a token is
 *   dropped.
 *
 * The caches are LRUs of 4096 keys, as client-go's.
 */
import type { CoreV1Event } from '@kubernetes/client-node';

/** client-go's defaults (events_cache.go). */
export const EVENT_CORRELATOR_DEFAULTS = {
  maxLruCacheEntries: 4096,
  aggregateMaxEvents: 10,
  aggregateIntervalMs: 600_000,
  spamBurst: 25,
  /** One token every 5 minutes. */
  spamQps: 1 / 300,
} as const;

export type EventCorrelatorOptions = { [K in keyof typeof EVENT_CORRELATOR_DEFAULTS]: number };

export const COMBINED_PREFIX = '(combined from similar events): ';

/** A Map bounded to `max` keys, evicting the least recently used. */
class Lru<V> {
  private readonly m = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > this.max) this.m.delete(this.m.keys().next().value as string);
  }
  get size(): number {
    return this.m.size;
  }
}

/** A token bucket (golang.org/x/time/rate semantics, as flowcontrol's). */
export class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly qps: number,
    private readonly burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.last = nowMs;
  }
  tryAccept(nowMs: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.last) / 1000) * this.qps);
    this.last = nowMs;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

const objectKey = (e: CoreV1Event) => {
  const o = e.involvedObject;
  return [o.kind, o.namespace, o.name, o.uid, o.apiVersion];
};
const sourceKey = (e: CoreV1Event) => [e.source?.component, e.source?.host];
const join = (parts: Array<string | undefined>) => parts.map((p) => p ?? '').join('\u0000');

/** getEventKey: everything that makes two events the same event. */
export function eventKey(e: CoreV1Event): string {
  const o = e.involvedObject;
  return join([...sourceKey(e), o.kind, o.namespace, o.name, o.fieldPath, o.uid, o.apiVersion, e.type, e.reason, e.message]);
}
/** EventAggregatorByReasonFunc: the aggregate key (message left out). */
function aggregateKey(e: CoreV1Event): string {
  return join([...sourceKey(e), ...objectKey(e), e.type, e.reason, e.reportingComponent, e.reportingInstance]);
}
/** getSpamKey. */
function spamKey(e: CoreV1Event): string {
  return join([...sourceKey(e), ...objectKey(e), e.type]);
}

export type CorrelateResult =
  /** Dropped by the spam filter. */
  | { skip: true }
  /** Create `event` (no patch), or patch the existing object `event.metadata.name` with `patch`. */
  | { skip: false; event: CoreV1Event; patch?: { count: number; lastTimestamp: Date; message: string } };

interface Observation {
  count: number;
  firstTimestamp: Date;
  name: string;
  resourceVersion?: string;
}

export class EventCorrelator {
  private readonly aggregates: Lru<{ messages: Set<string>; lastMs: number }>;
  private readonly observations: Lru<Observation>;
  private readonly spam: Lru<TokenBucket>;
  private readonly o: EventCorrelatorOptions;

  constructor(opts: Partial<EventCorrelatorOptions> = {}) {
    this.o = { ...EVENT_CORRELATOR_DEFAULTS, ...opts };
    this.aggregates = new Lru(this.o.maxLruCacheEntries);
    this.observations = new Lru(this.o.maxLruCacheEntries);
    this.spam = new Lru(this.o.maxLruCacheEntries);
  }

  /** EventCorrelate: aggregate, observe, filter. `event` is not modified. */
  correlate(event: CoreV1Event, nowMs: number): CorrelateResult {
    const now = new Date(nowMs);
    // The aggregator.
    let ev = event;
    let key = eventKey(event);
    const aKey = aggregateKey(event);
    let rec = this.aggregates.get(aKey);
    if (!rec || nowMs - rec.lastMs > this.o.aggregateIntervalMs) rec = { messages: new Set(), lastMs: nowMs };
    rec.messages.add(event.message ?? '');
    rec.lastMs = nowMs;
    this.aggregates.set(aKey, rec);
    if (rec.messages.size >= this.o.aggregateMaxEvents) {
      // Do not grow the set of messages beyond the limit.
      rec.messages.delete(rec.messages.values().next().value as string);
      ev = {
        metadata: { name: `${event.involvedObject.name}.${nanoHex(nowMs)}`, namespace: event.metadata?.namespace },
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        involvedObject: event.involvedObject,
        message: COMBINED_PREFIX + (event.message ?? ''),
        type: event.type,
        reason: event.reason,
        source: event.source,
        reportingComponent: event.reportingComponent,
        reportingInstance: event.reportingInstance,
      };
      key = aKey;
    }
    // The logger.
    const seen = this.observations.get(key);
    let patch: { count: number; lastTimestamp: Date; message: string } | undefined;
    if (seen && seen.count > 0) {
      ev = {
        ...ev,
        metadata: { ...ev.metadata, name: seen.name, resourceVersion: seen.resourceVersion },
        firstTimestamp: seen.firstTimestamp,
        count: seen.count + 1,
      };
      patch = { count: ev.count!, lastTimestamp: ev.lastTimestamp ?? now, message: ev.message ?? '' };
    }
    this.observations.set(key, { count: ev.count ?? 1, firstTimestamp: ev.firstTimestamp ?? now, name: ev.metadata?.name ?? '', resourceVersion: ev.metadata?.resourceVersion });
    // The spam filter.
    const sKey = spamKey(ev);
    let bucket = this.spam.get(sKey);
    if (!bucket) {
      bucket = new TokenBucket(this.o.spamQps, this.o.spamBurst, nowMs);
      this.spam.set(sKey, bucket);
    }
    if (!bucket.tryAccept(nowMs)) return { skip: true };
    return patch ? { skip: false, event: ev, patch } : { skip: false, event: ev };
  }

  /** UpdateState: what the server returned (its name and resourceVersion) for later patches. */
  updateState(serverEvent: CoreV1Event): void {
    const key = eventKey(serverEvent);
    const isCombined = serverEvent.message?.startsWith(COMBINED_PREFIX);
    const k = isCombined ? aggregateKey(serverEvent) : key;
    this.observations.set(k, {
      count: serverEvent.count ?? 1,
      firstTimestamp: serverEvent.firstTimestamp ?? new Date(0),
      name: serverEvent.metadata?.name ?? '',
      resourceVersion: serverEvent.metadata?.resourceVersion,
    });
  }
}

/** The hex of a Unix time in nanoseconds, as the kubelet names events (`%x` of UnixNano). */
export function nanoHex(ms: number): string {
  return (BigInt(Math.floor(ms)) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000))).toString(16);
}
