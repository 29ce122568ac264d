/**
 * The dashboard's one store: everything the screen shows, fed by the sync
 * loop's event stream and the local API's /pods and /node answers, read by
 * React through useSyncExternalStore (subscribe + getSnapshot) or by the
 * plain snapshot printer. No React here: this is pure state.
 *
 * Cost is independent of history: events, sparkline buckets and log lines
 * live in bounded rings; pod rows are formatted once when /pods answers,
 * not on every frame. Changes are batched: apply*() only mark the store
 * dirty, and listeners hear of it at most once a second, when a new
 * immutable snapshot is published — at once when the last one is older
 * than that (a change on a quiet node shows without delay), else a second
 * after it (a busy node's changes are coalesced into one frame a second,
 * the PLEG's own relist period). Keys redraw at once (ink caps all drawing
 * at 10 frames/s). Why so few data frames: ink rebuilds the whole screen
 * for every frame whatever changed (~5–8 ms of CPU for 120x40 here), so
 * with 110 pods changing every second the frame rate is the screen's CPU
 * (bench/dashboard.js: 4 data frames a second cost 3% of a core on top of
 * the feed's 2%, over the 5% budget with it). The one clock (`now`) is
 * part of the snapshot and ticks once a second, so every countdown and age
 * on the screen moves together.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { BusMessage, KletEvent, SyncLoopTrigger } from '../events/types.js';
import type { NodeStatus } from '../server/node-status.js';
import { podSummary } from '../status/format.js';

/** The triggers of the sync loop, in the order the panel lists them. */
export const TRIGGERS: readonly SyncLoopTrigger[] = ['config', 'pleg', 'sync', 'housekeeping', 'probe'];

/** Seconds of history in each sparkline. */
export const SPARK_SECONDS = 30;
/** Event lines kept for the events panel. */
export const EVENT_LINES = 200;
/** Log lines kept for the detail view. */
export const LOG_LINES = 200;
/** Minimum time between two published snapshots: one a second at most. */
export const FRAME_MS = 1000;

export type EventTone = 'normal' | 'warning' | 'pleg' | 'lifecycle' | 'error';

/** One line of the events panel, formatted once on arrival. */
export interface EventLine {
  seq: number;
  tone: EventTone;
  text: string;
}

/** One pod, its static columns formatted once per /pods answer. */
export interface PodRow {
  /** `namespace/name`. */
  key: string;
  uid: string;
  namespace: string;
  name: string;
  ready: string;
  /** kubectl's STATUS (CrashLoopBackOff, Running, …). */
  status: string;
  restarts: number;
  restartsText: string;
  /** creationTimestamp, ms since the epoch (AGE is computed against the shared clock). */
  createdAt: number | null;
  ip: string;
  /** file, http, api. */
  source: string;
  /** The pod as /pods served it (the detail view). */
  pod: V1Pod;
}

/** Where the data comes from and whether it is flowing. */
export interface ConnectionState {
  state: 'connecting' | 'live' | 'lost';
  /** What the user should read: how it was lost, when it retries. */
  message: string;
  /** When the state was entered (ms). */
  since: number;
}

export interface SyncLoopStats {
  /** Per trigger: iterations in each of the last SPARK_SECONDS seconds, oldest first. */
  perSecond: Record<SyncLoopTrigger, number[]>;
  /** Per trigger: the duration of its last iteration (ms), null before one. */
  lastDurationMs: Record<SyncLoopTrigger, number | null>;
  total: number;
}

/** A probe's current result as the prober reports it (ProbeResult events), per `pod/container/Probe`. */
export interface ProbeNote {
  /** When the result last changed. */
  time: string;
  result: 'Success' | 'Failure' | 'Unknown';
  message: string;
}

export interface DashboardSnapshot {
  now: number;
  connection: ConnectionState;
  node: NodeStatus | null;
  pods: readonly PodRow[];
  /** When /pods last answered (ms), null before. */
  podsAt: number | null;
  events: readonly EventLine[];
  loop: SyncLoopStats;
  /** `namespace/name` → container → when the next restart is due (ms), from BackOff events. */
  retryAt: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** `namespace/name/container/Liveness|Readiness|Startup` → the probe's current result. */
  probes: ReadonlyMap<string, ProbeNote>;
  /** Events the dashboard missed (its subscription fell behind). */
  dropped: number;
  lastSeq: number;
  /** The log tail of the detail view: which container and its last lines. */
  log: { target: string | null; lines: readonly string[]; note: string };
  /** Increases with every published snapshot (tests, frame accounting). */
  version: number;
}

