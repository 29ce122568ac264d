/**
 * The CRI transport (src/lib/cri/transport.ts) against a real gRPC server
 * (grpc-js's) on a unix socket: status and message rules, deadlines,
 * cancellation, limits, reconnection, server streams, and that an idle
 * connection does not hold the process.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttp2Server, type Http2Server, type ServerHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Server,
  ServerCredentials,
  status,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GrpcCallError, GrpcChannel } from '../../src/lib/cri/transport.js';

const raw = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
const method = (name: string, responseStream: boolean) => ({
  path: `/test.Echo/${name}`,
  requestStream: false,
  responseStream,
  requestSerialize: raw.serialize,
  requestDeserialize: raw.deserialize,
  responseSerialize: raw.serialize,
  responseDeserialize: raw.deserialize,
});
const SERVICE: ServiceDefinition = {
  Echo: method('Echo', false),
  Fail: method('Fail', false),
  Hang: method('Hang', false),
  Big: method('Big', false),
  Count: method('Count', true),
};

/** What the server saw, for assertions about the other side. */
interface Seen {
  deadline?: Date | number;
  cancelled: string[];
}

async function startServer(socket: string, seen: Seen): Promise<Server> {
  const server = new Server();
  server.addService(SERVICE, {
    Echo: (call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => cb(null, call.request),
    // The text has what grpc-message must percent-encode.
    Fail: (_call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) =>
      cb({ code: status.NOT_FOUND, details: 'container "abc" not found: 100% gone, ü' }, null),
    Hang: (call: ServerUnaryCall<Buffer, Buffer>) => {
      seen.deadline = call.getDeadline();
      call.on('cancelled', () => seen.cancelled.push('Hang'));
    },
    Big: (call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => cb(null, Buffer.alloc(call.request.readUInt32BE(0), 7)),
    // Writes request[0] messages, then fails when request[1] is 1; with request[0] = 255, writes one and waits.
    Count: (call: ServerWritableStream<Buffer, Buffer>) => {
      const [n = 0, fail = 0] = call.request;
      call.on('cancelled', () => seen.cancelled.push('Count'));
      if (n === 255) {
        call.write(Buffer.from([0]));
        return;
      }
      for (let i = 0; i < n; i++) call.write(Buffer.from([i]));
      if (fail === 1) call.emit('error', { code: status.INTERNAL, details: 'broke after the messages' });
      else call.end();
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return server;
}

const stop = (server: Server): Promise<void> => new Promise((resolve) => server.tryShutdown(() => resolve()));

let dir: string;
let socket: string;
let server: Server;
const seen: Seen = { cancelled: [] };
const channels: GrpcChannel[] = [];
const channel = (maxMessageBytes = 1024 * 1024): GrpcChannel => {
  const c = new GrpcChannel(socket, { maxMessageBytes });
  channels.push(c);
  return c;
};
const failure = async (p: Promise<unknown>): Promise<GrpcCallError> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GrpcCallError);
  return err as GrpcCallError;
};
const until = async (check: () => boolean, ms = 2000): Promise<void> => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'klet-cri-transport-'));
  socket = join(dir, 'grpc.sock');
  server = await startServer(socket, seen);
});

afterEach(() => {
  for (const c of channels.splice(0)) c.close();
  seen.cancelled.length = 0;
  seen.deadline = undefined;
});

afterAll(async () => {
  await stop(server);
  rmSync(dir, { recursive: true, force: true });
});

