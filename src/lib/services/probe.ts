/**
 * `klet probe`: run a pod's configured probes (or an ad-hoc one) once, now,
 * against its running container, the way the prober runs them, and report
 * result, duration and the handler's detail. Needs no running `klet sync`
 * and changes nothing: results are not recorded, containers not restarted.
 */
import type { V1Container, V1Probe } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import { errorMessage, InputError, KletError, NotFoundError } from '../errors.js';
import { findPods } from './lookup.js';
import { formatDuration } from '../util/duration.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { getRuntimePodStatus } from '../kuberuntime/runtime-status.js';
import { hostIPs } from '../node/addresses.js';
import { handlerName, runHandler } from '../prober/prober.js';
import { ProbeError, PROBE_TYPES, type HandlerDetail, type ProbeType } from '../prober/types.js';

/** The probe could not be run at all (no such pod or container, not running, no such probe): exit 2. */
export class ProbeNotRunError extends KletError {
  override readonly code: string = 'PROBE_NOT_RUN';
  constructor(message: string, options: { cause?: unknown; suggestions?: string[] } = {}) {
    super(message, { ...options, exitCode: 2 });
  }
}

export type ProbeSelector = 'startup' | 'liveness' | 'readiness' | 'all';

/** An ad-hoc probe against the pod's network or in its container. */
export type AdHocProbe =
  | { handler: 'exec'; command: string }
  | { handler: 'httpGet'; scheme: 'HTTP' | 'HTTPS'; port: number; path: string }
  | { handler: 'tcpSocket'; port: number }
  | { handler: 'grpc'; port: number; service: string };

export interface ProbeOptions {
  /** ns/name, name or UID prefix. */
  pod: string;
  container?: string;
  type: ProbeSelector;
  /** Instead of the configured probes. */
  adHoc?: AdHocProbe;
  /** An ad-hoc probe's timeout in milliseconds, a whole number of seconds as a probe's timeoutSeconds is. Default 1 s (the kubelet's default). */
  timeoutMs?: number;
  /** Repeat at each probe's period (an ad-hoc probe's: 1 s) until the signal aborts. */
  watch?: boolean;
}

export interface ProbeDeps {
  cri: CriClient;
  rootDir: string;
  nodeName: string;
  signal: AbortSignal;
  /** Each result as it comes (for --watch). */
  onResult?: (r: ProbeRunReport) => void;
}

export interface ProbeRunReport {
  /** `namespace/name`. */
  pod: string;
  container: string;
  containerId: string;
  probe: ProbeType | 'AdHoc';
  handler: 'exec' | 'httpGet' | 'tcpSocket' | 'grpc';
  /** error: the probe could not be run (a named port the container lacks, no pod IP). */
  result: 'success' | 'warning' | 'failure' | 'error';
  /** The kubelet's wording of the outcome (its event message without the "X probe failed: " prefix). */
  message: string;
  durationMs: number;
  detail: HandlerDetail | null;
  /** When the run started (RFC 3339). */
  time: string;
}

export interface ProbeServiceResult {
  results: ProbeRunReport[];
  /** 0 every probe passed, 1 one failed, 2 one could not be run. */
  exitCode: 0 | 1 | 2;
}

/** `[SCHEME://]PORT/PATH`: "8080/healthz", "https://8443/livez". */
export function parseHttpSpec(text: string): AdHocProbe {
  const m = /^(?:(https?):\/\/)?(\d+)(\/.*)?$/i.exec(text.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port > 0 && port < 65536)) throw new InputError(`"${text}": not [SCHEME://]PORT/PATH with a port 1-65535 (e.g. 8080/healthz, https://8443/livez)`);
  return { handler: 'httpGet', scheme: m[1]?.toLowerCase() === 'https' ? 'HTTPS' : 'HTTP', port, path: m[3] ?? '/' };
}

/** `PORT`. */
export function parseTcpSpec(text: string): AdHocProbe {
  const port = /^\d+$/.test(text.trim()) ? Number(text) : NaN;
  if (!(port > 0 && port < 65536)) throw new InputError(`"${text}": not a port 1-65535`);
  return { handler: 'tcpSocket', port };
}

/** `PORT[/service]`. */
export function parseGrpcSpec(text: string): AdHocProbe {
  const m = /^(\d+)(?:\/(.*))?$/.exec(text.trim());
  const port = m ? Number(m[1]) : NaN;
  if (!m || !(port > 0 && port < 65536)) throw new InputError(`"${text}": not PORT[/service] with a port 1-65535 (e.g. 9090, 9090/etcd)`);
  return { handler: 'grpc', port, service: m[2] ?? '' };
}

