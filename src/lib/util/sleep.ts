/**
 * Wait `ms`, or less when `signal` aborts: resolves either way, never
 * rejects. For loops that check `signal.aborted` themselves (heartbeats,
 * watches, retries).
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
