/**
 * The kubelet server: HTTPS on --address:--port (10250), what the API
 * server calls for `kubectl logs/exec/attach/port-forward` and
 * `/api/v1/nodes/N/proxy/...`, with the kubelet's paths, answers and
 * authentication/authorization (kubelet-auth.ts).
 *
 *   GET  /healthz                               ok, or 500 naming the failed checks
 *   GET  /pods                                  the node's pods (v1 PodList)
 *   GET  /configz                               {"kubeletconfig": …}
 *   GET  /metrics, /metrics/probes              Prometheus text
 *   GET  /containerLogs/{ns}/{pod}/{container}  follow, tailLines, sinceSeconds, sinceTime, timestamps, previous, limitBytes
 *   *    /exec/{ns}/{pod}[/{uid}]/{container}   command=…&input=1&output=1&error=1&tty=1, upgraded (SPDY or WebSocket)
 *   *    /attach/{ns}/{pod}[/{uid}]/{container}
 *   POST /run/{ns}/{pod}[/{uid}]/{container}    cmd=…: the combined output
 *   *    /portForward/{ns}/{pod}[/{uid}]         upgraded; port=… on WebSocket requests
 *
 * Streams: CRI Exec/Attach/PortForward answer a URL on the runtime's
 * streaming server, and the upgraded connection is relayed there
 * (stream-proxy.ts).
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { once } from 'node:events';
import type { CriClient } from '../cri/client.js';
import { ContainerState, PodSandboxState } from '../cri/gen/api.js';
import { errorMessage } from '../errors.js';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL } from '../kuberuntime/labels.js';
import { log } from '../log.js';
import { readContainerLog } from '../logs/reader.js';
import type { HttpRequestLabel, KletMetrics } from '../metrics/metrics.js';
import { jsonReplacer } from '../util/json.js';
import type { KubeletAuth } from './kubelet-auth.js';
import { type KubeletRoute, type LogQuery, metricPathLabel, parseLogQuery, parsePortForwardPorts, parseStreamOptions, routeOf } from './kubelet-routes.js';
import type { Health } from './local-api.js';
import type { Summary } from '../stats/summary.js';
import { proxyUpgrade, writeHttpError } from './stream-proxy.js';
import { logsMethodNotAllowed, nodeLogServer, redirectToLogsRoot } from './node-logs.js';
import { relistedReadySandbox, relistedRunningContainer } from './stream-target.js';
import type { PodRecordSnapshot } from '../pleg/types.js';

/** What the server asks of the running sync. */
export interface KubeletServerHost {
  cri: CriClient;
  /** Labels every CRI object of this klet carries: nothing else is ever found or reached. */
  owner: Record<string, string>;
  /**
   * The pod the node has under this namespace and name (its spec), as the kubelet's pod manager knows
   * it: running ones, and finished ones until they are deleted (their logs are read after they end).
   */
  podByName(namespace: string, name: string): Promise<V1Pod | undefined>;
  /**
   * The runtime's containers and sandboxes of a pod UID as the PLEG saw them at its last relist: where
   * an exec, attach or port-forward goes without a CRI list first (stream-target.ts). A hint: the
   * runtime is asked when it finds nothing or the runtime refuses it.
   */
  relisted?(podUid: string): PodRecordSnapshot | undefined;
  /** The pod's current status (container statuses with their IDs). */
  podStatus(pod: V1Pod, signal: AbortSignal): Promise<V1PodStatus | undefined>;
  /** The node's pods with their status (GET /pods). */
  pods(signal: AbortSignal): Promise<V1Pod[]>;
  healthz(): Health;
  metrics: KletMetrics;
  /** GET /configz's kubeletconfig. */
  configz(): unknown;
  /** The Summary API (/stats/summary, and /metrics/resource from it). */
  summary(opts: { signal: AbortSignal; onlyCpuAndMemory?: boolean }): Promise<Summary>;
}

