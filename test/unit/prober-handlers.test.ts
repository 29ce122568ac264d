/**
 * The probe handlers against real local servers on 127.0.0.1 (HTTP,
 * HTTPS with a self-signed certificate, TCP, gRPC health) and an
 * in-memory ExecSync: results, the kubelet's messages, and the bad cases
 * (a server that never answers, a 10 MB body, redirects elsewhere) ending
 * in bounded time and memory.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CriDeadlineExceededError } from '../../src/lib/cri/errors.js';
import { execProbe, type ExecCri } from '../../src/lib/prober/exec.js';
import { grpcProbe } from '../../src/lib/prober/grpc.js';
import { httpProbe, PROBE_USER_AGENT } from '../../src/lib/prober/http.js';
import { resolvePort, runHandler } from '../../src/lib/prober/prober.js';
import { tcpProbe } from '../../src/lib/prober/tcp.js';
import { ProbeError } from '../../src/lib/prober/types.js';
import { startHealthServer } from '../helpers/grpc-health.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

async function serve(handler: http.RequestListener, host = '127.0.0.1'): Promise<number> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, host, r));
  closers.push(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return (server.address() as net.AddressInfo).port;
}

function get(port: number, p: string, extra: Partial<Parameters<typeof httpProbe>[0]> = {}, timeoutMs = 1000) {
  return httpProbe({ scheme: 'HTTP', host: '127.0.0.1', port, path: p, headers: [], ...extra }, timeoutMs);
}

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('httpGet', () => {
  it('succeeds on 2xx with the body, sends the kubelet User-Agent, Accept and the probe headers', async () => {
    let seen: http.IncomingHttpHeaders = {};
    let url = '';
    const port = await serve((req, res) => {
      seen = req.headers;
      url = req.url ?? '';
      res.end('ok');
    });
    const r = await get(port, 'healthz?x=1', { headers: [{ name: 'X-Probe', value: 'yes' }, { name: 'Host', value: 'example.test' }] });
    expect(r).toMatchObject({ outcome: 'success', output: 'ok', detail: { statusCode: 200, body: 'ok' } });
    expect(url).toBe('/healthz?x=1');
    expect(seen['user-agent']).toBe(PROBE_USER_AGENT);
    expect(seen.accept).toBe('*/*');
    expect(seen['x-probe']).toBe('yes');
    expect(seen.host).toBe('example.test');
  });

  it('fails on 500 with the kubelet message', async () => {
    const port = await serve((_req, res) => {
      res.statusCode = 500;
      res.end('boom');
    });
    expect(await get(port, '/')).toMatchObject({ outcome: 'failure', output: 'HTTP probe failed with statuscode: 500' });
  });

  it('fails with the dial error on a closed port', async () => {
    const port = await closedPort();
    const r = await get(port, '/healthz');
    expect(r.outcome).toBe('failure');
    expect(r.output).toBe(`Get "http://127.0.0.1:${port}/healthz": dial tcp 127.0.0.1:${port}: connect: connection refused`);
  });

  it('gives up on a server that never answers at the timeout', async () => {
    const port = await serve(() => undefined);
    const t0 = Date.now();
    const r = await get(port, '/', {}, 500);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(r.output).toBe(`Get "http://127.0.0.1:${port}/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`);
  });

  it('reads at most 10 KiB of a 10 MB body and succeeds', async () => {
    let written = 0;
    const port = await serve((_req, res) => {
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const write = (): void => {
        while (written < 10 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      write();
    });
    const r = await get(port, '/big', {}, 5000);
    expect(r.outcome).toBe('success');
    expect(r.output.length).toBe(10 * 1024);
  });

  it('follows a redirect on the same host', async () => {
    const port = await serve((req, res) => {
      if (req.url === '/old') {
        res.writeHead(302, { Location: '/new' });
        res.end();
      } else res.end(`at ${req.url}`);
    });
    const r = await get(port, '/old');
    expect(r).toMatchObject({ outcome: 'success', output: 'at /new' });
  });

  it('does not follow a redirect to another host: success with a warning', async () => {
    const port = await serve((_req, res) => {
      res.writeHead(301, { Location: 'http://elsewhere.invalid/x' });
      res.end('moved');
    });
    const r = await get(port, '/');
    expect(r).toMatchObject({ outcome: 'warning', output: 'Probe terminated redirects, Response body: moved' });
  });

  it('stops after 10 redirects', async () => {
    const port = await serve((_req, res) => {
      res.writeHead(302, { Location: '/loop' });
      res.end();
    });
    const r = await get(port, '/');
    expect(r).toMatchObject({ outcome: 'failure', output: `Get "http://127.0.0.1:${port}/loop": stopped after 10 redirects` });
  });

  it('does not verify HTTPS certificates', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-tls-'));
    closers.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${dir}/k`, '-out', `${dir}/c`, '-days', '1', '-subj', '/CN=x'], { stdio: 'ignore' });
    const server = https.createServer({ key: fs.readFileSync(`${dir}/k`), cert: fs.readFileSync(`${dir}/c`) }, (_req, res) => res.end('tls'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    const r = await get((server.address() as net.AddressInfo).port, '/', { scheme: 'HTTPS' });
    expect(r).toMatchObject({ outcome: 'success', output: 'tls' });
  });
});

describe('tcpSocket', () => {
  it('succeeds when the port accepts and fails with the connect error when it is closed', async () => {
    const port = await serve((_req, res) => res.end());
    expect((await tcpProbe('127.0.0.1', port, 1000)).outcome).toBe('success');
    const closed = await closedPort();
    expect(await tcpProbe('127.0.0.1', closed, 1000)).toMatchObject({
      outcome: 'failure',
      output: `dial tcp 127.0.0.1:${closed}: connect: connection refused`,
    });
  });
});

describe('grpc', () => {
  it('succeeds on SERVING, fails on NOT_SERVING and on an unknown service, and on a closed port within the timeout', async () => {
    const server = await startHealthServer('127.0.0.1', { '': 'SERVING', db: 'NOT_SERVING' });
    closers.push(() => server.close());
    expect(await grpcProbe('127.0.0.1', server.port, '', 1000)).toMatchObject({ outcome: 'success', output: 'service healthy' });
    expect(await grpcProbe('127.0.0.1', server.port, 'db', 1000)).toMatchObject({
      outcome: 'failure',
      output: 'service unhealthy (responded with "NOT_SERVING")',
    });
    expect((await grpcProbe('127.0.0.1', server.port, 'nope', 1000)).output).toBe('error: health rpc probe failed: rpc error: code = NotFound desc = unknown service');
    const closed = await closedPort();
    const t0 = Date.now();
    const r = await grpcProbe('127.0.0.1', closed, '', 1000);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(r.output).toBe(`timeout: failed to connect service "127.0.0.1:${closed}" within 1s: context deadline exceeded`);
  });
});

describe('exec', () => {
  const fake = (res: { exitCode: number; stdout?: string; stderr?: string } | Error): ExecCri & { calls: unknown[] } => {
    const calls: unknown[] = [];
    return {
      calls,
      execSync: async (req) => {
        calls.push(req);
        if (res instanceof Error) throw res;
        return { exitCode: res.exitCode, stdout: Buffer.from(res.stdout ?? ''), stderr: Buffer.from(res.stderr ?? '') };
      },
    };
  };

  it('is success on exit 0 and failure with the output otherwise, with the probe timeout on ExecSync', async () => {
    const ok = fake({ exitCode: 0, stdout: 'fine' });
    expect(await execProbe(ok, 'cid', ['true'], 4)).toMatchObject({ outcome: 'success', output: 'fine' });
    expect(ok.calls[0]).toMatchObject({ containerId: 'cid', cmd: ['true'], timeout: 4n });
    expect(await execProbe(fake({ exitCode: 1, stdout: 'out ', stderr: 'err' }), 'cid', ['x'], 1)).toMatchObject({ outcome: 'failure', output: 'out err', detail: { exitCode: 1 } });
  });

  it('caps the output at 10 KiB and words a timeout as the kubelet does', async () => {
    const big = await execProbe(fake({ exitCode: 1, stdout: 'x'.repeat(100_000) }), 'cid', ['x'], 1);
    expect(big.output.length).toBe(10 * 1024);
    const slow = await execProbe(fake(new CriDeadlineExceededError('deadline', { grpcCode: 4, method: 'ExecSync', endpoint: 'unix:///run/test.sock' })), 'cid', ['sleep', '10'], 1);
    expect(slow).toMatchObject({ outcome: 'failure', output: 'command "sleep 10" timed out' });
  });

  it('expands $(VAR) from the container static env', async () => {
    const cri = fake({ exitCode: 0 });
    const container = { name: 'c', env: [{ name: 'FILE', value: '/tmp/ok' }] };
    await runHandler(cri, { exec: { command: ['cat', '$(FILE)'] } }, { pod: {}, container, containerId: 'cid', podIP: '' });
    expect(cri.calls[0]).toMatchObject({ cmd: ['cat', '/tmp/ok'] });
  });
});

describe('ports', () => {
  it('resolves named ports and rejects names the container does not declare', () => {
    const c = { name: 'web', ports: [{ name: 'http', containerPort: 8080 }] };
    expect(resolvePort('http', c)).toBe(8080);
    expect(resolvePort(81, c)).toBe(81);
    expect(() => resolvePort('metrics', c)).toThrow(new ProbeError('port "metrics" not found in container "web"'));
    expect(() => resolvePort(70000, c)).toThrow('invalid port number: 70000');
  });
});

describe('probe events', () => {
  it('words failures, warnings and errors as the kubelet does', async () => {
    const { probeEvent } = await import('../../src/lib/prober/prober.js');
    const detail = { handler: 'tcpSocket' as const, address: 'x', error: null };
    expect(probeEvent('Liveness', { result: { outcome: 'failure', output: 'HTTP probe failed with statuscode: 500', detail } })).toEqual({
      type: 'Warning',
      reason: 'Unhealthy',
      message: 'Liveness probe failed: HTTP probe failed with statuscode: 500',
    });
    expect(probeEvent('Readiness', { result: { outcome: 'warning', output: 'Probe terminated redirects, Response body: moved', detail } })).toEqual({
      type: 'Warning',
      reason: 'ProbeWarning',
      message: 'Readiness probe warning: Probe terminated redirects, Response body: moved',
    });
    expect(probeEvent('Startup', { error: 'port "x" not found in container "c"' })?.message).toBe('Startup probe errored: port "x" not found in container "c"');
    expect(probeEvent('Startup', { result: { outcome: 'success', output: '', detail } })).toBeNull();
  });
});