/** An ad-hoc probe as typed by the user: at most one of these, each in the parse*Spec syntax. */
export interface AdHocSpec {
  exec?: string;
  http?: string;
  tcp?: string;
  grpc?: string;
}

/** The ad-hoc probe of a spec, if one is given; a bad spec is an error naming its input (`http`, `tcp`, `grpc`). */
export function parseAdHoc(spec: AdHocSpec): AdHocProbe | undefined {
  const named = (input: keyof AdHocSpec, parse: (text: string) => AdHocProbe, text: string): AdHocProbe => {
    try {
      return parse(text);
    } catch (err) {
      if (err instanceof InputError) throw new InputError(err.text, { input });
      throw err;
    }
  };
  if (spec.exec !== undefined) return { handler: 'exec', command: spec.exec };
  if (spec.http !== undefined) return named('http', parseHttpSpec, spec.http);
  if (spec.tcp !== undefined) return named('tcp', parseTcpSpec, spec.tcp);
  if (spec.grpc !== undefined) return named('grpc', parseGrpcSpec, spec.grpc);
  return undefined;
}

/** A probe's timeout is whole seconds (timeoutSeconds), at least one. */
function timeoutSeconds(ms: number | undefined): number {
  if (ms === undefined) return 1;
  if (!(ms >= 1000) || ms % 1000 !== 0) throw new InputError(`"${formatDuration(ms)}": a probe timeout is a whole number of seconds, at least 1s`, { input: 'timeout' });
  return ms / 1000;
}

function adHocProbe(p: AdHocProbe, timeoutSeconds: number): V1Probe {
  const base = { timeoutSeconds, periodSeconds: 1 };
  switch (p.handler) {
    case 'exec':
      return { ...base, exec: { command: ['sh', '-c', p.command] } };
    case 'httpGet':
      return { ...base, httpGet: { scheme: p.scheme, port: p.port, path: p.path } };
    case 'tcpSocket':
      return { ...base, tcpSocket: { port: p.port } };
    case 'grpc':
      return { ...base, grpc: { port: p.port, service: p.service } };
  }
}

interface Planned {
  container: V1Container;
  containerId: string;
  type: ProbeType | 'AdHoc';
  probe: V1Probe;
}

