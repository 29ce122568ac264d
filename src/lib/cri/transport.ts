/**
 * gRPC over HTTP/2 to a local unix socket, on Node's own `http2`: the
 * transport of the CRI client (client.ts), unary and server-streaming calls.
 *
 * Why not grpc-js: it was the CRI client's transport until the fourteenth
 * session. For the CRI's shape of use (one local socket, no name
 * resolution, no load balancing, no TLS, no compression, no retries) its
 * layers cost CPU on every call: 330 calls in waves of 30 took 139–159 ms of
 * CPU with grpc-js against 53–65 ms with a bare HTTP/2 call, and loading its
 * 65 CommonJS files took 30–50 ms of every command's start
 * (bench/README.md, "The CRI transport"). What it did that matters here is
 * kept: a deadline on every call (sent as `grpc-timeout`, enforced here),
 * cancellation, a fresh connection after the runtime restarts, the message
 * size limit, and the gRPC wire rules for status, trailers-only responses
 * and HTTP errors (grpc/doc/PROTOCOL-HTTP2.md).
 *
 * A failed call rejects with GrpcCallError, which carries the gRPC status
 * `code` and the server's `details` (what toCriError reads).
 */
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import net from 'node:net';
import { GrpcStatus } from './grpc-status.js';

/** A gRPC status other than OK. */
export class GrpcCallError extends Error {
  readonly code: number;
  /** The server's text (grpc-message), or ours for a local failure. */
  readonly details: string;
  constructor(code: number, details: string, options?: { cause?: unknown }) {
    super(`${code} ${GrpcStatus[code] ?? 'UNKNOWN'}: ${details}`, options);
    this.name = 'GrpcCallError';
    this.code = code;
    this.details = details;
  }
}

export interface CallParams {
  /** Epoch ms when the call fails with DEADLINE_EXCEEDED; none when undefined. */
  deadlineAt?: number;
  /** Cancels the call: it fails with CANCELLED. */
  signal?: AbortSignal;
}

export interface ChannelOptions {
  /** The largest message accepted or sent, in bytes. */
  maxMessageBytes: number;
}

const {
  HTTP2_HEADER_STATUS,
  HTTP2_HEADER_CONTENT_TYPE,
  NGHTTP2_CANCEL,
  NGHTTP2_REFUSED_STREAM,
  NGHTTP2_ENHANCE_YOUR_CALM,
} = http2.constants;

/** Per-stream and connection receive window: a large list answer arrives without waiting for window updates. */
const WINDOW_BYTES = 4 * 1024 * 1024;

/** grpc-timeout: at most 8 digits, in the coarsest unit that keeps it in range. */
function grpcTimeout(ms: number): string {
  const n = Math.max(1, Math.ceil(ms));
  return n < 1e8 ? `${n}m` : `${Math.min(99_999_999, Math.ceil(n / 1000))}S`;
}

