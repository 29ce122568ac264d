/**
 * The terminal side of `klet exec -t` and `klet attach`: raw mode on stdin
 * while the session runs (restored however it ends), the window size and
 * its changes for the remote TTY.
 */
import type { RemoteCommandIo } from '../lib/streaming/remote.js';

export interface TerminalSession {
  io: RemoteCommandIo;
  /** Restore the terminal. */
  restore(): void;
}

export function terminalIo(opts: { stdin: boolean; tty: boolean }): TerminalSession {
  const rawWanted = opts.tty && opts.stdin && process.stdin.isTTY === true;
  if (rawWanted) process.stdin.setRawMode(true);
  const io: RemoteCommandIo = {
    ...(opts.stdin ? { stdin: process.stdin } : {}),
    stdout: process.stdout,
    stderr: process.stderr,
    tty: opts.tty,
    size: () => (process.stdout.isTTY ? { width: process.stdout.columns, height: process.stdout.rows } : undefined),
    onResize: (fn) => {
      process.stdout.on('resize', fn);
      return () => process.stdout.off('resize', fn);
    },
  };
  return {
    io,
    restore: () => {
      if (rawWanted) process.stdin.setRawMode(false);
    },
  };
}
