/**
 * The dashboard's first screens with pods, drawn a few times off screen
 * once, so the frames a person sees next are not the ones V8 compiles and
 * optimises ink's output path in.
 *
 * Why: a frame's work is ink rebuilding its character grid (tokenising
 * every line, measuring, diffing). The first time the screen fills with
 * pods, that code runs in V8's interpreter and its optimising compilers
 * run beside it: bench/dashboard.js measured the first 7 frames at 22–32 ms
 * of process CPU each (8–13 ms of it on the main thread), the later ones at
 * about 6 ms, and on a 2-core machine those first frames were most of the
 * frames over 16 ms. Drawing the same screen off screen right after the
 * first full frame moves that compiling to a moment nobody is waiting for
 * (it takes about 0.1 s once, yielding to the event loop between frames).
 */
import { Readable, Writable } from 'node:stream';
import type { DashboardStore } from '../../lib/dashboard/store.js';

/** What the warm-up needs of ink, React and the app (passed in: this module imports none of them). */
export interface WarmUpDeps {
  render: typeof import('ink').render;
  createElement: typeof import('react').createElement;
  DashboardApp: typeof import('./app.js').DashboardApp;
}

export interface WarmUpOptions {
  store: DashboardStore;
  color: boolean;
  columns: number;
  rows: number;
  /** Off-screen frames to draw. Default 16. */
  frames?: number;
  signal?: AbortSignal;
}

/** A terminal that swallows what is written to it. */
function nullTerminal(columns: number, rows: number): { stdout: NodeJS.WriteStream; stdin: NodeJS.ReadStream } {
  const stdout = Object.assign(new Writable({ write: (_chunk, _enc, cb) => cb() }), { isTTY: true, columns, rows });
  const stdin = Object.assign(new Readable({ read() {} }), { isTTY: true, setRawMode: () => stdin, ref: () => stdin, unref: () => stdin });
  return { stdout: stdout as unknown as NodeJS.WriteStream, stdin: stdin as unknown as NodeJS.ReadStream };
}

/**
 * Draws the store's current screen `frames` times into a terminal nobody
 * sees (a new tree each time, so every line is laid out and written again),
 * then unmounts it. Resolves when done or aborted; never throws (a failed
 * warm-up only leaves the first frames slower).
 */
export async function warmUp(deps: WarmUpDeps, opts: WarmUpOptions): Promise<void> {
  const frames = opts.frames ?? 16;
  const { stdout, stdin } = nullTerminal(opts.columns, opts.rows);
  const app = (i: number) => deps.createElement(deps.DashboardApp, { key: i, store: opts.store, color: opts.color, size: { columns: opts.columns, rows: opts.rows } });
  let instance: ReturnType<typeof deps.render> | undefined;
  try {
    instance = deps.render(app(0), { stdout, stdin, stderr: stdout, exitOnCtrlC: false, patchConsole: false, maxFps: 1000, incrementalRendering: true });
    for (let i = 1; i < frames && opts.signal?.aborted !== true; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      instance.rerender(app(i));
    }
  } catch {
    // Only an optimisation.
  } finally {
    try {
      instance?.unmount();
    } catch {
      // Already gone.
    }
  }
}
