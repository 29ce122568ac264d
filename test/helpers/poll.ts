/**
 * Wait until `fn` gives a value (not undefined): tried every `intervalMs`
 * until `timeoutMs`; an error thrown by a try is kept for the final message.
 */
export async function poll<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined> | T | undefined, intervalMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${String(last)})` : ''}`);
}
