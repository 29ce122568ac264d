/**
 * The kubelet's TLS bootstrap (pkg/kubelet/certificate/bootstrap
 * LoadClientCert, client-go util/certificate/csr): when the node's kubeconfig
 * is missing, or its client certificate has expired (or it holds none), ask
 * the API server for a client certificate with the bootstrap kubeconfig's
 * identity, and write the kubeconfig that uses it.
 *
 * - The key is ECDSA P-256 (keyutil.MakeEllipticPrivateKeyPEM), kept in
 *   <certDir>/kubelet-client.key.tmp (0600) until the certificate comes, so a
 *   retry after a failure asks again with the same key (and the same CSR).
 * - The CertificateSigningRequest is named node-csr-<digest of key, subject
 *   and usages> (digestedName), subject CN=system:node:<node>, O=system:nodes,
 *   signerName kubernetes.io/kube-apiserver-client-kubelet, usages
 *   "digital signature" and "client auth" (an ECDSA key: no "key encipherment").
 *   When it exists already (a retry), it is reused.
 * - Once approved and issued, cert and key go to
 *   <certDir>/kubelet-client-<YYYY-MM-DD-HH-MM-SS>.pem (0600), and the
 *   kubelet-client-current.pem symlink is switched to it (certificate.FileStore).
 * - The kubeconfig (writeKubeconfigFromBootstrapping): cluster default-cluster
 *   with the bootstrap kubeconfig's server and CA, user default-auth with
 *   client-certificate and client-key = the current link.
 *
 * klet waits for the certificate by reading the CSR every second (the
 * kubelet watches it): the bootstrap identity may get it (system:node-bootstrapper).
 */
