/**
 * Authentication and authorization of the kubelet server (port 10250), as
 * the kubelet does them (pkg/kubelet/server/auth.go and the apiserver's
 * delegating authenticator/authorizer):
 *
 * - authentication, first that succeeds: an x509 client certificate that
 *   verifies against --client-ca-file (CN is the user, O the groups); a
 *   bearer token the API server accepts in a TokenReview; the anonymous
 *   user (system:anonymous, group system:unauthenticated) when anonymous
 *   requests are enabled. Otherwise 401 "Unauthorized".
 * - authorization: AlwaysAllow, or a SubjectAccessReview on `nodes/<name>`
 *   with the kubelet's verb and subresource for the path
 *   (requestSubresources: with KubeletFineGrainedAuthz, on by default in
 *   1.34, /pods, /healthz and /configz first try their own subresource, then
 *   `proxy`). Denied: 403 "Forbidden (user=…, verb=…, resource=nodes,
 *   subresource(s)=[…])".
 * - the user of a client certificate is remembered by the certificate's
 *   fingerprint (reading the whole peer certificate per request was slow).
 * - decisions are cached as the kubelet caches them: tokens 2 minutes
 *   (authentication.webhook.cacheTTL), allowed 5 minutes and denied 30
 *   seconds (authorization.webhook.cacheAuthorizedTTL/cacheUnauthorizedTTL),
 *   in bounded maps keyed by a hash, never by the token itself.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** What a TokenReview answered. */
export interface TokenReviewResult {
  authenticated: boolean;
  user?: UserInfo;
}

/** One SubjectAccessReview's question: may `user` do `verb` on nodes/`name`/`subresource`? */
export interface NodeAccessQuestion {
  user: UserInfo;
  verb: string;
  subresource: string;
  name: string;
}

/** The API server's review APIs, as the kubelet uses them (its node identity may create both). */
export interface ReviewApi {
  reviewToken(token: string, signal: AbortSignal): Promise<TokenReviewResult>;
  reviewNodeAccess(q: NodeAccessQuestion, signal: AbortSignal): Promise<boolean>;
}

export interface KubeletAuthOptions {
  nodeName: string;
  /** --anonymous-auth */
  anonymous: boolean;
  /** --authentication-token-webhook: bearer tokens checked with a TokenReview. */
  tokenReview?: { api: ReviewApi; cacheTtlMs?: number };
  /** --authorization-mode: AlwaysAllow, or Webhook (SubjectAccessReview). */
  authorization: { mode: 'AlwaysAllow' } | { mode: 'Webhook'; api: ReviewApi; allowedTtlMs?: number; deniedTtlMs?: number };
  /** Deadline of one review request. */
  reviewTimeoutMs?: number;
  /** The clock (tests). */
  now?: () => number;
}

export const ANONYMOUS_USER: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };
/** The kubelet's defaults (KubeletConfiguration authentication.webhook.cacheTTL, authorization.webhook.*). */
export const TOKEN_CACHE_TTL_MS = 2 * 60_000;
export const ALLOWED_CACHE_TTL_MS = 5 * 60_000;
export const DENIED_CACHE_TTL_MS = 30_000;
/** How long the user of a client certificate is remembered by its fingerprint (a certificate's subject never changes: only the cache's size is bounded by this). */
const CERT_USER_TTL_MS = 10 * 60_000;
/** Entries each cache holds at most (the apiserver's delegating caches are bounded too). */
const CACHE_ENTRIES = 4096;

/** The API verb of an HTTP method, as the kubelet maps it ("" for others: never allowed). */
export function apiVerb(method: string | undefined): string {
  switch (method) {
    case 'POST':
      return 'create';
    case 'GET':
    case 'HEAD':
      return 'get';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return '';
  }
}

function isSubpath(p: string, base: string): boolean {
  return p === base || p.startsWith(base + '/');
}

/**
 * The subresources of nodes a request to `path` is authorized against, in
 * order (any one allowing it is enough): the kubelet's GetRequestAttributes
 * with KubeletFineGrainedAuthz on.
 */
export function requestSubresources(path: string): string[] {
  const out: string[] = [];
  if (isSubpath(path, '/pods')) out.push('pods');
  else if (isSubpath(path, '/healthz')) out.push('healthz');
  else if (isSubpath(path, '/configz')) out.push('configz');
  else if (isSubpath(path, '/runningpods')) out.push('pods');
  if (isSubpath(path, '/stats')) out.push('stats');
  else if (isSubpath(path, '/metrics')) out.push('metrics');
  else if (isSubpath(path, '/logs')) out.push('log');
  else if (isSubpath(path, '/checkpoint')) out.push('checkpoint');
  else if (isSubpath(path, '/statusz')) out.push('statusz');
  else if (isSubpath(path, '/flagz')) out.push('configz');
  else out.push('proxy');
  return out;
}

/** The kubelet's 403 text for a denied request. */
export function forbiddenMessage(user: string, verb: string, subresources: readonly string[]): string {
  return `Forbidden (user=${user}, verb=${verb}, resource=nodes, subresource(s)=[${subresources.join(' ')}])\n`;
}

