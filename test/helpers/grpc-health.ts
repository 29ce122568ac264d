/**
 * A small grpc.health.v1 server for probe tests (a Node process on the
 * host, reachable from hostNetwork pods): Check answers each service with
 * the status it is given, NOT_FOUND for services it does not know.
 */
import { Server, ServerCredentials, status as GrpcStatus, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import {
  decodeHealthCheckRequest,
  encodeHealthCheckResponse,
  type HealthCheckRequest,
  type HealthCheckResponse,
  type ServingStatus,
} from '../../src/lib/prober/grpc.js';

export interface HealthServer {
  port: number;
  set(service: string, status: ServingStatus): void;
  close(): Promise<void>;
}

export async function startHealthServer(host = '0.0.0.0', statuses: Record<string, ServingStatus> = { '': 'SERVING' }): Promise<HealthServer> {
  const server = new Server();
  const table = new Map(Object.entries(statuses));
  server.addService(
    {
      Check: {
        path: '/grpc.health.v1.Health/Check',
        requestStream: false,
        responseStream: false,
        requestSerialize: (m: HealthCheckRequest) => Buffer.from(JSON.stringify(m)),
        requestDeserialize: (b: Buffer) => decodeHealthCheckRequest(b),
        responseSerialize: (m: HealthCheckResponse) => encodeHealthCheckResponse(m),
        responseDeserialize: () => ({ status: 'UNKNOWN' as const }),
      },
    },
    {
      Check: (call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, cb: sendUnaryData<HealthCheckResponse>) => {
        const st = table.get(call.request.service);
        if (st === undefined) cb({ code: GrpcStatus.NOT_FOUND, details: 'unknown service' }, null);
        else cb(null, { status: st });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:0`, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    set: (service, status) => table.set(service, status),
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}