export interface DashboardStoreOptions {
  /** The clock, ms since the epoch. Default Date.now. */
  now?: () => number;
  /** Minimum ms between published snapshots. Default FRAME_MS. */
  frameMs?: number;
}

/** A ring of at most `capacity` items, oldest first when read. */
class Ring<T> {
  private items: T[] = [];
  constructor(private readonly capacity: number) {}
  push(item: T): void {
    this.items.push(item);
    // Trim in batches: amortised O(1) and the array never exceeds 2x capacity.
    if (this.items.length >= this.capacity * 2) this.items = this.items.slice(-this.capacity);
  }
  clear(): void {
    this.items = [];
  }
  toArray(): T[] {
    return this.items.length > this.capacity ? this.items.slice(-this.capacity) : [...this.items];
  }
}

function hhmmss(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '--:--:--' : d.toISOString().slice(11, 19);
}

/** The events panel's line for one event; null for events that only feed the sync-loop panel. */
export function formatEventLine(e: KletEvent): EventLine | null {
  const t = hhmmss(e.time);
  switch (e.kind) {
    case 'Event':
      return { seq: e.seq, tone: e.type === 'Warning' ? 'warning' : 'normal', text: `${t} ${e.type.padEnd(7)} ${e.reason.padEnd(14)} ${e.pod}: ${e.message}` };
    case 'PLEG':
      return { seq: e.seq, tone: 'pleg', text: `${t} PLEG    ${e.type.padEnd(14)} ${e.pod ?? e.podUid} ${e.containerId.slice(0, 13)}` };
    case 'PodLifecycle':
      return {
        seq: e.seq,
        tone: 'lifecycle',
        text: `${t} Worker  ${e.state.padEnd(14)} ${e.pod}${e.reason ? `: ${e.reason}` : ''}`,
      };
    case 'SourceError':
      return { seq: e.seq, tone: 'error', text: `${t} Source  ${'Error'.padEnd(14)} ${e.message}` };
    case 'ProbeResult':
      return {
        seq: e.seq,
        tone: e.result === 'Failure' ? 'warning' : 'normal',
        text: `${t} Probe   ${`${e.probe} ${e.result}`.padEnd(14)} ${e.pod}/${e.container}${e.message ? `: ${e.message}` : ''}`,
      };
    case 'Volume':
      return { seq: e.seq, tone: 'lifecycle', text: `${t} Volume  ${e.op.padEnd(14)} ${e.pod}: ${e.volume} (${e.plugin})` };
    case 'NodeEvent':
      return { seq: e.seq, tone: e.type === 'Warning' ? 'warning' : 'normal', text: `${t} ${e.type.padEnd(7)} ${e.reason.padEnd(14)} node: ${e.message}` };
    case 'SyncLoopIteration':
    case 'PodSync':
    case 'PodWaitStarted':
    case 'PodWaitDone':
      return null;
  }
}

function podSource(pod: V1Pod): string {
  const s = pod.metadata?.annotations?.['kubernetes.io/config.source'] ?? '';
  return s === '' ? '-' : s;
}

function toMs(value: unknown): number | null {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'string' && value !== '') {
    const t = Date.parse(value);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}

/** The pod table's row for one pod of /pods; `now` only feeds the RESTARTS "(5m ago)". */
export function podRow(pod: V1Pod, now: number): PodRow {
  const sum = podSummary(pod, new Date(now));
  const restarts = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].reduce(
    (n, c) => n + (c.restartCount ?? 0),
    0,
  );
  return {
    key: `${sum.namespace}/${sum.name}`,
    uid: pod.metadata?.uid ?? '',
    namespace: sum.namespace,
    name: sum.name,
    ready: sum.ready,
    status: sum.status,
    restarts,
    restartsText: sum.restarts,
    createdAt: toMs(pod.metadata?.creationTimestamp),
    ip: sum.ip,
    source: podSource(pod),
    pod,
  };
}

