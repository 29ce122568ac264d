/**
 * Node's socket errors worded as Go's net package words them, because the
 * kubelet's probe messages are Go error strings (`dial tcp 10.1.2.3:8080:
 * connect: connection refused`) and people grep for them.
 */

/** host:port, with brackets around an IPv6 host (net.JoinHostPort). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

const CONNECT_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connect: connection refused',
  EHOSTUNREACH: 'connect: no route to host',
  ENETUNREACH: 'connect: network is unreachable',
  EADDRNOTAVAIL: 'connect: cannot assign requested address',
  ETIMEDOUT: 'i/o timeout',
  ECONNRESET: 'read: connection reset by peer',
  EPIPE: 'write: broken pipe',
};

/** A failed dial, as Go's *net.OpError prints it. */
export function dialError(host: string, port: number, err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return `dial tcp: lookup ${host}: no such host`;
  const what = (e.code && CONNECT_ERRORS[e.code]) ?? e.message;
  return `dial tcp ${joinHostPort(host, port)}: ${what}`;
}

/** A dial that did not finish within the timeout. */
export function dialTimeout(host: string, port: number): string {
  return `dial tcp ${joinHostPort(host, port)}: i/o timeout`;
}
