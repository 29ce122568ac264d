/**
 * `klet dashboard` and `klet sync --tui`: feed a DashboardStore from a
 * running sync and either hand it to the interactive screen (which the
 * command layer supplies: src/lib imports no UI package) or, when there is
 * no terminal, print one plain snapshot and return.
 */
import { DashboardStore } from '../dashboard/store.js';
import { connect, followContainerLog, runFeed, type DashboardSource, type FeedOptions } from '../dashboard/feed.js';
import { renderScreen, screenText, snapshotSize } from '../dashboard/screen.js';
import { INITIAL_VIEW } from '../dashboard/view.js';
import type { V1Pod } from '@kubernetes/client-node';
import { InputError } from '../errors.js';
import { localApiSocketPath, readAuthTokenFile } from '../server/index.js';
import type { LocalApiTarget } from '../server/client.js';

export interface DashboardTargetOptions {
  /** The local API socket; default <rootDir>/klet.sock. */
  socket?: string;
  /** The URL of a sync's loopback TCP listener, with the file holding its bearer token. */
  server?: string;
  tokenFile?: string;
  rootDir: string;
}

/** Where the sync to watch serves its local API. A bad URL is an error about `server`. */
export async function dashboardTarget(opts: DashboardTargetOptions): Promise<LocalApiTarget> {
  if (opts.server === undefined || opts.tokenFile === undefined) return opts.socket ?? localApiSocketPath(opts.rootDir);
  const input = 'server';
  let url: URL;
  try {
    url = new URL(opts.server);
  } catch {
    throw new InputError(`"${opts.server}": not a URL (e.g. http://127.0.0.1:10250)`, { input });
  }
  // klet sync's TCP listener serves plain HTTP (loopback only, every request
  // with the bearer token): there is no TLS to talk to, and an https:// URL
  // would only end in an OpenSSL record error.
  if (url.protocol === 'https:') throw new InputError(`"${opts.server}": the local API's TCP listener serves plain HTTP on loopback; use http://${url.host}`, { input });
  if (url.protocol !== 'http:') throw new InputError(`"${opts.server}": expected an http:// URL (e.g. http://127.0.0.1:10250)`, { input });
  return { url: url.origin, token: await readAuthTokenFile(opts.tokenFile) };
}

export interface DashboardOptions {
  source: DashboardSource;
  /** A terminal to draw on: the live screen; otherwise one plain snapshot. */
  interactive: boolean;
  /** Width of the plain snapshot. */
  columns: number;
  /** Root of the pod log dirs (default /var/log/pods). */
  logRoot?: string;
  feed?: FeedOptions;
  /** The first contact already happened (in-process: the sync is up by construction). */
  store?: DashboardStore;
}

/** What the interactive screen needs; it resolves when the person quits. */
export interface ScreenArgs {
  store: DashboardStore;
  followLog: (pod: V1Pod, container: string, signal: AbortSignal) => void;
  signal: AbortSignal;
}

export interface DashboardDeps {
  signal: AbortSignal;
  /** Plain output (the snapshot). */
  write: (text: string) => void;
  /** The interactive screen (ink), lazy-loaded by the command. */
  screen?: (args: ScreenArgs) => Promise<void>;
}

export interface DashboardResult {
  exitCode: number;
  /** 'snapshot' when printed once, 'screen' when the screen ran until quit. */
  mode: 'snapshot' | 'screen';
}

/**
 * Connects first (a socket with nothing behind it, or one that is not
 * klet's, rejects here: LocalApiUnavailableError, NotKletApiError), then
 * prints or runs the screen. Once connected it never fails: a sync that
 * goes away is shown and reconnected to.
 */
export async function runDashboard(opts: DashboardOptions, deps: DashboardDeps): Promise<DashboardResult> {
  const store = opts.store ?? new DashboardStore();
  if (opts.store === undefined) await connect(store, opts.source, deps.signal);

  if (!opts.interactive || deps.screen === undefined) {
    for await (const m of opts.source.history(deps.signal)) store.applyMessage(m);
    store.setConnection('live', `connected to ${opts.source.name}`);
    const snap = store.flush();
    deps.write(screenText(renderScreen(snap, INITIAL_VIEW, snapshotSize(snap, opts.columns))));
    store.close();
    return { exitCode: 0, mode: 'snapshot' };
  }

  const running = new AbortController();
  const signal = AbortSignal.any([deps.signal, running.signal]);
  store.startClock(signal);
  const feed = runFeed(store, opts.source, signal, opts.feed);
  try {
    await deps.screen({
      store,
      signal,
      followLog: (pod, container, s) => void followContainerLog(store, pod, container, AbortSignal.any([s, signal]), opts.logRoot),
    });
  } finally {
    running.abort();
    await feed;
    store.close();
  }
  return { exitCode: 0, mode: 'screen' };
}
