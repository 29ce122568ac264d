/**
 * The local API of `klet sync`: what the running sync loop knows, for
 * `klet status`, the dashboard, curl and Prometheus, over plain node:http.
 *
 *   GET /healthz   `ok`, or 500 listing the failing checks; `?verbose`: JSON
 *   GET /pods      the pods as a V1PodList (JSON)
 *   GET /node      the node and the sync loop: runtime version and
 *                  conditions, sources, PLEG, pod-worker queue (NodeStatus)
 *   GET /plans     each pod's last sync, as a PodSync event: what
 *                  computePodActions decided and how it went (JSON
 *                  {"items": [...]}, for `klet explain`)
 *   GET /events    newline-delimited JSON: the retained events after
 *                  `?since=SEQ` (all retained without it), then live ones
 *                  while the connection stays open; `?follow=false` stops
 *                  after the retained ones
 *   GET /metrics   Prometheus text exposition
 *   GET /stats/summary  the kubelet's Summary API (stats/v1alpha1);
 *                  `?only_cpu_and_memory=true` as metrics-server asks
 *
 * It always listens on a unix socket with mode 0600 (see socket.ts), where
 * the file mode is the access control. An optional TCP listener, for tools
 * that cannot speak to a unix socket, is loopback-only and requires a
 * bearer token on every request (see auth.ts).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { jsonReplacer } from '../util/json.js';
import { InputError, KletError, errorMessage } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import type { BusMessage, KletEvent, PodSyncEvent } from '../events/types.js';
import { log } from '../log.js';
import type { KletMetrics } from '../metrics/metrics.js';
import type { Summary } from '../stats/summary.js';
import type { NodeStatus } from './node-status.js';
import { LISTEN_INPUT, assertValidToken, bearerTokenMatches, isLoopbackHost } from './auth.js';
import { listenUnixSocket } from './socket.js';

export interface HealthCheck {
  ok: boolean;
  message: string;
}

export interface Health {
  ok: boolean;
  checks: Record<string, HealthCheck>;
}

export interface LocalApiHandlers {
  /** Cheap and synchronous: it answers liveness probes. */
  healthz(): Health;
  /** The pods as a V1PodList; Date and bigint values are serialized as everywhere in klet. */
  pods(): Promise<unknown>;
  /** The node and the sync loop (GET /node). */
  node(): Promise<NodeStatus>;
  /** Each pod's last sync (GET /plans): PodSync events with the time of the sync. */
  plans(): readonly (KletEvent & PodSyncEvent & { lastSyncAt: string })[];
  events: EventBus;
  metrics: KletMetrics;
  /** The Summary API. */
  summary(opts: { onlyCpuAndMemory: boolean }): Promise<Summary>;
}

export interface LocalApiOptions {
  socketPath: string;
  /** The optional TCP listener: a loopback host, and the bearer token every request must carry. */
  listen?: { host: string; port: number; token: string };
  handlers: LocalApiHandlers;
}

export interface LocalApi {
  /** Stops listening, ends /events streams, drops connections and removes the socket file. */
  close(): Promise<void>;
  address: {
    socketPath: string;
    /** `127.0.0.1:PORT` or `[::1]:PORT`, with the port actually bound. */
    tcp?: string;
  };
}

/** The content type of /events. */
export const NDJSON_CONTENT_TYPE = 'application/x-ndjson; charset=utf-8';

type Headers = Record<string, string>;

const ROUTES = new Set(['/healthz', '/pods', '/node', '/plans', '/events', '/metrics', '/stats/summary']);

/** Headers on every response: nothing here may be cached or sniffed into something else. */
const COMMON_HEADERS = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' };

function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Headers = {}): void {
  res.writeHead(status, {
    ...COMMON_HEADERS,
    ...headers,
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, obj: unknown, headers: Headers = {}): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(obj, jsonReplacer) + '\n', headers);
}

function sendError(res: ServerResponse, status: number, message: string, headers: Headers = {}): void {
  sendJson(res, status, { error: message, status }, headers);
}

