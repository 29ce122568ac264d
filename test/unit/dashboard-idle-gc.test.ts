/**
 * The dashboard's idle scavenger (src/ui/dashboard/idle-gc.ts): after a
 * frame, one minor GC runs once the frame's turn is over — not inside it —
 * coalesced and rate-limited, none when the young generation is nearly
 * empty (V8 just scavenged), and none after stop(). Observed through V8's
 * own GC notifications (perf_hooks 'gc' entries, forced flag), with no
 * --expose-gc on the test process. And a full GC after a frame once the
 * old generation has grown by a quarter since the last one, at most once
 * per interval.
 */
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { idleScavenger, oldGrown, type IdleScavenger } from '../../src/ui/dashboard/idle-gc.js';

interface GcSeen {
  kind: number;
  forced: boolean;
  startMs: number;
}

/** Forced GCs seen while `fn` runs and for a moment after (entries arrive asynchronously). */
async function gcsDuring(fn: () => Promise<void> | void): Promise<GcSeen[]> {
  const seen: GcSeen[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const d = (e as { detail?: { kind?: number; flags?: number } }).detail;
      seen.push({ startMs: e.startTime, kind: d?.kind ?? 0, forced: ((d?.flags ?? 0) & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0 });
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  try {
    await fn();
    await new Promise((r) => setTimeout(r, 100));
  } finally {
    obs.disconnect();
  }
  return seen.filter((g) => g.forced);
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));
function youngFill(): number {
  const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!;
  return young.space_used_size / (young.space_used_size + young.space_available_size);
}
/** What a frame leaves behind: short-lived objects, until the young generation is half full. Returns how many. */
function frameGarbage(): number {
  let made = 0;
  while (youngFill() < 0.5 && made < 50_000_000) {
    const cells = [];
    for (let i = 0; i < 10_000; i++) cells.push({ type: 'char', value: ' ', styles: [] as string[] });
    made += cells.length;
  }
  return made;
}

function oldUsed(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;
}
/** Objects that stay alive, moved to the old generation (two scavenges survived), until it holds `bytes` more. */
function promote(bytes: number, keep: unknown[]): void {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as (o: { type: 'minor' | 'major' }) => void;
  const target = oldUsed() + bytes;
  while (oldUsed() < target) {
    for (let i = 0; i < 20_000; i++) keep.push({ ns: 'default', name: `pod-${keep.length}`, ready: i % 2 === 0 });
    gc({ type: 'minor' });
    gc({ type: 'minor' });
  }
}

let scavenger: IdleScavenger | undefined;
afterEach(() => scavenger?.stop());

describe('idleScavenger', () => {
  it('runs one minor GC after the frame, once the current turn is over', async () => {
    scavenger = idleScavenger({ minIntervalMs: 0 });
    let turnEnd = 0;
    const gcs = await gcsDuring(async () => {
      frameGarbage();
      scavenger!.afterFrame();
      scavenger!.afterFrame(); // two frames in one turn: one collection
      turnEnd = performance.now();
      await nextTurn();
    });
    expect(gcs.map(({ kind, forced }) => ({ kind, forced }))).toEqual([{ kind: constants.NODE_PERFORMANCE_GC_MINOR, forced: true }]);
    expect(gcs[0]!.startMs).toBeGreaterThanOrEqual(turnEnd);
  });

  it('collects at most once per interval, however many frames', async () => {
    let t = 1000;
    scavenger = idleScavenger({ minIntervalMs: 250, minFill: 0, now: () => t });
    const gcs = await gcsDuring(async () => {
      scavenger!.afterFrame();
      await nextTurn();
      t += 100; // a key's frame 100 ms later: too soon
      scavenger!.afterFrame();
      await nextTurn();
      t += 200; // 300 ms after the first
      scavenger!.afterFrame();
      await nextTurn();
    });
    expect(gcs).toHaveLength(2);
  });

  it('leaves a young generation alone that V8 has just emptied', async () => {
    scavenger = idleScavenger({ minIntervalMs: 0, minFill: 0.25 });
    const gcs = await gcsDuring(async () => {
      frameGarbage();
      scavenger!.afterFrame(); // a quarter full or more: collected
      await nextTurn();
      scavenger!.afterFrame(); // just collected: nearly empty, left alone
      await nextTurn();
    });
    expect(gcs).toHaveLength(1);
  });

  it('runs nothing once stopped, not even a collection already asked for', async () => {
    scavenger = idleScavenger({ minIntervalMs: 0, minFill: 0 });
    const gcs = await gcsDuring(async () => {
      scavenger!.afterFrame();
      scavenger!.stop();
      await nextTurn();
      scavenger!.afterFrame();
      await nextTurn();
    });
    expect(gcs).toEqual([]);
  });

  it('runs a full GC after a frame once the old generation has grown by a quarter, at most once per interval', async () => {
    let t = 0;
    scavenger = idleScavenger({ minIntervalMs: 0, minFill: 1, majorIntervalMs: 30_000, majorMinBytes: 1 << 20, now: () => t });
    const keep: unknown[] = [];
    const majors = async (fn: () => Promise<void>) => (await gcsDuring(fn)).filter((g) => g.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
    promote(32 << 20, keep); // an old generation large against promote()'s steps (~1 MB)
    // The first frame: what the old generation holds now is the baseline.
    expect(await majors(async () => (scavenger!.afterFrame(), await nextTurn()))).toEqual([]);
    // Grown by less than a quarter: left to V8.
    t = 60_000;
    promote(Math.max(1 << 20, oldUsed() * 0.1), keep);
    expect(await majors(async () => (scavenger!.afterFrame(), await nextTurn()))).toEqual([]);
    // Grown by more than a quarter: collected after the frame.
    promote(oldUsed() * 0.4, keep);
    expect(await majors(async () => (scavenger!.afterFrame(), await nextTurn()))).toHaveLength(1);
    // Grown again at once: not before the interval has passed.
    t += 10_000;
    promote(oldUsed() * 0.4, keep);
    expect(await majors(async () => (scavenger!.afterFrame(), await nextTurn()))).toEqual([]);
    t += 20_000;
    expect(await majors(async () => (scavenger!.afterFrame(), await nextTurn()))).toHaveLength(1);
    expect(keep.length).toBeGreaterThan(0);
  });

  it('measures growth from what the last full collection left, by a fraction and at least a floor', () => {
    expect(oldGrown(24e6, 20e6, 0.25, 4e6)).toBe(false); // +20 %
    expect(oldGrown(25e6, 20e6, 0.25, 4e6)).toBe(true); // +25 %
    expect(oldGrown(6e6, 4e6, 0.25, 4e6)).toBe(false); // +50 % but only 2 MB
    expect(oldGrown(8e6, 4e6, 0.25, 4e6)).toBe(true);
  });
});
