/**
 * The prober's vocabulary (pkg/probe and pkg/kubelet/prober/results): what
 * one handler run says, and the cached result a worker keeps per container.
 */

/** The three probes of a container, as the kubelet spells them in events and metrics. */
export type ProbeType = 'Liveness' | 'Readiness' | 'Startup';

export const PROBE_TYPES: readonly ProbeType[] = ['Startup', 'Liveness', 'Readiness'];

/**
 * What one handler run says (pkg/probe.Result): success, failure, or warning
 * (a success the kubelet reports with a ProbeWarning event: an HTTP redirect
 * to another host it did not follow).
 */
export type HandlerOutcome = 'success' | 'warning' | 'failure';

export interface HandlerResult {
  outcome: HandlerOutcome;
  /**
   * The handler's output as the kubelet puts it into events: the failure
   * message (`HTTP probe failed with statuscode: 500`, `dial tcp ...:
   * connect: connection refused`), the exec output, or the response body.
   */
  output: string;
  /** What `klet probe` prints beside the result. */
  detail: HandlerDetail;
}

/** Handler-specific facts: status code and body excerpt, exit code, connect error. */
export type HandlerDetail =
  | { handler: 'exec'; command: string[]; exitCode: number | null; output: string }
  | { handler: 'httpGet'; url: string; statusCode: number | null; body: string; redirects: string[] }
  | { handler: 'tcpSocket'; address: string; error: string | null }
  | { handler: 'grpc'; address: string; service: string; status: string | null };

/** The cached result of a worker (pkg/kubelet/prober/results.Result). */
export type ProbeResult = 'Success' | 'Failure' | 'Unknown';

/** The most of a handler's output the kubelet keeps (exec output, HTTP body): 10 KiB. */
export const MAX_OUTPUT_BYTES = 10 * 1024;

/** A probe that could not be run at all (the kubelet's "probe errored"): no result, an event. */
export class ProbeError extends Error {}
