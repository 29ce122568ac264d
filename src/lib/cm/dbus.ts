/**
 * The few D-Bus calls the systemd cgroup driver makes, as the kubelet makes
 * them through runc's libcontainer and go-systemd: StartTransientUnit of a
 * slice, SetUnitProperties, StopUnit and ResetFailedUnit on systemd's Manager,
 * waiting for each job's JobRemoved signal.
 *
 * Written here, not taken from npm: the D-Bus libraries for Node (dbus-next,
 * dbus-native) are unmaintained and pull in event-stream, xml2js and a BigInt
 * polyfill; and busctl cannot talk to systemd's private socket (it treats it
 * as a bus and fails every call with "Invalid request descriptor"). What is
 * here is the wire format of the D-Bus specification (little-endian
 * marshalling, SASL EXTERNAL authentication) for the types these calls use.
 *
 * The connection is the one libcontainer opens: the system bus
 * (/run/dbus/system_bus_socket) when a bus daemon runs, else, as root,
 * systemd's own socket /run/systemd/private (no Hello there: it is a direct
 * connection to systemd).
 */
import net from 'node:net';

/** A value of a D-Bus type: numbers and bigints for integers, strings, booleans, arrays for arrays and structs. */
export type DbusValue = number | bigint | string | boolean | DbusValue[] | Variant;
export interface Variant {
  sig: string;
  value: DbusValue;
}

const ALIGN: Record<string, number> = { y: 1, b: 4, n: 2, q: 2, i: 4, u: 4, x: 8, t: 8, d: 8, s: 4, o: 4, g: 1, v: 1, a: 4, '(': 8, '{': 8, h: 4 };

/** The single complete types of a signature, in order. */
export function splitSignature(sig: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < sig.length) {
    const end = completeTypeEnd(sig, i);
    out.push(sig.slice(i, end));
    i = end;
  }
  return out;
}

function completeTypeEnd(sig: string, i: number): number {
  const c = sig[i];
  if (c === undefined) throw new Error(`bad D-Bus signature ${JSON.stringify(sig)}`);
  if (c === 'a') return completeTypeEnd(sig, i + 1);
  if (c === '(' || c === '{') {
    const close = c === '(' ? ')' : '}';
    let j = i + 1;
    while (sig[j] !== close) {
      if (j >= sig.length) throw new Error(`bad D-Bus signature ${JSON.stringify(sig)}`);
      j = completeTypeEnd(sig, j);
    }
    return j + 1;
  }
  if (!(c in ALIGN)) throw new Error(`bad D-Bus signature ${JSON.stringify(sig)}`);
  return i + 1;
}

/** Marshals values little-endian; offsets (and so alignment) count from the start of the buffer. */
export class DbusWriter {
  private buf = Buffer.alloc(256);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  align(n: number): void {
    const pad = (n - (this.length % n)) % n;
    this.room(pad);
    this.buf.fill(0, this.length, this.length + pad);
    this.length += pad;
  }

  private u8(v: number): void {
    this.room(1);
    this.buf.writeUInt8(v, this.length++);
  }

