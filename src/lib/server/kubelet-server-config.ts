/**
 * The kubelet server's settings (the KubeletConfiguration's address, port,
 * tlsCertFile, tlsPrivateKeyFile, authentication and authorization), taken
 * from the node's configuration (lib/kubeletconfig, which validates them)
 * and loaded before anything starts: files read, the serving certificate
 * made. Errors are InputErrors naming the setting as the configuration
 * describes it (the file's line, or how the caller gave it).
 */
import { X509Certificate } from 'node:crypto';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { InputError, errorMessage } from '../errors.js';
import type { AuthorizationMode, ConfigPath, KubeletConfig } from '../kubeletconfig/index.js';
import { checkBothGiven, servingCertificate } from './serving-cert.js';

export type { AuthorizationMode };

export interface KubeletServerSettings {
  /** `address`: the IP to listen on (0.0.0.0 for all). */
  address: string;
  port: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** authentication.x509.clientCAFile */
  clientCaFile?: string;
  /** authentication.anonymous.enabled */
  anonymousAuth: boolean;
  /** authentication.webhook.enabled */
  authenticationTokenWebhook: boolean;
  /** authentication.webhook.cacheTTL */
  tokenCacheTtlMs: number;
  /** authorization.mode */
  authorizationMode: AuthorizationMode;
  /**
   * serverTLSBootstrap (--rotate-server-certificates): the serving
   * certificate comes from the API server (a kubelet-serving CSR) and is
   * renewed; until one is issued no TLS handshake succeeds.
   */
  serverTLSBootstrap?: boolean;
  /** authorization.webhook.cacheAuthorizedTTL, cacheUnauthorizedTTL */
  allowedCacheTtlMs: number;
  deniedCacheTtlMs: number;
}

/** The server's settings in the node's configuration. */
export function kubeletServerSettings(c: KubeletConfig): KubeletServerSettings {
  return {
    address: c.address,
    port: c.port,
    ...(c.tlsCertFile !== undefined ? { tlsCertFile: c.tlsCertFile } : {}),
    ...(c.tlsPrivateKeyFile !== undefined ? { tlsPrivateKeyFile: c.tlsPrivateKeyFile } : {}),
    ...(c.authentication.x509.clientCAFile !== undefined ? { clientCaFile: c.authentication.x509.clientCAFile } : {}),
    anonymousAuth: c.authentication.anonymous.enabled,
    authenticationTokenWebhook: c.authentication.webhook.enabled,
    tokenCacheTtlMs: c.authentication.webhook.cacheTTL,
    authorizationMode: c.authorization.mode,
    allowedCacheTtlMs: c.authorization.webhook.cacheAuthorizedTTL,
    deniedCacheTtlMs: c.authorization.webhook.cacheUnauthorizedTTL,
    serverTLSBootstrap: c.serverTLSBootstrap,
  };
}

/** tlsCertFile and tlsPrivateKeyFile when both are given: with serverTLSBootstrap, the pair served until one is issued. */
export function givenPair(s: KubeletServerSettings): { certFile: string; keyFile: string } | undefined {
  return s.tlsCertFile !== undefined && s.tlsPrivateKeyFile !== undefined ? { certFile: s.tlsCertFile, keyFile: s.tlsPrivateKeyFile } : undefined;
}

/** Everything the server needs to start, loaded. */
export interface LoadedKubeletServer {
  settings: KubeletServerSettings;
  /** No cert and key: serverTLSBootstrap without an issued certificate yet. */
  tls: { cert?: string; key?: string; clientCa?: string };
  certFile: string;
  generatedCert: boolean;
  /** With serverTLSBootstrap: where the issued pairs live (<root-dir>/pki). */
  certDir: string;
}

/** Which configuration field each loading error is about. */
const FIELDS: Record<string, ConfigPath> = { clientCaFile: 'authentication.x509.clientCAFile', tlsCertFile: 'tlsCertFile', tlsPrivateKeyFile: 'tlsPrivateKeyFile', rotateServerCertificates: 'serverTLSBootstrap' };

export async function loadKubeletServerSettings(
  s: KubeletServerSettings,
  ctx: { rootDir: string; nodeIP?: string; hostname?: string; hasApiServer?: boolean; describe?: (path: ConfigPath) => string },
): Promise<LoadedKubeletServer> {
  try {
    return await load(s, ctx);
  } catch (err) {
    const field = err instanceof InputError && err.input !== undefined ? FIELDS[err.input] : undefined;
    if (field === undefined || ctx.describe === undefined) throw err;
    throw new InputError(`${ctx.describe(field)} ${(err as InputError).text}`, { cause: err });
  }
}

async function load(s: KubeletServerSettings, ctx: { rootDir: string; nodeIP?: string; hostname?: string; hasApiServer?: boolean }): Promise<LoadedKubeletServer> {
  let clientCa: string | undefined;
  if (s.clientCaFile !== undefined) {
    try {
      clientCa = await fsp.readFile(s.clientCaFile, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new InputError(`${s.clientCaFile}: ${code === 'ENOENT' ? 'no such file' : errorMessage(err)}`, { input: 'clientCaFile' });
    }
    try {
      new X509Certificate(clientCa);
    } catch {
      throw new InputError(`${s.clientCaFile}: no PEM certificate in it`, { input: 'clientCaFile' });
    }
  }
  const certDir = path.join(ctx.rootDir, 'pki');
  const tail = { settings: s, certDir };
  const ca = clientCa !== undefined ? { clientCa } : {};
  if (s.serverTLSBootstrap) {
    if (!ctx.hasApiServer) throw new InputError('the serving certificate is requested from the API server (a kubelet-serving CSR): it needs --kubeconfig', { input: 'rotateServerCertificates' });
    checkBothGiven(s.tlsCertFile, s.tlsPrivateKeyFile);
    const { currentPair } = await import('../kube/cert-rotation.js');
    const fallback = givenPair(s);
    const pair = await currentPair(certDir, { prefix: 'kubelet-server', ...(fallback ? { fallback } : {}) });
    const usable = pair !== undefined && Date.parse(pair.cert.validTo) > Date.now();
    const { currentPairPath } = await import('../kube/tls-bootstrap.js');
    return { ...tail, tls: { ...(usable ? { cert: pair.certPem, key: pair.keyPem } : {}), ...ca }, certFile: currentPairPath(certDir, 'kubelet-server'), generatedCert: false };
  }
  const hostname = ctx.hostname ?? os.hostname().toLowerCase();
  const addresses = [...(ctx.nodeIP ? [ctx.nodeIP] : []), ...(s.address !== '0.0.0.0' && s.address !== '::' ? [s.address] : []), '127.0.0.1'];
  const cert = await servingCertificate({
    ...(s.tlsCertFile !== undefined ? { certFile: s.tlsCertFile } : {}),
    ...(s.tlsPrivateKeyFile !== undefined ? { keyFile: s.tlsPrivateKeyFile } : {}),
    certDir,
    hostname,
    addresses,
  });
  return { ...tail, tls: { cert: cert.cert, key: cert.key, ...ca }, certFile: cert.certFile, generatedCert: cert.generated };
}
