/**
 * grpc probes (pkg/probe/grpc): grpc.health.v1.Health/Check on the pod's
 * IP and port with the probe's service; SERVING is success. A new
 * plaintext connection per probe, as the kubelet makes. The two messages
 * of health.proto are small enough to encode here, typed.
 */
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import type { ServiceError } from '@grpc/grpc-js';
import { GrpcStatus, goCodeName } from '../cri/grpc-status.js';
import { formatDuration } from '../util/duration.js';
import { joinHostPort } from './net-errors.js';
import type { HandlerResult } from './types.js';

/** grpc.health.v1.HealthCheckResponse.ServingStatus. */
export const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'] as const;
export type ServingStatus = (typeof SERVING_STATUS)[number];

export interface HealthCheckRequest {
  service: string;
}
export interface HealthCheckResponse {
  status: ServingStatus;
}

export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';

export function encodeHealthCheckRequest(m: HealthCheckRequest): Buffer {
  const w = new BinaryWriter();
  if (m.service !== '') w.uint32(10).string(m.service);
  return Buffer.from(w.finish());
}

export function decodeHealthCheckRequest(b: Uint8Array): HealthCheckRequest {
  const r = new BinaryReader(b);
  const m: HealthCheckRequest = { service: '' };
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 2) m.service = r.string();
    else r.skip(tag & 7);
  }
  return m;
}

export function encodeHealthCheckResponse(m: HealthCheckResponse): Buffer {
  const w = new BinaryWriter();
  const n = SERVING_STATUS.indexOf(m.status);
  if (n > 0) w.uint32(8).int32(n);
  return Buffer.from(w.finish());
}

export function decodeHealthCheckResponse(b: Uint8Array): HealthCheckResponse {
  const r = new BinaryReader(b);
  let n = 0;
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 0) n = r.int32();
    else r.skip(tag & 7);
  }
  return { status: SERVING_STATUS[n] ?? 'UNKNOWN' };
}

export async function grpcProbe(host: string, port: number, service: string, timeoutMs: number, signal?: AbortSignal): Promise<HandlerResult> {
  const address = joinHostPort(host, port);
  const timeout = formatDuration(timeoutMs);
  const result = (ok: boolean, output: string, st: ServingStatus | null): HandlerResult => ({
    outcome: ok ? 'success' : 'failure',
    output,
    detail: { handler: 'grpc', address, service, status: st },
  });
  // Loaded here, not at start-up: only a pod with a grpc probe needs grpc-js.
  const { Client, credentials, Metadata } = await import('@grpc/grpc-js');
  const client = new Client(address, credentials.createInsecure(), { 'grpc.max_receive_message_length': 4096 });
  const deadline = Date.now() + timeoutMs;
  try {
    const connected = await new Promise<Error | undefined>((resolve) => {
      client.waitForReady(deadline, (err) => resolve(err));
    });
    if (connected !== undefined) {
      return result(false, `timeout: failed to connect service ${JSON.stringify(address)} within ${timeout}: context deadline exceeded`, null);
    }
    let onAbort: (() => void) | undefined;
    const res = await new Promise<HealthCheckResponse | ServiceError>((resolve) => {
      const call = client.makeUnaryRequest(
        HEALTH_CHECK_PATH,
        encodeHealthCheckRequest,
        (b: Buffer) => decodeHealthCheckResponse(b),
        { service },
        new Metadata(),
        { deadline },
        (err, value) => resolve(err ?? value ?? { status: 'UNKNOWN' }),
      );
      onAbort = () => call.cancel();
      signal?.addEventListener('abort', onAbort, { once: true });
    }).finally(() => {
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    });
    if ('code' in res) {
      if (Number(res.code) === GrpcStatus.UNIMPLEMENTED) {
        return result(false, `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${res.details}`, null);
      }
      if (Number(res.code) === GrpcStatus.DEADLINE_EXCEEDED) return result(false, `timeout: health rpc did not complete within ${timeout}`, null);
      return result(false, `error: health rpc probe failed: rpc error: code = ${goCodeName(res.code)} desc = ${res.details}`, null);
    }
    if (res.status !== 'SERVING') return result(false, `service unhealthy (responded with ${JSON.stringify(res.status)})`, res.status);
    // pkg/probe/grpc's words for a pass.
    return result(true, 'service healthy', res.status);
  } finally {
    client.close();
  }
}
