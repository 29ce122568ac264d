/**
 * The interactive dashboard: ink on the alternate screen, ≤ 10 frames/s,
 * keys read raw (q and Ctrl-C quit through the app, so the terminal is
 * always restored by ink's own unmount). Lazy-imported by `klet dashboard`
 * and `klet sync --tui` only.
 */
import type { ScreenArgs } from '../../lib/services/dashboard.js';

export interface ScreenOptions {
  /** Colour on (false with NO_COLOR). */
  color: boolean;
  /** Every frame's render time in ms (the benchmark). */
  onFrame?: (ms: number) => void;
}

export async function runScreen(args: ScreenArgs, opts: ScreenOptions): Promise<void> {
  // React's production build: its development build checks and records every
  // render (several times the CPU and a growing heap). React and ink's
  // reconciler each read NODE_ENV when first loaded — they must agree — so
  // nothing here imports them statically (no JSX in this file).
  process.env.NODE_ENV ??= 'production';
  const [{ render }, { createElement }, { DashboardApp }] = await Promise.all([import('ink'), import('react'), import('./app.js')]);
  const instance = render(createElement(DashboardApp, { store: args.store, color: opts.color, followLog: args.followLog }), {
    alternateScreen: true,
    exitOnCtrlC: false,
    patchConsole: true,
    maxFps: 10,
    incrementalRendering: true,
    onRender: opts.onFrame ? ({ renderTime }) => opts.onFrame?.(renderTime) : undefined,
  });
  const onAbort = () => instance.unmount();
  args.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await instance.waitUntilExit();
  } finally {
    args.signal.removeEventListener('abort', onAbort);
  }
}
