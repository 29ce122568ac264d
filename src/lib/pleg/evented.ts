/**
 * Evented PLEG support detection (KEP-3386, the kubelet's EventedPLEG gate).
 *
 * A runtime that implements CRI GetContainerEvents streams container
 * lifecycle events, which would let a PLEG relist far less often. klet does
 * not build that mode: containerd 1.6 answers Unimplemented, and even where
 * the stream exists the kubelet keeps a (slower) relist as the safety net,
 * so the relisting GenericPLEG is the complete path and the only one klet
 * runs. This detection exists so that callers can report what the runtime
 * offers (and so that an evented mode has a place to start).
 */
import type { CriClient } from '../cri/client.js';
import { CriCancelledError, CriUnimplementedError } from '../cri/errors.js';

/** How long detectEventedSupport keeps the stream open by default. */
export const DEFAULT_EVENTED_PROBE_MS = 1000;

/**
 * Whether the runtime serves GetContainerEvents: opens the stream and waits
 * up to `waitMs` (default 1s). false when the runtime answers Unimplemented
 * (containerd 1.6, immediately); true when an event arrives, the stream
 * ends cleanly, or it is still open when the wait is over. Any other
 * failure (CriUnavailableError: no runtime) is thrown: it says nothing
 * about the feature.
 */
export async function detectEventedSupport(
  cri: Pick<CriClient, 'getContainerEvents'>,
  opts: { waitMs?: number } = {},
): Promise<boolean> {
  const probe = new AbortController();
  const timer = setTimeout(() => probe.abort(), opts.waitMs ?? DEFAULT_EVENTED_PROBE_MS);
  try {
    // Leaving the loop cancels the stream (the generator's finally).
    for await (const _event of cri.getContainerEvents({ signal: probe.signal })) return true;
    return true;
  } catch (err) {
    if (err instanceof CriUnimplementedError) return false;
    if (err instanceof CriCancelledError && probe.signal.aborted) return true; // open the whole wait
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
