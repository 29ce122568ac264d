/**
 * Relist as soon as a container exits, rather than up to a relist period
 * later: on containerd, its own event service reports each container's exit
 * (CriClient.containerdTaskExits), and each exit asks the PLEG for a relist
 * (coalesced). The periodic relist goes on unchanged and stays the one
 * source of truth, as the kubelet's evented PLEG keeps its relist. A runtime
 * without that service (not containerd) answers Unimplemented: the PLEG
 * then relists on its period only. A broken stream is re-opened with a
 * back-off (1 s doubling to 30 s).
 */
import type { TaskExit } from '../cri/containerd-events.js';
import { CriUnimplementedError } from '../cri/errors.js';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { pause } from '../util/sleep.js';

export interface ExitSource {
  containerdTaskExits(opts: { signal?: AbortSignal }): AsyncIterable<TaskExit>;
}

export interface RelistTrigger {
  /** A relist soon (coalesced); resolves when it is over. */
  requestRelist(): Promise<void>;
  podRecords(): ReadonlyMap<string, { containers: readonly { id: string; state: string }[] }>;
}

/**
 * containerd publishes TaskExit before its CRI plugin has recorded the exit
 * (the container still lists as running for a few ms): relist shortly after
 * the event, and again, a little later each time, while this klet's
 * container still shows running. A container the PLEG does not know
 * (another owner's) costs one relist. The periodic relist remains the net.
 */
const RELIST_AFTER_EXIT_MS = [20, 50, 100, 200, 400];

async function relistAfterExit(pleg: RelistTrigger, containerId: string, signal: AbortSignal): Promise<void> {
  for (const delayMs of RELIST_AFTER_EXIT_MS) {
    await pause(delayMs, signal);
    if (signal.aborted) return;
    await pleg.requestRelist();
    if (!stillRunning(pleg.podRecords(), containerId)) return;
  }
}

function stillRunning(records: ReturnType<RelistTrigger['podRecords']>, containerId: string): boolean {
  for (const rec of records.values()) for (const c of rec.containers) if (c.id === containerId) return c.state === 'running';
  return false;
}

/** Runs until `signal` aborts (or the runtime has no event service); never rejects. */
export async function relistOnContainerExit(cri: ExitSource, pleg: RelistTrigger, signal: AbortSignal): Promise<void> {
  let delayMs = 1000;
  while (!signal.aborted) {
    try {
      for await (const exit of cri.containerdTaskExits({ signal })) {
        void relistAfterExit(pleg, exit.containerId, signal);
        delayMs = 1000;
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof CriUnimplementedError) {
        log.debug('the runtime reports no container exits (not containerd): the PLEG relists on its period only');
        return;
      }
      log.debug(`containerd events: ${errorMessage(err)}; re-subscribing in ${delayMs} ms`);
    }
    await pause(delayMs, signal);
    delayMs = Math.min(delayMs * 2, 30_000);
  }
}