export async function probe(opts: ProbeOptions, deps: ProbeDeps): Promise<ProbeServiceResult> {
  const timeout = timeoutSeconds(opts.timeoutMs);
  const ctx = { cri: deps.cri, rootDir: deps.rootDir, nodeName: deps.nodeName, objects: { configMaps: [], secrets: [] }, signal: deps.signal };
  let found;
  try {
    [found] = await findPods(ctx, [opts.pod]);
  } catch (err) {
    // Not run (exit 2), with what the lookup suggests (a similar pod, the node name it was run for).
    if (err instanceof NotFoundError || err instanceof InputError) throw new ProbeNotRunError(errorMessage(err), { cause: err, suggestions: err.suggestions });
    throw err;
  }
  if (!found) throw new ProbeNotRunError(`pod "${opts.pod}" not found`);
  const key = `${found.namespace}/${found.name}`;
  const spec = found.spec;
  if (spec === undefined) throw new ProbeNotRunError(`pod ${key}: klet has no record of its spec (not a pod klet runs)`);
  const containers = [...(spec.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'), ...(spec.spec?.containers ?? [])];
  const status = await getRuntimePodStatus(deps.cri, { uid: found.uid, name: found.name, namespace: found.namespace }, { signal: deps.signal, owner: instanceSelector(ctx) });
  const podIP = spec.spec?.hostNetwork ? (hostIPs()[0] ?? '127.0.0.1') : status.sandboxes[0]?.ready ? status.sandboxes[0].ip : '';

  let chosen = containers;
  if (opts.container !== undefined) {
    chosen = containers.filter((c) => c.name === opts.container);
    if (chosen.length === 0) throw new ProbeNotRunError(`pod ${key} has no container "${opts.container}" (it has: ${containers.map((c) => c.name).join(', ')})`);
  } else if (opts.adHoc !== undefined && containers.length > 1) {
    throw new ProbeNotRunError(`pod ${key} has several containers (${containers.map((c) => c.name).join(', ')}): name one for an ad-hoc probe`);
  }
  const types = opts.type === 'all' ? PROBE_TYPES : PROBE_TYPES.filter((t) => t.toLowerCase() === opts.type);
  const planned: Planned[] = [];
  for (const c of chosen) {
    const wanted: { type: ProbeType | 'AdHoc'; probe: V1Probe }[] =
      opts.adHoc !== undefined
        ? [{ type: 'AdHoc', probe: adHocProbe(opts.adHoc, timeout) }]
        : types.flatMap((t) => {
            const p = t === 'Liveness' ? c.livenessProbe : t === 'Readiness' ? c.readinessProbe : c.startupProbe;
            return p ? [{ type: t, probe: p }] : [];
          });
    if (wanted.length === 0) continue;
    const latest = status.containers.find((x) => x.name === c.name);
    if (latest === undefined || latest.state !== 'running') {
      throw new ProbeNotRunError(`container ${c.name} of pod ${key} is not running${latest ? ` (${latest.state})` : ''}`);
    }
    for (const w of wanted) planned.push({ container: c, containerId: latest.id, ...w });
  }
  if (planned.length === 0) {
    const what = opts.type === 'all' ? 'probes' : `${opts.type} probe`;
    throw new ProbeNotRunError(`pod ${key}${opts.container ? ` container ${opts.container}` : ''} has no ${what}`);
  }

  const results: ProbeRunReport[] = [];
  const runOne = async (p: Planned): Promise<ProbeRunReport> => {
    const t0 = performance.now();
    const startedAt = new Date().toISOString();
    const handler = handlerName(p.probe) ?? 'exec';
    let r: ProbeRunReport;
    try {
      const h = await runHandler(deps.cri, p.probe, { pod: spec, container: p.container, containerId: p.containerId, podIP }, deps.signal);
      r = { pod: key, container: p.container.name, containerId: p.containerId, probe: p.type, handler, result: h.outcome, message: h.output, durationMs: 0, detail: h.detail, time: '' };
    } catch (err) {
      if (!(err instanceof ProbeError) && deps.signal.aborted) throw err;
      r = { pod: key, container: p.container.name, containerId: p.containerId, probe: p.type, handler, result: 'error', message: errorMessage(err), durationMs: 0, detail: null, time: '' };
    }
    r.durationMs = Number((performance.now() - t0).toFixed(1));
    r.time = startedAt;
    deps.onResult?.(r);
    return r;
  };
  const exitOf = (rs: ProbeRunReport[]): 0 | 1 | 2 =>
    rs.some((r) => r.result === 'error') ? 2 : rs.some((r) => r.result === 'failure') ? 1 : 0;

  if (!opts.watch) {
    for (const p of planned) results.push(await runOne(p));
    return { results, exitCode: exitOf(results) };
  }
  // --watch: each probe on its own period, never overlapping itself, until the signal aborts.
  const last = new Map<Planned, ProbeRunReport>();
  await Promise.all(
    planned.map(async (p) => {
      const period = Math.max(1, p.probe.periodSeconds ?? 10) * 1000;
      while (!deps.signal.aborted) {
        const started = Date.now();
        try {
          last.set(p, await runOne(p));
        } catch {
          return;
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, Math.max(0, started + period - Date.now()));
          function done(): void {
            clearTimeout(t);
            deps.signal.removeEventListener('abort', done);
            resolve();
          }
          deps.signal.addEventListener('abort', done, { once: true });
        });
      }
    }),
  );
  const final = [...last.values()];
  return { results: final, exitCode: exitOf(final) };
}

/** The table of probe results: its header and one row per result (`klet probe`, one row at a time with --watch). */
export const PROBE_REPORT_HEADERS = ['CONTAINER', 'PROBE', 'HANDLER', 'RESULT', 'TIME', 'DETAIL'];

export function probeReportRow(r: ProbeRunReport): string[] {
  return [r.container, r.probe, r.handler, r.result, `${r.durationMs.toFixed(0)}ms`, describeDetail(r)];
}

/** The handler's detail on one line: status code and body excerpt, exit code and output, or the connect error. */
function describeDetail(r: ProbeRunReport): string {
  const d = r.detail;
  const oneLine = (s: string, n = 80) => {
    const t = s.replace(/\s+/g, ' ').trim();
    return t.length > n ? `${t.slice(0, n)}…` : t;
  };
  if (d === null) return r.message;
  switch (d.handler) {
    case 'exec':
      return d.exitCode === null ? r.message : `exit ${d.exitCode}${d.output.trim() ? `: ${oneLine(d.output)}` : ''}`;
    case 'httpGet':
      return d.statusCode === null
        ? r.message
        : `HTTP ${d.statusCode} ${d.url}${d.redirects.length ? ` -> ${d.redirects.join(' -> ')}` : ''}${d.body.trim() ? ` body: ${oneLine(d.body)}` : ''}`;
    case 'tcpSocket':
      return d.error ?? `connected to ${d.address}`;
    case 'grpc':
      return d.status ?? r.message;
  }
}