import { X509Certificate, createHash, createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { InputError, KletError, errorMessage } from '../errors.js';
import { callInChild } from '../util/child-call.js';
import { writeFileAtomic } from '../kuberuntime/poddir.js';
import { pause } from '../util/sleep.js';
import { ApiServerError, toApiServerError } from './errors.js';
import { loadKubeconfig } from './kubeconfig.js';
import { API_REQUEST_TIMEOUT_MS } from './node-api.js';
import { restClient } from './rest.js';

/** certificatesv1.KubeAPIServerClientKubeletSignerName */
export const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
/** certificatesv1.KubeletServingSignerName */
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
/** The kubelet's usages for an ECDSA key (requestNodeCertificate). */
export const CLIENT_USAGES = ['digital signature', 'client auth'] as const;
/** DefaultKubeletServingGetUsages for an ECDSA key (an RSA key would add "key encipherment"). */
export const SERVING_USAGES = ['digital signature', 'server auth'] as const;
/** The pair names of the client and the serving certificate (certificate.NewFileStore's pairNamePrefix). */
export type PairPrefix = 'kubelet-client' | 'kubelet-server';
const TMP_KEY = 'kubelet-client.key.tmp';
/** How long the kubelet waits for its certificate (requestNodeCertificate: 3600 s). */
const WAIT_MS = 3600_000;
const POLL_MS = 1000;

export interface ClientSubject {
  commonName: string;
  organization: string[];
  /** Subject alternative names (a serving certificate's: the node's hostname and IPs). */
  dnsNames?: string[];
  ipAddresses?: string[];
}

/** The subject of a node's client certificate. */
export function nodeClientSubject(nodeName: string): ClientSubject {
  return { commonName: `system:node:${nodeName}`, organization: ['system:nodes'] };
}

/**
 * The CSR's name: node-csr-<base64url(SHA-512/256 of each of the SPKI, CN,
 * organizations and usages, base64url-encoded and followed by "|")>
 * (digestedName): the same key asks under the same name.
 */
export function csrObjectName(spkiDer: Buffer, subject: ClientSubject, usages: readonly string[]): string {
  const hash = createHash('sha512-256');
  const write = (data: Buffer | string) => hash.update(Buffer.from(data).toString('base64url')).update('|');
  write(spkiDer);
  write(subject.commonName);
  for (const o of subject.organization) write(o);
  for (const u of usages) write(u);
  return `node-csr-${hash.digest().toString('base64url')}`;
}

/** The path of the current pair (certificate.FileStore.CurrentPath). */
export function currentPairPath(certDir: string, prefix: PairPrefix = 'kubelet-client'): string {
  return path.join(path.resolve(certDir), `${prefix}-current.pem`);
}

/** A new ECDSA P-256 key as SEC1 PEM ("EC PRIVATE KEY"), as keyutil makes it. */
export async function newKey(): Promise<string> {
  const { privateKey } = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const { KeyObject } = await import('node:crypto');
  return KeyObject.from(privateKey).export({ type: 'sec1', format: 'pem' }) as string;
}

/** A PKCS#10 request for `subject` signed with `keyPem` (x509.CreateCertificateRequest: its SANs, if any, as the only extension), made in a child process (x509-make.ts). */
export async function makeCsr(keyPem: string, subject: ClientSubject): Promise<string> {
  return callInChild(import.meta.url, './x509-make', 'csrPem', [keyPem, subject]);
}

/** The certificates a kubeconfig's user presents (inline or from client-certificate). */
async function clientCertificates(kubeconfig: string): Promise<X509Certificate[]> {
  const { user } = await loadKubeconfig(kubeconfig);
  let pem = user.certData ? Buffer.from(user.certData, 'base64').toString('utf8') : '';
  if (!pem && user.certFile) pem = await fsp.readFile(user.certFile, 'utf8');
  const { parseCertificates } = await import('./bootstrap-token.js');
  return parseCertificates(pem);
}

/**
 * Is the kubeconfig there with a client certificate that has not expired?
 * (isClientConfigStillValid: a missing, unreadable or certificate-less
 * kubeconfig is bootstrapped anew.)
 */
export async function clientConfigStillValid(kubeconfig: string, now: Date): Promise<boolean> {
  try {
    await fsp.stat(kubeconfig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new InputError(`kubeconfig ${kubeconfig}: ${errorMessage(err)}`);
  }
  try {
    const certs = await clientCertificates(kubeconfig);
    return certs.length > 0 && certs.every((c) => Date.parse(c.validTo) > now.getTime());
  } catch {
    return false;
  }
}

export interface TlsBootstrapOptions {
  /** The node's kubeconfig, written here. */
  kubeconfig: string;
  /** The bootstrap kubeconfig (token identity) the CSR is made with. */
  bootstrapKubeconfig: string;
  /** Where the key and certificates live (<root-dir>/pki). */
  certDir: string;
  nodeName: string;
  now?: () => Date;
  /** How long to wait for the certificate (default 1 h, the kubelet's). */
  waitMs?: number;
}

export interface TlsBootstrapResult {
  /** False when the kubeconfig was still valid and nothing was done. */
  bootstrapped: boolean;
  csrName?: string;
  /** The stored pair (kubelet-client-<time>.pem). */
  pairFile?: string;
}

interface CsrStatus {
  conditions?: Array<{ type: string; reason?: string; message?: string }>;
  certificate?: string;
}

/**
 * Bootstrap the node's client certificate when its kubeconfig needs one.
 * `progress` gets one line when the wait for approval begins.
 */
export async function ensureClientCertificate(opts: TlsBootstrapOptions, signal: AbortSignal, progress: (line: string) => void = () => {}): Promise<TlsBootstrapResult> {
  const now = opts.now ?? (() => new Date());
  if (await clientConfigStillValid(opts.kubeconfig, now())) return { bootstrapped: false };
  const certDir = path.resolve(opts.certDir);
  const { cluster } = await loadKubeconfig(opts.bootstrapKubeconfig);
  await fsp.mkdir(certDir, { recursive: true, mode: 0o700 });
  const keyPem = await bootstrapKey(certDir);
  const subject = nodeClientSubject(opts.nodeName);
  const spki = createPublicKey(keyPem).export({ type: 'spki', format: 'der' });
  const { name, certPem } = await requestCertificate(
    { kubeconfig: opts.bootstrapKubeconfig, keyPem, subject, name: csrObjectName(spki, subject, CLIENT_USAGES), ...(opts.waitMs !== undefined ? { waitMs: opts.waitMs } : {}) },
    signal,
    progress,
  );
  const pairFile = await storePair(certDir, certPem, keyPem, now());
  await fsp.rm(path.join(certDir, TMP_KEY), { force: true });
  await writeCertKubeconfig(opts.kubeconfig, {
    server: cluster.server,
    ...(cluster.caFile ? { caFile: cluster.caFile } : cluster.caData ? { caData: cluster.caData } : {}),
    ...(cluster.insecure ? { insecure: true } : {}),
    pairFile: currentPairPath(certDir),
  });
  return { bootstrapped: true, csrName: name, pairFile };
}

/**
 * Ask for a node certificate for `keyPem` with the identity of `kubeconfig`
 * and wait until it is approved and issued (csr.RequestCertificate +
 * WaitForCertificate): named `name` (reused when it exists), else
 * generateName csr-; a client certificate unless `signerName` and `usages`
 * say otherwise. The issued certificate must be for this key and subject.
 */
export async function requestCertificate(
  o: { kubeconfig: string; keyPem: string; subject: ClientSubject; name?: string; waitMs?: number; signerName?: string; usages?: readonly string[] },
  signal: AbortSignal,
  progress: (line: string) => void = () => {},
): Promise<{ name: string; certPem: string }> {
  const loaded = await loadKubeconfig(o.kubeconfig);
  const { server, secrets } = loaded;
  const request = await makeCsr(o.keyPem, o.subject);
  const signerName = o.signerName ?? KUBELET_CLIENT_SIGNER;
  const usages = [...(o.usages ?? CLIENT_USAGES)];
  const rest = await restClient(loaded);
  try {
    const where = `API server ${server}`;
    const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
    type Csr = { metadata?: { name?: string; uid?: string }; spec: { signerName: string }; status?: unknown };
    const get = async (n: string) => (await rest.request('GET', `${CSRS}/${encodeURIComponent(n)}`, { signal, timeoutMs: API_REQUEST_TIMEOUT_MS })) as Csr;
    const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      try {
        return await fn();
      } catch (err) {
        throw toApiServerError(err, where, what, secrets);
      }
    };
    let name = o.name ?? '';
    let uid: string | undefined;
    try {
      const created = await call(`create certificatesigningrequest ${name || '(generateName csr-)'}`, () =>
        rest.request('POST', CSRS, {
          signal,
          timeoutMs: API_REQUEST_TIMEOUT_MS,
          body: {
            apiVersion: 'certificates.k8s.io/v1',
            kind: 'CertificateSigningRequest',
            metadata: o.name ? { name: o.name } : { generateName: 'csr-' },
            spec: { request: Buffer.from(request).toString('base64'), signerName, usages },
          },
        }) as Promise<Csr>,
      );
      name = created.metadata?.name ?? name;
      uid = created.metadata?.uid;
    } catch (err) {
      // A retry with the same key: the request is there already (RequestCertificate reuses it).
      if (!(o.name && err instanceof ApiServerError && err.status === 409)) throw err;
      const existing = await call(`get certificatesigningrequest ${name}`, () => get(name));
      if (existing.spec.signerName !== signerName) throw new KletError(`${where}: certificatesigningrequest ${name} exists with signer ${existing.spec.signerName}, not ${signerName}`);
      uid = existing.metadata?.uid;
    }

    progress(`waiting for certificate signing request ${name} to be approved and issued`);
    const waitMs = o.waitMs ?? WAIT_MS;
    const deadline = Date.now() + waitMs;
    let certPem: string | undefined;
    for (;;) {
      const csr = await call(`get certificatesigningrequest ${name}`, () => get(name));
      if (uid !== undefined && csr.metadata?.uid !== uid) throw new KletError(`${where}: certificate signing request ${name} was replaced while klet waited for it`);
      certPem = issued(name, csr.status as CsrStatus | undefined);
      if (certPem !== undefined) break;
      if (Date.now() >= deadline) throw new KletError(`${where}: certificate signing request ${name} was not approved and issued within ${Math.round(waitMs / 1000)} s`);
      await pause(POLL_MS, signal);
      if (signal.aborted) throw new KletError(`waiting for certificate signing request ${name}: interrupted`);
    }
    checkIssued(certPem, o.keyPem, o.subject, name);
    return { name, certPem };
  } finally {
    rest.close();
  }
}
/** The issued certificate, undefined while waiting; a denied or failed request is an error naming it. */
export function issued(name: string, status: CsrStatus | undefined): string | undefined {
  let approved = false;
  for (const c of status?.conditions ?? []) {
    const why = `reason: ${c.reason ?? ''}, message: ${c.message ?? ''}`;
    if (c.type === 'Denied') throw new KletError(`certificate signing request ${name} is denied, ${why}`);
    if (c.type === 'Failed') throw new KletError(`certificate signing request ${name} failed, ${why}`);
    if (c.type === 'Approved') approved = true;
  }
  if (!approved || !status?.certificate) return undefined;
  return Buffer.from(status.certificate, 'base64').toString('utf8');
}

/** The issued certificate must be for this key and this node (a certificate for another node is refused). */
export function checkIssued(certPem: string, keyPem: string, subject: ClientSubject, name: string): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    throw new KletError(`certificate signing request ${name}: the issued certificate is not a PEM certificate`);
  }
  if (!cert.checkPrivateKey(createPrivateKey(keyPem))) throw new KletError(`certificate signing request ${name}: the issued certificate is not for the requested key`);
  const cn = /^CN=(.*)$/m.exec(cert.subject)?.[1];
  if (cn !== subject.commonName) throw new KletError(`certificate signing request ${name}: the issued certificate is for "${cn ?? ''}", not "${subject.commonName}"`);
  const missing = missingNames(cert, subject);
  if (missing.length > 0) throw new KletError(`certificate signing request ${name}: the issued certificate lacks the requested address${missing.length > 1 ? 'es' : ''} ${missing.join(', ')}`);
}

