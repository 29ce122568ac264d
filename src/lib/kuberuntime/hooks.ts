/**
 * Container lifecycle hooks (pkg/kubelet/lifecycle/handlers.go): postStart
 * after a container starts, preStop before it is stopped. exec runs through
 * CRI ExecSync; httpGet is a GET to the pod IP (or host) and port; sleep
 * waits. A hook fails on a non-zero exit, an HTTP status outside 200-399,
 * or a timeout.
 */
import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import { errorMessage } from '../errors.js';

export class HookError extends Error {}

function resolvePort(c: V1Container, port: number | string): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = (c.ports ?? []).find((p) => p.name === port);
  if (!named) throw new HookError(`couldn't find port ${port} in container ${c.name}`);
  return named.containerPort;
}

/**
 * Run one handler. `timeoutMs` bounds it (preStop: the grace period;
 * postStart: the kubelet gives no deadline beyond the runtime's, we use 2 min).
 */
export async function runHandler(
  cri: CriClient,
  opts: { pod: V1Pod; container: V1Container; containerId: string; podIP: string; handler: V1LifecycleHandler; timeoutMs: number; signal?: AbortSignal },
): Promise<void> {
  const h = opts.handler;
  if (h.exec) {
    const res = await cri.execSync(
      { containerId: opts.containerId, cmd: h.exec.command ?? [], timeout: BigInt(Math.max(1, Math.ceil(opts.timeoutMs / 1000))) },
      { signal: opts.signal },
    );
    if (res.exitCode !== 0) {
      const out = Buffer.from(res.stdout).toString('utf8') + Buffer.from(res.stderr).toString('utf8');
      throw new HookError(`command '${(h.exec.command ?? []).join(' ')}' exited with ${res.exitCode}: ${out.trim().slice(0, 400)}`);
    }
    return;
  }
  if (h.httpGet) {
    const g = h.httpGet;
    const host = g.host || opts.podIP || '127.0.0.1';
    const port = resolvePort(opts.container, g.port);
    const scheme = (g.scheme ?? 'HTTP').toLowerCase();
    const path = g.path ? (g.path.startsWith('/') ? g.path : `/${g.path}`) : '/';
    const headers: Record<string, string> = { 'User-Agent': 'kube-lifecycle/klet' };
    for (const hd of g.httpHeaders ?? []) headers[hd.name] = hd.value;
    const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
    const signals = [AbortSignal.timeout(opts.timeoutMs), ...(opts.signal ? [opts.signal] : [])];
    let res: { status: number };
    try {
      // The prober's HTTP/1.1 client: an HTTPS hook's certificate is not verified, as the kubelet's hook client
      // does not (InsecureSkipVerify), where fetch refused a self-signed one.
      const { http1Get } = await import('../prober/http1.js');
      const hostHeader = `${host.includes(':') ? `[${host}]` : host}:${port}`;
      res = await http1Get({ https: scheme === 'https', host, port, path, hostHeader, headers: Object.entries(headers), deadline: Date.now() + opts.timeoutMs, maxBody: 0, signal: AbortSignal.any(signals) });
    } catch (err) {
      throw new HookError(`Get "${url}": ${errorMessage(err)}`);
    }
    if (res.status < 200 || res.status >= 400) throw new HookError(`HTTP lifecycle hook (${path}) for Container "${opts.container.name}" in Pod "${opts.pod.metadata?.name}" failed - error: received status code ${res.status}`);
    return;
  }
  if (h.sleep) {
    const ms = Math.min(h.sleep.seconds * 1000, opts.timeoutMs);
    await new Promise((r) => setTimeout(r, ms));
    return;
  }
  throw new HookError('a lifecycle handler needs exec, httpGet or sleep');
}
