/**
 * Probe runs are due on a grid of slots (PROBE_SLOT_MS): every worker whose
 * run is due in the same slot is woken by one timer, in one event-loop turn.
 * With 220 probes a second, waking the loop once per run costs more CPU
 * than the runs themselves (each wake-up starts cold); a batch of runs
 * shares it. The kubelet's workers each have their own ticker (goroutine
 * wake-ups are cheap); the periods are the same, the spread over the
 * period (the initial jitter) is kept at the slot's granularity.
 */

/** The grid: 10 slots a second. A probe period (whole seconds) is a multiple of it. */
export const PROBE_SLOT_MS = 100;

interface Slot {
  timer: NodeJS.Timeout;
  waiters: Set<() => void>;
}

export class SlotTimers {
  private readonly slots = new Map<number, Slot>();

  constructor(readonly slotMs = PROBE_SLOT_MS) {}

  /** `t` (ms since the epoch) rounded up to the grid. */
  ceil(t: number): number {
    return Math.ceil(t / this.slotMs) * this.slotMs;
  }

  /** Call `fn` at the slot of `t` (rounded up to the grid). Returns a cancel function. */
  at(t: number, fn: () => void): () => void {
    const at = this.ceil(t);
    let slot = this.slots.get(at);
    if (slot === undefined) {
      const waiters = new Set<() => void>();
      const timer = setTimeout(() => {
        this.slots.delete(at);
        for (const w of waiters) w();
      }, Math.max(0, at - Date.now()));
      slot = { timer, waiters };
      this.slots.set(at, slot);
    }
    const s = slot;
    s.waiters.add(fn);
    return () => {
      s.waiters.delete(fn);
      if (s.waiters.size === 0 && this.slots.get(at) === s) {
        clearTimeout(s.timer);
        this.slots.delete(at);
      }
    };
  }

  /** Timers pending (for tests). */
  get pending(): number {
    return this.slots.size;
  }
}
