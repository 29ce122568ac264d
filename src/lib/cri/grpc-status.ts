/**
 * gRPC status codes (grpc/doc/statuscodes.md), as numbers on the wire and
 * names in messages and metrics. Here rather than taken from grpc-js, so
 * that the CRI client and its errors load without grpc-js.
 */
export enum GrpcStatus {
  OK = 0,
  CANCELLED = 1,
  UNKNOWN = 2,
  INVALID_ARGUMENT = 3,
  DEADLINE_EXCEEDED = 4,
  NOT_FOUND = 5,
  ALREADY_EXISTS = 6,
  PERMISSION_DENIED = 7,
  RESOURCE_EXHAUSTED = 8,
  FAILED_PRECONDITION = 9,
  ABORTED = 10,
  OUT_OF_RANGE = 11,
  UNIMPLEMENTED = 12,
  INTERNAL = 13,
  UNAVAILABLE = 14,
  DATA_LOSS = 15,
  UNAUTHENTICATED = 16,
}

/**
 * Go's name of a gRPC code (codes.Code.String()), as the kubelet shows it in
 * messages ("rpc error: code = DeadlineExceeded desc = …") and metric labels.
 */
export function goCodeName(code: number): string {
  if (code === GrpcStatus.CANCELLED) return 'Canceled'; // Go's spelling
  const name = GrpcStatus[code];
  if (name === undefined) return `Code(${code})`;
  if (code === GrpcStatus.OK) return 'OK';
  return name
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}
