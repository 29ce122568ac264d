/**
 * The REST client (lib/kube/rest.ts) over https: HTTP/2 when the server
 * offers it in ALPN (the API server does), HTTP/1.1 with keep-alive when it
 * does not — a TLS-terminating proxy in front of the API server, as Go's
 * transport falls back. Offering only h2 got "tlsv1 alert no application
 * protocol" from such a proxy and the node never registered.
 */
import http2 from 'node:http2';
import https from 'node:https';
import type http from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { restClient } from '../../src/lib/kube/rest.js';
import type { LoadedKubeconfig } from '../../src/lib/kube/kubeconfig.js';
import { selfSigned } from '../../src/lib/server/serving-cert.js';

let pem: { cert: string; key: string };
const servers: { close(): void }[] = [];
beforeAll(async () => {
  pem = await selfSigned('api', ['127.0.0.1'], new Date());
});
afterAll(() => servers.forEach((s) => s.close()));

const kubeconfig = (port: number): LoadedKubeconfig =>
  ({ server: `https://127.0.0.1:${port}`, cluster: { caData: Buffer.from(pem.cert).toString('base64'), insecure: false }, user: { token: 't0ken' }, secrets: ['t0ken'] }) as unknown as LoadedKubeconfig;

/** Answers a GET with the protocol it came over, a watch with two events. */
function handler(req: http.IncomingMessage | http2.Http2ServerRequest, r: http.ServerResponse | http2.Http2ServerResponse): void {
  const res = r as http.ServerResponse;
  const proto = `${req.httpVersion}`;
  if (req.headers.authorization !== 'Bearer t0ken') {
    res.writeHead(401);
    res.end('{"kind":"Status","code":401}');
    return;
  }
  if ((req.url ?? '').includes('watch=true')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(`${JSON.stringify({ type: 'ADDED', object: { proto } })}\n`);
    res.end(`${JSON.stringify({ type: 'MODIFIED', object: { proto } })}\n`);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ proto, port: req.socket.remotePort }));
}

async function listen(server: https.Server | http2.Http2SecureServer): Promise<number> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return (server.address() as { port: number }).port;
}

async function exercise(port: number): Promise<{ protos: string[]; ports: Set<number>; events: string[] }> {
  const rest = await restClient(kubeconfig(port));
  const signal = new AbortController().signal;
  const protos: string[] = [];
  const ports = new Set<number>();
  for (let i = 0; i < 3; i++) {
    const a = (await rest.request('GET', '/api/v1/nodes/n', { signal, timeoutMs: 5000 })) as { proto: string; port: number };
    protos.push(a.proto);
    ports.add(a.port);
  }
  const events: string[] = [];
  await rest.watch('/api/v1/pods', {}, { signal, timeoutMs: 5000, onStart: () => undefined, onEvent: (t, o) => events.push(`${t} ${(o as { proto: string }).proto}`) });
  rest.close();
  return { protos, ports, events };
}

it('speaks HTTP/2 to a server that offers h2', async () => {
  const port = await listen(http2.createSecureServer({ ...pem, allowHTTP1: true }, handler));
  const r = await exercise(port);
  expect(r.protos).toEqual(['2.0', '2.0', '2.0']);
  expect(r.ports.size).toBe(1);
  expect(r.events).toEqual(['ADDED 2.0', 'MODIFIED 2.0']);
});

it('falls back to HTTP/1.1, on kept-alive connections, when the server offers only http/1.1', async () => {
  const port = await listen(https.createServer({ ...pem }, handler));
  const r = await exercise(port);
  expect(r.protos).toEqual(['1.1', '1.1', '1.1']);
  expect(r.ports.size).toBe(1);
  expect(r.events).toEqual(['ADDED 1.1', 'MODIFIED 1.1']);
});
