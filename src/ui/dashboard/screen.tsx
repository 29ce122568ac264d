/**
 * The interactive dashboard: ink on the alternate screen, ≤ 10 frames/s,
 * keys read raw (q and Ctrl-C quit through the app, so the terminal is
 * always restored by ink's own unmount). Lazy-imported by `klet dashboard`
 * and `klet sync --tui` only.
 */
import { render } from 'ink';
import type { ScreenArgs } from '../../lib/services/dashboard.js';
import { DashboardApp } from './app.js';

export interface ScreenOptions {
  /** Colour on (false with NO_COLOR). */
  color: boolean;
  /** Every frame's render time in ms (the benchmark). */
  onFrame?: (ms: number) => void;
}

export async function runScreen(args: ScreenArgs, opts: ScreenOptions): Promise<void> {
  const instance = render(<DashboardApp store={args.store} color={opts.color} followLog={args.followLog} />, {
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
