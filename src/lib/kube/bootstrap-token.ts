/**
 * The pure parts of kubeadm's token discovery (cmd/kubeadm/app/discovery/token):
 * the bootstrap token's form, the detached JWS the bootstrapsigner controller
 * puts in the cluster-info ConfigMap (k8s.io/cluster-bootstrap/token/jws),
 * and the CA public key pin (cmd/kubeadm/app/util/pubkeypin).
 *
 * The token's secret never appears in a message made here.
 */
import { X509Certificate, createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { InputError } from '../errors.js';

export interface BootstrapToken {
  /** The public part, `[a-z0-9]{6}`: it names the token's Secret (bootstrap-token-<id>). */
  id: string;
  /** The secret part, `[a-z0-9]{16}`. */
  secret: string;
}

/** The `jws-kubeconfig-<id>` key of cluster-info (bootstrapapi.JWSSignatureKeyPrefix). */
export const JWS_KEY_PREFIX = 'jws-kubeconfig-';

/** Parse `ID.SECRET` (bootstraptoken/v1 BootstrapTokenString); the error shows neither part. */
export function parseBootstrapToken(text: string): BootstrapToken {
  const m = /^([a-z0-9]{6})\.([a-z0-9]{16})$/.exec(text);
  if (!m) throw new InputError('the bootstrap token does not match the pattern [a-z0-9]{6}.[a-z0-9]{16}', { input: 'token' });
  return { id: m[1]!, secret: m[2]! };
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

/**
 * The detached JWS (RFC 7515 appendix F) of `content` with the token, as
 * ComputeDetachedSignature makes it: HS256 keyed with the secret, the
 * protected header {"alg":"HS256","kid":"<id>"}, the payload left out.
 */
export function detachedJws(content: string, token: BootstrapToken): string {
  const header = b64url(JSON.stringify({ alg: 'HS256', kid: token.id }));
  const sig = createHmac('sha256', token.secret).update(`${header}.${b64url(content)}`).digest();
  return `${header}..${b64url(sig)}`;
}

/** Does `jws` sign `content` with this token? (DetachedTokenIsValid: equal to the one computed anew.) */
export function detachedJwsValid(jws: string, content: string, token: BootstrapToken): boolean {
  const want = Buffer.from(detachedJws(content, token));
  const got = Buffer.from(jws);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** `sha256:<hex>` of a certificate's SubjectPublicKeyInfo (DER), as kubeadm prints --discovery-token-ca-cert-hash. */
export function publicKeyPin(cert: X509Certificate): string {
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}

/** A `sha256:<64 hex>` pin (format case-insensitive, the hex too), in canonical lower case; errors name the value. */
export function parsePublicKeyPin(text: string): string {
  const parts = text.split(':');
  if (parts.length !== 2) throw new InputError(`"${text}": invalid hash, expected "format:hex-value" (known format: sha256)`, { input: 'discoveryTokenCaCertHash' });
  const [format, value] = parts as [string, string];
  if (format.toLowerCase() !== 'sha256') throw new InputError(`"${text}": unknown hash format "${format}" (known format: sha256)`, { input: 'discoveryTokenCaCertHash' });
  if (!/^[0-9a-fA-F]{64}$/.test(value)) throw new InputError(`"${text}": expected a 32-byte SHA-256 hash in hex`, { input: 'discoveryTokenCaCertHash' });
  return `sha256:${value.toLowerCase()}`;
}

/** The certificates of a PEM bundle (none when it holds none). */
export function parseCertificates(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

/**
 * The first certificate of `caPem` whose public key is pinned, else
 * undefined (pubkeypin.Set.CheckAny). `pins` are canonical (parsePublicKeyPin).
 */
export function pinnedCertificate(certs: readonly X509Certificate[], pins: readonly string[]): X509Certificate | undefined {
  return certs.find((c) => pins.includes(publicKeyPin(c)));
}
