/**
 * tcpSocket probes (pkg/probe/tcp): success when a TCP connection opens
 * within the timeout; the connection is closed at once.
 */
import net from 'node:net';
import { dialError, dialTimeout, joinHostPort } from './net-errors.js';
import type { HandlerResult } from './types.js';

export function tcpProbe(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<HandlerResult> {
  const address = joinHostPort(host, port);
  return new Promise((resolve) => {
    let settled = false;
    const sock = net.connect({ host, port });
    const finish = (error: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      resolve({ outcome: error === null ? 'success' : 'failure', output: error ?? '', detail: { handler: 'tcpSocket', address, error } });
    };
    const timer = setTimeout(() => finish(dialTimeout(host, port)), timeoutMs);
    const onAbort = (): void => finish(`dial tcp ${address}: operation was canceled`);
    signal?.addEventListener('abort', onAbort, { once: true });
    sock.once('connect', () => finish(null));
    sock.once('error', (err) => finish(dialError(host, port, err)));
  });
}
