import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PodConfig, type PodUpdate } from '../../src/lib/config/config.js';
import { HttpSource } from '../../src/lib/config/http.js';
import type { SourceRead } from '../../src/lib/config/source.js';
import { setLogSink } from '../../src/lib/log.js';

const NODE = 'node1';
const MiB = 1024 * 1024;

function podYaml(name: string, image = 'busybox:1.36'): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n  - name: main\n    image: ${image}\n`;
}

/** What the test server answers; swapped by the tests. */
type Reply = (req: http.IncomingMessage, res: http.ServerResponse) => void;
const text =
  (body: string, status = 200, type = 'application/yaml'): Reply =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  };
/** `mib` MiB of YAML comment lines, with or without a content-length, written until the client goes away. */
const huge =
  (mib: number, withLength: boolean): Reply =>
  (_req, res) => {
    res.writeHead(200, withLength ? { 'content-length': String(mib * MiB) } : {});
    const chunk = Buffer.from(`#${'x'.repeat(1022)}\n`.repeat(1024));
    let sent = 0;
    const pump = (): void => {
      while (sent < mib && !res.destroyed) {
        sent++;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    res.on('error', () => {});
    pump();
  };

let reply: Reply = text('');
let requests: http.IncomingHttpHeaders[] = [];
let server: http.Server;
let port = 0;

async function listen(): Promise<void> {
  server = http.createServer((req, res) => {
    requests.push(req.headers);
    reply(req, res);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
}
async function shutdown(): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

beforeAll(async () => {
  setLogSink(() => {});
  await listen();
});
afterAll(async () => {
  if (server.listening) await shutdown();
});
let running: PodConfig[] = [];
afterEach(async () => {
  await Promise.all(running.map((c) => c.stop()));
  running = [];
  requests = [];
});

const url = (): string => `http://127.0.0.1:${port}/pods.yaml?token=s3cret`;
const failed = (r: SourceRead): string[] => ('failed' in r ? r.failed.map(String) : []);

function start(headers?: Record<string, string>) {
  const config = new PodConfig();
  config.addSource(new HttpSource({ url: url(), headers, nodeName: NODE, httpCheckFrequencyMs: 50, timeoutMs: 2000 }));
  config.start();
  running.push(config);
  const next = async (ms = 1000): Promise<PodUpdate> =>
    config.updates.next(AbortSignal.timeout(ms)).catch(() => {
      throw new Error(`no update within ${ms} ms; errors: ${JSON.stringify([...config.errors()])}`);
    });
  const errors = (): string[] => (config.errors().get('http') ?? []).map(String);
  /** Wait until the source reports an error matching `re`; then check that nothing was removed meanwhile. */
  const failsWith = async (re: RegExp, ms = 2000): Promise<void> => {
    const deadline = Date.now() + ms;
    while (!errors().some((e) => re.test(e))) {
      if (Date.now() > deadline) throw new Error(`no error matching ${re} within ${ms} ms; errors: ${JSON.stringify(errors())}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // A few more polls: still no update, pods still there.
    await new Promise((r) => setTimeout(r, 150));
    expect(config.updates.size).toBe(0);
  };
  return { config, next, errors, failsWith };
}

describe('HttpSource', () => {
  it('adds the pods served, keeps them through every kind of failure, and converges when the URL recovers', async () => {
    reply = text(podYaml('web') + '---\n' + podYaml('db'));
    const { config, next, errors, failsWith } = start({ Authorization: 'Bearer t0ken' });
    const add = await next();
    expect(add.op).toBe('ADD');
    expect(add.pods.map((p) => p.metadata?.name)).toEqual(['web-node1', 'db-node1']);
    expect(requests[0]?.authorization).toBe('Bearer t0ken');
    const uids = add.pods.map((p) => p.metadata?.uid);

    reply = text('oops', 500);
    await failsWith(/HTTP 500/);
    // The query string (a token) stays out of errors.
    expect(errors()).toEqual([`http://127.0.0.1:${port}/pods.yaml: HTTP 500 Internal Server Error`]);

    reply = text('<!DOCTYPE html>\n<html><body>Please log in</body></html>\n', 200, 'text/html');
    await failsWith(/HTML/);

    reply = text('hello: [unclosed\n');
    await failsWith(/pods\.yaml:1: /);

    reply = huge(50, true);
    await failsWith(/larger than the 10 MiB limit/);

    reply = text('');
    await failsWith(/empty response body/);

    await shutdown();
    await failsWith(/ECONNREFUSED/);
    expect(config.pods().map((p) => p.metadata?.uid)).toEqual(uids);

    // Back, with web edited: an UPDATE of the same pod, and the errors are gone.
    reply = text(podYaml('web', 'nginx:1.27') + '---\n' + podYaml('db'));
    await listen();
    const update = await next(2000);
    expect(update.op).toBe('UPDATE');
    expect(update.pods.map((p) => [p.metadata?.name, p.metadata?.uid, p.spec?.containers[0]?.image])).toEqual([
      ['web-node1', uids[0], 'nginx:1.27'],
    ]);
    expect(errors()).toEqual([]);
  });

  it('treats a clean body without pods as no pods', async () => {
    reply = text(podYaml('web'));
    const { config, next } = start();
    expect((await next()).op).toBe('ADD');
    reply = text('# nothing to run here\napiVersion: v1\nkind: List\nitems: []\n');
    const remove = await next();
    expect(remove.op).toBe('REMOVE');
    expect(config.pods()).toEqual([]);
  });

  it('applies the valid part of a body with errors, removing nothing', async () => {
    reply = text(podYaml('web') + '---\n' + podYaml('db'));
    const { config, next, errors } = start();
    await next();
    // db is now broken, web edited, cache new.
    reply = text(podYaml('web', 'nginx:2') + '---\n' + podYaml('db').replace('image:', 'imag:') + '---\n' + podYaml('cache'));
    expect((await next()).pods.map((p) => p.metadata?.name)).toEqual(['cache-node1']);
    expect((await next()).op).toBe('UPDATE');
    expect(errors()).toEqual([`http://127.0.0.1:${port}/pods.yaml:17: spec.containers[0].imag: unknown field`]);
    expect(config.pods().map((p) => p.metadata?.name).sort()).toEqual(['cache-node1', 'db-node1', 'web-node1']);
  });

  it('rejects an oversized body quickly, with or without a content-length', async () => {
    const source = new HttpSource({ url: url(), nodeName: NODE, timeoutMs: 5000 });
    for (const withLength of [true, false]) {
      reply = huge(50, withLength);
      const t0 = Date.now();
      expect(failed(await source.read())).toEqual([
        `http://127.0.0.1:${port}/pods.yaml: ${withLength ? `body of ${50 * MiB} bytes is larger` : 'body is larger'} than the 10 MiB limit`,
      ]);
      expect(Date.now() - t0).toBeLessThan(3000);
    }
  });

  it('gives up on a server that does not answer within the timeout', async () => {
    reply = () => {}; // never answers
    const source = new HttpSource({ url: url(), nodeName: NODE, timeoutMs: 200 });
    const t0 = Date.now();
    expect(failed(await source.read())).toEqual([`http://127.0.0.1:${port}/pods.yaml: no complete response within 200 ms`]);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('refuses a URL that is not http(s) at construction', () => {
    expect(() => new HttpSource({ url: 'file:///etc/passwd', nodeName: NODE })).toThrow(/only http and https/);
    expect(() => new HttpSource({ url: 'not a url', nodeName: NODE })).toThrow(/not a URL/);
  });
});