/** The requested DNS names and IPs the certificate is not for. */
export function missingNames(cert: X509Certificate, subject: ClientSubject): string[] {
  const sans = subjectAltNames(cert);
  return [...(subject.dnsNames ?? []).filter((d) => !sans.dns.includes(d)), ...(subject.ipAddresses ?? []).filter((ip) => !sans.ip.includes(canonicalIp(ip)))];
}

/** The DNS names and IP addresses (canonical form) a certificate is for. */
export function subjectAltNames(cert: X509Certificate): { dns: string[]; ip: string[] } {
  const dns: string[] = [];
  const ip: string[] = [];
  for (const entry of (cert.subjectAltName ?? '').split(/,\s*/)) {
    if (entry.startsWith('DNS:')) dns.push(entry.slice(4));
    else if (entry.startsWith('IP Address:')) ip.push(canonicalIp(entry.slice(11)));
  }
  return { dns, ip };
}

/** An IP in one spelling (IPv6 compressed, lower case), for comparing. */
function canonicalIp(ip: string): string {
  if (!ip.includes(':')) return ip;
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return ip.toLowerCase();
  }
}

/** The key of the current pair if it has one, else the kept (or a new) tmp key, 0600. */
async function bootstrapKey(certDir: string): Promise<string> {
  try {
    const pem = await fsp.readFile(currentPairPath(certDir), 'utf8');
    const block = /-----BEGIN (EC |)PRIVATE KEY-----[\s\S]+?-----END (EC |)PRIVATE KEY-----/.exec(pem)?.[0];
    if (block) {
      createPrivateKey(block);
      return block + '\n';
    }
  } catch {
    // No usable current pair: the tmp key.
  }
  const tmp = path.join(certDir, TMP_KEY);
  try {
    const pem = await fsp.readFile(tmp, 'utf8');
    createPrivateKey(pem);
    return pem;
  } catch {
    const pem = await newKey();
    await writeFileAtomic(tmp, pem, 0o600);
    return pem;
  }
}