/** The gRPC code for an HTTP status that is not 200 (PROTOCOL-HTTP2.md, http-grpc-status-mapping). */
function codeOfHttpStatus(status: number): GrpcStatus {
  switch (status) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

/** grpc-message is percent-encoded. */
function decodeMessage(value: string | string[] | undefined): string {
  const raw = Array.isArray(value) ? value.join(',') : (value ?? '');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The status a response's headers or trailers carry, or undefined when they carry none. */
function statusOf(headers: IncomingHttpHeaders): GrpcCallError | null | undefined {
  const text = headerText(headers['grpc-status']);
  if (text === undefined) return undefined;
  const code = Number(text);
  if (!Number.isInteger(code) || code < 0) return new GrpcCallError(GrpcStatus.UNKNOWN, `invalid grpc-status ${JSON.stringify(text)}`);
  return code === GrpcStatus.OK ? null : new GrpcCallError(code, decodeMessage(headers['grpc-message']));
}

/** An HTTP/2 connection and its calls in flight (it holds the process only while there are some). */
interface Connection {
  session: ClientHttp2Session;
  active: number;
}

/** Receives a call's messages and its end; `end(null)` is status OK. */
interface CallSink {
  message(msg: Buffer): void;
  end(err: GrpcCallError | null): void;
}

/**
 * One HTTP/2 connection to the runtime's socket, opened on first use and
 * again after it closes (a runtime restart, GOAWAY). Calls in flight on a
 * connection that breaks fail with UNAVAILABLE; there is no retry, as in
 * the kubelet's CRI client. The connection keeps the process alive only
 * while calls are in flight.
 */
export class GrpcChannel {
  private conn: Connection | undefined;
  private closed = false;
  private readonly calls = new Set<(err: GrpcCallError) => void>();

  constructor(
    private readonly socketPath: string,
    private readonly opts: ChannelOptions,
  ) {}

  /** One request, one response message. Rejects with GrpcCallError. */
  unary(path: string, request: Uint8Array, params: CallParams = {}): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      let response: Buffer | undefined;
      let failed: GrpcCallError | undefined;
      this.start(path, request, params, {
        message(msg) {
          if (response === undefined) response = msg;
          else failed ??= new GrpcCallError(GrpcStatus.INTERNAL, 'more than one response message for a unary call');
        },
        end(err) {
          const fail = err ?? failed ?? (response === undefined ? new GrpcCallError(GrpcStatus.INTERNAL, 'no response message') : undefined);
          if (fail !== undefined) reject(fail);
          else resolve(response as Buffer);
        },
      });
    });
  }

  /**
   * One request, a stream of response messages, until the server ends the
   * call (OK ends the iteration, anything else throws GrpcCallError), the
   * signal aborts, or the consumer stops iterating (the call is cancelled).
   */
  async *serverStream(path: string, request: Uint8Array, params: CallParams = {}): AsyncGenerator<Buffer, void, undefined> {
    const queue: Buffer[] = [];
    let ended: { err: GrpcCallError | null } | undefined;
    let wake: (() => void) | undefined;
    const local = new AbortController();
    const onAbort = (): void => local.abort();
    if (params.signal?.aborted) local.abort();
    else params.signal?.addEventListener('abort', onAbort, { once: true });
    this.start(path, request, { deadlineAt: params.deadlineAt, signal: local.signal }, {
      message(msg) {
        queue.push(msg);
        wake?.();
      },
      end(err) {
        ended = { err };
        wake?.();
      },
    });
    try {
      for (;;) {
        const msg = queue.shift();
        if (msg !== undefined) {
          yield msg;
          continue;
        }
        if (ended !== undefined) {
          if (ended.err !== null) throw ended.err;
          return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      params.signal?.removeEventListener('abort', onAbort);
      local.abort(); // no-op once the call ended; cancels it when the consumer breaks out
    }
  }

  /** Closes the connection; calls in flight fail with CANCELLED, later ones too. */
  close(): void {
    this.closed = true;
    for (const fail of [...this.calls]) fail(new GrpcCallError(GrpcStatus.CANCELLED, 'the client was closed'));
    this.conn?.session.close();
    this.conn = undefined;
  }

  private connection(): Connection {
    const live = this.conn;
    if (live !== undefined && !live.session.closed && !live.session.destroyed) return live;
    const session = http2.connect('http://localhost', {
      createConnection: () => net.connect(this.socketPath),
      settings: { enablePush: false, initialWindowSize: WINDOW_BYTES },
      maxSendHeaderBlockLength: 64 * 1024,
    });
    const conn: Connection = { session, active: 0 };
    const forget = (): void => {
      if (this.conn === conn) this.conn = undefined;
    };
    // A connection's failure reaches each call as its stream's error; here it is only forgotten.
    session.on('error', forget);
    session.on('goaway', forget);
    session.on('close', forget);
    session.once('connect', () => session.setLocalWindowSize(WINDOW_BYTES));
    this.conn = conn;
    return conn;
  }

  private start(path: string, request: Uint8Array, params: CallParams, sink: CallSink): void {
    if (this.closed) return sink.end(new GrpcCallError(GrpcStatus.CANCELLED, 'the client was closed'));
    if (params.signal?.aborted) return sink.end(new GrpcCallError(GrpcStatus.CANCELLED, 'cancelled before it started'));
    if (request.length > this.opts.maxMessageBytes) {
      return sink.end(
        new GrpcCallError(GrpcStatus.RESOURCE_EXHAUSTED, `request message of ${request.length} bytes is larger than the limit of ${this.opts.maxMessageBytes}`),
      );
    }
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      'user-agent': 'klet',
    };
    if (params.deadlineAt !== undefined) headers['grpc-timeout'] = grpcTimeout(params.deadlineAt - Date.now());

    let conn: Connection;
    let stream: ClientHttp2Stream;
    try {
      conn = this.connection();
      stream = conn.session.request(headers, { endStream: false });
    } catch (err) {
      return sink.end(new GrpcCallError(GrpcStatus.UNAVAILABLE, err instanceof Error ? err.message : String(err), { cause: err }));
    }
    const { session } = conn;
    if (conn.active++ === 0) session.ref();

    let settled = false;
    let status: GrpcCallError | null | undefined; // from trailers (or a trailers-only response)
    let streamError: Error | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (err: GrpcCallError | null): void => {
      if (settled) return;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      params.signal?.removeEventListener('abort', onAbort);
      this.calls.delete(cancel);
      if (--conn.active === 0 && !session.destroyed) session.unref();
      sink.end(err);
    };
    /** Ends the call here with `err` and resets the stream. */
    const cancel = (err: GrpcCallError): void => {
      if (settled) return;
      if (!stream.destroyed) stream.close(NGHTTP2_CANCEL);
      finish(err);
    };
    const onAbort = (): void => cancel(new GrpcCallError(GrpcStatus.CANCELLED, 'cancelled on the client'));
    this.calls.add(cancel);
    params.signal?.addEventListener('abort', onAbort, { once: true });
    if (params.deadlineAt !== undefined) {
      timer = setTimeout(() => cancel(new GrpcCallError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded')), Math.max(0, params.deadlineAt - Date.now()));
    }

    stream.on('response', (h) => {
      const http = Number(h[HTTP2_HEADER_STATUS]);
      if (http !== 200) {
        return cancel(new GrpcCallError(codeOfHttpStatus(http), `HTTP status ${http} from the server`));
      }
      const type = headerText(h[HTTP2_HEADER_CONTENT_TYPE]) ?? '';
      if (!type.startsWith('application/grpc')) {
        return cancel(new GrpcCallError(GrpcStatus.UNKNOWN, `content-type ${JSON.stringify(type)} is not gRPC`));
      }
      status = statusOf(h); // a trailers-only response
    });
    stream.on('trailers', (t) => {
      const s = statusOf(t);
      status = s === undefined ? new GrpcCallError(GrpcStatus.UNKNOWN, 'the server sent trailers without grpc-status') : s;
    });

    // Length-prefixed messages: 1 byte compressed flag, 4 bytes length, the message.
    const chunks: Buffer[] = [];
    let buffered = 0;
    let need = 5;
    const max = this.opts.maxMessageBytes;
    stream.on('data', (chunk: Buffer) => {
      if (settled) return;
      chunks.push(chunk);
      buffered += chunk.length;
      while (buffered >= need) {
        let buf = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, buffered);
        chunks.length = 0;
        while (buf.length >= 5) {
          if (buf[0] !== 0) return cancel(new GrpcCallError(GrpcStatus.INTERNAL, 'compressed message, but no compression was asked for'));
          const len = buf.readUInt32BE(1);
          if (len > max) {
            return cancel(new GrpcCallError(GrpcStatus.RESOURCE_EXHAUSTED, `response message of ${len} bytes is larger than the limit of ${max}`));
          }
          if (buf.length < 5 + len) break;
          sink.message(buf.subarray(5, 5 + len));
          if (settled) return;
          buf = buf.subarray(5 + len);
        }
        buffered = buf.length;
        need = buf.length >= 5 ? 5 + buf.readUInt32BE(1) : 5;
        if (buf.length > 0) chunks.push(buf);
      }
    });
    stream.on('error', (err) => {
      streamError = err;
    });
    stream.on('close', () => {
      if (settled) return;
      if (status !== undefined) {
        if (status === null && buffered > 0) return finish(new GrpcCallError(GrpcStatus.INTERNAL, 'the response ended inside a message'));
        return finish(status);
      }
      // The connection failed or went (never connected: ENOENT, ECONNREFUSED, EACCES; a runtime that
      // stopped or restarted, GOAWAY): UNAVAILABLE, as a gRPC client reports a broken transport.
      if (session.destroyed || session.closed || (streamError !== undefined && stream.rstCode === undefined)) {
        const cause = (streamError as { cause?: unknown } | undefined)?.cause;
        const text =
          streamError === undefined
            ? 'the connection to the server closed'
            : cause instanceof Error
              ? `${streamError.message} (${cause.message})`
              : streamError.message;
        return finish(new GrpcCallError(GrpcStatus.UNAVAILABLE, text, { cause: streamError }));
      }
      // The server reset this stream on a live connection (PROTOCOL-HTTP2.md, errors).
      const code = stream.rstCode;
      if (code === NGHTTP2_REFUSED_STREAM) return finish(new GrpcCallError(GrpcStatus.UNAVAILABLE, 'the server refused the stream'));
      if (code === NGHTTP2_CANCEL) return finish(new GrpcCallError(GrpcStatus.CANCELLED, 'the server cancelled the call'));
      if (code === NGHTTP2_ENHANCE_YOUR_CALM) return finish(new GrpcCallError(GrpcStatus.RESOURCE_EXHAUSTED, 'the server asked to slow down'));
      finish(new GrpcCallError(GrpcStatus.INTERNAL, code ? `the stream was reset (HTTP/2 error ${code})` : 'the server ended the call without a status'));
    });

    const frame = Buffer.allocUnsafe(5 + request.length);
    frame[0] = 0;
    frame.writeUInt32BE(request.length, 1);
    frame.set(request, 5);
    stream.end(frame);
  }
}
