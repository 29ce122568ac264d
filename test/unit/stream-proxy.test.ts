import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { proxyUpgrade } from '../../src/lib/server/stream-proxy.js';

/**
 * proxyUpgrade relays bytes between a client and a stand-in for the runtime's streaming server
 * (plain sockets on loopback): every byte arrives, in order, both ways, also when the client
 * reads slowly (the relay reuses its read buffers, so a byte overwritten before it was written
 * would show here).
 */
const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

describe('proxyUpgrade relays an upgraded connection byte for byte', () => {
  it('20 MiB down to a slow reader and 2 MiB up arrive whole and in order', async () => {
    const down = randomBytes(20 * 1024 * 1024);
    const up = randomBytes(2 * 1024 * 1024);
    let upHash = '';
    const upstreamGot = new Promise<void>((resolve) => {
      const runtime = net.createServer((s) => {
        let head = Buffer.alloc(0);
        const hash = createHash('sha256');
        let seen = 0;
        let started = false;
        s.on('data', (d: Buffer) => {
          if (!started) {
            head = Buffer.concat([head, d]);
            const end = head.indexOf('\r\n\r\n');
            if (end < 0) return;
            started = true;
            d = head.subarray(end + 4);
            s.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
            // Uneven writes, as a runtime's frames are.
            let off = 0;
            let n = 1;
            const more = (): void => {
              while (off < down.length) {
                const len = Math.min(((n++ * 7919) % 90_000) + 1, down.length - off);
                const ok = s.write(down.subarray(off, off + len));
                off += len;
                if (!ok) return void s.once('drain', more);
              }
            };
            more();
          }
          hash.update(d);
          seen += d.length;
          if (seen === up.length) {
            upHash = hash.digest('hex');
            resolve();
          }
        });
      });
      closers.push(() => runtime.close());
      void listen(runtime).then((port) => {
        const kubelet = http.createServer();
        kubelet.on('upgrade', (req, socket, head) => void proxyUpgrade(req, socket, head, new URL(`http://127.0.0.1:${port}/portforward/x`), new AbortController().signal));
        closers.push(() => kubelet.close());
        void listen(kubelet).then((kport) => {
          const req = http.request({ host: '127.0.0.1', port: kport, path: '/portForward/ns/p', headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1' } });
          req.on('upgrade', (_res, socket, first: Buffer) => {
            closers.push(() => socket.destroy());
            const hash = createHash('sha256').update(first);
            let got = first.length;
            socket.write(up);
            // A slow reader: pause now and then so the relay must hold the runtime back.
            socket.on('data', (d: Buffer) => {
              hash.update(d);
              got += d.length;
              if (got % 7 === 0) {
                socket.pause();
                setTimeout(() => socket.resume(), 2);
              }
              if (got === down.length) downHash.resolve(hash.digest('hex'));
            });
          });
          req.end();
        });
      });
    });
    let resolveDown!: (hash: string) => void;
    const downHash = { promise: new Promise<string>((resolve) => (resolveDown = resolve)), resolve: (h: string) => resolveDown(h) };
    await upstreamGot;
    expect(upHash).toBe(createHash('sha256').update(up).digest('hex'));
    expect(await downHash.promise).toBe(createHash('sha256').update(down).digest('hex'));
  }, 60_000);
});