/** A map whose entries expire, holding at most CACHE_ENTRIES (the oldest go first). */
class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  constructor(private readonly now: () => number) {}
  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (e.until <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }
  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    if (this.entries.size >= CACHE_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until: this.now() + ttlMs });
  }
  get size(): number {
    return this.entries.size;
  }
}

const hash = (s: string): string => createHash('sha256').update(s).digest('base64url');

/** The user of a verified client certificate: CN, and O as groups. */
export function certificateUser(subject: { CN?: string | string[]; O?: string | string[] } | undefined): UserInfo | null {
  const cn = Array.isArray(subject?.CN) ? subject.CN[0] : subject?.CN;
  if (!cn) return null;
  const o = subject?.O;
  return { name: cn, groups: o === undefined ? [] : Array.isArray(o) ? [...o] : [o] };
}

export type Decision = { allowed: true } | { allowed: false; status: 401 | 403 | 500; message: string };

export class KubeletAuth {
  private readonly tokens: ExpiringCache<TokenReviewResult>;
  private readonly decisions: ExpiringCache<boolean>;
  private readonly certUsers: ExpiringCache<UserInfo | null>;
  private readonly now: () => number;

  constructor(private readonly opts: KubeletAuthOptions) {
    this.now = opts.now ?? Date.now;
    this.tokens = new ExpiringCache(this.now);
    this.decisions = new ExpiringCache(this.now);
    this.certUsers = new ExpiringCache(this.now);
  }

  /** Who sent the request, or null (401). A token the API server could not review is an error (401 too, as the kubelet answers). */
  async authenticate(req: IncomingMessage, signal: AbortSignal): Promise<UserInfo | null> {
    const socket = req.socket as TLSSocket;
    // authorized: the peer's certificate verified against the server's `ca` (the client CA).
    if (socket.authorized === true && typeof socket.getPeerCertificate === 'function') {
      const user = this.certificateUser(socket);
      if (user) return user;
    }
    const header = req.headers.authorization;
    const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (m && this.opts.tokenReview) {
      const token = m[1]!;
      const key = hash(token);
      let result = this.tokens.get(key);
      if (result === undefined) {
        result = await this.opts.tokenReview.api.reviewToken(token, this.requestSignal(signal));
        this.tokens.set(key, result, this.opts.tokenReview.cacheTtlMs ?? TOKEN_CACHE_TTL_MS);
      }
      if (result.authenticated && result.user) return result.user;
      // A bearer token that is not accepted is not anonymous: the kubelet answers 401.
      return null;
    }
    if (m) return null;
    return this.opts.anonymous ? ANONYMOUS_USER : null;
  }

  /** Whether `user` may make this request, as the kubelet decides it. */
  async authorize(user: UserInfo, method: string | undefined, path: string, signal: AbortSignal): Promise<Decision> {
    const verb = apiVerb(method);
    const subresources = requestSubresources(path);
    const a = this.opts.authorization;
    if (a.mode === 'AlwaysAllow') return { allowed: true };
    for (const subresource of subresources) {
      const key = hash(JSON.stringify([user.name, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, verb, subresource]));
      let allowed = this.decisions.get(key);
      if (allowed === undefined) {
        try {
          allowed = verb !== '' && (await a.api.reviewNodeAccess({ user, verb, subresource, name: this.opts.nodeName }, this.requestSignal(signal)));
        } catch {
          return { allowed: false, status: 500, message: `Authorization error (user=${user.name}, verb=${verb}, resource=nodes, subresource=${subresource})` };
        }
        this.decisions.set(key, allowed, allowed ? (a.allowedTtlMs ?? ALLOWED_CACHE_TTL_MS) : (a.deniedTtlMs ?? DENIED_CACHE_TTL_MS));
      }
      if (allowed) return { allowed: true };
    }
    return { allowed: false, status: 403, message: forbiddenMessage(user.name, verb, subresources) };
  }

  /**
   * The user of the socket's verified client certificate, by its SHA-256 fingerprint: the API server
   * presents the same certificate on every connection, and getPeerCertificate() (the whole
   * certificate as an object: fingerprints, key, extensions) cost 0.1–0.6 ms of every request's path
   * on a loaded machine, where the fingerprint of getPeerX509Certificate() costs ~10 µs (bench/README,
   * kubelet-api). The same certificate always names the same user; OpenSSL verified this one.
   */
  private certificateUser(socket: TLSSocket): UserInfo | null {
    const fingerprint = typeof socket.getPeerX509Certificate === 'function' ? socket.getPeerX509Certificate()?.fingerprint256 : undefined;
    if (fingerprint !== undefined) {
      const known = this.certUsers.get(fingerprint);
      if (known !== undefined) return known;
    }
    const user = certificateUser(socket.getPeerCertificate()?.subject);
    if (fingerprint !== undefined) this.certUsers.set(fingerprint, user, CERT_USER_TTL_MS);
    return user;
  }

  /** Cached entries (tests, metrics). */
  get cacheSizes(): { tokens: number; decisions: number; certificates: number } {
    return { tokens: this.tokens.size, decisions: this.decisions.size, certificates: this.certUsers.size };
  }

  private requestSignal(signal: AbortSignal): AbortSignal {
    return AbortSignal.any([signal, AbortSignal.timeout(this.opts.reviewTimeoutMs ?? 10_000)]);
  }
}
