/**
 * An unbounded async queue: producers push, one consumer awaits the next
 * item (or an abort). The sync loop selects over several of these the way
 * the kubelet's syncLoopIteration selects over Go channels.
 */
export class Channel<T> {
  private readonly items: T[] = [];
  private waiter: ((v: T) => void) | null = null;
  private readonly readyWaiters = new Set<() => void>();

  push(item: T): void {
    for (const fn of [...this.readyWaiters]) fn();
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w(item);
    } else {
      this.items.push(item);
    }
  }

  get size(): number {
    return this.items.length;
  }

  /**
   * Resolves when an item is queued, without taking it (rejects on abort).
   * A loop selecting over several channels waits on ready() of each and then
   * takes with tryTake(), so no item is ever lost to a losing race.
   */
  ready(signal?: AbortSignal): Promise<void> {
    if (this.items.length > 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        this.readyWaiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.readyWaiters.delete(done);
        reject(signal?.reason ?? new Error('aborted'));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.readyWaiters.add(done);
    });
  }

  /** Take an item if one is queued, without waiting. */
  tryTake(): T | undefined {
    return this.items.shift();
  }

  /** The next item; rejects with the signal's reason when aborted first. */
  next(signal?: AbortSignal): Promise<T> {
    const queued = this.items.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.waiter) throw new Error('Channel has a single consumer');
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.waiter = null;
        reject(signal?.reason ?? new Error('aborted'));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiter = (v) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(v);
      };
    });
  }
}