/** A boolean query parameter: present without a value, `true` or `1` is true. Undefined when absent. */
function flag(params: URLSearchParams, name: string): boolean | undefined {
  const v = params.get(name);
  if (v === null) return undefined;
  if (v === '' || v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new InputError(`?${name}: expected true or false`);
}

class Api {
  /** Aborted by stop(): ends every /events stream. */
  private readonly shutdown = new AbortController();
  /** Open /events streams, settled once their response is fully written. */
  private readonly streams = new Set<Promise<void>>();

  constructor(private readonly handlers: LocalApiHandlers) {}

  /**
   * Ends every /events stream properly (a final chunk, so clients see the
   * end of the stream rather than a reset connection) and waits until they
   * are flushed; the connections can then be dropped.
   */
  async stop(): Promise<void> {
    this.shutdown.abort();
    await Promise.allSettled(this.streams);
  }

  /** Entry point of both listeners (the TCP one authenticates first). */
  handle(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    res.once('finish', () =>
      log.debug(`local API: ${req.method} ${pathOf(req)} ${res.statusCode} ${Math.round(performance.now() - started)}ms`),
    );
    this.route(req, res).catch((err: unknown) => {
      log.warn(`local API: ${req.method} ${pathOf(req)}: ${errorMessage(err)}`);
      if (!res.headersSent) sendError(res, 500, errorMessage(err));
      else res.destroy();
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!ROUTES.has(url.pathname)) return sendError(res, 404, `no such endpoint: ${url.pathname}`);
    if (req.method !== 'GET') {
      return sendError(res, 405, `${req.method} is not allowed; use GET`, { Allow: 'GET' });
    }
    try {
      switch (url.pathname) {
        case '/healthz':
          return this.healthz(res, flag(url.searchParams, 'verbose') ?? false);
        case '/pods':
          return await this.pods(res);
        case '/node':
          return sendJson(res, 200, await this.handlers.node());
        case '/plans':
          return sendJson(res, 200, { items: this.handlers.plans() });
        case '/events': {
          const stream = this.events(res, url.searchParams);
          this.streams.add(stream);
          try {
            return await stream;
          } finally {
            this.streams.delete(stream);
          }
        }
        case '/metrics':
          return send(res, 200, this.handlers.metrics.contentType, await this.handlers.metrics.text());
        case '/stats/summary':
          return sendJson(res, 200, await this.handlers.summary({ onlyCpuAndMemory: flag(url.searchParams, 'only_cpu_and_memory') ?? false }));
      }
    } catch (err) {
      if (err instanceof InputError && !res.headersSent) return sendError(res, 400, err.message);
      throw err;
    }
  }

  private healthz(res: ServerResponse, verbose: boolean): void {
    const health = this.handlers.healthz();
    const status = health.ok ? 200 : 500;
    if (verbose) return sendJson(res, status, health);
    if (health.ok) return send(res, 200, 'text/plain; charset=utf-8', 'ok');
    // As the Kubernetes healthz handler lists them.
    const failing = Object.entries(health.checks)
      .filter(([, check]) => !check.ok)
      .map(([name, check]) => `[-]${name} failed: ${check.message}\n`)
      .join('');
    send(res, 500, 'text/plain; charset=utf-8', `${failing}healthz check failed\n`);
  }

  private async pods(res: ServerResponse): Promise<void> {
    let list: unknown;
    try {
      list = await this.handlers.pods();
    } catch (err) {
      log.warn(`local API: listing pods: ${errorMessage(err)}`);
      return sendError(res, 500, `listing pods: ${errorMessage(err)}`);
    }
    sendJson(res, 200, list);
  }

  /**
   * Streams events as NDJSON. Backpressure: while the client does not read,
   * this stops taking from its subscription, whose bounded queue then drops
   * the oldest events and delivers a Dropped marker, so a stalled client
   * costs a socket buffer and one queue, never the sync loop's time.
   */
  private async events(res: ServerResponse, params: URLSearchParams): Promise<void> {
    const rawSince = params.get('since');
    if (rawSince !== null && !/^\d+$/.test(rawSince)) throw new InputError('?since: expected a sequence number (0 or more)');
    const since = rawSince === null ? 0 : Number(rawSince);
    const follow = flag(params, 'follow') ?? true;
    const bus = this.handlers.events;

    res.writeHead(200, { ...COMMON_HEADERS, 'Content-Type': NDJSON_CONTENT_TYPE });
    if (!follow) {
      res.end(bus.recent(since).map((e) => JSON.stringify(e) + '\n').join(''));
      return;
    }
    res.flushHeaders();

    const done = new AbortController();
    const signal = AbortSignal.any([done.signal, this.shutdown.signal]);
    // The response's 'close': the client went away (the request's 'close' only
    // means its body was read, which for a GET is at once).
    const onClose = (): void => done.abort();
    res.once('close', onClose);
    try {
      for await (const message of bus.subscribe(signal, { since })) {
        if (!res.write(line(message))) {
          await once(res, 'drain', { signal }).catch(() => undefined);
        }
      }
    } finally {
      res.off('close', onClose);
      done.abort();
      if (!res.writableEnded) res.end();
      // Settles when the last chunk is written, or the connection is gone.
      await finished(res).catch(() => undefined);
    }
  }
}

function line(message: BusMessage): string {
  return JSON.stringify(message) + '\n';
}

/** The request path without the query, for log lines (queries are not logged). */
function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?', 1)[0] as string;
}

/** 401 before anything else on TCP: an unauthenticated client learns nothing, not even which paths exist. */
function authenticated(api: Api, token: string): http.RequestListener {
  return (req, res) => {
    if (!bearerTokenMatches(req.headers.authorization, token)) {
      res.once('finish', () => log.debug(`local API: ${req.method} ${pathOf(req)} 401 (no or wrong bearer token)`));
      return sendError(res, 401, 'unauthorized: this endpoint needs Authorization: Bearer <token>', {
        'WWW-Authenticate': 'Bearer realm="klet"',
      });
    }
    api.handle(req, res);
  };
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    // Keep-alive connections, and requests still waiting for a handler
    // (streams have ended by now), would otherwise hold close() open.
    server.closeAllConnections();
  });
}

