/**
 * The kubelet's generic, relisting PLEG (pkg/kubelet/pleg/generic.go).
 *
 * Every period it lists everything the runtime has — exactly one
 * ListPodSandbox and one ListContainers, never a per-container status call —
 * groups it by the io.kubernetes.pod.uid label, diffs it against the
 * previous relist and turns each change into pod lifecycle events:
 *
 *   new state     event(s)
 *   running       ContainerStarted
 *   exited        ContainerDied
 *   unknown       ContainerChanged   (CRI "created" counts as unknown)
 *   non-existent  ContainerRemoved, preceded by ContainerDied unless the
 *                 last relist already saw it exited
 *
 * Sandboxes go through the same machine as containers (READY = running,
 * NOTREADY = exited), with the sandbox id as containerId.
 *
 * Output: `events`, a Channel<PlegEvent> with a single consumer (the sync
 * loop), fed after each relist in order. Like the kubelet's channel it is
 * bounded (channelCapacity, 1000): when the consumer falls behind, new
 * events are dropped and counted (discardedEvents) rather than piling up;
 * the periodic sync is the safety net. ContainerChanged is left off the
 * channel, as the kubelet filters it ("not reliable and no other component
 * uses it"); relist() still returns it.
 *
 * Failures: a runtime error makes the relist record lastRelist.error, emit
 * nothing and keep the previous snapshot, so the next relist diffs against
 * the last good one and reports what changed meanwhile. Nothing escapes the
 * timer. A hung runtime holds a relist for at most the client's CRI
 * deadline; stop() cancels the calls in flight instead of waiting for it.
 *
 * Relists never overlap: the loop waits relistPeriodMs after a relist ends
 * before it starts the next (the kubelet's wait.Until), and relist() calls
 * made meanwhile queue behind the running one.
 *
 * Relisting is the complete path: it needs nothing from the runtime beyond
 * the two lists, which every CRI runtime serves. See evented.ts for why the
 * CRI event stream is only detected.
 *
 * Like the kubelet's, this PLEG assumes a container is not created, exited
 * and removed within one relist period; if it is, its events are missed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CriClient } from '../cri/client.js';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { Channel } from '../util/channel.js';
import { formatDuration } from '../util/duration.js';
import { buildPodRecords, diffPodRecords, keepUnchanged } from './diff.js';
import type { LastRelist, PlegEvent, PlegHealth, PodRecordSnapshot } from './types.js';

/** What the PLEG needs of a CRI client: the two lists. A CriClient is one. */
export type PlegRuntime = Pick<CriClient, 'listPodSandbox' | 'listContainers'>;

/** The kubelet's relist period (genericPlegRelistPeriod). */
export const DEFAULT_RELIST_PERIOD_MS = 1000;
/** The kubelet's health threshold (genericPlegRelistThreshold). */
export const DEFAULT_RELIST_THRESHOLD_MS = 3 * 60 * 1000;
/** The kubelet's plegChannelCapacity. */
export const DEFAULT_CHANNEL_CAPACITY = 1000;

export interface GenericPLEGOptions {
  /** Usually a CriClient; only listPodSandbox and listContainers are called. */
  cri: PlegRuntime;
  /** Pause between the end of one relist and the start of the next. Default 1s. */
  relistPeriodMs?: number;
  /** healthy() turns false when the last successful relist started longer ago than this. Default 3m. */
  relistThresholdMs?: number;
  /** The clock (ms since the epoch): event times, lastRelist, health. Default Date.now. */
  now?: () => number;
  /** Events `events` holds before further ones are discarded. Default 1000. */
  channelCapacity?: number;
  /** Deliver ContainerChanged on `events` too (the kubelet does not). Default false. */
  emitContainerChanged?: boolean;
  /**
   * Only sandboxes and containers carrying these labels are relisted (klet's
   * owner label): what another klet or the kubelet runs is never seen.
   */
  labelSelector?: Record<string, string>;
  /** Where each relist's duration and start go (kubelet_pleg_relist_duration_seconds, _interval_seconds). */
  metrics?: PlegMetrics;
}

