/**
 * One HTTP/1.1 GET on a fresh connection, for httpGet probes: the request is
 * one write, the response is parsed as it arrives (status line, headers,
 * body framed by Content-Length, chunked transfer coding or the end of the
 * connection) and the connection is closed once the status and at most
 * `maxBody` bytes of the body are in. A probe needs no more of HTTP than
 * that; node:http's client (ClientRequest, an Agent per request, a body
 * stream) cost twice the CPU per probe, and 220 probes a second add up.
 * Errors are worded as Go's net/http words them (the kubelet's messages).
 */
import net from 'node:net';
import tls from 'node:tls';
import { dialError } from './net-errors.js';

export interface Http1Answer {
  status: number;
  location: string | undefined;
  /** At most maxBody bytes of the body, as UTF-8. */
  body: string;
}

export interface Http1Request {
  https: boolean;
  host: string;
  port: number;
  /** Path and query, already escaped (a URL's pathname + search). */
  path: string;
  /** The Host header. */
  hostHeader: string;
  /** Other headers, in order. */
  headers: [string, string][];
  /** Deadline, ms since the epoch. */
  deadline: number;
  maxBody: number;
  signal?: AbortSignal;
}

/** A failed request: `message` is what follows `Get "URL": ` in the probe's output. */
export class Http1Error extends Error {}

/** Go's limit is 10 MiB (Transport.MaxResponseHeaderBytes); a probe needs far less. */
export const MAX_HEADER_BYTES = 1024 * 1024;
const MAX_CHUNK_LINE = 4096;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Go's httpguts.ValidHeaderFieldValue: no control characters but tab.
// eslint-disable-next-line no-control-regex
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const CRLFCRLF = Buffer.from('\r\n\r\n');

/** The request's bytes, or an error naming the header that cannot be sent. */
export function requestHead(r: Pick<Http1Request, 'path' | 'hostHeader' | 'headers'>): string {
  let head = `GET ${r.path} HTTP/1.1\r\nHost: ${r.hostHeader}\r\n`;
  if (BAD_VALUE.test(r.hostHeader)) throw new Http1Error(`invalid Host header`);
  for (const [name, value] of r.headers) {
    if (!TOKEN.test(name)) throw new Http1Error(`net/http: invalid header field name ${JSON.stringify(name)}`);
    if (BAD_VALUE.test(value)) throw new Http1Error(`net/http: invalid header field value for ${JSON.stringify(name)}`);
    head += `${name}: ${value}\r\n`;
  }
  // The kubelet's probe transport disables keep-alive: Go then sends Connection: close.
  return head + 'Connection: close\r\n\r\n';
}

type BodyMode = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'eof' };

/** Incremental response parser; `push` returns the answer once it is complete (or enough of the body is in). */
class ResponseParser {
  private head: Buffer = Buffer.alloc(0);
  private status = 0;
  private location: string | undefined;
  private mode: BodyMode | undefined;
  private readonly body: Buffer[] = [];
  private bodyLen = 0;
  // Chunked decoding.
  private chunkLeft = 0;
  private chunkState: 'size' | 'data' | 'crlf' = 'size';
  private chunkLine = '';
  private crlfLeft = 0;

  constructor(private readonly maxBody: number) {}

  get inBody(): boolean {
    return this.mode !== undefined;
  }

  private answer(): Http1Answer {
    return { status: this.status, location: this.location, body: Buffer.concat(this.body, this.bodyLen).toString('utf8') };
  }

  /** More bytes; an answer when done. Throws Http1Error on a malformed response. */
  push(data: Buffer): Http1Answer | undefined {
    if (this.mode === undefined) {
      this.head = this.head.length === 0 ? data : Buffer.concat([this.head, data]);
      for (;;) {
        const end = this.head.indexOf(CRLFCRLF);
        if (end < 0) {
          if (this.head.length > MAX_HEADER_BYTES) throw new Http1Error(`net/http: server response headers exceeded ${MAX_HEADER_BYTES} bytes; aborted`);
          return undefined;
        }
        const rest = this.head.subarray(end + 4);
        const informational = this.parseHead(this.head.subarray(0, end).toString('latin1'));
        this.head = rest;
        if (!informational) break;
        this.mode = undefined; // a 1xx: the real response follows
      }
      const rest = this.head;
      this.head = Buffer.alloc(0);
      const mode = this.mode as BodyMode | undefined;
      if (mode === undefined) return undefined;
      if (mode.kind === 'none' || (mode.kind === 'length' && mode.left === 0)) return this.answer();
      return rest.length > 0 ? this.pushBody(rest) : undefined;
    }
    return this.pushBody(data);
  }

  /** The connection ended: the answer when the body may end there, else an error. */
  end(): Http1Answer {
    if (this.mode === undefined) throw new Http1Error('EOF');
    if (this.mode.kind === 'eof') return this.answer();
    throw new Http1Error('unexpected EOF');
  }

