/**
 * Pod workers: one serialized worker per pod UID (the kubelet's
 * pod_workers.go), as a mailbox rather than a goroutine:
 *
 * - never two syncs of the same pod at once; while a sync runs, further
 *   updates coalesce into one pending update (the newest wins), except that
 *   a pending kill is never overwritten by a later sync or update;
 * - a bounded number of running pods resync or update at the same time
 *   across the node (first syncs and terminations are not bounded);
 * - each pod moves SyncPod → TerminatingPod → TerminatedPod. A pod added
 *   or changed again while it terminates (or after it finished) waits for
 *   that termination and its clean-up, in its own worker, and then starts
 *   over with a 'create' sync: a UID is either terminating or syncing, never
 *   both (the kubelet's restartRequested, TerminatedAndRecreatedPod). Any
 *   other update to a terminated pod is ignored until it is forgotten.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { podKey } from '../pod/key.js';

export type UpdateType = 'create' | 'update' | 'sync' | 'kill';
export type WorkerState = 'SyncPod' | 'TerminatingPod' | 'TerminatedPod';

export interface PodUpdateRequest {
  pod: V1Pod;
  type: UpdateType;
  /** For kill: override the pod's grace period. */
  gracePeriodSeconds?: number;
  /** Why a kill was asked for (for events and logs). */
  reason?: string;
}

export interface SyncOutcome {
  /** The pod is done for good (all containers finished under Never/OnFailure): terminate it. */
  terminal?: boolean;
  /** Ask for another sync after this many ms (back-off expiry); otherwise the resync interval applies. */
  requeueAfterMs?: number;
}

export interface PodWorkerHandlers {
  syncPod(pod: V1Pod, type: UpdateType, signal: AbortSignal): Promise<SyncOutcome>;
  syncTerminatingPod(pod: V1Pod, gracePeriodSeconds: number | undefined, signal: AbortSignal): Promise<void>;
  /**
   * Clean up a terminated pod. `restart`: the pod was added or changed again
   * while it was being terminated (or after it finished): remove its old
   * remains whatever its source wants, because the worker starts it over
   * (a 'create' sync) as soon as this step is done.
   */
  syncTerminatedPod(pod: V1Pod, signal: AbortSignal, restart: boolean): Promise<void>;
  /** Schedule the next sync of a pod `afterMs` from now (the work queue). */
  requeue(uid: string, afterMs: number): void;
  onState?(pod: V1Pod, state: WorkerState | 'Forgotten', reason?: string): void;
  onDuration?(type: UpdateType | 'terminating' | 'terminated', ms: number, error: boolean): void;
}

interface Worker {
  uid: string;
  pod: V1Pod;
  state: WorkerState;
  pending: PodUpdateRequest | null;
  running: boolean;
  killReason?: string;
  gracePeriodSeconds?: number;
  /** The pod reached its end by itself (not removed from its source). */
  finished: boolean;
  lastError: string | null;
  lastSyncAt: number;
  /** forget() was called from the worker's own step: forget it once the step is over. */
  forgetWhenDone?: boolean;
  /**
   * The pod was added or changed again while it was being terminated (the
   * kubelet's restartRequested): once terminated, its owner starts it over.
   */
  restartRequested?: boolean;
}

/** A counting semaphore: at most `limit` holders at once, FIFO. */
class Semaphore {
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.active--;
  }
}

export interface PodWorkersOptions {
  handlers: PodWorkerHandlers;
  /** How many running pods may resync or update at once (default 8); first syncs and terminations are not counted. */
  concurrency?: number;
  /** Resync a healthy pod this often (the kubelet's 1 minute). */
  resyncIntervalMs?: number;
  /** Retry a pod whose sync failed after this long (the kubelet's 10 s back-off period). */
  errorBackoffMs?: number;
  signal: AbortSignal;
}

export class PodWorkers {
  private readonly workers = new Map<string, Worker>();
  private readonly sem: Semaphore;
  private readonly resyncMs: number;
  private readonly errorMs: number;
  private readonly idle = new Set<() => void>();

  constructor(private readonly opts: PodWorkersOptions) {
    this.sem = new Semaphore(opts.concurrency ?? 8);
    this.resyncMs = opts.resyncIntervalMs ?? 60_000;
    this.errorMs = opts.errorBackoffMs ?? 10_000;
  }