describe('unary calls', () => {
  it('sends the request and returns the response message', async () => {
    const c = channel();
    expect([...(await c.unary('/test.Echo/Echo', Buffer.from([1, 2, 3])))]).toEqual([1, 2, 3]);
    // An empty message is a message.
    expect((await c.unary('/test.Echo/Echo', new Uint8Array(0))).length).toBe(0);
  });

  it('carries many calls at once on one connection', async () => {
    const c = channel();
    const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => c.unary('/test.Echo/Echo', Buffer.from(String(i)))));
    expect(answers.map((b) => b.toString())).toEqual(Array.from({ length: 300 }, (_, i) => String(i)));
  });

  it("gives the server's status code and its text, percent-decoded", async () => {
    const err = await failure(channel().unary('/test.Echo/Fail', Buffer.alloc(0)));
    expect(err.code).toBe(status.NOT_FOUND);
    expect(err.details).toBe('container "abc" not found: 100% gone, ü');
  });

  it('maps an unknown method to UNIMPLEMENTED', async () => {
    const err = await failure(channel().unary('/test.Echo/Nope', Buffer.alloc(0)));
    expect(err.code).toBe(status.UNIMPLEMENTED);
  });

  it('sends its deadline to the server and fails with DEADLINE_EXCEEDED when it passes', async () => {
    const start = Date.now();
    const err = await failure(channel().unary('/test.Echo/Hang', Buffer.alloc(0), { deadlineAt: start + 300 }));
    const took = Date.now() - start;
    expect(err.code).toBe(status.DEADLINE_EXCEEDED);
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(2000);
    // The server got grpc-timeout: its call had a deadline near ours.
    expect(Math.abs(Number(seen.deadline) - (start + 300))).toBeLessThan(200);
    await until(() => seen.cancelled.includes('Hang'));
    expect(seen.cancelled).toContain('Hang');
  });

  it('cancels on abort: CANCELLED here, and the server sees the call cancelled', async () => {
    const ac = new AbortController();
    const call = channel().unary('/test.Echo/Hang', Buffer.alloc(0), { signal: ac.signal });
    await until(() => seen.deadline !== undefined);
    ac.abort();
    expect((await failure(call)).code).toBe(status.CANCELLED);
    await until(() => seen.cancelled.includes('Hang'));
    expect(seen.cancelled).toEqual(['Hang']);
    // Already aborted: nothing is sent.
    expect((await failure(channel().unary('/test.Echo/Echo', Buffer.alloc(0), { signal: AbortSignal.abort() }))).code).toBe(status.CANCELLED);
  });

  it('refuses a response over the size limit with RESOURCE_EXHAUSTED, and one at the limit passes', async () => {
    const c = channel(64 * 1024);
    const size = (n: number): Buffer => {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(n);
      return b;
    };
    expect((await c.unary('/test.Echo/Big', size(64 * 1024))).length).toBe(64 * 1024);
    const err = await failure(c.unary('/test.Echo/Big', size(64 * 1024 + 1)));
    expect(err.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(/65537 bytes is larger than the limit of 65536/);
    // The connection is still good.
    expect((await c.unary('/test.Echo/Echo', Buffer.from('x'))).toString()).toBe('x');
  });

  it('refuses a request over the size limit without sending it', async () => {
    const err = await failure(channel(16).unary('/test.Echo/Echo', Buffer.alloc(17)));
    expect(err.code).toBe(status.RESOURCE_EXHAUSTED);
  });

  it("receives a response near the 16 MiB limit (a busy node's ListContainers) in one piece", async () => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(15 * 1024 * 1024 + 5);
    const res = await channel(16 * 1024 * 1024).unary('/test.Echo/Big', b);
    expect(res.length).toBe(15 * 1024 * 1024 + 5);
    expect(res.every((x) => x === 7)).toBe(true);
  });
});