const pad = (n: number) => String(n).padStart(2, '0');

/** Store cert+key as <prefix>-<local time>.pem (0600) and point <prefix>-current.pem at it. */
export async function storePair(certDir: string, certPem: string, keyPem: string, now: Date, prefix: PairPrefix = 'kubelet-client'): Promise<string> {
  const ts = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}-${pad(now.getHours())}-${pad(now.getMinutes())}-${pad(now.getSeconds())}`;
  await fsp.mkdir(certDir, { recursive: true, mode: 0o700 });
  const file = path.join(certDir, `${prefix}-${ts}.pem`);
  const certs = certPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  await writeFileAtomic(file, [...certs, keyPem.trim()].join('\n') + '\n', 0o600);
  const updated = path.join(certDir, `${prefix}-updated.pem`);
  await fsp.rm(updated, { force: true });
  await fsp.symlink(file, updated);
  await fsp.rename(updated, currentPairPath(certDir, prefix));
  return file;
}

/** The kubeconfig the kubelet writes after its bootstrap (writeKubeconfigFromBootstrapping), 0600. */
export async function writeCertKubeconfig(file: string, o: { server: string; caFile?: string; caData?: string; insecure?: boolean; pairFile: string }): Promise<void> {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'default-cluster',
        cluster: {
          server: o.server,
          ...(o.caFile ? { 'certificate-authority': o.caFile } : {}),
          ...(o.caData ? { 'certificate-authority-data': o.caData } : {}),
          ...(o.insecure ? { 'insecure-skip-tls-verify': true } : {}),
        },
      },
    ],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', namespace: 'default', user: 'default-auth' } }],
    'current-context': 'default-context',
    users: [{ name: 'default-auth', user: { 'client-certificate': o.pairFile, 'client-key': o.pairFile } }],
  };
  await fsp.mkdir(path.dirname(path.resolve(file)), { recursive: true });
  await writeFileAtomic(file, stringify(config), 0o600);
}
