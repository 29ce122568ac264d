/**
 * What every service takes besides its options: the connected runtime, the
 * node's identity and state dir, the cancellation signal (aborted on
 * SIGINT/SIGTERM by the command layer) and where engine events go. Built
 * once per command run by the base command.
 */
import type { CriClient } from '../cri/client.js';
import type { KletEventBody } from '../events/types.js';
import type { LocalObjects } from '../kuberuntime/env.js';
import type { PodCgroups } from '../cm/manager.js';
import { NodeCache, type SyncContext } from '../kuberuntime/sync-pod.js';
import { VolumeManager } from '../volume/manager.js';
import { localObjectSource } from '../volume/plugins.js';

export interface ServiceDeps {
  cri: CriClient;
  rootDir: string;
  nodeName: string;
  signal: AbortSignal;
  /** Engine events (pod events, waits, source errors): the progress display, a test. */
  onEvent?: (e: KletEventBody) => void;
  /** Root of the pod log dirs (default /var/log/pods). */
  logRoot?: string;
  /** Caches for this run; a fresh one when unset. */
  cache?: NodeCache;
  /** Pod and QoS cgroups (--cgroups-per-qos): the container manager of this run; the runtime's cgroups without. */
  cgroups?: PodCgroups;
}


/** The sync context of a service run. */
export function syncContext(deps: ServiceDeps, objects: LocalObjects = { configMaps: [], secrets: [] }): SyncContext {
  return {
    cri: deps.cri,
    rootDir: deps.rootDir,
    nodeName: deps.nodeName,
    objects,
    logRoot: deps.logRoot,
    signal: deps.signal,
    onEvent: deps.onEvent,
    cache: deps.cache ?? new NodeCache(),
    ...(deps.cgroups ? { cgroups: deps.cgroups } : {}),
    // One volume manager for the run: every sync of its pods, and their removal.
    volumes: new VolumeManager({ rootDir: deps.rootDir, nodeName: deps.nodeName, objects: () => localObjectSource(objects), onEvent: deps.onEvent, resyncMs: 0 }),
  };
}

/** Wait `ms`, or until the signal aborts (then throw its reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
