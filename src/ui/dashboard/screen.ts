/**
 * The interactive dashboard: ink on the alternate screen, ≤ 10 frames/s,
 * keys read raw (q and Ctrl-C quit through the app, so the terminal is
 * always restored by ink's own unmount). Lazy-imported by `klet dashboard`
 * and `klet sync --tui` only.
 */
import type { ScreenArgs } from '../../lib/services/dashboard.js';

/** One frame drawn after the store changed (the benchmark's figures). */
export interface FrameTiming {
  /** From the store publishing a new snapshot to ink having written the frame to the terminal: React, layout, ink's output and the write. */
  latencyMs: number;
  /** ink's own part of it (its onRender renderTime: the screen's text from the laid-out tree). */
  inkRenderMs: number;
  /** Process CPU time (user + system, all threads: V8's GC and compiler helpers too) spent over latencyMs: the frame's work, without the time spent waiting for a core on a loaded machine. */
  cpuMs: number;
  /** The main thread's CPU time over latencyMs (process.threadCpuUsage): the frame's own work, without background threads running beside it. */
  mainCpuMs: number;
  /** When the store published the snapshot (performance.now()). */
  startMs: number;
}

/** A GC pause (perf_hooks 'gc' entry): when, how long, which kind and flags (NODE_PERFORMANCE_GC_*; flag 4: forced, the idle scavenger's). */
export interface GcPause {
  startMs: number;
  durationMs: number;
  kind: number;
  flags: number;
}

export interface ScreenOptions {
  /** Colour on (false with NO_COLOR). */
  color: boolean;
  /** Every frame that follows a change of the store (the benchmark). */
  onFrame?: (frame: FrameTiming) => void;
  /** bench/dashboard.js: every frame's timing is written to this file as JSON on exit. */
  frameStatsFile?: string;
}

/** runScreen, with every frame's timing written to `file` when the screen closes. */
async function runScreenRecordingFrames(args: ScreenArgs, opts: ScreenOptions & { frameStatsFile: string }): Promise<void> {
  const stats = { latency: [] as number[], inkRender: [] as number[], cpu: [] as number[], mainCpu: [] as number[], start: [] as number[], gc: [] as GcPause[], oldSpaceMb: [] as number[] };
  const v8 = await import('node:v8');
  // GC pauses, to tell which slow frames a collection landed in.
  const { PerformanceObserver } = await import('node:perf_hooks');
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (stats.gc.length >= 1_000_000) return;
      const detail = (e as { detail?: { kind?: number; flags?: number } }).detail;
      stats.gc.push({ startMs: e.startTime, durationMs: e.duration, kind: detail?.kind ?? 0, flags: detail?.flags ?? 0 });
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  try {
    await runScreen(args, {
      color: opts.color,
      onFrame: (f) => {
        if (stats.latency.length >= 1_000_000) return;
        stats.latency.push(f.latencyMs);
        stats.inkRender.push(f.inkRenderMs);
        stats.cpu.push(f.cpuMs);
        stats.mainCpu.push(f.mainCpuMs);
        stats.start.push(f.startMs);
        const old = v8.getHeapSpaceStatistics().find((sp) => sp.space_name === 'old_space');
        stats.oldSpaceMb.push(Math.round((old?.space_used_size ?? 0) / 1e5) / 10);
        opts.onFrame?.(f);
      },
    });
  } finally {
    gcObserver.disconnect();
    (await import('node:fs')).writeFileSync(opts.frameStatsFile, JSON.stringify(stats));
  }
}

export async function runScreen(args: ScreenArgs, opts: ScreenOptions): Promise<void> {
  if (opts.frameStatsFile !== undefined) return runScreenRecordingFrames(args, { ...opts, frameStatsFile: opts.frameStatsFile });
  // React's production build: its development build checks and records every
  // render (several times the CPU and a growing heap). React and ink's
  // reconciler each read NODE_ENV when first loaded — they must agree — so
  // nothing here imports them statically (no JSX in this file).
  process.env.NODE_ENV ??= 'production';
  const [{ render }, { createElement }, { DashboardApp }, { idleScavenger }, { warmUp }] = await Promise.all([
    import('ink'),
    import('react'),
    import('./app.js'),
    import('./idle-gc.js'),
    import('./warm-up.js'),
  ]);
  // After the first frame with pods: the same screen a few times off screen (warm-up.ts).
  let warmed = false;
  const warmUpOnce = () => {
    if (warmed || args.store.getSnapshot().pods.length === 0) return;
    warmed = true;
    setTimeout(() => {
      void warmUp(
        { render, createElement, DashboardApp },
        { store: args.store, color: opts.color, columns: process.stdout.columns || 80, rows: process.stdout.rows || 24, signal: args.signal },
      );
    }, 0).unref();
  };
  // The young generation is collected between frames, not in them (idle-gc.ts).
  const scavenger = idleScavenger();
  // Frame timing: subscribed before ink's component, this listener hears of
  // a new snapshot first; ink calls onRender after it has written the frame
  // (its first frame after a change is drawn at once, in the same turn).
  let changedAt: number | null = null;
  let cpuAt: NodeJS.CpuUsage | undefined;
  let mainCpuAt: NodeJS.CpuUsage | undefined;
  const onFrame = opts.onFrame;
  const unsubscribe = onFrame
    ? args.store.subscribe(() => {
        if (changedAt !== null) return;
        changedAt = performance.now();
        cpuAt = process.cpuUsage();
        mainCpuAt = process.threadCpuUsage();
      })
    : undefined;
  const instance = render(createElement(DashboardApp, { store: args.store, color: opts.color, followLog: args.followLog }), {
    alternateScreen: true,
    exitOnCtrlC: false,
    patchConsole: true,
    maxFps: 10,
    incrementalRendering: true,
    onRender: ({ renderTime }) => {
      scavenger.afterFrame();
      warmUpOnce();
      if (onFrame === undefined || changedAt === null) return; // a key's frame
      const cpu = process.cpuUsage(cpuAt);
      const main = process.threadCpuUsage(mainCpuAt);
      onFrame({
        latencyMs: performance.now() - changedAt,
        inkRenderMs: renderTime,
        cpuMs: (cpu.user + cpu.system) / 1000,
        mainCpuMs: (main.user + main.system) / 1000,
        startMs: changedAt,
      });
      changedAt = null;
    },
  });
  const onAbort = () => instance.unmount();
  args.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await instance.waitUntilExit();
  } finally {
    args.signal.removeEventListener('abort', onAbort);
    scavenger.stop();
    unsubscribe?.();
  }
}
