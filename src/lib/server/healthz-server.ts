/**
 * The kubelet's localhost healthz endpoint (healthzBindAddress:healthzPort,
 * 127.0.0.1:10248): plain HTTP, no authentication, what `kubeadm init/join`
 * waits on ("[kubelet-check] Waiting for a healthy kubelet at
 * http://127.0.0.1:10248/healthz") and what node monitoring probes. As
 * cmd/kubelet/app/server.go serves it: the apiserver healthz handler with
 * its one default check, ping:
 *
 *   /healthz              "ok"; with ?verbose "[+]ping ok\nhealthz check passed\n";
 *                         ?exclude=NAME as the apiserver handler reads it
 *   /healthz/ping         "ok"
 *   anything else         404 "404 page not found" (Go's ServeMux)
 *
 * A port that cannot be bound (another kubelet's, another klet's) is not
 * fatal: as the kubelet's wait.Until loop, klet logs it and tries again
 * every 5 s for as long as it runs.
 */
import http from 'node:http';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { pause } from '../util/sleep.js';

const RETRY_MS = 5_000;
const CHECKS = ['ping'] as const;

export interface HealthzServerOptions {
  address: string;
  port: number;
  signal: AbortSignal;
  /** Told each time the server is listening (tests, the start-up line). */
  onListening?: (port: number) => void;
}

/** The answer to one request (pure: table tests). */
export function healthzAnswer(url: string): { status: number; body: string } {
  const u = new URL(url, 'http://x');
  if (u.pathname === '/healthz') {
    const excluded = new Set(u.searchParams.getAll('exclude'));
    let out = '';
    for (const c of CHECKS) out += excluded.delete(c) ? `[+]${c} excluded: ok\n` : `[+]${c} ok\n`;
    if (excluded.size > 0) {
      out += `warn: some health checks cannot be excluded: no matches for ${[...excluded].sort().map((x) => `"${x}"`).join(',')}\n`;
    }
    return { status: 200, body: u.searchParams.has('verbose') ? `${out}healthz check passed\n` : 'ok' };
  }
  if (u.pathname === '/healthz/ping') return { status: 200, body: 'ok' };
  return { status: 404, body: '404 page not found\n' };
}

/** Serve until `signal` aborts, binding again every 5 s while the port cannot be bound. */
export async function runHealthzServer(o: HealthzServerOptions): Promise<void> {
  let failedBefore = false;
  while (!o.signal.aborted) {
    const server = http.createServer((req, res) => {
      const { status, body } = healthzAnswer(req.url ?? '/');
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
      res.end(body);
    });
    server.headersTimeout = 10_000;
    server.requestTimeout = 10_000;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: o.address, port: o.port }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      server.close();
      const line = `Failed to start healthz server on ${o.address}:${o.port}: ${errorMessage(err)}; trying again every ${RETRY_MS / 1000}s`;
      if (failedBefore) log.debug(line);
      else log.warn(line);
      failedBefore = true;
      await pause(RETRY_MS, o.signal);
      continue;
    }
    const port = (server.address() as { port: number }).port;
    log.debug(`healthz server on http://${o.address.includes(':') ? `[${o.address}]` : o.address}:${port}/healthz`);
    o.onListening?.(port);
    // Served until the sync stops (a listening server does not fail by itself).
    await new Promise<void>((resolve) => {
      if (o.signal.aborted) return resolve();
      o.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
