import { PassThrough, Duplex } from 'node:stream';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parsePortMapping } from '../../src/lib/services/debug-pod.js';
import { RemoteCommandError, exitCodeOf } from '../../src/lib/streaming/remote.js';
import { SPDY3_HEADER_DICTIONARY } from '../../src/lib/streaming/spdy-dictionary.js';
import { SpdySession } from '../../src/lib/streaming/spdy.js';

describe('exitCodeOf (a v4 error-stream Status)', () => {
  it('success, a non-zero exit code, a failure to run', () => {
    expect(exitCodeOf('')).toBe(0);
    expect(exitCodeOf('{"metadata":{},"status":"Success"}')).toBe(0);
    expect(exitCodeOf('{"status":"Failure","message":"command terminated with non-zero exit code: exit status 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}')).toBe(3);
    expect(() => exitCodeOf('{"status":"Failure","message":"OCI runtime exec failed: exec: \\"nosuch\\": executable file not found"}')).toThrow(RemoteCommandError);
    expect(() => exitCodeOf('not json')).toThrow('not json');
  });
});

describe('parsePortMapping ([LOCAL:]REMOTE as kubectl port-forward)', () => {
  it('takes the forms kubectl takes and refuses the rest', () => {
    expect(parsePortMapping('80')).toEqual({ local: 80, remote: 80 });
    expect(parsePortMapping('8080:80')).toEqual({ local: 8080, remote: 80 });
    expect(parsePortMapping(':80')).toEqual({ local: 0, remote: 80 });
    expect(parsePortMapping('0:80')).toEqual({ local: 0, remote: 80 });
    for (const bad of ['', 'http', '80:', '70000', '1:70000', '0', 'a:80']) expect(() => parsePortMapping(bad), bad).toThrow();
  });
});

/** Two ends of an in-memory connection. */
function pair(): [Duplex, Duplex] {
  const aToB = new PassThrough();
  const bToA = new PassThrough();
  const a = Duplex.from({ readable: bToA, writable: aToB });
  const b = Duplex.from({ readable: aToB, writable: bToA });
  return [a, b];
}