/** What the PLEG records about its relists: KletMetrics, or a fake in tests. */
export interface PlegMetrics {
  /** One relist (failed ones too: `ok` false) took `durationMs`; it started at `startedAt` (performance.now()). */
  observePlegRelist(durationMs: number, startedAt: number, ok: boolean): void;
}

const EMPTY_RECORDS: ReadonlyMap<string, PodRecordSnapshot> = new Map();

export class GenericPLEG {
  /** Pod lifecycle events, in the order relists generated them. One consumer. */
  readonly events = new Channel<PlegEvent>();
  readonly relistPeriodMs: number;
  readonly relistThresholdMs: number;
  readonly channelCapacity: number;

  private readonly cri: PlegRuntime;
  private readonly now: () => number;
  private readonly emitContainerChanged: boolean;
  private readonly metrics: PlegMetrics | undefined;
  /** The list request: unfiltered, or filtered by the owner's labels. */
  private readonly listRequest: { filter?: { labelSelector: Record<string, string> } };
  /** The last successful relist's records; replaced, never mutated, so callers may keep it. */
  private records: ReadonlyMap<string, PodRecordSnapshot> = EMPTY_RECORDS;
  private last: LastRelist = { at: 0, durationMs: 0, error: null };
  /** Start of the last successful relist (the kubelet's relistTime). */
  private lastSuccessAt: number | null = null;
  /** Serialises relists: each one chains onto the previous. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Aborted by stop(): cancels the CRI calls of relists started before it. */
  private lifecycle = new AbortController();
  private loop: Promise<void> | null = null;
  private discarded = 0;
  /** A requestRelist() relist that is queued and has not started yet. */
  private triggered: Promise<void> | null = null;

  constructor(opts: GenericPLEGOptions) {
    this.cri = opts.cri;
    this.relistPeriodMs = opts.relistPeriodMs ?? DEFAULT_RELIST_PERIOD_MS;
    this.relistThresholdMs = opts.relistThresholdMs ?? DEFAULT_RELIST_THRESHOLD_MS;
    this.channelCapacity = opts.channelCapacity ?? DEFAULT_CHANNEL_CAPACITY;
    this.now = opts.now ?? Date.now;
    this.emitContainerChanged = opts.emitContainerChanged ?? false;
    this.metrics = opts.metrics;
    const sel = opts.labelSelector ?? {};
    this.listRequest = Object.keys(sel).length > 0 ? { filter: { labelSelector: { ...sel } } } : {};
  }

  /** Starts relisting: one relist now, then one every period after the previous ends. No-op when running. */
  start(): void {
    if (this.loop !== null) return;
    this.loop = this.run(this.lifecycle.signal);
  }

  /**
   * Stops the loop and cancels the CRI calls of relists in flight (a hung
   * runtime does not hold it up); resolves once they have settled. start()
   * may be called again afterwards; so may relist().
   */
  async stop(): Promise<void> {
    const loop = this.loop;
    const pending = this.queue;
    this.loop = null;
    const lifecycle = this.lifecycle;
    this.lifecycle = new AbortController();
    lifecycle.abort(new Error('PLEG stopped'));
    await loop;
    await pending;
  }

  get running(): boolean {
    return this.loop !== null;
  }

  /**
   * One relist: list, diff, update the snapshot, feed `events`. Resolves with
   * every event it generated (ContainerChanged included); never rejects —
   * a failure resolves [] and is recorded in lastRelist. Waits for a relist
   * in progress to end first.
   */
  relist(): Promise<PlegEvent[]> {
    return this.enqueue(this.lifecycle.signal);
  }

  /**
   * Relist soon, outside the period: a runtime event (a container exited)
   * says the snapshot is stale. Requests made before a queued relist starts
   * share it (a burst of exits costs one relist, plus at most one after the
   * one in progress). Resolves when that relist is over; at once when the
   * PLEG is not running.
   */
  requestRelist(): Promise<void> {
    if (this.loop === null) return Promise.resolve();
    if (this.triggered !== null) return this.triggered;
    const signal = this.lifecycle.signal;
    void this.queue.then(() => {
      this.triggered = null;
    });
    const run = this.enqueue(signal).then(() => undefined);
    this.triggered = run;
    return run;
  }

  /** The last relist, successful or not. */
  get lastRelist(): LastRelist {
    return this.last;
  }

