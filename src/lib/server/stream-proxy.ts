/**
 * The kubelet's proxyStream: an upgraded connection (SPDY/3.1 or WebSocket,
 * for exec, attach and port-forward) relayed byte for byte to the URL the
 * runtime's streaming server answered with (CRI Exec/Attach/PortForward).
 * The API server reaches only the kubelet; the runtime's streaming server
 * listens on loopback. Nothing here parses the framing: the client and the
 * runtime negotiate the subprotocol (X-Stream-Protocol-Version,
 * Sec-WebSocket-Protocol) between themselves, so every protocol either side
 * speaks works.
 */
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';

/** How long a side may stay half open after the other closed. */
const HALF_OPEN_GRACE_MS = 2_000;

/** Read buffers per relayed connection (runtime → client), and their size. */
const READ_BUFFERS = 4;
const READ_BUFFER_BYTES = 64 * 1024;

/** Request headers that stay with the kubelet: the caller's credentials are never handed to the runtime. */
const DROPPED_HEADERS = new Set(['authorization', 'host', 'proxy-authorization', 'cookie']);

/** The request line and headers sent to the streaming server (exported for tests). */
export function upstreamRequestHead(req: IncomingMessage, target: URL): string {
  const query = req.url?.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
  const lines = [`${req.method ?? 'GET'} ${target.pathname}${target.search || query} HTTP/1.1`, `Host: ${target.host}`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (DROPPED_HEADERS.has(name.toLowerCase())) continue;
    // Header values cannot carry CR or LF (Node's parser refuses them): copied as they came.
    lines.push(`${name}: ${raw[i + 1]}`);
  }
  const forwarded = req.headers['x-forwarded-for'];
  if (forwarded === undefined && req.socket.remoteAddress) lines.push(`X-Forwarded-For: ${req.socket.remoteAddress}`);
  return lines.join('\r\n') + '\r\n\r\n';
}

/**
 * Relay an upgrade request (its `head`: bytes already read past the
 * headers) to `target`, then pipe both ways until either side closes; the
 * returned promise settles when both sockets are closed. A streaming server
 * that cannot be reached gets the client a 500 with the error.
 */
export function proxyUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, target: URL, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (target.protocol !== 'http:') {
      writeHttpError(client, 500, `unsupported streaming URL scheme ${target.protocol}\n`);
      resolve();
      return;
    }
    // Interactive streams: small frames go at once both ways (Nagle's delay doubled exec's round trip; bench/README).
    // The runtime's side is read into a few reused buffers rather than a new one per read (Node's default): a
    // 200 MiB port-forward download allocated 200 MiB of short-lived buffers, and that churn set off a full
    // mark-compact of klet's whole heap every few hundred ms (bench/README, kubelet-api).
    const reader = reusedBufferReader(client);
    const upstream = net.connect({ host: target.hostname, port: Number(target.port || 80), noDelay: true, onread: reader.onread });
    reader.attach(upstream);
    (client as Partial<net.Socket>).setNoDelay?.(true);
    let connected = false;
    let done = 0;
    const closed = (): void => {
      if (++done === 2) {
        signal.removeEventListener('abort', abort);
        resolve();
      }
    };
    const abort = (): void => {
      upstream.destroy();
      client.destroy();
    };
    signal.addEventListener('abort', abort, { once: true });
    upstream.once('close', closed);
    client.once('close', closed);
    upstream.once('connect', () => {
      connected = true;
      upstream.write(upstreamRequestHead(req, target));
      if (head.length > 0) upstream.write(head);
      upstream.once('end', () => client.end());
      client.pipe(upstream);
    });
    upstream.on('error', (err) => {
      if (!connected) writeHttpError(client, 500, `error dialing backend: ${err.message}\n`);
      client.destroy();
    });
    client.on('error', () => upstream.destroy());
    // Once one side is gone the stream is over: the other is ended (what was piped is flushed first) and,
    // should its peer keep its half open, destroyed a moment later. Neither protocol half-closes a live stream.
    const finish = (other: Duplex) => () => {
      if (other.destroyed) return;
      other.end();
      setTimeout(() => other.destroy(), HALF_OPEN_GRACE_MS).unref();
    };
    upstream.once('close', finish(client));
    client.once('close', finish(upstream));
  });
}

/**
 * A socket's reads copied to `dest` through a few reused buffers. A buffer goes back to the pool
 * only once `dest` has taken its bytes (the write's callback), and reading stops while `dest`
 * asks to drain or all but one buffer are being written (Node asks for the next read's buffer
 * right after each read, even when reading stops), so no byte is overwritten before it is
 * written, at most READ_BUFFERS buffers exist, and a slow client holds the runtime back as
 * pipe() would.
 */
function reusedBufferReader(dest: Duplex): { onread: net.OnReadOpts; attach(source: net.Socket): void } {
  const free: Buffer[] = [];
  let writing = 0;
  let paused = false;
  let source: net.Socket | undefined;
  const resume = (): void => {
    if (paused && writing < READ_BUFFERS - 1 && !dest.writableNeedDrain && source !== undefined && !source.destroyed) {
      paused = false;
      source.resume();
    }
  };
  dest.on('drain', resume);
  return {
    onread: {
      buffer: () => free.pop() ?? Buffer.allocUnsafe(READ_BUFFER_BYTES),
      callback: (nread: number, buf: Uint8Array): boolean => {
        if (dest.destroyed || dest.writableEnded) return true;
        writing++;
        const ok = dest.write(buf.subarray(0, nread), () => {
          writing--;
          free.push(buf as Buffer);
          resume();
        });
        if (ok && writing < READ_BUFFERS - 1) return true;
        paused = true;
        return false;
      },
    },
    attach(s: net.Socket): void {
      source = s;
    },
  };
}

/** A plain HTTP/1.1 error on a socket that was never upgraded; `body` as given (the kubelet ends some with a newline, not others). */
export function writeHttpError(socket: Duplex, status: number, body: string): void {
  if (socket.destroyed) return;
  const reason = ({ 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 500: 'Internal Server Error' } as Record<number, string>)[status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