async function listenTcp(server: http.Server, host: string, port: number): Promise<AddressInfo> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EADDRINUSE' ? 'the address is in use' : errorMessage(err);
    throw new KletError(`${formatHostPort(host, port)}: ${why}`, { cause: err, input: LISTEN_INPUT });
  }
  return server.address() as AddressInfo;
}

function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Starts the local API. Throws InputError for a non-loopback or tokenless
 * `listen`, and KletError when the socket path is taken (another klet sync
 * serving on it, or a file that is not a socket) or a listener fails.
 */
export async function startLocalApi(opts: LocalApiOptions): Promise<LocalApi> {
  // As parseListen does: bind 127.0.0.1 rather than whatever the resolver says localhost is.
  const listen = opts.listen && { ...opts.listen, host: opts.listen.host === 'localhost' ? '127.0.0.1' : opts.listen.host };
  if (listen) {
    if (!isLoopbackHost(listen.host)) {
      throw new InputError(
        `${formatHostPort(listen.host, listen.port)}: only a loopback address (127.0.0.1, ::1 or localhost) is allowed`,
        { input: LISTEN_INPUT },
      );
    }
    assertValidToken(listen.token, 'the bearer token', LISTEN_INPUT);
  }

  const api = new Api(opts.handlers);
  const unixServer = http.createServer((req, res) => api.handle(req, res));
  const removeSocket = await listenUnixSocket(unixServer, opts.socketPath);
  const address: LocalApi['address'] = { socketPath: opts.socketPath };

  let tcpServer: http.Server | undefined;
  if (listen) {
    tcpServer = http.createServer(authenticated(api, listen.token));
    try {
      const bound = await listenTcp(tcpServer, listen.host, listen.port);
      address.tcp = formatHostPort(bound.address, bound.port);
    } catch (err) {
      await api.stop();
      await closeServer(unixServer);
      await removeSocket();
      throw err;
    }
  }

  let closing: Promise<void> | undefined;
  return {
    address,
    close(): Promise<void> {
      closing ??= (async () => {
        await api.stop();
        await Promise.all([closeServer(unixServer), tcpServer ? closeServer(tcpServer) : undefined]);
        await removeSocket();
      })();
      return closing;
    },
  };
}
