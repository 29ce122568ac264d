/**
 * `klet events`: the node's events as `kubectl get events` lists them. From
 * the running `klet sync` of the root dir, through its local API's /events
 * (the events it still holds, then live ones); without one, what the pods'
 * records and the runtime can still tell (lib/status/derived-events.ts).
 */
import type { CoreV1Event } from '@kubernetes/client-node';
import { KletError } from '../errors.js';
import { EventList, eventLastSeen, kubeletEventOf, sortEvents, type EventChange } from '../events/event-list.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { listPodRecords, readSyncState } from '../kuberuntime/poddir.js';
import { getRuntimePodStatuses } from '../kuberuntime/runtime-status.js';
import { LocalApiUnavailableError, localApiEvents, localApiSocketPath } from '../server/client.js';
import { deriveEvents } from '../status/derived-events.js';
import { sleep, type ServiceDeps } from './deps.js';
import { findPods } from './lookup.js';

/** Where the events came from: the running sync, or the pods' records and the runtime. */
export type EventsSource = 'sync' | 'records';

export interface EventsOptions {
  /** Only this pod's events: ns/name, name (namespace default), or a UID prefix. */
  pod?: string;
}

export interface EventsList {
  source: EventsSource;
  /** The local API socket asked (whether or not a sync answered). */
  socketPath: string;
  /** Oldest last seen first. */
  events: CoreV1Event[];
}

export interface EventsUpdate extends EventsList {
  /** The first update: every event so far (all ADDED). Later ones: what changed. */
  initial: boolean;
  changes: EventChange[];
}

/** The UID whose events to keep, or undefined for every pod. */
async function podFilter(opts: EventsOptions, deps: ServiceDeps): Promise<(e: CoreV1Event) => boolean> {
  if (opts.pod === undefined) return () => true;
  const [pod] = await findPods(deps, [opts.pod]);
  return (e) => e.involvedObject.uid === pod?.uid;
}

/** What the pods' records and the runtime still tell, as Events. */
async function recordedEvents(deps: ServiceDeps): Promise<CoreV1Event[]> {
  const records = await listPodRecords(deps.rootDir, deps.nodeName);
  const refs = records.map((r) => ({ uid: r.pod.metadata?.uid ?? '', name: r.pod.metadata?.name ?? '', namespace: r.pod.metadata?.namespace ?? 'default' }));
  const runtime = await getRuntimePodStatuses(deps.cri, refs, { signal: deps.signal, owner: instanceSelector(deps) });
  const out: CoreV1Event[] = [];
  for (const record of records) {
    const uid = record.pod.metadata?.uid ?? '';
    const rt = runtime.get(uid) ?? { uid, name: '', namespace: '', sandboxes: [], containers: [] };
    for (const d of deriveEvents({ record, runtime: rt, syncState: await readSyncState(deps.rootDir, uid) })) {
      const event = kubeletEventOf(d.event, deps.nodeName, d.at);
      if (event !== null) out.push(event);
    }
  }
  return sortEvents(out);
}

/** The events the running sync holds, correlated; LocalApiUnavailableError when none runs. Returns the last seq read. */
async function syncEvents(socketPath: string, list: EventList, deps: ServiceDeps): Promise<number> {
  let lastSeq = 0;
  for await (const m of localApiEvents(socketPath, { follow: false, signal: deps.signal })) {
    if (m.kind === 'Dropped') continue;
    lastSeq = m.seq;
    list.add(m);
  }
  return lastSeq;
}

/** The node's events (or one pod's), oldest last seen first. */
export async function listEvents(opts: EventsOptions, deps: ServiceDeps): Promise<EventsList> {
  const keep = await podFilter(opts, deps);
  const socketPath = localApiSocketPath(deps.rootDir);
  const list = new EventList(deps.nodeName);
  try {
    await syncEvents(socketPath, list, deps);
    return { source: 'sync', socketPath, events: list.items().filter(keep) };
  } catch (err) {
    if (!(err instanceof LocalApiUnavailableError)) throw err;
  }
  return { source: 'records', socketPath, events: (await recordedEvents(deps)).filter(keep) };
}

/** A fingerprint of what a poll can change of an Event. */
const seenAs = (e: CoreV1Event) => `${e.count}|${eventLastSeen(e)}|${e.message}`;

/**
 * The events so far, then each one that appears or is counted again, until
 * the signal aborts (then it ends without error). From a running sync: its
 * stream, as it happens (a sync that stops ends it with an error). Without
 * one: the records and the runtime, read again every `intervalMs`.
 */
export async function* watchEvents(opts: EventsOptions & { intervalMs: number }, deps: ServiceDeps): AsyncGenerator<EventsUpdate> {
  const keep = await podFilter(opts, deps);
  const socketPath = localApiSocketPath(deps.rootDir);
  const list = new EventList(deps.nodeName);
  let lastSeq: number | undefined;
  try {
    lastSeq = await syncEvents(socketPath, list, deps);
  } catch (err) {
    if (!(err instanceof LocalApiUnavailableError)) throw err;
  }

  if (lastSeq !== undefined) {
    const events = list.items().filter(keep);
    yield { source: 'sync', socketPath, events, initial: true, changes: events.map((event) => ({ type: 'ADDED', event })) };
    for await (const m of localApiEvents(socketPath, { since: lastSeq, signal: deps.signal })) {
      if (m.kind === 'Dropped') continue;
      const change = list.add(m);
      if (change !== null && keep(change.event)) yield { source: 'sync', socketPath, events: [change.event], initial: false, changes: [change] };
    }
    if (deps.signal.aborted) return;
    throw new KletError(`local API at ${socketPath}: the klet sync stopped; no more events to follow`);
  }

  const seen = new Map<string, string>();
  let initial = true;
  while (!deps.signal.aborted) {
    let events: CoreV1Event[];
    try {
      if (!initial) await sleep(opts.intervalMs, deps.signal);
      events = (await recordedEvents(deps)).filter(keep);
    } catch (err) {
      if (deps.signal.aborted) return;
      throw err;
    }
    const changes: EventChange[] = [];
    for (const event of events) {
      const name = event.metadata?.name ?? '';
      const before = seen.get(name);
      if (before === seenAs(event)) continue;
      seen.set(name, seenAs(event));
      changes.push({ type: before === undefined ? 'ADDED' : 'MODIFIED', event });
    }
    if (initial || changes.length > 0) yield { source: 'records', socketPath, events, initial, changes };
    initial = false;
  }
}