  private u32(v: number): void {
    this.align(4);
    this.room(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }

  private bytes(b: Buffer): void {
    this.room(b.length);
    b.copy(this.buf, this.length);
    this.length += b.length;
  }

  /** Values of a whole signature (one per complete type). */
  writeAll(sig: string, values: readonly DbusValue[]): void {
    const types = splitSignature(sig);
    if (types.length !== values.length) throw new Error(`D-Bus signature ${sig} wants ${types.length} values, got ${values.length}`);
    types.forEach((t, i) => this.write(t, values[i]!));
  }

  write(type: string, value: DbusValue): void {
    const c = type[0]!;
    switch (c) {
      case 'y':
        return this.u8(Number(value));
      case 'b':
        return this.u32(value ? 1 : 0);
      case 'n':
      case 'q':
        this.align(2);
        this.room(2);
        if (c === 'n') this.buf.writeInt16LE(Number(value), this.length);
        else this.buf.writeUInt16LE(Number(value), this.length);
        this.length += 2;
        return;
      case 'i':
      case 'u':
      case 'h':
        this.align(4);
        this.room(4);
        if (c === 'i') this.buf.writeInt32LE(Number(value), this.length);
        else this.buf.writeUInt32LE(Number(value), this.length);
        this.length += 4;
        return;
      case 'x':
      case 't':
        this.align(8);
        this.room(8);
        if (c === 'x') this.buf.writeBigInt64LE(BigInt(value as number | bigint), this.length);
        else this.buf.writeBigUInt64LE(BigInt.asUintN(64, BigInt(value as number | bigint)), this.length);
        this.length += 8;
        return;
      case 'd':
        this.align(8);
        this.room(8);
        this.buf.writeDoubleLE(Number(value), this.length);
        this.length += 8;
        return;
      case 's':
      case 'o': {
        const b = Buffer.from(String(value), 'utf8');
        this.u32(b.length);
        this.bytes(b);
        return this.u8(0);
      }
      case 'g': {
        const b = Buffer.from(String(value), 'ascii');
        this.u8(b.length);
        this.bytes(b);
        return this.u8(0);
      }
      case 'v': {
        const v = value as Variant;
        this.write('g', v.sig);
        return this.write(v.sig, v.value);
      }
      case 'a': {
        const elem = type.slice(1);
        this.u32(0);
        const lengthAt = this.length - 4;
        this.align(ALIGN[elem[0]!]!);
        const start = this.length;
        for (const e of value as DbusValue[]) this.write(elem, e);
        this.buf.writeUInt32LE(this.length - start, lengthAt);
        return;
      }
      case '(':
      case '{': {
        this.align(8);
        const inner = splitSignature(type.slice(1, -1));
        const fields = value as DbusValue[];
        inner.forEach((t, i) => this.write(t, fields[i]!));
        return;
      }
      default:
        throw new Error(`D-Bus type ${type} is not supported`);
    }
  }

  result(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/** Unmarshals little-endian values from `buf`; `base` is where alignment counts from. */
export class DbusReader {
  constructor(
    private readonly buf: Buffer,
    public offset = 0,
    private readonly base = 0,
  ) {}

  private align(n: number): void {
    const rel = this.offset - this.base;
    this.offset += (n - (rel % n)) % n;
  }

  private need(n: number): void {
    if (this.offset + n > this.buf.length) throw new Error('truncated D-Bus message');
  }

  readAll(sig: string): DbusValue[] {
    return splitSignature(sig).map((t) => this.read(t));
  }

  read(type: string): DbusValue {
    const c = type[0]!;
    this.align(ALIGN[c] ?? 1);
    switch (c) {
      case 'y':
        this.need(1);
        return this.buf.readUInt8(this.offset++);
      case 'b':
      case 'u':
      case 'h':
      case 'i': {
        this.need(4);
        const v = c === 'i' ? this.buf.readInt32LE(this.offset) : this.buf.readUInt32LE(this.offset);
        this.offset += 4;
        return c === 'b' ? v !== 0 : v;
      }
      case 'n':
      case 'q': {
        this.need(2);
        const v = c === 'n' ? this.buf.readInt16LE(this.offset) : this.buf.readUInt16LE(this.offset);
        this.offset += 2;
        return v;
      }
      case 'x':
      case 't': {
        this.need(8);
        const v = c === 'x' ? this.buf.readBigInt64LE(this.offset) : this.buf.readBigUInt64LE(this.offset);
        this.offset += 8;
        return v;
      }
      case 'd': {
        this.need(8);
        const v = this.buf.readDoubleLE(this.offset);
        this.offset += 8;
        return v;
      }
      case 's':
      case 'o': {
        this.need(4);
        const len = this.buf.readUInt32LE(this.offset);
        this.offset += 4;
        this.need(len + 1);
        const s = this.buf.toString('utf8', this.offset, this.offset + len);
        this.offset += len + 1;
        return s;
      }
      case 'g': {
        this.need(1);
        const len = this.buf.readUInt8(this.offset++);
        this.need(len + 1);
        const s = this.buf.toString('ascii', this.offset, this.offset + len);
        this.offset += len + 1;
        return s;
      }
      case 'v': {
        const sig = this.read('g') as string;
        return { sig, value: this.read(sig) };
      }
      case 'a': {
        this.need(4);
        const len = this.buf.readUInt32LE(this.offset);
        this.offset += 4;
        const elem = type.slice(1);
        this.align(ALIGN[elem[0]!]!);
        const end = this.offset + len;
        if (end > this.buf.length) throw new Error('truncated D-Bus message');
        const out: DbusValue[] = [];
        while (this.offset < end) out.push(this.read(elem));
        return out;
      }
      case '(':
      case '{':
        return splitSignature(type.slice(1, -1)).map((t) => this.read(t));
      default:
        throw new Error(`D-Bus type ${type} is not supported`);
    }
  }
}

export const MESSAGE = { METHOD_CALL: 1, METHOD_RETURN: 2, ERROR: 3, SIGNAL: 4 } as const;
const FIELD = { PATH: 1, INTERFACE: 2, MEMBER: 3, ERROR_NAME: 4, REPLY_SERIAL: 5, DESTINATION: 6, SENDER: 7, SIGNATURE: 8 } as const;
const FIELD_SIG: Record<number, string> = { 1: 'o', 2: 's', 3: 's', 4: 's', 5: 'u', 6: 's', 7: 's', 8: 'g' };

export interface DbusMessage {
  type: number;
  serial: number;
  path?: string;
  interface?: string;
  member?: string;
  errorName?: string;
  replySerial?: number;
  destination?: string;
  signature?: string;
  body: DbusValue[];
}

/** One whole message on the wire. */
export function encodeMessage(m: DbusMessage): Buffer {
  const body = new DbusWriter();
  if (m.signature) body.writeAll(m.signature, m.body);
  const fields: DbusValue[] = [];
  const add = (code: number, value: string | number | undefined) => {
    if (value !== undefined) fields.push([code, { sig: FIELD_SIG[code]!, value }]);
  };
  add(FIELD.PATH, m.path);
  add(FIELD.INTERFACE, m.interface);
  add(FIELD.MEMBER, m.member);
  add(FIELD.ERROR_NAME, m.errorName);
  add(FIELD.REPLY_SERIAL, m.replySerial);
  add(FIELD.DESTINATION, m.destination);
  add(FIELD.SIGNATURE, m.signature || undefined);
  const head = new DbusWriter();
  head.writeAll('yyyyuua(yv)', ['l'.charCodeAt(0), m.type, 0, 1, body.length, m.serial, fields]);
  head.align(8);
  return Buffer.concat([head.result(), body.result()]);
}

/** The first whole message in `buf` and its length, or null while it is incomplete. */
export function decodeMessage(buf: Buffer): { message: DbusMessage; length: number } | null {
  if (buf.length < 16) return null;
  if (buf[0] !== 'l'.charCodeAt(0)) throw new Error('D-Bus: only little-endian messages are supported');
  const bodyLength = buf.readUInt32LE(4);
  const fieldsLength = buf.readUInt32LE(12);
  const headerEnd = 16 + fieldsLength;
  const bodyStart = headerEnd + ((8 - (headerEnd % 8)) % 8);
  const length = bodyStart + bodyLength;
  if (buf.length < length) return null;
  const fields = new DbusReader(buf, 12).read('a(yv)') as Array<[number, Variant]>;
  const message: DbusMessage = { type: buf[1]!, serial: buf.readUInt32LE(8), body: [] };
  for (const [code, v] of fields) {
    const value = v.value;
    if (code === FIELD.PATH) message.path = value as string;
    else if (code === FIELD.INTERFACE) message.interface = value as string;
    else if (code === FIELD.MEMBER) message.member = value as string;
    else if (code === FIELD.ERROR_NAME) message.errorName = value as string;
    else if (code === FIELD.REPLY_SERIAL) message.replySerial = value as number;
    else if (code === FIELD.DESTINATION) message.destination = value as string;
    else if (code === FIELD.SIGNATURE) message.signature = value as string;
  }
  if (message.signature) message.body = new DbusReader(buf.subarray(bodyStart, length)).readAll(message.signature);
  return { message, length };
}

/** An ERROR reply: `name` is the D-Bus error name (e.g. org.freedesktop.systemd1.UnitExists). */
export class DbusError extends Error {
  constructor(
    readonly dbusName: string,
    message: string,
  ) {
    super(message);
    this.name = 'DbusError';
  }
}

/** A call that had no answer in time. */
export class DbusTimeout extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DbusTimeout';
  }
}

/** How long a method call may wait for its reply (a job's end is waited for separately). */
const CALL_TIMEOUT_MS = 60_000;

interface Pending {
  resolve(body: DbusValue[]): void;
  reject(err: Error): void;
}

/**
 * One authenticated connection. The socket keeps the process alive only
 * while a call is in flight (a `klet runonce` exits when its work is done).
 */
export class DbusConnection {
  private serial = 0;
  private readonly pending = new Map<number, Pending>();
  private buffered: Buffer = Buffer.alloc(0);
  private closed: Error | null = null;
  private busy = 0;
  onSignal: ((m: DbusMessage) => void) | null = null;

