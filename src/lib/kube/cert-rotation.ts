/**
 * The kubelet's certificate manager (client-go util/certificate/certificate_manager.go),
 * for both certificates it keeps through the CSR API:
 *
 * - the client certificate (rotateCertificates): signer
 *   kube-apiserver-client-kubelet, subject CN=system:node:<node>,
 *   O=system:nodes, pair kubelet-client-<time>.pem; asked with the node's own
 *   identity (kubeadm's selfnodeclient auto-approval);
 * - the serving certificate of the kubelet server (serverTLSBootstrap,
 *   pkg/kubelet/certificate/kubelet.go): signer kubelet-serving, the same
 *   subject with the node's addresses as SANs (its Hostname as DNS name, its
 *   IPs), pair kubelet-server-<time>.pem. kube-controller-manager never
 *   approves these: `kubectl certificate approve` does.
 *
 * A new ECDSA P-256 key and CSR (generateName csr-) are asked at a jittered
 * 70–90 % of the current certificate's lifetime (from its notBefore), at once
 * when there is none, it expired, or it no longer covers what would be asked
 * (the node's addresses changed: the template is checked every 10 s). Each
 * request is waited for 15 minutes (certificateWaitTimeout); once issued the
 * new <prefix>-<time>.pem (0600) gets the <prefix>-current.pem link and
 * `onRotated` switches the user over (the API client's connections, the
 * server's TLS context). A failed attempt is retried after 2 s doubling for
 * 5 steps, then every 32 s (the manager's back-off). A certificate whose
 * notAfter passes before a new one is issued is not used any more: the
 * manager's Current() gives nil from then on, so `onExpired` tells the user
 * to drop it (the kubelet server then completes no handshake, as with none).
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import fsp from 'node:fs/promises';
import net from 'node:net';
import { errorMessage } from '../errors.js';
import type { NodeAddress } from '../node/addresses.js';
import { pause } from '../util/sleep.js';
import {
  CLIENT_USAGES,
  type ClientSubject,
  KUBELET_CLIENT_SIGNER,
  KUBELET_SERVING_SIGNER,
  type PairPrefix,
  SERVING_USAGES,
  currentPairPath,
  missingNames,
  newKey,
  nodeClientSubject,
  requestCertificate,
  storePair,
} from './tls-bootstrap.js';

/** The rotation deadline: notBefore + total * (0.7 + 0.2 * rand) (jitteryDuration). */
export function rotationDeadline(notBefore: Date, notAfter: Date, rand: number): Date {
  const total = notAfter.getTime() - notBefore.getTime();
  return new Date(notBefore.getTime() + total * (0.7 + 0.2 * rand));
}

/** The back-off before retry `attempt` (0-based): 2 s doubling for 5 steps, then 32 s. */
export function retryDelayMs(attempt: number): number {
  return attempt < 5 ? 2000 * 2 ** attempt : 32_000;
}

/** Which certificate a manager keeps. */
export interface ManagedCertificate {
  /** In messages: "client", "serving". */
  label: string;
  prefix: PairPrefix;
  signerName: string;
  usages: readonly string[];
  /** What to ask for now; null while there is nothing to ask for (a serving certificate without an IP). */
  template(): ClientSubject | null;
  /** Certificate and key files to start from while the certificate dir holds no pair (tlsCertFile, tlsPrivateKeyFile). */
  fallback?: { certFile: string; keyFile: string };
}

/** The node's client certificate (NewKubeletClientCertificateManager). */
export function clientCertificate(nodeName: string): ManagedCertificate {
  return { label: 'client', prefix: 'kubelet-client', signerName: KUBELET_CLIENT_SIGNER, usages: CLIENT_USAGES, template: () => nodeClientSubject(nodeName) };
}

/**
 * The kubelet server's certificate (NewKubeletServerCertificateManager): the
 * node's subject with its addresses as SANs, asked only once it has an IP.
 */
export function servingCertificate(nodeName: string, addresses: () => NodeAddress[], fallback?: { certFile: string; keyFile: string }): ManagedCertificate {
  return {
    label: 'serving',
    prefix: 'kubelet-server',
    signerName: KUBELET_SERVING_SIGNER,
    usages: SERVING_USAGES,
    template: () => servingTemplate(nodeName, addresses()),
    ...(fallback ? { fallback } : {}),
  };
}

/** newGetTemplateFn + addressesToHostnamesAndIPs: DNS names and IPs sorted and unique; null without an IP. */
export function servingTemplate(nodeName: string, addresses: readonly NodeAddress[]): ClientSubject | null {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const a of addresses) {
    if (a.address === '') continue;
    if (net.isIP(a.address) !== 0) ips.add(a.address);
    else if (a.type === 'Hostname') dns.add(a.address);
  }
  if (ips.size === 0) return null;
  return { ...nodeClientSubject(nodeName), dnsNames: [...dns].sort(), ipAddresses: [...ips].sort() };
}

/** Does the certificate cover the template (certSatisfiesTemplateLocked: same CN, no requested name, IP or O missing)? */
export function satisfies(cert: X509Certificate, t: ClientSubject): boolean {
  const cn = /^CN=(.*)$/m.exec(cert.subject)?.[1];
  if (cn !== t.commonName) return false;
  const orgs = [...cert.subject.matchAll(/^O=(.*)$/gm)].map((m) => m[1]);
  if (!t.organization.every((o) => orgs.includes(o))) return false;
  return missingNames(cert, t).length === 0;
}

/** A certificate and its key, as PEM. */
export interface CertificatePair {
  certPem: string;
  keyPem: string;
  cert: X509Certificate;
}

