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

/** How full the young generation is (0–1). */
function youngFill(): number {
  const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  if (young === undefined) return 1;
  const capacity = young.space_used_size + young.space_available_size;
  return capacity > 0 ? young.space_used_size / capacity : 1;
}

export interface IdleScavengerOptions {
  /** Least time between two collections (key repeat draws up to 10 frames a second). Default 250 ms. */
  minIntervalMs?: number;
  /** Collect only when the young generation is at least this full (0–1). Default 0.25. */
  minFill?: number;
  now?: () => number;
}

export function idleScavenger(opts: IdleScavengerOptions = {}): IdleScavenger {
  const { minIntervalMs = 250, minFill = 0.25, now = () => performance.now() } = opts;
  const gc = exposedGc();
  let pending: ReturnType<typeof setImmediate> | null = null;
  let last = -Infinity;
  let stopped = false;
  return {
    afterFrame() {
      if (gc === undefined || stopped || pending !== null || now() - last < minIntervalMs) return;
      pending = setImmediate(() => {
        pending = null;
        if (youngFill() < minFill) return;
        last = now();
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
