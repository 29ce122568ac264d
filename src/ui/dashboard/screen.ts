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
  /** Process CPU time (user + system) spent over latencyMs: the frame's work, without the time spent waiting for a core on a loaded machine. */
  cpuMs: number;
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
  const stats = { latency: [] as number[], inkRender: [] as number[], cpu: [] as number[] };
  try {
    await runScreen(args, {
      color: opts.color,
      onFrame: (f) => {
        if (stats.latency.length >= 1_000_000) return;
        stats.latency.push(f.latencyMs);
        stats.inkRender.push(f.inkRenderMs);
        stats.cpu.push(f.cpuMs);
        opts.onFrame?.(f);
      },
    });
  } finally {
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
  const [{ render }, { createElement }, { DashboardApp }] = await Promise.all([import('ink'), import('react'), import('./app.js')]);
  // Frame timing: subscribed before ink's component, this listener hears of
  // a new snapshot first; ink calls onRender after it has written the frame
  // (its first frame after a change is drawn at once, in the same turn).
  let changedAt: number | null = null;
  let cpuAt: NodeJS.CpuUsage | undefined;
  const onFrame = opts.onFrame;
  const unsubscribe = onFrame
    ? args.store.subscribe(() => {
        if (changedAt !== null) return;
        changedAt = performance.now();
        cpuAt = process.cpuUsage();
      })
    : undefined;
  const instance = render(createElement(DashboardApp, { store: args.store, color: opts.color, followLog: args.followLog }), {
    alternateScreen: true,
    exitOnCtrlC: false,
    patchConsole: true,
    maxFps: 10,
    incrementalRendering: true,
    onRender: onFrame
      ? ({ renderTime }) => {
          if (changedAt === null) return; // a key's frame
          const cpu = process.cpuUsage(cpuAt);
          onFrame({ latencyMs: performance.now() - changedAt, inkRenderMs: renderTime, cpuMs: (cpu.user + cpu.system) / 1000 });
          changedAt = null;
        }
      : undefined,
  });
  const onAbort = () => instance.unmount();
  args.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await instance.waitUntilExit();
  } finally {
    args.signal.removeEventListener('abort', onAbort);
    unsubscribe?.();
  }
}
