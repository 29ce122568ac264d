/**
 * The httpGet probe's own HTTP/1.1 client against raw TCP servers that
 * answer with exact bytes: response framing (chunked in pieces, 1xx before
 * the answer, a body delimited by the connection's end, Content-Length),
 * the request as sent (one Host, Connection: close, repeated headers), and
 * the broken cases (a body cut short, a malformed status line, a
 * connection closed before any answer, a header that cannot be sent).
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpProbe } from '../../src/lib/prober/http.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** A server that reads the request head, then writes `parts` (with a pause between them) and optionally ends. */
async function rawServer(parts: string[], opts: { end?: boolean } = {}): Promise<{ port: number; requests: string[]; connections: () => number }> {
  const requests: string[] = [];
  let connections = 0;
  const server = net.createServer((sock) => {
    connections++;
    let head = '';
    sock.on('data', async (d) => {
      if (head.includes('\r\n\r\n')) return;
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      requests.push(head);
      for (const p of parts) {
        if (sock.destroyed) return;
        sock.write(p);
        await new Promise((r) => setTimeout(r, 15));
      }
      if (opts.end !== false) sock.end();
    });
    sock.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.address() as net.AddressInfo).port, requests, connections: () => connections };
}

const get = (port: number, headers: { name: string; value: string }[] = [], timeoutMs = 2000) =>
  httpProbe({ scheme: 'HTTP', host: '127.0.0.1', port, path: '/h?x=1', headers }, timeoutMs);

describe('httpGet HTTP/1.1 client', () => {
  it('decodes a chunked body that arrives in pieces, chunk extensions and all', async () => {
    const s = await rawServer(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel', 'lo\r\n6\r\n world\r', '\n0\r\n\r\n'], { end: false });
    expect(await get(s.port)).toMatchObject({ outcome: 'success', output: 'hello world', detail: { statusCode: 200 } });
  });

  it('skips a 100 Continue and answers with the response after it', async () => {
    const s = await rawServer(['HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy']);
    expect(await get(s.port)).toMatchObject({ outcome: 'failure', output: 'HTTP probe failed with statuscode: 503', detail: { statusCode: 503, body: 'busy' } });
  });

  it('reads a body delimited by the end of the connection (HTTP/1.0) and one by Content-Length without waiting for the end', async () => {
    const s10 = await rawServer(['HTTP/1.0 200 OK\r\n\r\nold ', 'server']);
    expect(await get(s10.port)).toMatchObject({ outcome: 'success', output: 'old server' });
    // Content-Length 2 and a connection left open: the answer is complete after 2 bytes; a 204 has no body.
    const sLen = await rawServer(['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA'], { end: false });
    const s204 = await rawServer(['HTTP/1.1 204 No Content\r\n\r\n'], { end: false });
    const t0 = Date.now();
    expect(await get(sLen.port, [], 5000)).toMatchObject({ outcome: 'success', output: 'ok' });
    expect(await get(s204.port, [], 5000)).toMatchObject({ outcome: 'success', detail: { statusCode: 204 } });
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('sends one request with Host, Connection: close, the kubelet defaults and repeated probe headers', async () => {
    const s = await rawServer(['HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n']);
    await get(s.port, [{ name: 'X-A', value: '1' }, { name: 'X-A', value: '2' }, { name: 'Host', value: 'probe.test' }]);
    const req = s.requests[0]!;
    expect(req.startsWith('GET /h?x=1 HTTP/1.1\r\n')).toBe(true);
    const lines = req.split('\r\n');
    expect(lines.filter((l) => /^host:/i.test(l))).toEqual(['Host: probe.test']);
    expect(lines).toEqual(expect.arrayContaining(['Connection: close', 'Accept: */*', 'X-A: 1', 'X-A: 2']));
    expect(lines.some((l) => /^User-Agent: kube-probe\/\d+\.\d+$/.test(l))).toBe(true);
  });

  it('fails a body cut short, a malformed status line and a connection closed before any answer, with Go\'s words', async () => {
    const short = await rawServer(['HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this']);
    expect((await get(short.port)).output).toBe(`Get "http://127.0.0.1:${short.port}/h?x=1": unexpected EOF`);
    const bad = await rawServer(['SSH-2.0-OpenSSH\r\n\r\n']);
    expect((await get(bad.port)).output).toBe(`Get "http://127.0.0.1:${bad.port}/h?x=1": net/http: HTTP/1.x transport connection broken: malformed HTTP response "SSH-2.0-OpenSSH"`);
    const mute = await rawServer([]);
    expect((await get(mute.port)).output).toBe(`Get "http://127.0.0.1:${mute.port}/h?x=1": EOF`);
  });

  it('does not send a header value with a line break: a failed probe naming the header, no connection made', async () => {
    const s = await rawServer(['HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n']);
    const r = await get(s.port, [{ name: 'X-Evil', value: 'a\r\nInjected: 1' }]);
    expect(r).toMatchObject({ outcome: 'failure', output: `Get "http://127.0.0.1:${s.port}/h?x=1": net/http: invalid header field value for "X-Evil"` });
    expect(s.connections()).toBe(0);
  });
});
