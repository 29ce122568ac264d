/**
 * Errors from talking to a Kubernetes API server, as one line naming the
 * server URL and what went wrong — never the credentials: every message is
 * passed through redact() with the kubeconfig's secrets.
 */
import { STATUS_CODES } from 'node:http';
import { KletError } from '../errors.js';

export class ApiServerError extends KletError {
  override readonly code: string = 'API_SERVER';
  /** HTTP status when the server answered; undefined when it was not reached. */
  readonly status: number | undefined;
  /** The Status reason (NotFound, AlreadyExists, Conflict, Gone, …) when the server gave one. */
  readonly reason: string | undefined;
  /** The connection was refused (the server is not listening: stopped, or not started yet). */
  readonly refused: boolean;
  constructor(message: string, opts: { status?: number; reason?: string; cause?: unknown; refused?: boolean } = {}) {
    super(message, { cause: opts.cause });
    this.status = opts.status;
    this.reason = opts.reason;
    this.refused = opts.refused === true;
  }
}

/** Replace every secret in `text` (tokens, passwords, keys) by [redacted]. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
}

const TLS_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function causeChain(err: unknown): Array<{ code?: unknown; message?: unknown; name?: unknown }> {
  const out: Array<{ code?: unknown; message?: unknown; name?: unknown }> = [];
  let cur: unknown = err;
  for (let i = 0; i < 6 && cur && typeof cur === 'object'; i++) {
    const e = cur as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown; errors?: unknown[] };
    out.push(e);
    cur = e.cause ?? (Array.isArray(e.errors) ? e.errors[0] : undefined);
  }
  return out;
}

function statusOf(body: unknown): { message?: string; reason?: string } {
  let b: unknown = body;
  if (typeof body === 'string') {
    try {
      b = JSON.parse(body);
    } catch {
      return { message: body.trim().split('\n')[0] };
    }
  }
  if (b && typeof b === 'object') {
    const s = b as { message?: unknown; reason?: unknown };
    return { message: typeof s.message === 'string' ? s.message : undefined, reason: typeof s.reason === 'string' ? s.reason : undefined };
  }
  return {};
}

/** Map anything a client-node call threw to an ApiServerError naming `what` and the server. */
export function toApiServerError(err: unknown, where: string, what: string, secrets: readonly string[]): ApiServerError {
  if (err instanceof ApiServerError) return err;
  const e = err as { code?: unknown; statusCode?: unknown; body?: unknown; name?: unknown; message?: unknown };
  const line = (s: string) => redact(s.replace(/\s+/g, ' ').trim(), secrets);
  // lib/kube/rest.ts throws an HttpStatusError (`code`, `body`), as client-node's API calls threw an ApiException;
  // client-node's Watch (still a shape this reads) an Error with `statusCode` and the status text.
  const watchStatus = typeof e?.statusCode === 'number' && e.statusCode >= 100 ? e.statusCode : undefined;
  if ((typeof e?.code === 'number' && e.code >= 100) || watchStatus !== undefined) {
    const status = watchStatus ?? (e.code as number);
    const st = watchStatus !== undefined ? { message: typeof e.message === 'string' ? e.message : undefined, reason: undefined } : statusOf(e.body);
    // An answer without a Status body (a proxy's, a bare 429): the status line's text.
    if (!st.message && !st.reason) st.message = STATUS_CODES[status];
    let text: string;
    if (status === 401) text = '401 Unauthorized: the server rejected the kubeconfig\'s credentials';
    else text = `${status}${st.reason ? ` ${st.reason}` : ''}${st.message ? `: ${st.message}` : ''}`;
    return new ApiServerError(line(`${where}: ${what}: ${text}`), { status, reason: st.reason ?? (status === 401 ? 'Unauthorized' : undefined) });
  }
  const chain = causeChain(err);
  if (chain.some((c) => c.name === 'AbortError')) return new ApiServerError(line(`${where}: ${what}: aborted`), { reason: 'Aborted' });
  const coded = chain.find((c) => typeof c.code === 'string');
  const code = coded?.code as string | undefined;
  if (code === 'ECONNREFUSED') return new ApiServerError(line(`${where}: ${what}: connection refused`), { cause: undefined, refused: true });
  if (code && TLS_CODES.has(code)) {
    return new ApiServerError(
      line(`${where}: ${what}: TLS: the server's certificate is not trusted with the kubeconfig's certificate-authority (${code})`),
    );
  }
  const deepest = chain[chain.length - 1];
  const msg = typeof deepest?.message === 'string' ? deepest.message : String(err);
  return new ApiServerError(line(`${where}: ${what}: ${code ? `${code}: ` : ''}${msg}`));
}
