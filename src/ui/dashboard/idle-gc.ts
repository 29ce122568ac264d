/**
 * The young generation's collection moved out of the frames: a minor GC
 * (scavenge) right after a frame has been written, while the screen is
 * idle, instead of one that V8 starts in the middle of the next frame.
 *
 * Why: ink rebuilds its whole character grid for every frame (megabytes of
 * short-lived cells and strings at 120x40), so the frame is where the young
 * generation fills up, and V8 scavenges where it fills. bench/dashboard.js
 * found a scavenge inside 77 of 189 frames (2–10 ms each, with V8's
 * helper threads beside it). A scavenge costs in proportion to what
 * survives, not to the garbage: right after a frame, the frame's garbage
 * is dead and the survivors are few, so the forced one is cheap, and the
 * next frame starts with an empty young generation that the ~1 s of feed
 * between frames does not fill. Only when the young generation is at least
 * a quarter full: V8 often scavenges by itself just after a frame (the
 * frame left it nearly full), and a second scavenge at once would promote
 * everything alive to the old generation (two scavenges survived), which
 * only makes the next major GC come sooner.
 *
 * The old generation is kept near its live size the same way: when it has
 * grown by a quarter (and 4 MB) over what the last full collection left,
 * and the last one is 30 s old or more, a full GC runs after a frame. V8
 * lets the old generation grow to about twice its live size before it
 * collects it by itself: with the dashboard's ~20 MB of live old objects
 * (pod rows promoted by the 1 s /pods reads), that was a saw-tooth of ±10 %
 * of the process's RSS over minutes. A full GC of that heap took 20–40 ms
 * here (bench/dashboard.js), between frames, at most twice a minute.
 *
 * V8 exposes `gc()` only with --expose-gc; turned on here at run time and
 * taken from a fresh context, as Jest does for --logHeapUsage (works in
 * `klet sync --tui` too, whose process was started with the sync's flags).
 */
import v8 from 'node:v8';
import vm from 'node:vm';

type GcFunction = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void;

export interface IdleScavenger {
  /** Call after every frame: a minor GC follows once the current turn is done (at most one per `minIntervalMs`, and only if the young generation is at least `minFill` full). */
  afterFrame(): void;
  /** No more collections (pending one cancelled). */
  stop(): void;
}

/** The V8 gc() function, or undefined when this V8 does not give it out. */
function exposedGc(): GcFunction | undefined {
  const existing = (globalThis as { gc?: GcFunction }).gc;
  if (typeof existing === 'function') return existing;
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    return typeof gc === 'function' ? (gc as GcFunction) : undefined;
  } catch {
    return undefined;
  }
}

interface HeapNow {
  /** How full the young generation is (0–1). */
  youngFill: number;
  /** Bytes used in the old generation. */
  oldUsed: number;
}

function heapNow(): HeapNow {
  const spaces = v8.getHeapSpaceStatistics();
  const young = spaces.find((s) => s.space_name === 'new_space');
  const old = spaces.find((s) => s.space_name === 'old_space');
  const capacity = young === undefined ? 0 : young.space_used_size + young.space_available_size;
  return { youngFill: young !== undefined && capacity > 0 ? young.space_used_size / capacity : 1, oldUsed: old?.space_used_size ?? 0 };
}

/** Whether the old generation has grown enough since the last full GC (which left `baseline` bytes) to collect it now. */
export function oldGrown(oldUsed: number, baseline: number, growth: number, minBytes: number): boolean {
  return oldUsed - baseline >= Math.max(minBytes, baseline * growth);
}

export interface IdleScavengerOptions {
  /** Least time between two collections (key repeat draws up to 10 frames a second). Default 250 ms. */
  minIntervalMs?: number;
  /** Collect only when the young generation is at least this full (0–1). Default 0.25. */
  minFill?: number;
  /** Least time between two full collections. Default 30 s. */
  majorIntervalMs?: number;
  /** Full collection when the old generation has grown by this fraction of what the last one left (and by `majorMinBytes`). Default 0.25. */
  majorGrowth?: number;
  /** Default 4 MiB. */
  majorMinBytes?: number;
  now?: () => number;
}

export function idleScavenger(opts: IdleScavengerOptions = {}): IdleScavenger {
  const { minIntervalMs = 250, minFill = 0.25, majorIntervalMs = 30_000, majorGrowth = 0.25, majorMinBytes = 4 << 20, now = () => performance.now() } = opts;
  const gc = exposedGc();
  let pending: ReturnType<typeof setImmediate> | null = null;
  let last = -Infinity;
  let lastMajor = now();
  // What the old generation held after the last full GC (ours or V8's: the
  // lowest value seen since ours); the first frames set it.
  let baseline = Infinity;
  let stopped = false;
  return {
    afterFrame() {
      if (gc === undefined || stopped || pending !== null || now() - last < minIntervalMs) return;
      pending = setImmediate(() => {
        pending = null;
        const heap = heapNow();
        baseline = Math.min(baseline, heap.oldUsed);
        const t = now();
        if (t - lastMajor >= majorIntervalMs && oldGrown(heap.oldUsed, baseline, majorGrowth, majorMinBytes)) {
          last = lastMajor = t;
          gc({ type: 'major' });
          baseline = heapNow().oldUsed;
          return;
        }
        if (heap.youngFill < minFill) return;
        last = t;
        gc({ type: 'minor' });
      });
      pending.unref();
    },
    stop() {
      stopped = true;
      if (pending !== null) clearImmediate(pending);
      pending = null;
    },
  };
}
