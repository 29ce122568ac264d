/**
 * The node's REST client for the API server: JSON requests and watches over
 * HTTP/2 (one connection carrying every request and watch, as client-go's
 * transport does; another one only when the server's stream limit is
 * reached), HTTP/1.1 with keep-alive for an http:// server and for an
 * https:// one whose ALPN answer is not h2 (a TLS proxy in front of the API
 * server; Go's transport falls back the same way). Authentication
 * from the kubeconfig (lib/kube/kubeconfig.ts): a client certificate, a
 * bearer token (tokenFile read again every minute, as client-go does) or
 * basic auth.
 *
 * It replaces client-node's generated API classes and Watch in `klet sync`:
 * those pulled in every API group and model class of the library, ~26 MB
 * of resident JS heap (bench/README, issue 39). What goes over the wire is
 * the same: the same paths, query parameters, content types and bodies.
 *
 * Errors: a status over 299 throws HttpStatusError (`code`, `body`: what
 * toApiServerError reads); network, TLS and abort errors are Node's own.
 */
import fs from 'node:fs/promises';
import type http from 'node:http';
import type http2 from 'node:http2';
import type { Readable } from 'node:stream';
import type { LoadedKubeconfig } from './kubeconfig.js';

/** An answer over 299: `code` and the body, as toApiServerError reads them. */
export class HttpStatusError extends Error {
  readonly code: number;
  readonly body: string;
  constructor(code: number, body: string) {
    super(`HTTP ${code}`);
    this.code = code;
    this.body = body;
  }
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RestClient {
  /** One request; the parsed JSON answer (undefined for an empty body). */
  request(method: string, path: string, o: { query?: Query; body?: unknown; contentType?: string; signal: AbortSignal; timeoutMs: number }): Promise<unknown>;
  /**
   * A watch (`watch=true` is added): `onStart` once the server answered 200,
   * `onEvent` for every event line; resolves when the server ends it or the
   * signal aborts, rejects on an error answer or a broken connection, and
   * after `timeoutMs` without an end (a connection lost without a close).
   */
  watch(path: string, query: Query, o: { signal: AbortSignal; timeoutMs: number; onStart(): void; onEvent(type: string, object: unknown): void }): Promise<void>;
  /** Read the kubeconfig's certificate files again for the next connection (certificate rotation). */
  reloadCredentials(): void;
  close(): void;
}

interface Exchange {
  status: number;
  body: Readable;
  /** Abandon the exchange (a watch cut short by the client). */
  cancel(): void;
}

const TOKEN_FILE_REREAD_MS = 60_000;

function encodeQuery(q: Query | undefined): string {
  if (!q) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) if (v !== undefined) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

async function readAll(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function restClient(kc: LoadedKubeconfig): Promise<RestClient> {
  const url = new URL(kc.server);
  const origin = url.origin;
  const base = url.pathname.replace(/\/+$/, '');
  const { user, cluster } = kc;

  let token: { value: string; read: number } | undefined;
  async function authorization(): Promise<string | undefined> {
    if (user.token) return `Bearer ${user.token}`;
    if (user.tokenFile) {
      if (!token || Date.now() - token.read > TOKEN_FILE_REREAD_MS) token = { value: (await fs.readFile(user.tokenFile, 'utf8')).trim(), read: Date.now() };
      return `Bearer ${token.value}`;
    }
    if (user.username !== undefined) return `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
    return undefined;
  }

  /** TLS options from the kubeconfig, files read when a connection is made. */
  async function tlsOptions(): Promise<{ ca?: string; cert?: string; key?: string; rejectUnauthorized: boolean; servername?: string }> {
    const pem = async (file: string | undefined, data: string | undefined) => (data ? Buffer.from(data, 'base64').toString('utf8') : file ? fs.readFile(file, 'utf8') : undefined);
    const [ca, cert, key] = await Promise.all([pem(cluster.caFile, cluster.caData), pem(user.certFile, user.certData), pem(user.keyFile, user.keyData)]);
    return {
      ...(ca ? { ca } : {}),
      ...(cert ? { cert } : {}),
      ...(key ? { key } : {}),
      rejectUnauthorized: !cluster.insecure,
      ...(cluster.tlsServerName ? { servername: cluster.tlsServerName } : {}),
    };
  }

  async function headers(contentType: string | undefined, length: number | undefined): Promise<Record<string, string>> {
    const auth = await authorization();
    return {
      accept: 'application/json',
      'user-agent': 'klet',
      ...(auth ? { authorization: auth } : {}),
      ...(contentType ? { 'content-type': contentType } : {}),
      ...(length !== undefined ? { 'content-length': String(length) } : {}),
    };
  }

  let exchange: (method: string, path: string, hdrs: Record<string, string>, body: Buffer | undefined, signal: AbortSignal) => Promise<Exchange>;
  let reload: () => void;
  let closeAll: () => void;

  /** HTTP/1.1 with keep-alive: an http:// server, or an https:// one that does not offer h2 in ALPN (a proxy in front of it). */
  async function http1(secure: boolean): Promise<{ exchange: typeof exchange; close(): void }> {
    const mod = secure ? await import('node:https') : await import('node:http');
    let agent: http.Agent | undefined;
    let agentReady: Promise<http.Agent> | undefined;
    const getAgent = (): Promise<http.Agent> => {
      agentReady ??= (async () => {
        agent = secure ? new (mod as typeof import('node:https')).Agent({ keepAlive: true, ...(await tlsOptions()) }) : new mod.Agent({ keepAlive: true });
        return agent;
      })();
      return agentReady;
    };
    return {
      exchange: async (method, path, hdrs, body, signal) => {
        const a = await getAgent();
        return new Promise<Exchange>((resolve, reject) => {
          const req = mod.request(origin + base + path, { method, headers: hdrs, agent: a, signal }, (res: http.IncomingMessage) =>
            resolve({ status: res.statusCode ?? 0, body: res, cancel: () => req.destroy() }),
          );
          req.once('error', reject);
          req.end(body);
        });
      },
      // certificate rotation: the next request makes a new agent with the files read again
      close: () => {
        agent?.destroy();
        agent = undefined;
        agentReady = undefined;
      },
    };
  }

  if (url.protocol === 'https:') {
    const [h2, tlsMod, net] = await Promise.all([import('node:http2'), import('node:tls'), import('node:net')]);
    interface Conn {
      session: http2.ClientHttp2Session;
      /** The session, or 'http/1.1' when the server did not choose h2 in ALPN. */
      ready: Promise<'h2' | 'http/1.1'>;
      active: number;
      retired: boolean;
    }
    /** Set once a server answered ALPN without h2: every request then goes over HTTP/1.1, as Go's transport falls back. */
    let fallback: Awaited<ReturnType<typeof http1>> | undefined;
    const conns: Conn[] = [];
    const limitOf = (c: Conn) => Math.max(1, Math.min(c.session.remoteSettings?.maxConcurrentStreams ?? 100, 1000) - 1);
    const drop = (c: Conn) => {
      const i = conns.indexOf(c);
      if (i >= 0) conns.splice(i, 1);
    };
    const connect = (): Conn => {
      const ready = tlsOptions().then(
        (tls) =>
          new Promise<'h2' | 'http/1.1'>((resolve, reject) => {
            const host = url.hostname.replace(/^\[|\]$/g, '');
            const socket = tlsMod.connect({
              host,
              port: Number(url.port || 443),
              ...tls,
              ...(tls.servername === undefined && net.isIP(host) === 0 ? { servername: host } : {}),
              ALPNProtocols: ['h2', 'http/1.1'],
            });
            socket.once('error', reject);
            socket.once('secureConnect', () => {
              if (socket.alpnProtocol !== 'h2') {
                socket.destroy();
                resolve('http/1.1');
                return;
              }
              socket.removeListener('error', reject);
              const s = h2.connect(origin, { createConnection: () => socket });
              c.session = s;
              s.once('connect', () => resolve('h2'));
              s.once('error', reject);
            });
          }),
      );
      const c: Conn = { session: undefined as unknown as http2.ClientHttp2Session, ready, active: 0, retired: false };
      ready.then(
        (proto) => {
          if (proto !== 'h2') {
            drop(c);
            return;
          }
          const s = c.session;
          s.on('error', () => drop(c)); // the streams get the error; the next request connects anew
          s.on('close', () => drop(c));
          s.on('goaway', () => {
            c.retired = true;
          });
          if (c.active === 0) s.unref();
        },
        () => drop(c),
      );
      conns.push(c);
      return c;
    };
    const pick = (): Conn => {
      for (const c of conns) if (!c.retired && (c.session === undefined || !c.session.remoteSettings || c.active < limitOf(c))) return c;
      return connect();
    };
    exchange = async (method, path, hdrs, body, signal) => {
      if (fallback) return fallback.exchange(method, path, hdrs, body, signal);
      const c = pick();
      c.active++;
      if (c.active === 1) c.session?.ref();
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        c.active--;
        if (c.active === 0) {
          if (c.retired) c.session?.close();
          else c.session?.unref();
        }
      };
      try {
        const proto = await c.ready;
        if (proto !== 'h2') {
          release();
          fallback ??= await http1(true);
          return await fallback.exchange(method, path, hdrs, body, signal);
        }
        signal.throwIfAborted();
        const stream = c.session.request({ ':method': method, ':path': base + path, ...hdrs }, { signal, endStream: body === undefined });
        if (body !== undefined) stream.end(body);
        stream.once('close', release);
        const status = await new Promise<number>((resolve, reject) => {
          stream.once('response', (h) => resolve(Number(h[':status'])));
          stream.once('error', reject);
        });
        return { status, body: stream, cancel: () => stream.close(h2.constants.NGHTTP2_CANCEL) };
      } catch (err) {
        release();
        throw err;
      }
    };
    reload = () => {
      fallback?.close();
      for (const c of conns) {
        c.retired = true;
        if (c.active === 0) c.session?.close();
      }
    };
    closeAll = () => {
      fallback?.close();
      for (const c of conns.splice(0)) c.session?.destroy();
    };
  } else {
    const plain = await http1(false);
    exchange = plain.exchange;
    reload = () => {};
    closeAll = () => plain.close();
  }

  return {
    async request(method, path, o) {
      const body = o.body === undefined ? undefined : Buffer.from(JSON.stringify(o.body));
      const signal = AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs)]);
      const ex = await exchange(method, path + encodeQuery(o.query), await headers(body ? (o.contentType ?? 'application/json') : undefined, body?.length), body, signal);
      const text = await readAll(ex.body);
      if (ex.status < 200 || ex.status > 299) throw new HttpStatusError(ex.status, text);
      return text === '' ? undefined : (JSON.parse(text) as unknown);
    },

    async watch(path, query, o) {
      const ctrl = new AbortController();
      const onAbort = () => ctrl.abort(o.signal.reason);
      o.signal.addEventListener('abort', onAbort, { once: true });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        ctrl.abort(new Error('no end within its timeout'));
      }, o.timeoutMs);
      try {
        let ex: Exchange;
        try {
          ex = await exchange('GET', path + encodeQuery({ ...query, watch: true }), await headers(undefined, undefined), undefined, ctrl.signal);
        } catch (err) {
          if (o.signal.aborted) return;
          throw err;
        }
        if (ex.status !== 200) throw new HttpStatusError(ex.status, await readAll(ex.body));
        o.onStart();
        let rest = '';
        try {
          for await (const chunk of ex.body) {
            rest += (chunk as Buffer).toString('utf8');
            let nl: number;
            while ((nl = rest.indexOf('\n')) >= 0) {
              const line = rest.slice(0, nl);
              rest = rest.slice(nl + 1);
              if (line.trim() === '') continue;
              const ev = JSON.parse(line) as { type?: string; object?: unknown };
              o.onEvent(ev.type ?? '', ev.object);
            }
          }
        } catch (err) {
          ex.cancel();
          if (o.signal.aborted) return;
          if (timedOut) throw new Error(`the watch brought nothing past its timeout (${Math.round(o.timeoutMs / 1000)} s): the connection is taken as lost`, { cause: err });
          throw err;
        }
      } finally {
        clearTimeout(timer);
        o.signal.removeEventListener('abort', onAbort);
      }
    },

    reloadCredentials: () => reload(),
    close: () => closeAll(),
  };
}