describe('the connection', () => {
  it('fails with UNAVAILABLE naming the cause when nothing listens', async () => {
    const c = new GrpcChannel(join(dir, 'none.sock'), { maxMessageBytes: 1024 });
    channels.push(c);
    const err = await failure(c.unary('/test.Echo/Echo', Buffer.alloc(0)));
    expect(err.code).toBe(status.UNAVAILABLE);
    expect(err.details).toMatch(/ENOENT/);
  });

  it('fails with UNAVAILABLE when the server closes the connection without answering', async () => {
    const path = join(dir, 'closes.sock');
    const closer = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => closer.listen(path, resolve));
    try {
      const c = new GrpcChannel(path, { maxMessageBytes: 1024 });
      channels.push(c);
      const err = await failure(c.unary('/test.Echo/Echo', Buffer.alloc(0)));
      expect(err.code).toBe(status.UNAVAILABLE);
      expect(err.details).toBe('the connection to the server closed');
    } finally {
      await new Promise((resolve) => closer.close(resolve));
    }
  });

  it('enforces the deadline itself when the server never answers (not even the HTTP/2 handshake)', async () => {
    const path = join(dir, 'silent.sock');
    const open = new Set<Socket>();
    const silent = createServer((s) => open.add(s));
    await new Promise<void>((resolve) => silent.listen(path, resolve));
    try {
      const c = new GrpcChannel(path, { maxMessageBytes: 1024 });
      channels.push(c);
      const start = Date.now();
      const err = await failure(c.unary('/test.Echo/Echo', Buffer.alloc(0), { deadlineAt: start + 300 }));
      expect(err.code).toBe(status.DEADLINE_EXCEEDED);
      expect(Date.now() - start).toBeGreaterThanOrEqual(290);
      expect(Date.now() - start).toBeLessThan(2000);
    } finally {
      for (const s of open) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('connects again after the server restarts; calls in flight when it went fail with UNAVAILABLE', async () => {
    const path = join(dir, 'restart.sock');
    const localSeen: Seen = { cancelled: [] };
    let s = await startServer(path, localSeen);
    const c = new GrpcChannel(path, { maxMessageBytes: 1024 });
    channels.push(c);
    expect((await c.unary('/test.Echo/Echo', Buffer.from('a'))).toString()).toBe('a');
    const inFlight = c.unary('/test.Echo/Hang', Buffer.alloc(0));
    await until(() => localSeen.deadline !== undefined || localSeen.cancelled.length > 0, 500);
    s.forceShutdown();
    expect((await failure(inFlight)).code).toBe(status.UNAVAILABLE);
    // While it is down: UNAVAILABLE at once.
    expect((await failure(c.unary('/test.Echo/Echo', Buffer.from('b')))).code).toBe(status.UNAVAILABLE);
    s = await startServer(path, localSeen);
    try {
      expect((await c.unary('/test.Echo/Echo', Buffer.from('c'))).toString()).toBe('c');
    } finally {
      s.forceShutdown();
    }
  });

  it('close() cancels calls in flight and later calls', async () => {
    const c = channel();
    const call = c.unary('/test.Echo/Hang', Buffer.alloc(0));
    await until(() => seen.deadline !== undefined || seen.cancelled.length > 0, 500);
    c.close();
    const err = await failure(call);
    expect(err.code).toBe(status.CANCELLED);
    expect((await failure(c.unary('/test.Echo/Echo', Buffer.alloc(0)))).code).toBe(status.CANCELLED);
  });

  it('does not keep the process alive once its calls are done (no close needed)', async () => {
    // The built module (the test suite runs after the build): a child process cannot load the TypeScript.
    const transport = join(__dirname, '../../dist/lib/cri/transport.js');
    const script = `
      const { GrpcChannel } = await import(${JSON.stringify(transport)});
      const c = new GrpcChannel(${JSON.stringify(socket)}, { maxMessageBytes: 1024 });
      const b = await c.unary('/test.Echo/Echo', Buffer.from('ok'));
      console.log(b.toString());
    `;
    const started = Date.now();
    // Not spawnSync: the server runs on this process's event loop.
    const r = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 10_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('ok');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('server streams', () => {
  it('yields each message, then ends on OK', async () => {
    const got: number[] = [];
    for await (const m of channel().serverStream('/test.Echo/Count', Buffer.from([5, 0]))) got.push(m[0] as number);
    expect(got).toEqual([0, 1, 2, 3, 4]);
  });

  it('yields the messages sent before a failure, then throws its status', async () => {
    const got: number[] = [];
    const err = await failure(
      (async () => {
        for await (const m of channel().serverStream('/test.Echo/Count', Buffer.from([3, 1]))) got.push(m[0] as number);
      })(),
    );
    expect(got).toEqual([0, 1, 2]);
    expect(err.code).toBe(status.INTERNAL);
    expect(err.details).toBe('broke after the messages');
  });

  it('cancels the call when the consumer stops iterating', async () => {
    for await (const m of channel().serverStream('/test.Echo/Count', Buffer.from([255]))) {
      expect(m[0]).toBe(0);
      break;
    }
    await until(() => seen.cancelled.includes('Count'));
    expect(seen.cancelled).toEqual(['Count']);
  });

  it('ends with CANCELLED when the signal aborts', async () => {
    const ac = new AbortController();
    const got: number[] = [];
    const err = await failure(
      (async () => {
        for await (const m of channel().serverStream('/test.Echo/Count', Buffer.from([255]), { signal: ac.signal })) {
          got.push(m[0] as number);
          ac.abort();
        }
      })(),
    );
    expect(got).toEqual([0]);
    expect(err.code).toBe(status.CANCELLED);
  });
});

/**
 * The wire rules (grpc/doc/PROTOCOL-HTTP2.md) against answers a gRPC
 * library would not send: a plain HTTP/2 server on the socket.
 */
describe('wire rules', () => {
  let h2: Http2Server;
  let h2Socket: string;
  let answer: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void;

  beforeAll(async () => {
    h2Socket = join(dir, 'h2.sock');
    h2 = createHttp2Server();
    h2.on('stream', (stream, headers) => {
      stream.on('data', () => undefined);
      answer(stream, headers);
    });
    await new Promise<void>((resolve) => h2.listen(h2Socket, resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => h2.close(resolve));
  });
  const call = (params = {}): Promise<Buffer> => {
    const c = new GrpcChannel(h2Socket, { maxMessageBytes: 1024 });
    channels.push(c);
    return c.unary('/test.Echo/Echo', Buffer.from('x'), params);
  };
  const frame = (flag: number, body: Buffer): Buffer => {
    const b = Buffer.alloc(5 + body.length);
    b[0] = flag;
    b.writeUInt32BE(body.length, 1);
    body.copy(b, 5);
    return b;
  };

  it.each([
    [503, status.UNAVAILABLE],
    [404, status.UNIMPLEMENTED],
    [401, status.UNAUTHENTICATED],
    [500, status.UNKNOWN],
  ])('an HTTP status %i is the gRPC code %i', async (http, code) => {
    answer = (stream) => {
      stream.respond({ ':status': http, 'content-type': 'text/plain' });
      stream.end('no');
    };
    const err = await failure(call());
    expect(err.code).toBe(code);
    expect(err.details).toBe(`HTTP status ${http} from the server`);
  });

  it('a 200 that is not gRPC is UNKNOWN, naming its content-type', async () => {
    answer = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'text/html' });
      stream.end('<html>');
    };
    const err = await failure(call());
    expect(err.code).toBe(status.UNKNOWN);
    expect(err.details).toMatch(/text\/html/);
  });

  it('a trailers-only answer carries the status in its headers', async () => {
    answer = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'sandbox%20%22x%22%20not%20found' }, { endStream: true });
    };
    const err = await failure(call());
    expect(err.code).toBe(status.NOT_FOUND);
    expect(err.details).toBe('sandbox "x" not found');
  });

  it('a compressed message (never asked for) is INTERNAL; trailers without grpc-status are UNKNOWN; a message cut short is INTERNAL', async () => {
    answer = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(frame(1, Buffer.from('zz')));
    };
    expect((await failure(call())).code).toBe(status.INTERNAL);

    answer = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-other': '1' }));
      stream.end(frame(0, Buffer.from('ok')));
    };
    expect((await failure(call())).code).toBe(status.UNKNOWN);

    answer = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(frame(0, Buffer.from('abcdef')).subarray(0, 8));
    };
    const cut = await failure(call());
    expect(cut.code).toBe(status.INTERNAL);
    expect(cut.details).toBe('the response ended inside a message');
  });

  it('sends grpc-timeout in milliseconds, and in seconds past 8 digits', async () => {
    const seen: string[] = [];
    answer = (stream, headers) => {
      seen.push(String(headers['grpc-timeout']));
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(frame(0, Buffer.from('ok')));
    };
    expect((await call({ deadlineAt: Date.now() + 120_000 })).toString()).toBe('ok');
    expect((await call({ deadlineAt: Date.now() + 200_000_000 })).toString()).toBe('ok');
    expect(Number(seen[0]?.slice(0, -1))).toBeGreaterThan(119_000);
    expect(seen[0]).toMatch(/^\d{1,8}m$/);
    expect(seen[1]).toMatch(/^\d{1,8}S$/);
    expect(Number(seen[1]?.slice(0, -1))).toBeGreaterThan(199_000);
  });
});
