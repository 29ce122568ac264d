/**
 * The client half of SPDY/3.1 as Kubernetes streaming uses it (the
 * runtime's streaming server and the kubelet speak it through
 * moby/spdystream): after an HTTP upgrade, one connection carries several
 * streams, each opened by the client with SYN_STREAM and a few headers
 * (streamType, port, requestID), carrying DATA frames, and half-closed with
 * the FIN flag — which is what lets `klet exec -i` end a command's stdin, as
 * `kubectl exec` does, where the WebSocket protocol before v5 cannot.
 *
 * Only what that use needs: client-initiated streams, DATA, FIN, RST_STREAM,
 * PING answered, GOAWAY; header blocks compressed with the SPDY/3 zlib
 * dictionary (one deflate context for the connection, as the protocol
 * requires). Reply headers are never read, so incoming header blocks are
 * skipped without decompressing them. No flow control: spdystream has none.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import { SPDY3_HEADER_DICTIONARY } from './spdy-dictionary.js';

const VERSION = 3;
const FLAG_FIN = 0x01;
const CONTROL = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;
/** RST_STREAM status CANCEL. */
const RST_CANCEL = 5;
/** How long the server may take to accept a stream (kubectl's createStreamResponseTimeout). */
const STREAM_REPLY_TIMEOUT_MS = 30_000;
/** Largest DATA payload this client sends in one frame. */
const MAX_DATA_FRAME = 64 * 1024;

/** One stream: `data` events with Buffers, `end` when the server half-closed it, `close` when both are done or it was reset. */
export class SpdyStream extends EventEmitter {
  remoteEnded = false;
  localEnded = false;
  reset = false;
  /** Settles when the server accepted the stream (SYN_REPLY) or refused it (RST_STREAM, the session's end). */
  readonly replied: Promise<void>;
  private settleReply!: (err?: Error) => void;

  constructor(
    readonly id: number,
    private readonly session: SpdySession,
  ) {
    super();
    this.replied = new Promise<void>((resolve, reject) => {
      this.settleReply = (err) => (err ? reject(err) : resolve());
    });
    this.replied.catch(() => undefined);
    // A listener arriving after the frames did gets them on the next microtask, in order.
    this.on('newListener', (event: string) => {
      if ((event === 'data' || event === 'end') && this.inbox.length > 0) queueMicrotask(() => this.flush());
    });
  }

  /**
   * What arrived while nobody listened for 'data' or 'end' (a stream's
   * reply and its first frames often come in one read, before the opener's
   * await resumes): kept, in order with the 'end' and 'close' after them.
   */
  private readonly inbox: Array<Buffer | 'end' | 'close'> = [];

  private deliver(item: Buffer | 'end' | 'close'): void {
    const listening = this.listenerCount('data') > 0 || this.listenerCount('end') > 0;
    if (this.inbox.length > 0 || (!listening && item !== 'close')) {
      this.inbox.push(item);
      return;
    }
    this.emitItem(item);
  }

  private flush(): void {
    while (this.inbox.length > 0 && (this.listenerCount('data') > 0 || this.listenerCount('end') > 0)) this.emitItem(this.inbox.shift()!);
  }

  private emitItem(item: Buffer | 'end' | 'close'): void {
    if (item === 'end' || item === 'close') this.emit(item);
    else this.emit('data', item);
  }

  /** @internal */
  onReply(): void {
    this.settleReply();
  }

  /** Send data (split into frames as needed). */
  write(data: Buffer): void {
    if (this.localEnded || this.reset) return;
    for (let i = 0; i < data.length; i += MAX_DATA_FRAME) this.session.sendData(this.id, data.subarray(i, i + MAX_DATA_FRAME), false);
  }

  /** Half-close: no more data from this side (DATA with FIN). */
  end(): void {
    if (this.localEnded || this.reset) return;
    this.localEnded = true;
    this.session.sendData(this.id, Buffer.alloc(0), true);
    this.maybeClosed();
  }

  /** Abort the stream (RST_STREAM CANCEL). */
  cancel(): void {
    if (this.reset) return;
    this.session.sendReset(this.id);
    this.onReset();
  }

  /** @internal */
  onData(data: Buffer, fin: boolean): void {
    if (data.length > 0) this.deliver(data);
    if (fin && !this.remoteEnded) {
      this.remoteEnded = true;
      this.deliver('end');
      this.maybeClosed();
    }
  }

