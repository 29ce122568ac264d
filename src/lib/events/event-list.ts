/**
 * The node's events as the API server would hold them, made from klet's own
 * event stream: what `klet events` lists. Each pod event becomes the core/v1
 * Event the kubelet's recorder makes of it (lib/node/kubelet-events.ts,
 * lib/node/event-recorder.ts) and goes through client-go's EventCorrelator
 * (lib/node/event-correlator.ts), so a repeated event is one object with a
 * count and its first and last time ("(x3 over 2m)") and similar ones are
 * combined, as `kubectl get events` shows them from a cluster.
 *
 * One difference, on purpose: the correlator's spam filter (25 events per
 * object, then one every 5 minutes) is off. It protects the API server; a
 * reader of klet's own stream loses nothing by seeing every occurrence
 * counted, so counts here can be higher than a cluster's.
 */
import { createHash } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import { EventCorrelator, eventKey } from '../node/event-correlator.js';
import { makeKubeletEvent } from '../node/event-recorder.js';
import { nodeEventToRecorded, podEventToRecorded } from '../node/kubelet-events.js';
import type { KletEvent, PodEvent } from './types.js';

/** An Event that appeared (ADDED) or was counted again (MODIFIED), as a watch reports it. */
export interface EventChange {
  type: 'ADDED' | 'MODIFIED';
  event: CoreV1Event;
}

/** When an Event was last seen (series, lastTimestamp, eventTime, firstTimestamp), as kubectl sorts them; 0 when never. */
export function eventLastSeen(e: CoreV1Event): number {
  for (const v of [e.series?.lastObservedTime, e.lastTimestamp, e.eventTime, e.firstTimestamp]) {
    const t = v === undefined ? NaN : new Date(v).getTime();
    if (!Number.isNaN(t)) return t;
  }
  return 0;
}

/** Oldest last seen first, as `kubectl events` lists them. */
export function sortEvents(events: CoreV1Event[]): CoreV1Event[] {
  return events.sort((a, b) => eventLastSeen(a) - eventLastSeen(b));
}

/** The Events of klet's event stream, correlated as the kubelet's recorder would. */
export class EventList {
  private readonly correlator = new EventCorrelator({ spamBurst: Number.POSITIVE_INFINITY });
  private readonly byName = new Map<string, CoreV1Event>();

  constructor(private readonly nodeName: string) {}

  /** Takes one of klet's events: the Event it added or counted, or null when the kubelet records no such event. */
  add(e: KletEvent): EventChange | null {
    if (e.kind !== 'Event' && e.kind !== 'NodeEvent') return null;
    const recorded = e.kind === 'NodeEvent' ? nodeEventToRecorded(e, this.nodeName) : podEventToRecorded(e, () => undefined);
    if (recorded === null) return null;
    const at = Date.parse(e.time);
    const r = this.correlator.correlate(makeKubeletEvent(recorded, this.nodeName, at), at);
    if (r.skip) return null;
    const name = r.event.metadata?.name ?? '';
    const before = this.byName.get(name);
    const event = r.patch && before ? { ...before, count: r.patch.count, lastTimestamp: r.patch.lastTimestamp, message: r.patch.message } : r.event;
    this.byName.set(name, event);
    return { type: before ? 'MODIFIED' : 'ADDED', event };
  }

  items(): CoreV1Event[] {
    return sortEvents([...this.byName.values()]);
  }
}

/** How often and when an event happened, as far as it is known (undefined: not known). */
export interface Occurrences {
  count: number;
  firstMs?: number;
  lastMs?: number;
}

/**
 * The Event the kubelet would hold for a pod event that happened `count`
 * times, first and last at the given times (unknown times stay unset, and
 * kubectl prints "<unknown>"); null when the kubelet records no such event.
 * Its name is stable for the same event, so a poll can tell a new one from
 * one counted again.
 */
export function kubeletEventOf(e: PodEvent, nodeName: string, at: Occurrences): CoreV1Event | null {
  const recorded = podEventToRecorded(e, () => undefined);
  if (recorded === null) return null;
  const event = makeKubeletEvent(recorded, nodeName, 0);
  const name = `${recorded.object.name}.${createHash('sha256').update(eventKey(event)).digest('hex').slice(0, 16)}`;
  return {
    ...event,
    metadata: { ...event.metadata, name },
    count: at.count,
    firstTimestamp: at.firstMs === undefined ? undefined : new Date(at.firstMs),
    lastTimestamp: at.lastMs === undefined ? undefined : new Date(at.lastMs),
  };
}
