/**
 * Running one probe against one container (pkg/kubelet/prober/prober.go):
 * resolve the probe's port and host against the pod, run its handler, and
 * word the outcome as the kubelet's events word it.
 */
import type { IntOrString, V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import { expand } from '../kuberuntime/env.js';
import { execProbe, type ExecCri } from './exec.js';
import { grpcProbe } from './grpc.js';
import { httpProbe } from './http.js';
import { tcpProbe } from './tcp.js';
import { ProbeError, type HandlerResult, type ProbeType } from './types.js';

/** One container of one pod, where a probe runs. */
export interface ProbeTarget {
  pod: V1Pod;
  container: V1Container;
  containerId: string;
  /** The pod's IP (the node's for a hostNetwork pod): where httpGet, tcpSocket and grpc go without a host. */
  podIP: string;
}

/** A probe's port, numeric or named after one of the container's ports (probe.ResolveContainerPort). */
export function resolvePort(port: IntOrString | undefined, container: V1Container): number {
  let n: number;
  if (typeof port === 'number') n = port;
  else if (typeof port === 'string' && /^\d+$/.test(port)) n = Number(port);
  else if (typeof port === 'string') {
    const named = (container.ports ?? []).find((p) => p.name === port);
    if (named === undefined) throw new ProbeError(`port ${JSON.stringify(port)} not found in container ${JSON.stringify(container.name)}`);
    n = named.containerPort;
  } else throw new ProbeError('the probe has no port');
  if (!(n > 0 && n < 65536)) throw new ProbeError(`invalid port number: ${n}`);
  return n;
}

/** $(VAR) in an exec probe's command, from the container's static env values (ExpandContainerCommandOnlyStatic). */
function expandCommand(command: string[], container: V1Container): string[] {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) if (e.value !== undefined) env.set(e.name, e.value);
  return command.map((s) => expand(s, (n) => env.get(n)));
}

/** The handler of a probe, by name. */
export function handlerName(probe: V1Probe): 'exec' | 'httpGet' | 'tcpSocket' | 'grpc' | null {
  if (probe.exec) return 'exec';
  if (probe.httpGet) return 'httpGet';
  if (probe.tcpSocket) return 'tcpSocket';
  if (probe.grpc) return 'grpc';
  return null;
}

/**
 * Run the probe's handler once. Throws ProbeError when the probe cannot be
 * run at all (a named port the container does not declare, no pod IP yet);
 * a handler that ran and said no is a failure result, not an error.
 */
export async function runHandler(cri: ExecCri, probe: V1Probe, t: ProbeTarget, signal?: AbortSignal): Promise<HandlerResult> {
  const timeoutSeconds = probe.timeoutSeconds && probe.timeoutSeconds > 0 ? probe.timeoutSeconds : 1;
  const timeoutMs = timeoutSeconds * 1000;
  const hostOf = (explicit: string | undefined): string => {
    const host = explicit || t.podIP;
    if (!host) throw new ProbeError('the pod has no IP yet');
    return host;
  };
  if (probe.exec) return execProbe(cri, t.containerId, expandCommand(probe.exec.command ?? [], t.container), timeoutSeconds, signal);
  if (probe.httpGet) {
    const g = probe.httpGet;
    return httpProbe(
      {
        scheme: g.scheme === 'HTTPS' ? 'HTTPS' : 'HTTP',
        host: hostOf(g.host),
        port: resolvePort(g.port, t.container),
        path: g.path ?? '/',
        headers: (g.httpHeaders ?? []).map((h) => ({ name: h.name, value: h.value })),
      },
      timeoutMs,
      signal,
    );
  }
  if (probe.tcpSocket) return tcpProbe(hostOf(probe.tcpSocket.host), resolvePort(probe.tcpSocket.port, t.container), timeoutMs, signal);
  if (probe.grpc) return grpcProbe(hostOf(undefined), resolvePort(probe.grpc.port, t.container), probe.grpc.service ?? '', timeoutMs, signal);
  throw new ProbeError('the probe has no handler (exec, httpGet, tcpSocket or grpc)');
}

/** The kubelet's event for a probe run, when it records one (reason, type, message). */
export function probeEvent(
  type: ProbeType,
  run: { result: HandlerResult } | { error: string },
): { type: 'Warning'; reason: 'Unhealthy' | 'ProbeWarning'; message: string } | null {
  if ('error' in run) return { type: 'Warning', reason: 'Unhealthy', message: `${type} probe errored: ${run.error}` };
  if (run.result.outcome === 'failure') return { type: 'Warning', reason: 'Unhealthy', message: `${type} probe failed: ${run.result.output}` };
  if (run.result.outcome === 'warning') return { type: 'Warning', reason: 'ProbeWarning', message: `${type} probe warning: ${run.result.output}` };
  return null;
}

/** The probe of a container of this type. */
export function probeOf(c: V1Container, type: ProbeType): V1Probe | undefined {
  return type === 'Liveness' ? c.livenessProbe : type === 'Readiness' ? c.readinessProbe : c.startupProbe;
}