  /** @internal */
  onReset(): void {
    if (this.reset) return;
    this.reset = true;
    this.settleReply(new Error(`the streaming server refused or reset stream ${this.id}`));
    if (!this.remoteEnded) {
      this.remoteEnded = true;
      this.deliver('end');
    }
    this.deliver('close');
  }

  private maybeClosed(): void {
    if (this.localEnded && this.remoteEnded && !this.reset) this.deliver('close');
  }
}

export class SpdySession extends EventEmitter {
  private readonly streams = new Map<number, SpdyStream>();
  private nextId = 1;
  private buffer: Buffer = Buffer.alloc(0);
  private readonly deflate = zlib.createDeflate({ dictionary: SPDY3_HEADER_DICTIONARY });
  /** Header blocks are compressed one after another in one zlib context: each waits for the one before. */
  private compressing: Promise<unknown> = Promise.resolve();
  closed = false;
  /** The connection's error, if it ended with one (a reset by the runtime, say). */
  error: Error | undefined;

  constructor(private readonly socket: Duplex, head: Buffer = Buffer.alloc(0)) {
    super();
    socket.on('data', (b: Buffer) => this.onBytes(b));
    // An error ends the session (its streams are reset on 'close'); it is emitted only to a listener,
    // never thrown as an unhandled 'error' event: a reset after the exit status arrived crashed `klet exec`.
    socket.on('error', (err) => {
      this.error ??= err;
      if (this.listenerCount('error') > 0) this.emit('error', err);
    });
    socket.on('close', () => this.shutdown());
    if (head.length > 0) this.onBytes(head);
  }

  /** Open a stream with these headers (names lower-cased, as SPDY requires). Resolves once the SYN_STREAM is on its way. */
  async openStream(headers: Record<string, string>): Promise<SpdyStream> {
    if (this.closed) throw new Error('the streaming connection is closed');
    const id = this.nextId;
    this.nextId += 2;
    const stream = new SpdyStream(id, this);
    this.streams.set(id, stream);
    const block = await this.compressHeaders(headers);
    const body = Buffer.alloc(10);
    body.writeUInt32BE(id & 0x7fffffff, 0);
    body.writeUInt32BE(0, 4);
    body.writeUInt8(0, 8); // priority 0
    body.writeUInt8(0, 9); // slot
    this.sendControl(CONTROL.SYN_STREAM, 0, Buffer.concat([body, block]));
    // Data sent before the server replied is dropped by spdystream: wait, as kubectl's client does (30 s).
    const timer = setTimeout(() => stream.onReset(), STREAM_REPLY_TIMEOUT_MS);
    try {
      await stream.replied;
    } finally {
      clearTimeout(timer);
    }
    return stream;
  }

  /** End the session: GOAWAY, then the socket. */
  close(): void {
    if (this.closed) return;
    const body = Buffer.alloc(8);
    body.writeUInt32BE(0, 0);
    body.writeUInt32BE(0, 4);
    this.sendControl(CONTROL.GOAWAY, 0, body);
    this.socket.end();
    this.shutdown();
  }

  /** @internal */
  sendData(id: number, data: Buffer, fin: boolean): void {
    if (this.closed) return;
    const h = Buffer.alloc(8);
    h.writeUInt32BE(id & 0x7fffffff, 0);
    h.writeUInt32BE(((fin ? FLAG_FIN : 0) << 24) | data.length, 4);
    this.socket.write(Buffer.concat([h, data]));
  }

  /** @internal */
  sendReset(id: number): void {
    const body = Buffer.alloc(8);
    body.writeUInt32BE(id & 0x7fffffff, 0);
    body.writeUInt32BE(RST_CANCEL, 4);
    this.sendControl(CONTROL.RST_STREAM, 0, body);
  }

  private sendControl(type: number, flags: number, body: Buffer): void {
    if (this.closed) return;
    const h = Buffer.alloc(8);
    h.writeUInt16BE(0x8000 | VERSION, 0);
    h.writeUInt16BE(type, 2);
    h.writeUInt32BE((flags << 24) | body.length, 4);
    this.socket.write(Buffer.concat([h, body]));
  }

