/**
 * What feeds the dashboard's store: the running sync's event stream, and
 * its /pods and /node answers — over the local API (`klet dashboard`) or
 * straight from the handlers the API serves (`klet sync --tui`), so both
 * read exactly the same thing and nothing is computed a second way.
 *
 * The event stream drives everything: every event is applied as it comes;
 * an event about a pod marks the pod list stale, and it is re-read at most
 * once a second (and every 5 s regardless, for ages and readiness). When
 * the stream breaks — the sync died or was restarted — the store says so
 * and the feed keeps reconnecting every `retryMs` until it is back, then
 * resumes the stream after the last event it saw (or from the start of the
 * new sync's events when the sync restarted and its numbering with it).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { KletError, errorMessage } from '../errors.js';
import type { BusMessage } from '../events/types.js';
import { containerLogDir, latestLogFile, podLogDir, readContainerLog } from '../logs/index.js';
import { describeTarget, localApiEvents, localApiRequest, type LocalApiTarget } from '../server/client.js';
import type { LocalApiHandlers } from '../server/local-api.js';
import { isNodeStatus, type NodeStatus } from '../server/node-status.js';
import type { DashboardStore } from './store.js';

/** Where the dashboard reads from. */
export interface DashboardSource {
  /** For messages: the socket path or URL. */
  readonly name: string;
  node(signal: AbortSignal): Promise<NodeStatus>;
  pods(signal: AbortSignal): Promise<V1Pod[]>;
  /** Events after `since` (0: all the sync still holds), then live ones until `signal` aborts or the sync goes. */
  events(since: number, signal: AbortSignal): AsyncIterable<BusMessage>;
  /** The events the sync still holds, without following (the plain snapshot). */
  history(signal: AbortSignal): AsyncIterable<BusMessage>;
}

/** The socket or URL answers, but not as a klet local API does. */
export class NotKletApiError extends KletError {
  override readonly code: string = 'NOT_KLET_API';
}

/** A parse failure of the HTTP client: what answered is not an HTTP server (a gRPC socket, say). */
function notHttp(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    if (code.startsWith('HPE_') || code === 'ECONNRESET' || e.message === 'socket hang up') return true;
  }
  return false;
}

/** The local API of a running `klet sync`, on its unix socket or loopback TCP listener. */
export function remoteSource(target: LocalApiTarget): DashboardSource {
  const name = describeTarget(target);
  const getJson = async (path: string, signal: AbortSignal): Promise<unknown> => {
    let res;
    try {
      res = await localApiRequest(target, path, { signal, timeoutMs: 10_000 });
    } catch (err) {
      if (!signal.aborted && notHttp(err)) throw new NotKletApiError(`${name}: not a klet local API (it does not answer HTTP)`, { cause: err });
      throw err;
    }
    if (res.status === 401) throw new KletError(`${name}: the bearer token was refused (HTTP 401)`);
    if (res.status !== 200) throw new NotKletApiError(`${name}: not a klet local API (GET ${path} answered HTTP ${res.status})`);
    try {
      return JSON.parse(res.body) as unknown;
    } catch {
      throw new NotKletApiError(`${name}: not a klet local API (GET ${path} did not answer JSON)`);
    }
  };
  return {
    name,
    async node(signal) {
      const body = await getJson('/node', signal);
      if (!isNodeStatus(body)) throw new NotKletApiError(`${name}: not a klet local API (GET /node is not a klet node status)`);
      return body;
    },
    async pods(signal) {
      const body = (await getJson('/pods', signal)) as { items?: V1Pod[] };
      return Array.isArray(body.items) ? body.items : [];
    },
    events(since, signal) {
      return localApiEvents(target, { since, signal });
    },
    history(signal) {
      return localApiEvents(target, { since: 0, follow: false, signal });
    },
  };
}

/** The sync in this process (`klet sync --tui`): the very handlers its local API serves. */
export function inProcessSource(handlers: Pick<LocalApiHandlers, 'node' | 'pods' | 'events'>): DashboardSource {
  return {
    name: 'this klet sync',
    node: () => handlers.node(),
    async pods() {
      // Through JSON, as /pods serves it: Dates become the strings the store reads either way.
      const list = JSON.parse(JSON.stringify(await handlers.pods())) as { items?: V1Pod[] };
      return list.items ?? [];
    },
    events: (since, signal) => handlers.events.subscribe(signal, { since }),
    history: async function* () {
      yield* handlers.events.recent();
    },
  };
}

/** The first contact: the node status, or the error to print (nothing listening, not klet's socket). */
export async function connect(store: DashboardStore, source: DashboardSource, signal: AbortSignal): Promise<void> {
  const node = await source.node(signal);
  store.applyNode(node);
  store.applyPods(await source.pods(signal));
}