/** Split a pair file (certificates, then the key) into its parts; undefined when it holds no usable pair. */
export function parsePair(pem: string): CertificatePair | undefined {
  const certs = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const key = /-----BEGIN ((EC |RSA |)PRIVATE KEY)-----[\s\S]+?-----END \1-----/.exec(pem)?.[0];
  if (certs.length === 0 || key === undefined) return undefined;
  try {
    const cert = new X509Certificate(certs[0]!);
    if (!cert.checkPrivateKey(createPrivateKey(key))) return undefined;
    return { certPem: certs.join('\n') + '\n', keyPem: key + '\n', cert };
  } catch {
    return undefined;
  }
}

/** The current pair (fileStore.Current): <prefix>-current.pem, else the fallback files; undefined when there is none. */
export async function currentPair(certDir: string, c: Pick<ManagedCertificate, 'prefix' | 'fallback'>): Promise<CertificatePair | undefined> {
  const read = (file: string) => fsp.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
  const pair = await read(currentPairPath(certDir, c.prefix));
  if (pair !== undefined) return parsePair(pair);
  if (c.fallback) {
    const [cert, key] = await Promise.all([read(c.fallback.certFile), read(c.fallback.keyFile)]);
    if (cert !== undefined && key !== undefined) return parsePair(cert + '\n' + key);
  }
  return undefined;
}

export interface RotationOptions {
  /** The node's kubeconfig: the identity the CSRs are made with. */
  kubeconfig: string;
  certDir: string;
  certificate: ManagedCertificate;
  onRotated(r: { csrName: string; pairFile: string; pair: CertificatePair; notAfter: Date }): void;
  /** A failed attempt (each distinct message once until one succeeds). */
  onError(message: string): void;
  /** The certificate in use (the current pair at the start, then each rotated one) expired with no new one issued. */
  onExpired?(notAfter: Date): void;
  /** One line when a request is made and waits for approval. */
  onWaiting?(line: string): void;
  random?: () => number;
  /** How often the template is compared with the certificate while waiting for the deadline (default 10 s). */
  templateCheckMs?: number;
  /** How long one request is waited for (default 15 minutes). */
  waitMs?: number;
}

/** The longest single wait (timers take at most 2^31-1 ms). */
const MAX_WAIT_MS = 24 * 3600_000;
/** certificateWaitTimeout */
const REQUEST_WAIT_MS = 15 * 60_000;

/** Keep the certificate renewed until the signal aborts. Never rejects. */
export async function runCertificateRotation(o: RotationOptions, signal: AbortSignal): Promise<void> {
  const random = o.random ?? Math.random;
  const c = o.certificate;
  const checkMs = o.templateCheckMs ?? 10_000;
  let attempt = 0;
  const reported = new Set<string>();
  const expiry = expiryTimer(signal, (notAfter) => o.onExpired?.(notAfter));
  const atStart = await currentPair(o.certDir, c).catch(() => undefined);
  // One already expired was never served (the kubelet server starts without it).
  if (atStart !== undefined && Date.parse(atStart.cert.validTo) >= Date.now()) expiry.set(new Date(atStart.cert.validTo));
  while (!signal.aborted) {
    try {
      const current = await currentPair(o.certDir, c);
      const due = (): boolean => {
        if (current === undefined || Date.parse(current.cert.validTo) <= Date.now()) return true;
        const t = c.template();
        return t !== null && !satisfies(current.cert, t);
      };
      if (!due()) {
        const deadline = rotationDeadline(new Date(current!.cert.validFrom), new Date(current!.cert.validTo), random()).getTime();
        while (!signal.aborted && Date.now() < deadline && !due()) await pause(Math.min(deadline - Date.now(), MAX_WAIT_MS, checkMs), signal);
      }
      if (signal.aborted) return;
      const subject = c.template();
      if (subject === null) {
        // Nothing to ask for yet (no address): look again later.
        await pause(checkMs, signal);
        continue;
      }
      const keyPem = await newKey();
      const { name, certPem } = await requestCertificate(
        { kubeconfig: o.kubeconfig, keyPem, subject, signerName: c.signerName, usages: c.usages, waitMs: o.waitMs ?? REQUEST_WAIT_MS },
        signal,
        o.onWaiting,
      );
      const pairFile = await storePair(o.certDir, certPem, keyPem, new Date(), c.prefix);
      attempt = 0;
      reported.clear();
      const cert = new X509Certificate(certPem);
      expiry.set(new Date(cert.validTo));
      o.onRotated({ csrName: name, pairFile, pair: { certPem, keyPem, cert }, notAfter: new Date(cert.validTo) });
    } catch (err) {
      if (signal.aborted) return;
      const message = `rotating the ${c.label} certificate: ${errorMessage(err)}`;
      if (!reported.has(message)) {
        reported.add(message);
        o.onError(message);
      }
      await pause(retryDelayMs(attempt++), signal);
    }
  }
}

/**
 * Calls `expired` once the notAfter last set has passed (Current() returning
 * nil from then on); setting a new one replaces the old. Stops with the signal.
 */
export function expiryTimer(signal: AbortSignal, expired: (notAfter: Date) => void): { set(notAfter: Date): void } {
  let timer: NodeJS.Timeout | undefined;
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  return {
    set(notAfter: Date) {
      clearTimeout(timer);
      if (signal.aborted) return;
      const tick = () => {
        // Expired once now is after notAfter (the manager's m.now().After(NotAfter)).
        const left = notAfter.getTime() - Date.now();
        if (left < 0) return expired(notAfter);
        timer = setTimeout(tick, Math.min(left + 1, MAX_WAIT_MS));
        timer.unref();
      };
      tick();
    },
  };
}
