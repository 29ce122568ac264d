/**
 * The runtime calls that make something are not cut off by the sync's stop
 * once sent (syncloop/settled-calls.ts): their signal is not passed on, the
 * stop drains them; a call the signal cancelled before it was sent is
 * refused as before; other calls keep their signal.
 */
import { describe, expect, it } from 'vitest';
import { settleMakingCalls } from '../../src/lib/syncloop/settled-calls.js';

/** A fake runtime: each call resolves when the test says, or rejects when its signal aborts. */
function fakeRuntime() {
  const pending: { method: string; resolve: () => void }[] = [];
  const call = (method: string) => (_req: unknown, opts?: { signal?: AbortSignal }) =>
    new Promise<string>((resolve, reject) => {
      if (opts?.signal?.aborted) return reject(new Error(`${method}: cancelled`));
      opts?.signal?.addEventListener('abort', () => reject(new Error(`${method}: cancelled`)), { once: true });
      pending.push({ method, resolve: () => resolve(`${method} done`) });
    });
  return {
    pending,
    client: { runPodSandbox: call('runPodSandbox'), startContainer: call('startContainer'), listContainers: call('listContainers') },
  };
}

describe('settleMakingCalls', () => {
  it('a sandbox being made when the signal aborts is made; the stop drains it; a listing is cancelled', async () => {
    const rt = fakeRuntime();
    const { client, drain } = settleMakingCalls(rt.client);
    const ac = new AbortController();
    const run = client.runPodSandbox({}, { signal: ac.signal });
    const list = client.listContainers({}, { signal: ac.signal });
    ac.abort();
    await expect(list).rejects.toThrow('listContainers: cancelled');
    let drained = false;
    const d = drain(5_000).then((left) => {
      drained = true;
      return left;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(drained).toBe(false);
    rt.pending.find((p) => p.method === 'runPodSandbox')?.resolve();
    await expect(run).resolves.toBe('runPodSandbox done');
    await expect(d).resolves.toEqual([]);
  });

  it('cancelled before it is sent: refused, nothing to drain', async () => {
    const rt = fakeRuntime();
    const { client, drain } = settleMakingCalls(rt.client);
    await expect(client.startContainer({}, { signal: AbortSignal.abort() })).rejects.toThrow('startContainer: cancelled');
    expect(rt.pending).toEqual([]);
    await expect(drain(1_000)).resolves.toEqual([]);
  });

  it('a runtime that does not answer: the drain gives up after maxMs and names what is still in flight', async () => {
    const rt = fakeRuntime();
    const { client, drain } = settleMakingCalls(rt.client);
    void client.startContainer({}, { signal: new AbortController().signal });
    const t0 = Date.now();
    await expect(drain(100)).resolves.toEqual(['startContainer']);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});