export interface KubeletServerOptions {
  /** --address (an IP; 0.0.0.0 or :: for all). */
  address: string;
  /** --port; 0 picks a free one (tests). */
  port: number;
  /** Without cert and key (serverTLSBootstrap before its certificate is issued) no handshake succeeds until setServingCertificate. */
  tls: { cert?: string | Buffer; key?: string | Buffer; clientCa?: string | Buffer };
  auth: KubeletAuth;
  host: KubeletServerHost;
  /** /logs/ serves the node's log files (enableSystemLogHandler, default true). */
  nodeLogs?: boolean;
  /** The directory /logs/ serves (default /var/log; tests). */
  nodeLogDir?: string;
}

export interface KubeletServer {
  /** The port actually bound. */
  port: number;
  /** Open upgraded streams (exec, attach, port-forward) and log follows. */
  openStreams(): number;
  /** Serve new connections with this certificate (existing ones keep theirs). */
  setServingCertificate(pair: { cert: string; key: string }): void;
  /** Serve new connections with no certificate (an expired one is not used): no handshake succeeds until the next setServingCertificate. */
  clearServingCertificate(): void;
  /** Stop listening, end every stream and connection. */
  close(): Promise<void>;
}

const TEXT = 'text/plain; charset=utf-8';

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The runtime container ID of a status' containerID ("containerd://ID" → "ID"). */
function runtimeId(containerId: string | undefined): string {
  if (!containerId) return '';
  const i = containerId.indexOf('://');
  return i === -1 ? containerId : containerId.slice(i + 3);
}

function specHasContainer(pod: V1Pod, name: string): boolean {
  const s = pod.spec;
  return [...(s?.containers ?? []), ...(s?.initContainers ?? []), ...(s?.ephemeralContainers ?? [])].some((c) => c.name === name);
}

/**
 * The container whose log a request reads, as the kubelet's
 * validateContainerLogStatus picks it (with its messages for a container
 * that has none yet).
 */
export function logContainerId(status: V1PodStatus | undefined, podName: string, container: string, previous: boolean): string {
  const all = [...(status?.containerStatuses ?? []), ...(status?.initContainerStatuses ?? []), ...(status?.ephemeralContainerStatuses ?? [])];
  const cs = all.find((c) => c.name === container);
  const q = (s: string) => JSON.stringify(s);
  if (cs === undefined) throw new HttpError(400, `container ${q(container)} in pod ${q(podName)} is not available`);
  const last = cs.lastState?.terminated;
  const { waiting, running, terminated } = cs.state ?? {};
  if (previous) {
    if (!last?.containerID) throw new HttpError(400, `previous terminated container ${q(container)} in pod ${q(podName)} not found`);
    return runtimeId(last.containerID);
  }
  if (running) return runtimeId(cs.containerID);
  if (terminated) {
    if (terminated.containerID) return runtimeId(terminated.containerID);
    if (last?.containerID) return runtimeId(last.containerID);
    throw new HttpError(400, `container ${q(container)} in pod ${q(podName)} is terminated`);
  }
  if (last) {
    if (!last.containerID) throw new HttpError(400, `container ${q(container)} in pod ${q(podName)} is terminated`);
    return runtimeId(last.containerID);
  }
  if (waiting) {
    if (waiting.reason === 'ErrImagePull') throw new HttpError(400, `container ${q(container)} in pod ${q(podName)} is waiting to start: image can't be pulled`);
    if (waiting.reason === 'ImagePullBackOff') throw new HttpError(400, `container ${q(container)} in pod ${q(podName)} is waiting to start: trying and failing to pull image`);
    throw new HttpError(400, `container ${q(container)} in pod ${q(podName)} is waiting to start: ${waiting.reason ?? ''}`);
  }
  throw new HttpError(400, `container ${q(container)} in pod ${q(podName)} is waiting to start - no logs yet`);
}