export interface FeedOptions {
  /** Between reconnection attempts. Default 2 s. */
  retryMs?: number;
  /** Least time between two reads of /pods. Default 1 s. */
  podsMinIntervalMs?: number;
  /** Re-read /pods at least this often. Default 5 s. */
  podsMaxIntervalMs?: number;
  /** Re-read /node this often. Default 2 s. */
  nodeIntervalMs?: number;
}

const POD_EVENT_KINDS = new Set(['PLEG', 'PodLifecycle', 'Event']);

/** Keep the store fed until `signal` aborts; never throws (losses are shown in the store). */
export async function runFeed(store: DashboardStore, source: DashboardSource, signal: AbortSignal, opts: FeedOptions = {}): Promise<void> {
  const retryMs = opts.retryMs ?? 2000;
  const podsMin = opts.podsMinIntervalMs ?? 1000;
  const podsMax = opts.podsMaxIntervalMs ?? 5000;
  const nodeEvery = opts.nodeIntervalMs ?? 2000;
  let attempts = 0;
  let lost: string | null = null;
  while (!signal.aborted) {
    const session = new AbortController();
    const s = AbortSignal.any([signal, session.signal]);
    let podsStale = false;
    const poller = (async () => {
      let podsAt = Date.now();
      let nodeAt = Date.now();
      while (!s.aborted) {
        await sleep(Math.min(podsMin, nodeEvery), undefined, { signal: s }).catch(() => undefined);
        if (s.aborted) return;
        const now = Date.now();
        try {
          if ((podsStale && now - podsAt >= podsMin) || now - podsAt >= podsMax) {
            podsStale = false;
            podsAt = now;
            store.applyPods(await source.pods(s));
          }
          if (now - nodeAt >= nodeEvery) {
            nodeAt = now;
            store.applyNode(await source.node(s));
          }
        } catch {
          // The event stream notices a sync that is gone; a slow answer is retried next round.
        }
      }
    })();
    try {
      const node = await source.node(s);
      // A new sync numbers its events from 1 again: start over with its events.
      if (node.lastEventSeq < store.getSnapshot().lastSeq) store.resetSeq();
      store.applyNode(node);
      store.applyPods(await source.pods(s));
      attempts = 0;
      store.setConnection('live', `connected to ${source.name}`);
      if (lost !== null) store.noteReconnected(lost);
      lost = null;
      for await (const m of source.events(store.getSnapshot().lastSeq, s)) {
        store.applyMessage(m);
        if (POD_EVENT_KINDS.has(m.kind)) podsStale = true;
      }
      if (signal.aborted) break;
      lost = 'klet sync closed the event stream';
    } catch (err) {
      if (signal.aborted) break;
      lost = errorMessage(err);
    } finally {
      session.abort();
      await poller;
    }
    attempts++;
    store.setConnection('lost', `klet sync is not answering (retrying every ${Math.round(retryMs / 1000)}s, attempt ${attempts}): ${lost}`);
    await sleep(retryMs, undefined, { signal }).catch(() => undefined);
  }
}

/**
 * Tail one container's log into the store while `signal` is live: the last
 * lines, then what is appended; across restarts it moves to the newest log
 * file. Reads the CRI log files under `logRoot`, as `klet logs` does.
 */
export async function followContainerLog(
  store: DashboardStore,
  pod: V1Pod,
  container: string,
  signal: AbortSignal,
  logRoot?: string,
): Promise<void> {
  const md = pod.metadata ?? {};
  const target = `${md.namespace ?? 'default'}/${md.name ?? ''}/${container}`;
  store.setLogTarget(target);
  const dir = containerLogDir(podLogDir(md.namespace ?? 'default', md.name ?? '', md.uid ?? '', logRoot), container);
  let file: string | null = null;
  let first = true;
  while (!signal.aborted) {
    const latest = await latestLogFile(dir).catch(() => null);
    if (latest === null) {
      store.setLogNote(target, `no log yet in ${dir}`);
    } else if (latest !== file) {
      file = latest;
      store.setLogNote(target, '');
      try {
        for await (const line of readContainerLog(file, { follow: true, tail: first ? 50 : -1, signal, isRunning: async () => (await latestLogFile(dir).catch(() => null)) === file })) {
          store.appendLog(target, line.replace(/\n$/, ''));
        }
      } catch (err) {
        store.setLogNote(target, `${file}: ${errorMessage(err)}`);
      }
      first = false;
      continue;
    }
    await sleep(1000, undefined, { signal }).catch(() => undefined);
  }
}