describe('SpdySession (the frames a spdystream server sees)', () => {
  it('SYN_STREAM header blocks decompress with the SPDY/3 dictionary in one context; data, FIN and replies flow', async () => {
    const [client, server] = pair();
    const session = new SpdySession(client);
    const inflate = zlib.createInflate({ dictionary: SPDY3_HEADER_DICTIONARY });
    const headerBlocks: Buffer[] = [];
    inflate.on('data', (b: Buffer) => headerBlocks.push(b));
    const frames: Array<{ control: boolean; type?: number; id: number; flags: number; data: Buffer }> = [];
    let buf = Buffer.alloc(0);
    server.on('data', (b: Buffer) => {
      buf = Buffer.concat([buf, b]);
      while (buf.length >= 8 && buf.length >= 8 + (buf.readUInt32BE(4) & 0xffffff)) {
        const len = buf.readUInt32BE(4) & 0xffffff;
        const f = buf.subarray(0, 8 + len);
        buf = buf.subarray(8 + len);
        const control = (f[0]! & 0x80) !== 0;
        const flags = f[4]!;
        if (control) {
          const type = f.readUInt16BE(2);
          const id = f.readUInt32BE(8) & 0x7fffffff;
          if (type === 1) {
            inflate.write(f.subarray(18));
            inflate.flush(zlib.constants.Z_SYNC_FLUSH);
            // Accept the stream: SYN_REPLY with an empty (compressed elsewhere, unread) header block.
            const reply = Buffer.alloc(12);
            reply.writeUInt16BE(0x8003, 0);
            reply.writeUInt16BE(2, 2);
            reply.writeUInt32BE(4, 4);
            reply.writeUInt32BE(id, 8);
            server.write(reply);
          }
          frames.push({ control, type, id, flags, data: f.subarray(8) });
        } else {
          frames.push({ control, id: f.readUInt32BE(0) & 0x7fffffff, flags, data: Buffer.from(f.subarray(8)) });
        }
      }
    });
    const s1 = await session.openStream({ streamType: 'error' });
    const s2 = await session.openStream({ streamType: 'stdin', Port: '8080' });
    expect([s1.id, s2.id]).toEqual([1, 3]);
    s2.write(Buffer.from('hello'));
    s2.end();
    // Data from the server on stream 1, with FIN.
    const got = new Promise<string>((resolve) => {
      let t = '';
      s1.on('data', (b: Buffer) => (t += b.toString()));
      s1.once('end', () => resolve(t));
    });
    const data = Buffer.alloc(8 + 2);
    data.writeUInt32BE(1, 0);
    data.writeUInt32BE((1 << 24) | 2, 4);
    data.write('ok', 8);
    server.write(data);
    expect(await got).toBe('ok');
    await new Promise((r) => setTimeout(r, 20));
    const text = Buffer.concat(headerBlocks);
    // Two blocks: {streamtype: error}, then {streamtype: stdin, port: 8080} (names lower-cased).
    const block = (pairs: Array<[string, string]>) => {
      const parts = [Buffer.from([0, 0, 0, pairs.length])];
      for (const [n, v] of pairs) parts.push(Buffer.from([0, 0, 0, n.length]), Buffer.from(n), Buffer.from([0, 0, 0, v.length]), Buffer.from(v));
      return Buffer.concat(parts);
    };
    expect(text).toEqual(Buffer.concat([block([['streamtype', 'error']]), block([['streamtype', 'stdin'], ['port', '8080']])]));
    const dataFrames = frames.filter((f) => !f.control && f.id === 3);
    expect(dataFrames.map((f) => [f.data.toString(), f.flags])).toEqual([['hello', 0], ['', 1]]);
    session.close();
    expect(frames.at(-1)).toMatchObject({ control: true, type: 7 });
  });

  it('a reset connection ends the session and is recorded, never thrown as an unhandled error event (it crashed klet exec)', async () => {
    /** A socket alone (no inner streams that would report the error themselves). */
    const socket = () => new Duplex({ read() {}, write(_c, _e, cb) { cb(); } });
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const client = socket();
    const session = new SpdySession(client);
    const closed = new Promise<void>((r) => session.once('close', () => r()));
    client.destroy(reset);
    await closed;
    expect(session.closed).toBe(true);
    expect(session.error?.message).toBe('read ECONNRESET');
    // A listener still hears it.
    const client2 = socket();
    const heard = new Promise<Error>((r) => new SpdySession(client2).once('error', r));
    client2.destroy(reset);
    expect((await heard).message).toBe('read ECONNRESET');
  });

  it('keeps what arrives with the reply until a listener comes (a port-forward error stream answers in the same read)', async () => {
    const [client, server] = pair();
    const session = new SpdySession(client);
    server.on('data', (b: Buffer) => {
      if ((b[0]! & 0x80) === 0 || b.readUInt16BE(2) !== 1) return;
      const id = b.readUInt32BE(8) & 0x7fffffff;
      // SYN_REPLY, then "refused" with FIN, in one write.
      const reply = Buffer.alloc(12);
      reply.writeUInt16BE(0x8003, 0);
      reply.writeUInt16BE(2, 2);
      reply.writeUInt32BE(4, 4);
      reply.writeUInt32BE(id, 8);
      const data = Buffer.alloc(8 + 7);
      data.writeUInt32BE(id, 0);
      data.writeUInt32BE((1 << 24) | 7, 4);
      data.write('refused', 8);
      server.write(Buffer.concat([reply, data]));
    });
    const s = await session.openStream({ streamType: 'error' });
    await new Promise((r) => setTimeout(r, 20));
    const events: string[] = [];
    s.on('close', () => events.push('close'));
    s.end();
    const got = await new Promise<string>((resolve) => {
      let t = '';
      s.on('data', (b: Buffer) => (t += b.toString()));
      s.once('end', () => resolve(t));
    });
    expect(got).toBe('refused');
    await new Promise((r) => setTimeout(r, 0));
    expect(events).toEqual(['close']);
    session.close();
  });
});