  /** Deliver an update to the pod's worker (creating it on first sight). */
  updatePod(req: PodUpdateRequest): void {
    const uid = req.pod.metadata?.uid ?? '';
    if (uid === '') return;
    let w = this.workers.get(uid);
    if (!w) {
      // A kill for a pod never synced (an orphan housekeeping found) still gets a worker to terminate it.
      w = { uid, pod: req.pod, state: 'SyncPod', pending: null, running: false, finished: false, lastError: null, lastSyncAt: 0 };
      this.workers.set(uid, w);
      this.opts.handlers.onState?.(req.pod, 'SyncPod');
    }
    if (w.state === 'TerminatedPod') {
      if (req.type === 'create' || req.type === 'update') {
        // Put back (or changed): start over once the clean-up is done — after
        // the running step, or now (a clean-up step, then 'create') when idle.
        w.restartRequested = true;
        w.forgetWhenDone = false;
        if (req.pod.spec) w.pod = req.pod;
        if (!w.running) {
          w.pending = { pod: w.pod, type: 'create' };
          void this.drive(w);
        }
      } else if (req.type === 'kill') {
        w.restartRequested = false;
      }
      return;
    }
    if (req.type === 'create' || req.type === 'update') {
      if (w.state === 'TerminatingPod') w.restartRequested = true;
    }
    if (req.type === 'kill') {
      w.restartRequested = false;
      if (w.state === 'SyncPod') {
        w.state = 'TerminatingPod';
        w.killReason = req.reason;
        w.gracePeriodSeconds = req.gracePeriodSeconds;
        this.opts.handlers.onState?.(w.pod, 'TerminatingPod', req.reason);
      } else if (req.gracePeriodSeconds !== undefined) {
        // A second kill may only shorten the grace period, as in the kubelet.
        w.gracePeriodSeconds = Math.min(w.gracePeriodSeconds ?? Infinity, req.gracePeriodSeconds);
      }
      w.pending = req;
    } else if (w.pending?.type === 'kill' || w.state !== 'SyncPod' || (req.type === 'sync' && w.pending !== null)) {
      // Never overwrite a pending kill; a terminating pod only takes the newer
      // spec; a sync never replaces a pending create or update (it implies one).
      if (req.pod.spec) w.pod = req.pod;
    } else {
      w.pending = req;
      if (req.pod.spec) w.pod = req.pod;
    }
    if (!w.running) void this.drive(w);
  }

  private async drive(w: Worker): Promise<void> {
    w.running = true;
    try {
      while (w.pending !== null && !this.opts.signal.aborted) {
        const req = w.pending;
        w.pending = null;
        // The cap holds back resyncs and updates of running pods. A pod's
        // first sync ('create') and its termination are not held: new pods
        // start at once and a pod waiting out its grace period never keeps
        // the others waiting (the kubelet runs every pod worker at once).
        const capped = w.state === 'SyncPod' && req.type !== 'create';
        if (capped) await this.sem.acquire();
        try {
          await this.step(w, req);
        } finally {
          if (capped) this.sem.release();
        }
      }
    } finally {
      w.running = false;
      if (w.forgetWhenDone === true && w.restartRequested !== true) this.forget(w.uid);
      if (this.idle.size > 0 && this.allIdle()) for (const fn of [...this.idle]) fn();
    }
  }

