/**
 * The kubelet server's settings (the KubeletConfiguration's address, port,
 * tlsCertFile, tlsPrivateKeyFile, authentication and authorization), checked
 * and loaded before anything starts: files read, the serving certificate
 * made, the modes matched to what the node can do (a webhook needs an API
 * server). Errors are InputErrors naming the setting.
 */
import { X509Certificate } from 'node:crypto';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { InputError, errorMessage } from '../errors.js';
import { checkBothGiven, servingCertificate } from './serving-cert.js';

export type AuthorizationMode = 'AlwaysAllow' | 'Webhook';

export interface KubeletServerSettings {
  /** `address`: the IP to listen on (0.0.0.0 for all). */
  address: string;
  /** `port`; 0 turns the server off (klet's choice: the kubelet always serves). */
  port: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** authentication.x509.clientCAFile */
  clientCaFile?: string;
  /** authentication.anonymous.enabled */
  anonymousAuth: boolean;
  /** authentication.webhook.enabled */
  authenticationTokenWebhook: boolean;
  /** authorization.mode */
  authorizationMode: AuthorizationMode;
  /**
   * serverTLSBootstrap (--rotate-server-certificates): the serving
   * certificate comes from the API server (a kubelet-serving CSR) and is
   * renewed; until one is issued no TLS handshake succeeds.
   */
  serverTLSBootstrap?: boolean;
}

/** The kubelet's defaults as kubeadm configures them (anonymous off, webhook authentication and authorization). */
export const KUBEADM_SERVER_DEFAULTS: KubeletServerSettings = {
  address: '0.0.0.0',
  port: 10250,
  anonymousAuth: false,
  authenticationTokenWebhook: true,
  authorizationMode: 'Webhook',
};

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

export async function loadKubeletServerSettings(
  s: KubeletServerSettings,
  ctx: { rootDir: string; hasApiServer: boolean; nodeIP?: string; hostname?: string },
): Promise<LoadedKubeletServer> {
  if (net.isIP(s.address) === 0) throw new InputError(`"${s.address}" is not an IP address`, { input: 'address' });
  if (!Number.isInteger(s.port) || s.port < 0 || s.port > 65535) throw new InputError(`${s.port} is not a port (0-65535)`, { input: 'port' });
  if (s.authorizationMode === 'Webhook' && !ctx.hasApiServer) {
    throw new InputError('Webhook authorization asks the API server (SubjectAccessReview): it needs --kubeconfig; use AlwaysAllow without one', { input: 'authorizationMode' });
  }
  if (s.authenticationTokenWebhook && !ctx.hasApiServer) {
    throw new InputError('token authentication asks the API server (TokenReview): it needs --kubeconfig', { input: 'authenticationTokenWebhook' });
  }
  if (!s.anonymousAuth && !s.authenticationTokenWebhook && s.clientCaFile === undefined) {
    throw new InputError('no way to authenticate a request: give a client CA file, enable token authentication, or allow anonymous requests', { input: 'clientCaFile' });
  }
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
