/**
 * The container runtime endpoint (--container-runtime-endpoint).
 *
 * The kubelet accepts unix://, tcp:// and npipe:// URLs and, with a deprecation
 * warning, a bare path. klet only speaks to a local runtime over a unix
 * socket, so anything else is refused up front with a message naming the
 * flag, rather than failing later with an opaque gRPC resolver error.
 */
import { posix } from 'node:path';
import { InputError } from '../errors.js';

export interface RuntimeEndpoint {
  /** gRPC target, always `unix:///absolute/path`. */
  uri: string;
  /** Filesystem path of the socket. */
  socketPath: string;
}

/** The option an endpoint error is about: the command layer names its flag (--container-runtime-endpoint). */
export const ENDPOINT_INPUT = 'containerRuntimeEndpoint';
export const DEFAULT_RUNTIME_ENDPOINT = 'unix:///run/containerd/containerd.sock';

const EXAMPLE = `e.g. ${DEFAULT_RUNTIME_ENDPOINT}`;

function invalid(value: string, why: string): InputError {
  return new InputError(`${JSON.stringify(value)}: ${why}`, {
    input: ENDPOINT_INPUT,
    suggestions: [`pass a unix socket, ${EXAMPLE}`, 'or start a private runtime with: klet runtime start'],
  });
}

/**
 * Parses `unix:///abs/path` or a bare absolute path. Throws InputError for
 * anything else: other schemes, relative paths, the empty string.
 */
export function parseEndpoint(value: string): RuntimeEndpoint {
  if (value === '') throw invalid(value, `an endpoint is required, ${EXAMPLE}`);
  if (value.includes('\0')) throw invalid(value, 'contains a NUL byte');

  let path: string;
  if (value.startsWith('unix://')) {
    path = value.slice('unix://'.length);
  } else if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(value)) {
    // tcp://, npipe://, unix:relative, http:... — a scheme we do not speak.
    throw invalid(value, 'only unix:// endpoints are supported');
  } else {
    path = value;
  }

  if (path === '') throw invalid(value, `the socket path is empty, ${EXAMPLE}`);
  if (!path.startsWith('/')) {
    throw invalid(value, `the socket path must be absolute (unix:///path/to/socket), ${EXAMPLE}`);
  }
  const socketPath = posix.normalize(path);
  return { uri: `unix://${socketPath}`, socketPath };
}

/** The socket path of an endpoint URI produced by parseEndpoint (or a bare path). */
export function socketPathOf(endpoint: string): string {
  return endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
}