function emptyLoop(): { buckets: Record<SyncLoopTrigger, Map<number, number>>; last: Record<SyncLoopTrigger, number | null> } {
  const buckets = {} as Record<SyncLoopTrigger, Map<number, number>>;
  const last = {} as Record<SyncLoopTrigger, number | null>;
  for (const t of TRIGGERS) {
    buckets[t] = new Map();
    last[t] = null;
  }
  return { buckets, last };
}

export class DashboardStore {
  private readonly clock: () => number;
  private readonly frameMs: number;
  private readonly listeners = new Set<() => void>();
  private snapshot: DashboardSnapshot;

  // The draft: what the next snapshot is built from.
  private connection: ConnectionState;
  private node: NodeStatus | null = null;
  private pods: PodRow[] = [];
  private podsAt: number | null = null;
  private readonly events = new Ring<EventLine>(EVENT_LINES);
  private readonly loop = emptyLoop();
  private loopTotal = 0;
  private readonly retry = new Map<string, Map<string, number>>();
  private readonly probes = new Map<string, ProbeNote>();
  private dropped = 0;
  private lastSeq = 0;
  private logTarget: string | null = null;
  private readonly logLines = new Ring<string>(LOG_LINES);
  private logNote = '';

  private dirty = false;
  private lastPublish = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private version = 0;

  constructor(opts: DashboardStoreOptions = {}) {
    this.clock = opts.now ?? Date.now;
    this.frameMs = opts.frameMs ?? FRAME_MS;
    this.connection = { state: 'connecting', message: 'connecting', since: this.clock() };
    this.snapshot = this.build();
  }

  // --- useSyncExternalStore

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  readonly getSnapshot = (): DashboardSnapshot => this.snapshot;

  // --- inputs

  /** One message of the event stream. */
  applyMessage(m: BusMessage): void {
    if (m.kind === 'Dropped') {
      this.dropped += m.count;
      this.changed();
      return;
    }
    if (m.seq <= this.lastSeq) return; // a replay after a reconnect overlapping what we have
    this.lastSeq = m.seq;
    const now = this.clock();
    if (m.kind === 'SyncLoopIteration') {
      const second = Math.floor(Date.parse(m.time) / 1000) || Math.floor(now / 1000);
      const b = this.loop.buckets[m.trigger];
      if (b !== undefined) {
        b.set(second, (b.get(second) ?? 0) + 1);
        if (b.size > SPARK_SECONDS * 2) for (const s of [...b.keys()]) if (s <= second - SPARK_SECONDS) b.delete(s);
        this.loop.last[m.trigger] = m.durationMs;
      }
      this.loopTotal++;
    } else if (m.kind === 'Event') {
      if (m.reason === 'BackOff' && m.container !== undefined && m.retryAt !== undefined) {
        const at = Date.parse(m.retryAt);
        if (!Number.isNaN(at)) {
          let byContainer = this.retry.get(m.pod);
          if (byContainer === undefined) this.retry.set(m.pod, (byContainer = new Map()));
          byContainer.set(m.container, at);
        }
      } else if ((m.reason === 'Started' || m.reason === 'Killing') && m.container !== undefined) {
        this.retry.get(m.pod)?.delete(m.container);
      }

    } else if (m.kind === 'ProbeResult') {
      this.probes.set(`${m.pod}/${m.container}/${m.probe}`, { time: m.time, result: m.result, message: m.message ?? '' });
    } else if (m.kind === 'PodLifecycle' && m.state === 'Removed') {
      this.retry.delete(m.pod);
      for (const k of [...this.probes.keys()]) if (k.startsWith(`${m.pod}/`)) this.probes.delete(k);
    }
    const line = formatEventLine(m);
    if (line !== null) this.events.push(line);
    this.changed();
  }

  /** The answer of /pods. */
  applyPods(items: V1Pod[]): void {
    const now = this.clock();
    this.pods = items.map((p) => podRow(p, now));
    this.podsAt = now;
    const keys = new Set(this.pods.map((p) => p.key));
    for (const k of [...this.retry.keys()]) if (!keys.has(k)) this.retry.delete(k);
    this.changed();
  }