  private async step(w: Worker, req: PodUpdateRequest): Promise<void> {
    const h = this.opts.handlers;
    const signal = this.opts.signal;
    const t0 = performance.now();
    if (w.state === 'SyncPod') {
      let error = false;
      try {
        const out = await h.syncPod(w.pod, req.type, signal);
        w.lastError = null;
        w.lastSyncAt = Date.now();
        if (out.terminal) {
          w.finished = true;
          w.state = 'TerminatingPod';
          h.onState?.(w.pod, 'TerminatingPod', 'pod finished');
          w.pending ??= { pod: w.pod, type: 'kill', reason: 'pod finished' };
        } else {
          h.requeue(w.uid, Math.min(out.requeueAfterMs ?? this.resyncMs, this.resyncMs));
        }
      } catch (err) {
        error = true;
        w.lastError = errorMessage(err);
        log.warn(`sync of pod ${podKey(w.pod)} failed: ${w.lastError}`);
        h.requeue(w.uid, this.errorMs);
      }
      h.onDuration?.(req.type, performance.now() - t0, error);
      return;
    }
    if (w.state === 'TerminatingPod') {
      try {
        await h.syncTerminatingPod(w.pod, w.gracePeriodSeconds, signal);
        w.state = 'TerminatedPod';
        h.onState?.(w.pod, 'TerminatedPod', w.killReason);
        h.onDuration?.('terminating', performance.now() - t0, false);
      } catch (err) {
        w.lastError = errorMessage(err);
        log.warn(`terminating pod ${podKey(w.pod)} failed: ${w.lastError}; will retry`);
        h.onDuration?.('terminating', performance.now() - t0, true);
        w.pending ??= { pod: w.pod, type: 'kill', reason: w.killReason };
        await new Promise((r) => setTimeout(r, Math.min(this.errorMs, 2000)));
        return;
      }
      // Fall through to cleanup of the terminated pod.
    } else if (w.restartRequested !== true) {
      return; // terminated and cleaned up already: nothing to do until it is wanted again
    }
    // TerminatedPod: its clean-up (after termination, or again before a restart).
    const t1 = performance.now();
    try {
      await h.syncTerminatedPod(w.pod, signal, w.restartRequested === true);
      h.onDuration?.('terminated', performance.now() - t1, false);
    } catch (err) {
      w.lastError = errorMessage(err);
      log.warn(`cleaning up pod ${podKey(w.pod)} failed: ${w.lastError}; housekeeping will retry`);
      h.onDuration?.('terminated', performance.now() - t1, true);
      return;
    }
    if (w.restartRequested === true && !signal.aborted) this.restart(w);
  }

  /** A terminated and cleaned-up pod that is wanted again starts over, in the same worker. */
  private restart(w: Worker): void {
    w.state = 'SyncPod';
    w.restartRequested = false;
    w.forgetWhenDone = false;
    w.finished = false;
    w.killReason = undefined;
    w.gracePeriodSeconds = undefined;
    w.lastError = null;
    w.lastSyncAt = 0;
    this.opts.handlers.onState?.(w.pod, 'SyncPod', 'added again');
    w.pending = { pod: w.pod, type: 'create' };
  }

  /**
   * Forget a terminated pod (after its clean-up), so a re-add starts fresh.
   * Called from the pod's own syncTerminatedPod, it takes effect when that
   * step is over.
   */
  forget(uid: string): void {
    const w = this.workers.get(uid);
    if (!w || w.state !== 'TerminatedPod') return;
    if (w.running || w.pending !== null) {
      w.forgetWhenDone = true;
      return;
    }
    this.workers.delete(uid);
    this.opts.handlers.onState?.(w.pod, 'Forgotten');
  }

  state(uid: string): WorkerState | undefined {
    return this.workers.get(uid)?.state;
  }

  /** Was the pod added or changed again while it was being terminated? */
  restartRequested(uid: string): boolean {
    return this.workers.get(uid)?.restartRequested ?? false;
  }

  /** Did the pod finish by itself (terminal phase) rather than being removed? */
  finished(uid: string): boolean {
    return this.workers.get(uid)?.finished ?? false;
  }

  uids(): string[] {
    return [...this.workers.keys()];
  }

  pod(uid: string): V1Pod | undefined {
    return this.workers.get(uid)?.pod;
  }

  counts(): Record<WorkerState, number> {
    const c: Record<WorkerState, number> = { SyncPod: 0, TerminatingPod: 0, TerminatedPod: 0 };
    for (const w of this.workers.values()) c[w.state]++;
    return c;
  }

  /** The pod-worker queue: workers with an update waiting, and workers running a sync now. */
  queueDepth(): { pending: number; running: number } {
    let pending = 0;
    let running = 0;
    for (const w of this.workers.values()) {
      if (w.pending !== null) pending++;
      if (w.running) running++;
    }
    return { pending, running };
  }

  isBusy(uid: string): boolean {
    const w = this.workers.get(uid);
    return w !== undefined && (w.running || w.pending !== null);
  }

  private allIdle(): boolean {
    for (const w of this.workers.values()) if (w.running || w.pending !== null) return false;
    return true;
  }

  /** Resolves when no worker is running or has pending work (tests, shutdown). */
  whenIdle(): Promise<void> {
    if (this.allIdle()) return Promise.resolve();
    return new Promise((resolve) => {
      const fn = () => {
        this.idle.delete(fn);
        resolve();
      };
      this.idle.add(fn);
    });
  }
}