  private constructor(
    private readonly socket: net.Socket,
    /** A bus daemon routes messages (destination needed); systemd's private socket does not. */
    readonly isBus: boolean,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('close', () => this.fail(new Error('D-Bus connection closed')));
    socket.on('error', (err) => this.fail(err));
    socket.unref();
  }

  /** Connect and authenticate (SASL EXTERNAL with this process's uid); on a bus, say Hello. */
  static async open(socketPath: string, isBus: boolean, signal?: AbortSignal): Promise<DbusConnection> {
    const socket = net.connect(socketPath);
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      const uid = Buffer.from(String(process.getuid?.() ?? 0), 'ascii').toString('hex');
      socket.write(`\0AUTH EXTERNAL ${uid}\r\n`);
      const line = await readLine(socket, signal);
      if (!line.startsWith('OK ')) throw new Error(`D-Bus authentication refused: ${line.trim()}`);
      socket.write('BEGIN\r\n');
    } catch (err) {
      socket.destroy();
      throw err;
    }
    const conn = new DbusConnection(socket, isBus);
    try {
      await conn.live(signal);
      if (isBus) await conn.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'Hello' });
    } catch (err) {
      conn.close();
      throw err;
    }
    return conn;
  }

  /**
   * Wait until the server handles messages. systemd (v252 measured) may leave
   * a message that came in with BEGIN unread until more input arrives: busy
   * with a burst of its own signals (a pod's mounts going), it answered none
   * of the calls on half of the new connections in a test. So Peer.Ping,
   * again every 100 ms, until one is answered: pings are harmless, and each
   * is the input that makes the server read what it holds.
   */
  private async live(signal?: AbortSignal): Promise<void> {
    const ping = { path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus.Peer', member: 'Ping', ...(this.isBus ? { destination: 'org.freedesktop.DBus' } : {}) };
    for (let i = 0; ; i++) {
      const answered = await this.call(ping, signal, 100).then(
        () => true,
        (err: Error) => {
          if (err instanceof DbusTimeout && i < 100) return false;
          throw err;
        },
      );
      if (answered) return;
    }
  }

  /** One method call and its reply; an ERROR reply is a DbusError; no reply within `timeoutMs` (default 60 s) is a DbusTimeout. */
  call(m: { destination?: string; path: string; interface: string; member: string; signature?: string; body?: DbusValue[] }, signal?: AbortSignal, timeoutMs = CALL_TIMEOUT_MS): Promise<DbusValue[]> {
    if (this.closed) return Promise.reject(this.closed);
    const serial = ++this.serial;
    const msg = encodeMessage({ type: MESSAGE.METHOD_CALL, serial, ...m, ...(this.isBus ? {} : { destination: undefined }), body: m.body ?? [] });
    return this.hold(
      new Promise<DbusValue[]>((resolve, reject) => {
        const settle = () => {
          clearTimeout(timer);
          this.pending.delete(serial);
        };
        const timer = setTimeout(() => {
          settle();
          reject(new DbusTimeout(`D-Bus call ${m.interface}.${m.member} had no answer in ${timeoutMs / 1000} s`));
        }, timeoutMs);
        this.pending.set(serial, {
          resolve: (body) => {
            settle();
            resolve(body);
          },
          reject: (err) => {
            settle();
            reject(err);
          },
        });
        signal?.addEventListener('abort', () => {
          settle();
          reject(signal.reason);
        }, { once: true });
        this.socket.write(msg);
      }),
    );
  }

  /** Keep the process alive while `p` is pending. */
  async hold<T>(p: Promise<T>): Promise<T> {
    if (this.busy++ === 0) this.socket.ref();
    try {
      return await p;
    } finally {
      if (--this.busy === 0) this.socket.unref();
    }
  }

  close(): void {
    this.fail(new Error('D-Bus connection closed'));
    this.socket.destroy();
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.closed = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  private onData(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    for (;;) {
      let decoded: ReturnType<typeof decodeMessage>;
      try {
        decoded = decodeMessage(this.buffered);
      } catch (err) {
        this.fail(err as Error);
        this.socket.destroy();
        return;
      }
      if (!decoded) return;
      this.buffered = this.buffered.subarray(decoded.length);
      const m = decoded.message;
      if (m.type === MESSAGE.SIGNAL) {
        this.onSignal?.(m);
        continue;
      }
      if (m.replySerial === undefined) continue;
      const p = this.pending.get(m.replySerial);
      if (!p) continue;
      this.pending.delete(m.replySerial);
      if (m.type === MESSAGE.ERROR) p.reject(new DbusError(m.errorName ?? 'org.freedesktop.DBus.Error.Failed', typeof m.body[0] === 'string' ? m.body[0] : (m.errorName ?? 'D-Bus error')));
      else p.resolve(m.body);
    }
  }
}

/** The server's first line of the SASL exchange. */
function readLine(socket: net.Socket, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const nl = text.indexOf('\r\n');
      if (nl < 0) return;
      done();
      if (nl + 2 < text.length) socket.unshift(Buffer.from(text.slice(nl + 2), 'latin1'));
      resolve(text.slice(0, nl));
    };
    const onEnd = () => {
      done();
      reject(new Error('D-Bus connection closed during authentication'));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error('D-Bus authentication timed out after 10 s'));
    }, 10_000);
    const done = () => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onEnd);
    };
    socket.on('data', onData);
    socket.once('close', onEnd);
    signal?.addEventListener('abort', () => {
      done();
      reject(signal.reason);
    }, { once: true });
  });
}
