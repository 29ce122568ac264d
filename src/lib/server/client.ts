/**
 * The CLI side of the local API: `klet status` and the dashboard ask the
 * running `klet sync` first, since it knows more than the runtime alone
 * (pod worker state, events), and fall back to asking the runtime when
 * LocalApiUnavailableError says no sync is serving.
 */
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { KletError, TimeoutError, errorMessage } from '../errors.js';
import type { BusMessage } from '../events/types.js';

/** The socket's name in the root dir. */
export const LOCAL_API_SOCKET_NAME = 'klet.sock';

/** Where `klet sync` serves the local API for a given --root-dir. */
export function localApiSocketPath(rootDir: string): string {
  return path.join(rootDir, LOCAL_API_SOCKET_NAME);
}

/** Nothing serves the local API at that socket: no `klet sync` is running (or it is not ours to use). */
export class LocalApiUnavailableError extends KletError {
  override readonly code: string = 'LOCAL_API_UNAVAILABLE';
}

/**
 * Where the local API is: a unix socket path, or the loopback TCP listener
 * of `klet sync --listen` as a URL with the bearer token it requires.
 */
export type LocalApiTarget = string | { url: string; token: string };

/** How messages name a target: the socket path or the URL (never the token). */
export function describeTarget(target: LocalApiTarget): string {
  return typeof target === 'string' ? target : target.url;
}

export interface LocalApiRequestOptions {
  signal?: AbortSignal;
  /** Gives up after this long (TimeoutError). Default 10 s: the sync loop answers from memory. */
  timeoutMs?: number;
}

export interface LocalApiResponse {
  status: number;
  contentType: string;
  body: string;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** Connection failures that mean "no sync here", as opposed to a sync that misbehaves. */
const UNAVAILABLE_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'ENOTSOCK', 'EACCES', 'EPERM']);

function unavailable(target: LocalApiTarget, err: unknown): LocalApiUnavailableError | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === undefined || !UNAVAILABLE_CODES.has(code)) return undefined;
  const why =
    code === 'EACCES' || code === 'EPERM'
      ? 'permission denied (the socket is root-only; run klet as root)'
      : code === 'ENOTSOCK'
        ? 'not a socket'
        : 'no klet sync is running';
  return new LocalApiUnavailableError(`local API at ${describeTarget(target)}: ${why}`, { cause: err });
}

/** Opens a GET request; resolves with the response once its headers arrived. */
function get(target: LocalApiTarget, urlPath: string, signal: AbortSignal): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    let req: http.ClientRequest;
    if (typeof target === 'string') {
      req = http.get({ socketPath: target, path: urlPath, signal, headers: { Accept: '*/*' } }, resolve);
    } else {
      const url = new URL(urlPath, target.url);
      const headers = { Accept: '*/*', Authorization: `Bearer ${target.token}` };
      req = (url.protocol === 'https:' ? https : http).get(url, { signal, headers }, resolve);
    }
    req.once('error', reject);
  });
}

/** A connection or protocol failure as LocalApiUnavailableError (no sync there) or KletError. */
function failure(err: unknown, target: LocalApiTarget): KletError {
  return unavailable(target, err) ?? new KletError(`local API at ${describeTarget(target)}: ${errorMessage(err)}`, { cause: err });
}

/**
 * GET `urlPath` (with its query) from the local API on `socketPath` and
 * read the whole body. Any HTTP status resolves; connection failures reject
 * with LocalApiUnavailableError (fall back to the runtime), an answer too
 * slow with TimeoutError, an abort with the signal's reason. Not for
 * `/events` with following: use localApiEvents.
 */
export async function localApiRequest(
  socketPath: LocalApiTarget,
  urlPath: string,
  opts: LocalApiRequestOptions = {},
): Promise<LocalApiResponse> {
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  try {
    const res = await get(socketPath, urlPath, signal);
    res.setEncoding('utf8');
    let body = '';
    for await (const chunk of res) body += chunk as string;
    return { status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? '', body };
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (timeout.aborted) throw new TimeoutError(`local API at ${describeTarget(socketPath)}: no answer to ${urlPath} in time`);
    throw failure(err, socketPath);
  }
}

export interface LocalApiEventsOptions {
  /** Only events after this seq. Default: all the sync still holds. */
  since?: number;
  /** Keep streaming live events. Default true. */
  follow?: boolean;
  /** Ends the stream (iteration then just stops). */
  signal?: AbortSignal;
}

/**
 * The sync loop's events from `/events`, parsed. The iteration ends when
 * the sync closes the stream or `signal` aborts; it throws
 * LocalApiUnavailableError when no sync is serving.
 */
export async function* localApiEvents(
  socketPath: LocalApiTarget,
  opts: LocalApiEventsOptions = {},
): AsyncGenerator<BusMessage, void, undefined> {
  const query = new URLSearchParams();
  if (opts.since !== undefined) query.set('since', String(opts.since));
  if (opts.follow === false) query.set('follow', 'false');
  const urlPath = `/events${query.size > 0 ? `?${query}` : ''}`;
  const local = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, local.signal]) : local.signal;
  let res: http.IncomingMessage;
  try {
    res = await get(socketPath, urlPath, signal);
  } catch (err) {
    if (opts.signal?.aborted) return;
    throw failure(err, socketPath);
  }
  if (res.statusCode !== 200) {
    res.resume();
    throw new KletError(`local API at ${describeTarget(socketPath)}: ${urlPath} answered HTTP ${res.statusCode}`);
  }
  const lines = createInterface({ input: res, crlfDelay: Infinity });
  try {
    for await (const text of lines) {
      if (text.trim() === '') continue;
      yield JSON.parse(text) as BusMessage;
    }
  } catch (err) {
    if (opts.signal?.aborted) return;
    throw failure(err, socketPath);
  } finally {
    lines.close();
    local.abort(); // closes the connection when the consumer stops early
  }
}