  /** The answer of /node. */
  applyNode(node: NodeStatus): void {
    this.node = node;
    this.changed();
  }

  setConnection(state: ConnectionState['state'], message: string): void {
    if (this.connection.state === state && this.connection.message === message) return;
    this.connection = { state, message, since: this.connection.state === state ? this.connection.since : this.clock() };
    this.changed();
  }

  /** The sync restarted and numbers its events from 1 again. */
  resetSeq(): void {
    this.lastSeq = 0;
  }

  /** The feed is back after a loss: the events panel says what happened. */
  noteReconnected(after: string): void {
    this.events.push({ seq: 0, tone: 'error', text: `${new Date(this.clock()).toISOString().slice(11, 19)} Dashboard reconnected after: ${after}` });
    this.changed();
  }

  /** Start showing a new log tail (null: none). */
  setLogTarget(target: string | null, note = ''): void {
    this.logTarget = target;
    this.logLines.clear();
    this.logNote = note;
    this.changed();
  }

  appendLog(target: string, line: string): void {
    if (target !== this.logTarget) return;
    this.logLines.push(line);
    this.changed();
  }

  setLogNote(target: string, note: string): void {
    if (target !== this.logTarget) return;
    this.logNote = note;
    this.changed();
  }

  /** The shared clock's tick: countdowns and ages move. */
  tick(): void {
    this.changed();
  }

  /** The one clock of the screen: a tick every second, on the second, until `signal` aborts. */
  startClock(signal: AbortSignal): void {
    let timer: ReturnType<typeof setTimeout>;
    const next = () => {
      timer = setTimeout(() => {
        this.tick();
        next();
      }, 1000 - (this.clock() % 1000));
      timer.unref?.();
    };
    next();
    signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  }

  /** A log line of the sync itself (`klet sync --tui`, where stderr belongs to the screen). */
  noteLog(line: string): void {
    const tone: EventTone = line.startsWith('error:') ? 'error' : line.startsWith('warning:') ? 'warning' : 'normal';
    this.events.push({ seq: 0, tone, text: `${new Date(this.clock()).toISOString().slice(11, 19)} Log     ${line}` });
    this.changed();
  }

  /** Publish now (tests; the non-TTY snapshot), instead of at the next frame. */
  flush(): DashboardSnapshot {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.publish();
    return this.snapshot;
  }

  /** Stops the frame timer (the store can still be flushed by hand). */
  close(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.listeners.clear();
  }

  // --- batching

  private changed(): void {
    this.dirty = true;
    if (this.timer !== null) return;
    const wait = Math.max(0, this.lastPublish + this.frameMs - this.clock());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.publish();
    }, wait);
    this.timer.unref?.();
  }

  private publish(): void {
    if (!this.dirty) return;
    this.dirty = false;
    this.lastPublish = this.clock();
    this.snapshot = this.build();
    for (const l of [...this.listeners]) l();
  }

  private build(): DashboardSnapshot {
    const now = this.clock();
    const second = Math.floor(now / 1000);
    const perSecond = {} as Record<SyncLoopTrigger, number[]>;
    for (const t of TRIGGERS) {
      const b = this.loop.buckets[t];
      const series: number[] = [];
      for (let s = second - SPARK_SECONDS + 1; s <= second; s++) series.push(b.get(s) ?? 0);
      perSecond[t] = series;
    }
    const retryAt = new Map<string, ReadonlyMap<string, number>>();
    for (const [k, v] of this.retry) retryAt.set(k, new Map(v));
    this.version++;
    return {
      now,
      connection: this.connection,
      node: this.node,
      pods: this.pods,
      podsAt: this.podsAt,
      events: this.events.toArray(),
      loop: { perSecond, lastDurationMs: { ...this.loop.last }, total: this.loopTotal },
      retryAt,
      probes: new Map(this.probes),
      dropped: this.dropped,
      lastSeq: this.lastSeq,
      log: { target: this.logTarget, lines: this.logLines.toArray(), note: this.logNote },
      version: this.version,
    };
  }
}
