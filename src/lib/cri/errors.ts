/**
 * Errors from CRI calls, as something a person can act on.
 *
 * The transport (transport.ts) reports a failed call as GrpcCallError with a
 * numeric status code and the server's text in `details` (for a socket it
 * cannot reach: "The pending stream has been canceled (caused by: connect
 * ENOENT /run/x.sock)"); grpc-js's ServiceError (the gRPC probe) has the same
 * two fields and a "14 UNAVAILABLE: " prefix on its `message`. toCriError turns
 * that into a typed CriError whose subclass callers can branch on (NotFound
 * during cleanup is success, Unimplemented means "fall back") and whose
 * message says what happened in the user's terms. The raw error stays on
 * `cause` for --log-level debug; messages never include stack traces.
 */
import { existsSync, statSync } from 'node:fs';
import { GrpcStatus, goCodeName } from './grpc-status.js';
import { KletError, type KletErrorOptions } from '../errors.js';
import { socketPathOf } from './endpoint.js';
import { formatDuration } from '../util/duration.js';

export interface CriErrorOptions extends KletErrorOptions {
  grpcCode: number;
  /** The RPC, as named in the proto: "RunPodSandbox". */
  method: string;
  /** The endpoint URI: "unix:///run/containerd/containerd.sock". */
  endpoint: string;
  /** The runtime's own text (gRPC status details), unprefixed. */
  details?: string;
}

export class CriError extends KletError {
  override readonly code: string = 'CRI_ERROR';
  readonly grpcCode: number;
  readonly method: string;
  readonly endpoint: string;
  readonly details: string;

  constructor(message: string, options: CriErrorOptions) {
    const { grpcCode, method, endpoint, details, ...rest } = options;
    super(message, rest);
    this.grpcCode = grpcCode;
    this.method = method;
    this.endpoint = endpoint;
    this.details = details ?? '';
  }
}

/** The object does not exist (or no longer does). */
export class CriNotFoundError extends CriError {
  override readonly code: string = 'CRI_NOT_FOUND';
}

/** The runtime could not be reached: no socket, nobody listening, or it went away. */
export class CriUnavailableError extends CriError {
  override readonly code: string = 'CRI_UNAVAILABLE';
}

/** The call's deadline passed before the runtime answered. */
export class CriDeadlineExceededError extends CriError {
  override readonly code: string = 'CRI_DEADLINE_EXCEEDED';
}

/** The runtime rejected the request's content. */
export class CriInvalidArgumentError extends CriError {
  override readonly code: string = 'CRI_INVALID_ARGUMENT';
}

/** The runtime does not implement the RPC (e.g. GetContainerEvents on containerd 1.6). */
export class CriUnimplementedError extends CriError {
  override readonly code: string = 'CRI_UNIMPLEMENTED';
}

/** A name (sandbox or container) is already reserved. */
export class CriAlreadyExistsError extends CriError {
  override readonly code: string = 'CRI_ALREADY_EXISTS';
}

/** The call was cancelled, by our AbortSignal or by the runtime. */
export class CriCancelledError extends CriError {
  override readonly code: string = 'CRI_CANCELLED';
}

export interface CriErrorContext {
  method: string;
  endpoint: string;
  /** The deadline the call had, for the DeadlineExceeded message. */
  timeoutMs?: number;
  /**
   * When the call's deadline was due (epoch ms). A DeadlineExceeded well
   * before it is the runtime's own timeout (ExecSync's `timeout`), not ours,
   * and is reported in the runtime's words.
   */
  deadlineAt?: number;
}

/**
 * A CRI error as the kubelet's messages print one (Go's status error:
 * "rpc error: code = Unknown desc = <the runtime's text>"), e.g. in its
 * FailedCreatePodSandBox event. Anything else: its message.
 */
export function goStatusText(err: unknown): string {
  if (err instanceof CriError && err.details !== '') return `rpc error: code = ${goCodeName(err.grpcCode)} desc = ${err.details}`;
  return err instanceof Error ? err.message : String(err);
}

