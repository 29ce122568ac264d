/**
 * The kubelet's localhost healthz endpoint (cmd/kubelet/app/server.go: the apiserver healthz
 * handler with its default ping check on a plain ServeMux): answers, and a real server on a free port.
 */
import { describe, expect, it } from 'vitest';
import { healthzAnswer, runHealthzServer } from '../../src/lib/server/healthz-server.js';

describe('healthzAnswer', () => {
  it.each([
    ['/healthz', 200, 'ok'],
    ['/healthz?verbose', 200, '[+]ping ok\nhealthz check passed\n'],
    ['/healthz?verbose&exclude=ping', 200, '[+]ping excluded: ok\nhealthz check passed\n'],
    ['/healthz?verbose&exclude=etcd&exclude=b', 200, '[+]ping ok\nwarn: some health checks cannot be excluded: no matches for "b","etcd"\nhealthz check passed\n'],
    ['/healthz/ping', 200, 'ok'],
    ['/healthz/', 404, '404 page not found\n'],
    ['/healthz/syncloop', 404, '404 page not found\n'],
    ['/', 404, '404 page not found\n'],
    ['/pods', 404, '404 page not found\n'],
  ])('%s → %i', (url, status, body) => {
    expect(healthzAnswer(url)).toEqual({ status, body });
  });
});

describe('runHealthzServer', () => {
  it('serves plain HTTP until aborted; a port in use is tried again, not fatal', async () => {
    const first = new AbortController();
    const listening = new Promise<number>((resolve) => {
      void runHealthzServer({ address: '127.0.0.1', port: 0, signal: first.signal, onListening: resolve });
    });
    const port = await listening;
    const r = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect([r.status, r.headers.get('content-type'), await r.text()]).toEqual([200, 'text/plain; charset=utf-8', 'ok']);
    // A second server on the same port keeps trying; once the first is gone it gets the port.
    const second = new AbortController();
    let secondUp = false;
    const done = runHealthzServer({ address: '127.0.0.1', port, signal: second.signal, onListening: () => (secondUp = true) });
    await new Promise((res) => setTimeout(res, 300));
    expect(secondUp).toBe(false);
    first.abort();
    await new Promise((res) => setTimeout(res, 5_500));
    expect(secondUp).toBe(true);
    const again = await fetch(`http://127.0.0.1:${port}/healthz/ping`);
    expect(await again.text()).toBe('ok');
    second.abort();
    await done;
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  }, 15_000);
});