  /** Parse a response head; true for a 1xx response other than 101 (skipped, as Go's client does). */
  private parseHead(text: string): boolean {
    const lines = text.split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0] ?? '');
    if (!m) throw new Http1Error(`net/http: HTTP/1.x transport connection broken: malformed HTTP response ${JSON.stringify((lines[0] ?? '').slice(0, 100))}`);
    this.status = Number(m[1]);
    let length: number | undefined;
    let chunked = false;
    this.location = undefined;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'location') this.location ??= value;
      else if (name === 'transfer-encoding') chunked = /(^|,)\s*chunked\s*$/i.test(value);
      else if (name === 'content-length') {
        if (!/^\d+$/.test(value)) throw new Http1Error(`net/http: HTTP/1.x transport connection broken: bad Content-Length ${JSON.stringify(value)}`);
        length = Number(value);
      }
    }
    if (this.status >= 100 && this.status < 200 && this.status !== 101) return true;
    if (this.status === 204 || this.status === 304 || (this.status >= 100 && this.status < 200)) this.mode = { kind: 'none' };
    else if (chunked) this.mode = { kind: 'chunked' };
    else if (length !== undefined) this.mode = { kind: 'length', left: length };
    else this.mode = { kind: 'eof' };
    return false;
  }

  /** Keep body bytes; true once maxBody is reached. */
  private keep(b: Buffer): boolean {
    const room = this.maxBody - this.bodyLen;
    if (room > 0 && b.length > 0) {
      const part = b.length > room ? b.subarray(0, room) : b;
      this.body.push(part);
      this.bodyLen += part.length;
    }
    return this.bodyLen >= this.maxBody;
  }

  private pushBody(data: Buffer): Http1Answer | undefined {
    const mode = this.mode!;
    if (mode.kind === 'eof') return this.keep(data) ? this.answer() : undefined;
    if (mode.kind === 'length') {
      const part = data.length > mode.left ? data.subarray(0, mode.left) : data;
      mode.left -= part.length;
      if (this.keep(part) || mode.left === 0) return this.answer();
      return undefined;
    }
    if (mode.kind === 'none') return this.answer();
    // Chunked: size line, data, CRLF; a zero size ends the body (trailers are not read).
    let i = 0;
    while (i < data.length) {
      if (this.chunkState === 'size') {
        const nl = data.indexOf(0x0a, i);
        const upto = nl < 0 ? data.length : nl;
        this.chunkLine += data.toString('latin1', i, upto);
        if (this.chunkLine.length > MAX_CHUNK_LINE) throw new Http1Error('net/http: HTTP/1.x transport connection broken: chunk line too long');
        if (nl < 0) return undefined;
        i = nl + 1;
        const hex = this.chunkLine.replace(/\r$/, '').split(';')[0]!.trim();
        this.chunkLine = '';
        if (!/^[0-9a-fA-F]{1,15}$/.test(hex)) throw new Http1Error('net/http: HTTP/1.x transport connection broken: invalid byte in chunk length');
        this.chunkLeft = parseInt(hex, 16);
        if (this.chunkLeft === 0) return this.answer();
        this.chunkState = 'data';
      } else if (this.chunkState === 'data') {
        const n = Math.min(this.chunkLeft, data.length - i);
        const full = this.keep(data.subarray(i, i + n));
        this.chunkLeft -= n;
        i += n;
        if (full) return this.answer();
        if (this.chunkLeft === 0) {
          this.chunkState = 'crlf';
          this.crlfLeft = 2;
        }
      } else {
        const n = Math.min(this.crlfLeft, data.length - i);
        this.crlfLeft -= n;
        i += n;
        if (this.crlfLeft === 0) this.chunkState = 'size';
      }
    }
    return undefined;
  }
}

/**
 * GET on a new connection (TLS without certificate verification for
 * HTTPS). Rejects with Http1Error: the dial error, `EOF`, the deadline
 * (`context deadline exceeded (Client.Timeout exceeded while awaiting
 * headers)`), `context canceled`, a malformed response.
 */
export function http1Get(r: Http1Request): Promise<Http1Answer> {
  let head: string;
  try {
    head = requestHead(r);
  } catch (err) {
    return Promise.reject(err);
  }
  return new Promise((resolve, reject) => {
    const parser = new ResponseParser(r.maxBody);
    let settled = false;
    const sock: net.Socket = r.https
      ? tls.connect({ host: r.host, port: r.port, rejectUnauthorized: false, ...(net.isIP(r.host) === 0 ? { servername: r.host } : {}) })
      : net.connect({ host: r.host, port: r.port });
    const settle = (err: Error | null, a?: Http1Answer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      r.signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      if (err) reject(err);
      else resolve(a!);
    };
    const timer = setTimeout(
      () => settle(new Http1Error(`context deadline exceeded (Client.Timeout exceeded while ${parser.inBody ? 'reading body' : 'awaiting headers'})`)),
      Math.max(0, r.deadline - Date.now()),
    );
    const onAbort = (): void => settle(new Http1Error('context canceled'));
    if (r.signal?.aborted) return onAbort();
    r.signal?.addEventListener('abort', onAbort, { once: true });
    let connected = false;
    sock.once(r.https ? 'secureConnect' : 'connect', () => {
      connected = true;
      sock.write(head, 'latin1');
    });
    sock.on('data', (data: Buffer) => {
      try {
        const a = parser.push(data);
        if (a) settle(null, a);
      } catch (err) {
        settle(err as Error);
      }
    });
    sock.once('end', () => {
      try {
        settle(null, parser.end());
      } catch (err) {
        settle(err as Error);
      }
    });
    sock.once('error', (err: NodeJS.ErrnoException) => {
      if (!connected && err.code && /^(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EADDRNOTAVAIL)$/.test(err.code)) {
        settle(new Http1Error(dialError(r.host, r.port, err)));
      } else if (err.code === 'ECONNRESET' || err.code === 'EPIPE') settle(new Http1Error(parser.inBody ? 'unexpected EOF' : 'EOF'));
      else settle(new Http1Error(err.message));
    });
  });
}
