/**
 * SIGINT/SIGTERM for one command run, without oclif (the base command and
 * the oclif-free `runonce` entry both use it): the first signal aborts the
 * run's AbortSignal, a second one exits at once.
 */
import os from 'node:os';
import { InterruptedError } from '../lib/errors.js';

export class Interrupt {
  private controller: AbortController | undefined;
  /** The signal that interrupted this run (SIGINT, SIGTERM), once one did. */
  by: NodeJS.Signals | undefined;

  private readonly onSignal = (sig: NodeJS.Signals): void => {
    // A second Ctrl-C does not wait for anything.
    if (this.by !== undefined) process.exit(128 + (os.constants.signals[sig] ?? 2));
    this.by = sig;
    this.controller?.abort(new InterruptedError(sig));
  };

  /** Aborted on SIGINT or SIGTERM; taking it installs the handlers. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      process.on('SIGINT', this.onSignal);
      process.on('SIGTERM', this.onSignal);
    }
    return this.controller.signal;
  }

  /** Remove the handlers (the run is over). */
  dispose(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
  }
}
