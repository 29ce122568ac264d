import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CriClient } from '../../src/lib/cri/client.js';
import { runHandler } from '../../src/lib/kuberuntime/hooks.js';
import { selfSigned } from '../../src/lib/server/serving-cert.js';

let server: https.Server;
let port = 0;
const hits: Array<{ path: string; agent: string }> = [];

beforeAll(async () => {
  const { cert, key } = await selfSigned('hook-target', ['127.0.0.1'], new Date());
  server = https.createServer({ cert, key }, (req, res) => {
    hits.push({ path: req.url ?? '', agent: String(req.headers['user-agent']) });
    res.writeHead(req.url === '/fail' ? 500 : 200).end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const pod = { metadata: { name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'c' }] } };
const run = (path: string) =>
  runHandler({} as CriClient, {
    pod,
    container: { name: 'c' },
    containerId: 'x',
    podIP: '127.0.0.1',
    handler: { httpGet: { host: '127.0.0.1', port, scheme: 'HTTPS', path } },
    timeoutMs: 5000,
  });

describe('an HTTPS lifecycle hook', () => {
  it('reaches a server whose certificate nothing verifies (the kubelet does not verify it either)', async () => {
    await run('/hook');
    expect(hits.at(-1)).toEqual({ path: '/hook', agent: 'kube-lifecycle/klet' });
  });
  it('a status of 400 or more fails it, with the kubelet\'s message', async () => {
    await expect(run('/fail')).rejects.toThrow('HTTP lifecycle hook (/fail) for Container "c" in Pod "p" failed - error: received status code 500');
  });
});
