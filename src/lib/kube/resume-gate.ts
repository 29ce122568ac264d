/**
 * Which watches go first when the API server comes back.
 *
 * While the API server is unreachable, every watch of a connection (pods,
 * Services, each ConfigMap and Secret a pod references: 223 with 110 pods)
 * would retry on its own back-off, and all come back to it together. A
 * watch that resumes from its resourceVersion after an API server restart
 * only gets 410 Gone (the new server's watch cache starts at etcd's current
 * revision), then lists and watches again: three requests per object in the
 * minute after the return, where two do. After a network cut the server
 * kept its cache, and resuming is what saves the list.
 *
 * So one watch scouts: the first to find the server unreachable goes on with
 * its back-off; the others wait here until its resumed watch tells which
 * case it is, then all resume ('resume') or all list again ('relist'). A
 * watch that ends while it scouts hands the role to the next that waits.
 * The outcome is the same as each resuming on its own (a resumed watch that
 * gets 410 lists again anyway); only the requests that could not help are
 * not made. client-go's reflectors each retry alone; klet's watches share a
 * connection, so they can share what one learns.
 */

export type Resumption = 'resume' | 'relist';

interface Waiter {
  resolve(v: Resumption | 'scout'): void;
  signal: AbortSignal;
  onAbort(): void;
}

export class ResumeGate {
  private scouting = false;
  private waiting: Waiter[] = [];

  /** How many watches wait for the scout (for tests and /metrics). */
  get waiters(): number {
    return this.waiting.length;
  }

  /**
   * A watch found the server unreachable and has a resourceVersion to resume
   * from: 'scout' (retry with your own back-off, then report through
   * learned(), or abandon() when you stop), or what the scout learned. An
   * aborted signal answers 'resume' (the watch then sees its own abort).
   */
  wait(signal: AbortSignal): Promise<Resumption | 'scout'> {
    if (!this.scouting) {
      this.scouting = true;
      return Promise.resolve('scout');
    }
    if (signal.aborted) return Promise.resolve('resume');
    return new Promise((resolve) => {
      const w: Waiter = {
        resolve,
        signal,
        onAbort: () => {
          this.waiting = this.waiting.filter((x) => x !== w);
          resolve('resume');
        },
      };
      signal.addEventListener('abort', w.onAbort, { once: true });
      this.waiting.push(w);
    });
  }

  /** The scout's resumed watch was served ('resume') or refused as too old ('relist'): every waiter does the same. */
  learned(v: Resumption): void {
    this.scouting = false;
    const all = this.waiting;
    this.waiting = [];
    for (const w of all) {
      w.signal.removeEventListener('abort', w.onAbort);
      w.resolve(v);
    }
  }

  /** The scout stopped before it learned anything: the longest waiter scouts now. */
  abandon(): void {
    this.scouting = false;
    const next = this.waiting.shift();
    if (next === undefined) return;
    this.scouting = true;
    next.signal.removeEventListener('abort', next.onAbort);
    next.resolve('scout');
  }
}