  /** Events dropped because `events` was full. */
  get discardedEvents(): number {
    return this.discarded;
  }

  /**
   * Pod UID → what the runtime had for it at the last successful relist.
   * The map and its records are never modified afterwards: a relist swaps
   * in a new map.
   */
  podRecords(): ReadonlyMap<string, PodRecordSnapshot> {
    return this.records;
  }

  /** The kubelet's PLEG health check. */
  healthy(): PlegHealth {
    if (this.lastSuccessAt === null) {
      return { ok: false, message: `pleg has yet to be successful${this.lastErrorSuffix()}` };
    }
    const elapsed = Math.max(0, this.now() - this.lastSuccessAt);
    const seen = `pleg was last seen active ${formatDuration(elapsed)} ago`;
    if (elapsed > this.relistThresholdMs) {
      return { ok: false, message: `${seen}; threshold is ${formatDuration(this.relistThresholdMs)}${this.lastErrorSuffix()}` };
    }
    return { ok: true, message: seen };
  }

  private lastErrorSuffix(): string {
    return this.last.error === null ? '' : `; last relist failed: ${this.last.error}`;
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.enqueue(signal);
      } catch (err) {
        // Not a runtime failure (those resolve []): a bug. Keep relisting.
        log.error(`PLEG: relist crashed: ${errorMessage(err)}`);
      }
      if (signal.aborted) break;
      try {
        await sleep(this.relistPeriodMs, undefined, { signal });
      } catch {
        break; // aborted by stop()
      }
    }
  }

  /**
   * Queues a relist behind the one in progress. `signal` is taken when the
   * relist is asked for, so a stop() in between cancels it.
   */
  private enqueue(signal: AbortSignal): Promise<PlegEvent[]> {
    const run = this.queue.then(() => this.relistOnce(signal));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async relistOnce(stopSignal: AbortSignal): Promise<PlegEvent[]> {
    if (stopSignal.aborted) return [];
    const at = this.now();
    const t0 = performance.now();
    const observe = (ok: boolean): void => this.metrics?.observePlegRelist(performance.now() - t0, t0, ok);
    // One controller for both calls: stop() cancels them, and so does the
    // failure of either (no stray call left running into the next relist).
    const calls = new AbortController();
    const onStop = (): void => calls.abort(stopSignal.reason);
    stopSignal.addEventListener('abort', onStop, { once: true });
    const fail = (err: unknown): never => {
      calls.abort(err);
      throw err;
    };
    let next: Map<string, PodRecordSnapshot>;
    try {
      const opts = { signal: calls.signal };
      const [sandboxes, containers] = await Promise.all([
        this.cri.listPodSandbox(this.listRequest, opts).catch(fail),
        this.cri.listContainers(this.listRequest, opts).catch(fail),
      ]);
      next = buildPodRecords(sandboxes.items, containers.containers);
    } catch (err) {
      if (stopSignal.aborted) return []; // cancelled by stop(): not a relist
      observe(false);
      const error = errorMessage(err);
      if (this.last.error !== error) log.warn(`PLEG: relist failed (retrying every ${formatDuration(this.relistPeriodMs)}): ${error}`);
      this.last = { at, durationMs: this.now() - at, error };
      return [];
    } finally {
      stopSignal.removeEventListener('abort', onStop);
    }

    keepUnchanged(this.records, next);
    const events = diffPodRecords(this.records, next, at);
    if (this.last.error !== null) log.info('PLEG: relisting works again');
    this.records = next;
    this.lastSuccessAt = at;
    this.last = { at, durationMs: this.now() - at, error: null };
    observe(true);
    this.deliver(events);
    return events;
  }

  private deliver(events: readonly PlegEvent[]): void {
    let dropped = 0;
    for (const e of events) {
      if (e.type === 'ContainerChanged' && !this.emitContainerChanged) continue;
      if (this.events.size >= this.channelCapacity) {
        dropped++;
        continue;
      }
      log.debug(`PLEG: ${e.type} pod ${e.podUid} container ${e.containerId}`);
      this.events.push(e);
    }
    if (dropped > 0) {
      this.discarded += dropped;
      log.error(`PLEG: event channel is full (${this.channelCapacity}); discarded ${dropped} event(s) of this relist`);
    }
  }
}