export async function startKubeletServer(opts: KubeletServerOptions): Promise<KubeletServer> {
  const { host, auth } = opts;
  const closing = new AbortController();
  const nodeLogs = nodeLogServer(opts.nodeLogDir);
  const streams = new Set<Duplex | ServerResponse>();
  const requests = host.metrics.httpRequests;
  const inflight = host.metrics.httpInflightRequests;

  const context = (pair: { cert?: string | Buffer; key?: string | Buffer }) => ({
    ...(pair.cert !== undefined && pair.key !== undefined ? { cert: pair.cert, key: pair.key } : {}),
    minVersion: 'TLSv1.2' as const,
    ...(opts.tls.clientCa !== undefined ? { ca: opts.tls.clientCa } : {}),
  });
  let haveCert = opts.tls.cert !== undefined && opts.tls.key !== undefined;
  const server = https.createServer({
    ...context(opts.tls),
    // Ask for a client certificate; one that does not verify is not refused at the handshake but
    // simply not taken (socket.authorized false): the request may still carry a token, as with the kubelet.
    ...(opts.tls.clientCa !== undefined ? { requestCert: true, rejectUnauthorized: false } : {}),
  });
  // Requests and headers are small here; a slow client cannot hold a handshake or request headers for long.
  server.headersTimeout = 30_000;
  server.requestTimeout = 0;
  server.maxHeadersCount = 100;

  /** Authenticate and authorize; null when allowed, else the answer to give. */
  const admit = async (req: IncomingMessage, path: string): Promise<{ status: number; message: string } | null> => {
    let user;
    try {
      user = await auth.authenticate(req, closing.signal);
    } catch (err) {
      log.warn(`kubelet server: unable to authenticate the request: ${errorMessage(err)}`);
      return { status: 401, message: 'Unauthorized' };
    }
    if (user === null) return { status: 401, message: 'Unauthorized' };
    const d = await auth.authorize(user, req.method, path, closing.signal);
    if (d.allowed) return null;
    if (d.status === 403) log.debug(`kubelet server: ${d.message.trim()}`);
    return { status: d.status, message: d.message };
  };

  const podOf = async (namespace: string, name: string, uid?: string): Promise<V1Pod> => {
    const pod = await host.podByName(namespace, name);
    if (pod === undefined || (uid !== undefined && uid !== '' && pod.metadata?.uid !== uid)) throw new HttpError(404, 'pod does not exist');
    return pod;
  };

  /** The running container of this name in the pod (kubelet's findContainer: running pods from the runtime). */
  const runningContainer = async (pod: V1Pod, name: string): Promise<string | undefined> => {
    const res = await host.cri.listContainers(
      { filter: { labelSelector: { ...host.owner, [POD_UID_LABEL]: pod.metadata?.uid ?? '', [CONTAINER_NAME_LABEL]: name }, state: { state: ContainerState.CONTAINER_RUNNING } } },
      { signal: closing.signal },
    );
    return res.containers.sort((a, b) => Number(b.createdAt - a.createdAt))[0]?.id;
  };

  const readySandbox = async (pod: V1Pod): Promise<string | undefined> => {
    const res = await host.cri.listPodSandbox(
      { filter: { labelSelector: { ...host.owner, [POD_UID_LABEL]: pod.metadata?.uid ?? '' }, state: { state: PodSandboxState.SANDBOX_READY } } },
      { signal: closing.signal },
    );
    return res.items.sort((a, b) => Number(b.createdAt - a.createdAt))[0]?.id;
  };

  const fullName = (pod: V1Pod) => `${pod.metadata?.name}_${pod.metadata?.namespace}`;

  /**
   * The streaming URL for an upgrade request, or an HttpError with the kubelet's answer. With
   * `check` the request is only checked as far as the kubelet checks it before the runtime is asked.
   */
  async function streamUrl(route: KubeletRoute, q: URLSearchParams, websocket: boolean, check: true): Promise<null>;
  async function streamUrl(route: KubeletRoute, q: URLSearchParams, websocket: boolean, check?: false): Promise<URL>;
  async function streamUrl(route: KubeletRoute, q: URLSearchParams, websocket: boolean, check = false): Promise<URL | null> {
    if (route.kind === 'exec' || route.kind === 'attach') {
      const o = parseStreamOptions(q);
      if (!o.ok) throw new HttpError(o.status, o.message);
      const pod = await podOf(route.namespace, route.pod, route.uid);
      const spec = route.kind === 'attach' ? [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []), ...(pod.spec?.ephemeralContainers ?? [])].find((c) => c.name === route.container) : undefined;
      const ask = (containerId: string) =>
        route.kind === 'exec'
          ? host.cri.exec({ containerId, cmd: q.getAll('command'), ...o.value }, { signal: closing.signal })
          : // The TTY of an attach is the container's own: it cannot change once the process runs.
            host.cri.attach({ containerId, stdin: o.value.stdin, stdout: o.value.stdout, stderr: o.value.stderr, tty: spec?.tty === true }, { signal: closing.signal });
      // The relisted container first (no CRI list on the way); a check (no upgrade: nothing is asked
      // of the runtime) or a hinted container the runtime refuses goes the kubelet's way below.
      const hinted = check || (route.kind === 'attach' && spec === undefined) ? undefined : relistedRunningContainer(host.relisted?.(pod.metadata?.uid ?? ''), route.container);
      if (hinted !== undefined) {
        const res = await ask(hinted).catch(() => undefined);
        if (res !== undefined) return new URL(res.url);
      }
      const id = await runningContainer(pod, route.container);
      if (route.kind === 'exec') {
        if (id === undefined) throw new HttpError(500, `container not found (${JSON.stringify(route.container)})`);
      } else if (id === undefined || spec === undefined) throw new HttpError(500, `container ${route.container} not found in pod ${fullName(pod)}`);
      if (check) return null;
      return new URL((await ask(id)).url);
    }
    if (route.kind === 'portForward') {
      const ports = parsePortForwardPorts(q, websocket);
      if (!ports.ok) throw new HttpError(ports.status, ports.message);
      const pod = await podOf(route.namespace, route.pod);
      if (route.uid !== undefined && route.uid !== pod.metadata?.uid) throw new HttpError(404, 'pod not found');
      const ask = (podSandboxId: string) => host.cri.portForward({ podSandboxId, port: ports.value }, { signal: closing.signal });
      const hinted = check ? undefined : relistedReadySandbox(host.relisted?.(pod.metadata?.uid ?? ''));
      if (hinted !== undefined) {
        const res = await ask(hinted).catch(() => undefined);
        if (res !== undefined) return new URL(res.url);
      }
      const sandbox = await readySandbox(pod);
      if (sandbox === undefined) throw new HttpError(500, `pod not found (${JSON.stringify(fullName(pod))})`);
      if (check) return null;
      return new URL((await ask(sandbox)).url);
    }
    throw new HttpError(404, '404 page not found');
  }

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'https://kubelet');
    const labels = requestLabels(req.method, url.pathname);
    requests.inc(labels);
    socket.on('error', () => undefined);
    void (async () => {
      const denied = await admit(req, url.pathname);
      if (denied) return writeHttpError(socket, denied.status, denied.message);
      const route = routeOf(url.pathname);
      const websocket = (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
      let target: URL;
      try {
        target = await streamUrl(route, url.searchParams, websocket);
      } catch (err) {
        return writeHttpError(socket, err instanceof HttpError ? err.status : 500, errorMessage(err));
      }
      inflight.inc(labels);
      streams.add(socket);
      try {
        await proxyUpgrade(req, socket, head, target, closing.signal);
      } finally {
        streams.delete(socket);
        inflight.dec(labels);
      }
    })().catch((err: unknown) => {
      log.warn(`kubelet server: ${req.method} ${url.pathname}: ${errorMessage(err)}`);
      writeHttpError(socket, 500, errorMessage(err));
    });
  });

  const send = (res: ServerResponse, status: number, body: string, type = TEXT): void => {
    if (res.headersSent) {
      res.end();
      return;
    }
    res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'X-Content-Type-Options': 'nosniff' });
    res.end(body);
  };

  const containerLogs = async (route: Extract<KubeletRoute, { kind: 'containerLogs' }>, q: URLSearchParams, res: ServerResponse): Promise<void> => {
    if (route.pod === '') throw new HttpError(400, '{"message": "Missing podID."}');
    if (route.container === '') throw new HttpError(400, '{"message": "Missing container name."}');
    if (route.namespace === '') throw new HttpError(400, '{"message": "Missing podNamespace."}');
    const parsed = parseLogQuery(q);
    if (!parsed.ok) throw new HttpError(parsed.status, parsed.message);
    const o: LogQuery = parsed.value;
    const pod = await host.podByName(route.namespace, route.pod);
    if (pod === undefined) throw new HttpError(404, `pod ${JSON.stringify(route.pod)} does not exist`);
    if (!specHasContainer(pod, route.container)) throw new HttpError(404, `container ${JSON.stringify(route.container)} not found in pod ${JSON.stringify(route.pod)}`);
    const id = logContainerId(await host.podStatus(pod, closing.signal), route.pod, route.container, o.previous);
    const st = await host.cri.containerStatus({ containerId: id }, { signal: closing.signal }).catch((err: unknown) => {
      throw new HttpError(400, `failed to get container status ${JSON.stringify(id)}: ${errorMessage(err)}`);
    });
    const file = st.status?.logPath ?? '';
    if (file === '') throw new HttpError(400, `container ${JSON.stringify(route.container)} in pod ${JSON.stringify(route.pod)} has no log file`);
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    const signal = AbortSignal.any([closing.signal, gone.signal]);
    const since = o.sinceTime ?? (o.sinceSeconds !== undefined ? new Date(Date.now() - o.sinceSeconds * 1000) : undefined);
    const chunks = readContainerLog(file, {
      follow: o.follow,
      ...(o.tailLines !== undefined ? { tail: o.tailLines } : {}),
      ...(o.limitBytes !== undefined ? { limitBytes: o.limitBytes } : {}),
      ...(since ? { since } : {}),
      timestamps: o.timestamps,
      // As the kubelet serves it: a last line the container left unfinished stays so (echo -n).
      unfinishedNewline: false,
      signal,
      isRunning: async () => {
        const s = await host.cri.containerStatus({ containerId: id }, { signal }).catch(() => undefined);
        return s?.status?.state === ContainerState.CONTAINER_RUNNING;
      },
    });
    const iterator = chunks[Symbol.asyncIterator]();
    // The first chunk decides between an error answer and a 200 (a log file gone before anything was read).
    let first: IteratorResult<string>;
    try {
      first = await iterator.next();
    } catch (err) {
      throw new HttpError(400, errorMessage(err));
    }
    res.writeHead(200, { 'Content-Type': TEXT, 'X-Content-Type-Options': 'nosniff' });
    if (o.follow) streams.add(res);
    try {
      for (let r = first; !r.done; r = await iterator.next()) {
        if (!res.write(r.value)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
        if (signal.aborted) break;
      }
    } finally {
      streams.delete(res);
      await iterator.return?.(undefined);
      res.end();
    }
  };

  const run = async (route: Extract<KubeletRoute, { kind: 'exec' | 'attach' | 'run' }>, q: URLSearchParams, res: ServerResponse): Promise<void> => {
    const pod = await podOf(route.namespace, route.pod, route.uid);
    const id = await runningContainer(pod, route.container);
    if (id === undefined) throw new HttpError(500, `container not found (${JSON.stringify(route.container)})`);
    // For legacy reasons /run takes the command as one space-separated `cmd`.
    const r = await host.cri.execSync({ containerId: id, cmd: (q.get('cmd') ?? '').split(' '), timeout: 0n }, { signal: closing.signal });
    const out = Buffer.concat([r.stdout, r.stderr]);
    if (r.exitCode !== 0) throw new HttpError(500, `command '${q.get('cmd') ?? ''}' exited with ${r.exitCode}: ${out.toString()}`);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': out.length });
    res.end(out);
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // Go's ServeMux answers a path with `.`, `..` or empty segments with a 307 to its clean form, before any handler.
    const clean = cleanPath(req.url ?? '/');
    if (clean !== null) {
      res.writeHead(307, { Location: clean, 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': 0 });
      res.end();
      return;
    }
    const url = new URL(req.url ?? '/', 'https://kubelet');
    const route = routeOf(url.pathname);
    const labels = requestLabels(req.method, url.pathname);
    requests.inc(labels);
    inflight.inc(labels);
    res.once('close', () => inflight.dec(labels));
    void (async () => {
      const denied = await admit(req, url.pathname);
      if (denied) return send(res, denied.status, denied.message);
      const method = req.method ?? 'GET';
      const get = method === 'GET' || method === 'HEAD';
      switch (route.kind) {
        case 'healthz': {
          if (!get) return send(res, 405, 'Method Not Allowed');
          const h = host.healthz();
          const failed = Object.entries(h.checks).filter(([, c]) => !c.ok);
          return h.ok ? send(res, 200, 'ok') : send(res, 500, failed.map(([n, c]) => `[-]${n} failed: ${c.message}`).join('\n') + '\nhealthz check failed\n');
        }
        case 'pods':
        case 'runningpods': {
          if (!get) return send(res, 405, 'Method Not Allowed');
          const items = await host.pods(closing.signal);
          return send(res, 200, JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items }, jsonReplacer), 'application/json');
        }
        case 'configz':
          if (!get) return send(res, 405, 'Method Not Allowed');
          return send(res, 200, JSON.stringify({ kubeletconfig: host.configz() }), 'application/json');
        case 'metrics': {
          if (!get) return send(res, 405, 'Method Not Allowed');
          if (route.which === 'resource') {
            const { resourceMetricsText } = await import('../stats/resource-metrics.js');
            const summary = await host.summary({ signal: closing.signal, onlyCpuAndMemory: true }).catch((err: unknown) => {
              log.warn(`kubelet server: error getting summary for the resource metrics: ${errorMessage(err)}`);
              return undefined;
            });
            return send(res, 200, resourceMetricsText(summary), 'text/plain; version=0.0.4; charset=utf-8');
          }
          const text = await host.metrics.text();
          const body = route.which === 'all' ? text : probeMetrics(text);
          return send(res, 200, body, 'text/plain; version=0.0.4; charset=utf-8');
        }
        case 'statsSummary': {
          if (!get) return send(res, 405, 'Method Not Allowed');
          // The kubelet's handleSummary: only exactly one value "true" asks for CPU and memory alone.
          const only = url.searchParams.getAll('only_cpu_and_memory');
          const summary = await host.summary({ signal: closing.signal, onlyCpuAndMemory: only.length === 1 && only[0] === 'true' });
          return send(res, 200, JSON.stringify(summary, null, 2), 'application/json');
        }
        case 'containerLogs':
          if (!get) return send(res, 405, 'Method Not Allowed');
          return containerLogs(route, url.searchParams, res);
        case 'run':
          if (method !== 'POST') return send(res, 405, 'Method Not Allowed');
          return run(route, url.searchParams, res);
        case 'exec':
        case 'attach':
        case 'portForward':
          // Checked as the kubelet checks it (400 options, 404 pod, 500 container), then its upgrade-aware
          // proxy requires an upgrade (UpgradeRequired) and says so with a 500.
          if (method !== 'GET' && method !== 'POST') return send(res, 405, 'Method Not Allowed');
          await streamUrl(route, url.searchParams, false, true);
          return send(res, 500, 'Upgrade request required\n');
        case 'logsRoot':
        case 'logs':
          if (opts.nodeLogs === false) return send(res, 405, 'logs endpoint is disabled.\n');
          if (route.kind === 'logsRoot') return redirectToLogsRoot(res, url.search.slice(1));
          if (method !== 'GET') return logsMethodNotAllowed(res);
          return nodeLogs.serve(req, res, route.path, url.search.slice(1));
        case 'notFound':
          return send(res, 404, '404 page not found');
      }
    })().catch((err: unknown) => {
      if (err instanceof HttpError) return send(res, err.status, err.message);
      log.warn(`kubelet server: ${req.method} ${url.pathname}: ${errorMessage(err)}`);
      send(res, 500, errorMessage(err));
    });
  });
  server.on('tlsClientError', (_err, socket) => {
    // The kubelet's GetCertificate error while serverTLSBootstrap waits for its certificate.
    if (!haveCert) log.debug(`kubelet server: TLS handshake error from ${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}: no serving certificate available for the kubelet`);
  });
  server.on('clientError', (_err, socket: Duplex) => writeHttpError(socket, 400, 'Bad Request'));

  server.listen(opts.port, opts.address);
  await Promise.race([
    once(server, 'listening'),
    once(server, 'error').then(([err]) => {
      throw err;
    }),
  ]);
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    openStreams: () => streams.size,
    setServingCertificate: (pair) => {
      server.setSecureContext(context(pair));
      haveCert = true;
    },
    clearServingCertificate: () => {
      server.setSecureContext(context({}));
      haveCert = false;
    },
    close: async () => {
      closing.abort();
      for (const s of streams) s.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/**
 * The labels of kubelet_http_requests_total / _inflight_requests as the
 * kubelet sets them, named in sorted order as its exposition prints them.
 * long_running is the kubelet's own rule: exec, attach, portforward (which
 * its lower case never matches: "portForward" is not), debug.
 */
export function requestLabels(method: string | undefined, path: string): Record<HttpRequestLabel, string> {
  const p = metricPathLabel(path);
  const m = method !== undefined && METHODS.has(method) ? method : 'other';
  return { long_running: String(['exec', 'attach', 'portforward', 'debug'].includes(p)), method: m, path: p, server_type: 'readwrite' };
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'TRACE', 'CONNECT', 'OPTIONS', 'PATCH']);

/**
 * The clean form of a request target's path (Go's path.Clean of the escaped
 * path) with its query, or null when the path is clean already.
 */
export function cleanPath(target: string): string | null {
  const q = target.indexOf('?');
  const raw = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? '' : target.slice(q);
  // Percent-encoded dots are not cleaned: Go's ServeMux works on the escaped path.
  const segments = raw.split('/');
  const out: string[] = [];
  for (const seg of segments.slice(1)) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  let cleaned = '/' + out.join('/');
  // Go keeps a trailing slash of the original.
  if (raw.endsWith('/') && cleaned !== '/') cleaned += '/';
  const original = segments.join('/');
  return cleaned === original ? null : cleaned + query;
}

/** /metrics/probes: the prober's metric families only. */
function probeMetrics(text: string): string {
  const out: string[] = [];
  let keep = false;
  for (const line of text.split('\n')) {
    const m = /^# (?:HELP|TYPE) (\S+)/.exec(line);
    if (m) keep = m[1]!.startsWith('prober_');
    else if (line !== '' && !line.startsWith('#')) keep = keep && line.startsWith('prober_');
    if (keep) out.push(line);
  }
  return out.length > 0 ? out.join('\n') + '\n' : '';
}