/** Slack for deciding that our own deadline, not the runtime's, expired. */
const DEADLINE_SLACK_MS = 500;

/** The fields of a GrpcCallError (or a grpc-js ServiceError) that we read. */
interface StatusLike {
  code: number;
  details?: unknown;
  message?: unknown;
}

function isStatusLike(err: unknown): err is StatusLike {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number';
}

/** The server's text: `details`, or `message` without its "14 UNAVAILABLE: " prefix. */
function detailsOf(err: unknown): string {
  if (isStatusLike(err) && typeof err.details === 'string' && err.details !== '') return err.details;
  const message = err instanceof Error ? err.message : isStatusLike(err) ? String(err.message ?? '') : String(err);
  return message.replace(/^\d+ [A-Z_]+: /, '');
}


/** Why the socket cannot be used, checked on the filesystem since gRPC's text is cryptic. */
function unreachableReason(endpoint: string, details: string): string {
  const socketPath = socketPathOf(endpoint);
  if (!existsSync(socketPath)) return 'no such socket; is containerd running?';
  try {
    if (!statSync(socketPath).isSocket()) return `${socketPath} is not a socket`;
  } catch {
    // Raced with removal or unreadable: fall through to what gRPC said.
  }
  if (/ECONNREFUSED|connection refused/i.test(details)) {
    return 'connection refused; nothing is listening on the socket (a stale socket from a runtime that exited?)';
  }
  if (/EACCES|permission denied/i.test(details)) return 'permission denied; run klet as root';
  return details === '' ? 'unavailable' : details;
}

const START_HINT = 'start one with: klet runtime start';

/**
 * Maps anything a CRI call threw (normally a GrpcCallError) to a
 * CriError subclass. A CriError passes through unchanged.
 */
export function toCriError(err: unknown, context: CriErrorContext): CriError {
  if (err instanceof CriError) return err;
  const { method, endpoint, timeoutMs } = context;
  const details = detailsOf(err);
  const grpcCode = isStatusLike(err) ? err.code : GrpcStatus.UNKNOWN;
  const base = { grpcCode, method, endpoint, details, cause: err };

  switch (grpcCode) {
    case GrpcStatus.UNAVAILABLE:
      return new CriUnavailableError(
        `cannot reach the container runtime at ${endpoint}: ${unreachableReason(endpoint, details)}`,
        { ...base, suggestions: [START_HINT] },
      );
    case GrpcStatus.DEADLINE_EXCEEDED: {
      if (context.deadlineAt !== undefined && Date.now() < context.deadlineAt - DEADLINE_SLACK_MS) {
        return new CriDeadlineExceededError(`${method}: ${details || 'deadline exceeded'}`, base);
      }
      const within = timeoutMs === undefined ? 'in time' : `within ${formatDuration(timeoutMs)}`;
      return new CriDeadlineExceededError(`the container runtime at ${endpoint} did not answer ${method} ${within}`, {
        ...base,
        suggestions: ['the runtime may be overloaded or hung; check its log'],
      });
    }
    case GrpcStatus.UNIMPLEMENTED:
      return new CriUnimplementedError(`the container runtime at ${endpoint} does not implement ${method}`, base);
    case GrpcStatus.CANCELLED:
      return new CriCancelledError(`${method}: cancelled`, base);
    case GrpcStatus.NOT_FOUND:
      return new CriNotFoundError(`${method}: ${details || 'not found'}`, base);
    case GrpcStatus.INVALID_ARGUMENT:
      return new CriInvalidArgumentError(`${method}: ${details || 'invalid argument'}`, base);
    case GrpcStatus.ALREADY_EXISTS:
      return new CriAlreadyExistsError(`${method}: ${details || 'already exists'}`, base);
    default:
      return new CriError(`${method}: ${details || `${GrpcStatus[grpcCode] ?? 'error'} (gRPC code ${grpcCode})`}`, base);
  }
}