  private compressHeaders(headers: Record<string, string>): Promise<Buffer> {
    const entries = Object.entries(headers);
    const parts: Buffer[] = [u32(entries.length)];
    for (const [name, value] of entries) {
      const n = Buffer.from(name.toLowerCase());
      const v = Buffer.from(value);
      parts.push(u32(n.length), n, u32(v.length), v);
    }
    const raw = Buffer.concat(parts);
    const next = this.compressing.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          const out: Buffer[] = [];
          const onData = (b: Buffer) => out.push(b);
          this.deflate.on('data', onData);
          this.deflate.write(raw);
          this.deflate.flush(zlib.constants.Z_SYNC_FLUSH, () => {
            this.deflate.off('data', onData);
            if (out.length === 0) reject(new Error('header compression produced nothing'));
            else resolve(Buffer.concat(out));
          });
        }),
    );
    this.compressing = next.catch(() => undefined);
    return next;
  }

  private onBytes(b: Buffer): void {
    this.buffer = this.buffer.length === 0 ? b : Buffer.concat([this.buffer, b]);
    while (this.buffer.length >= 8) {
      const length = this.buffer.readUInt32BE(4) & 0xffffff;
      if (this.buffer.length < 8 + length) return;
      const frame = this.buffer.subarray(0, 8 + length);
      this.buffer = this.buffer.subarray(8 + length);
      this.onFrame(frame, length);
    }
  }

  private onFrame(frame: Buffer, length: number): void {
    const flags = frame.readUInt8(4);
    const body = frame.subarray(8, 8 + length);
    if ((frame.readUInt8(0) & 0x80) === 0) {
      const id = frame.readUInt32BE(0) & 0x7fffffff;
      this.streams.get(id)?.onData(Buffer.from(body), (flags & FLAG_FIN) !== 0);
      return;
    }
    const type = frame.readUInt16BE(2);
    switch (type) {
      case CONTROL.SYN_REPLY:
      case CONTROL.HEADERS: {
        // The reply's headers are not needed; a FIN on them half-closes the stream.
        const id = body.readUInt32BE(0) & 0x7fffffff;
        const stream = this.streams.get(id);
        if (type === CONTROL.SYN_REPLY) stream?.onReply();
        if ((flags & FLAG_FIN) !== 0) stream?.onData(Buffer.alloc(0), true);
        break;
      }
      case CONTROL.RST_STREAM: {
        const id = body.readUInt32BE(0) & 0x7fffffff;
        this.streams.get(id)?.onReset();
        this.streams.delete(id);
        break;
      }
      case CONTROL.PING:
        // A ping from the server is answered with the same id; ours (odd ids) are never sent.
        this.sendControl(CONTROL.PING, 0, Buffer.from(body));
        break;
      case CONTROL.GOAWAY:
        this.emit('goaway');
        break;
      case CONTROL.SYN_STREAM: {
        // A stream the server opens is not part of these protocols: refuse it.
        const id = body.readUInt32BE(0) & 0x7fffffff;
        this.sendReset(id);
        break;
      }
      default:
        // SETTINGS, WINDOW_UPDATE and anything newer: nothing to do without flow control.
        break;
    }
  }

  private shutdown(): void {
    if (this.closed) return;
    this.closed = true;
    this.deflate.close();
    for (const s of this.streams.values()) s.onReset();
    this.streams.clear();
    this.emit('close');
  }
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n, 0);
  return b;
}

export interface UpgradeResult {
  session: SpdySession;
  /** The subprotocol the server chose (X-Stream-Protocol-Version). */
  protocol: string;
}

/**
 * POST an upgrade to SPDY/3.1 at `url` (the runtime's streaming server, plain
 * HTTP on loopback), offering `protocols` in order of preference. A refusal
 * (any status but 101) rejects with the server's answer.
 */
export function upgradeToSpdy(url: string, protocols: readonly string[], signal: AbortSignal): Promise<UpgradeResult> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': [...protocols] },
      signal,
    });
    req.once('upgrade', (res, socket, head) => {
      const protocol = String(res.headers['x-stream-protocol-version'] ?? '');
      resolve({ session: new SpdySession(socket, head), protocol });
    });
    req.once('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c.slice(0, 1000)));
      res.on('end', () => reject(new Error(`the streaming server refused the upgrade: ${res.statusCode} ${body.trim()}`)));
    });
    req.once('error', reject);
    req.end();
  });
}
