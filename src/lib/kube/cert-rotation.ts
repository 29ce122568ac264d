/**
 * Client certificate rotation, as the kubelet's certificate manager does it
 * with rotateCertificates (client-go util/certificate/certificate_manager.go):
 * at a jittered 70–90 % of the current certificate's lifetime (from its
 * notBefore) a new ECDSA P-256 key and a CSR (generateName csr-, the node's
 * subject and usages, signer kube-apiserver-client-kubelet) made with the
 * node's own identity (kubeadm's selfnodeclient auto-approval), and, once
 * issued, a new kubelet-client-<time>.pem with the current link switched to
 * it. The kubeconfig keeps pointing at the link; `onRotated` lets the API
 * client drop its connections so the next requests present the new
 * certificate (watches reconnect with it on their own). A failed attempt is
 * retried after 2 s doubling for 5 steps, then every 32 s (the manager's
 * back-off).
 */
import { X509Certificate } from 'node:crypto';
import fsp from 'node:fs/promises';
import { errorMessage } from '../errors.js';
import { pause } from '../util/sleep.js';
import { currentPairPath, newKey, nodeClientSubject, requestClientCertificate, storePair } from './tls-bootstrap.js';

/** The rotation deadline: notBefore + total * (0.7 + 0.2 * rand) (jitteryDuration). */
export function rotationDeadline(notBefore: Date, notAfter: Date, rand: number): Date {
  const total = notAfter.getTime() - notBefore.getTime();
  return new Date(notBefore.getTime() + total * (0.7 + 0.2 * rand));
}

/** The back-off before retry `attempt` (0-based): 2 s doubling for 5 steps, then 32 s. */
export function retryDelayMs(attempt: number): number {
  return attempt < 5 ? 2000 * 2 ** attempt : 32_000;
}

export interface RotationOptions {
  /** The node's kubeconfig (its client-certificate is the current link). */
  kubeconfig: string;
  certDir: string;
  nodeName: string;
  onRotated(r: { csrName: string; pairFile: string; notAfter: Date }): void;
  /** A failed attempt (each distinct message once until one succeeds). */
  onError(message: string): void;
  random?: () => number;
}

/** The longest single wait (timers take at most 2^31-1 ms). */
const MAX_WAIT_MS = 24 * 3600_000;

/** Rotate the node's client certificate until the signal aborts. Never rejects. */
export async function runClientCertificateRotation(o: RotationOptions, signal: AbortSignal): Promise<void> {
  const random = o.random ?? Math.random;
  const link = currentPairPath(o.certDir);
  let attempt = 0;
  const reported = new Set<string>();
  while (!signal.aborted) {
    try {
      const cert = new X509Certificate(await fsp.readFile(link, 'utf8'));
      const deadline = rotationDeadline(new Date(cert.validFrom), new Date(cert.validTo), random());
      while (!signal.aborted && Date.now() < deadline.getTime()) await pause(Math.min(deadline.getTime() - Date.now(), MAX_WAIT_MS), signal);
      if (signal.aborted) return;
      const keyPem = await newKey();
      const subject = nodeClientSubject(o.nodeName);
      const { name, certPem } = await requestClientCertificate({ kubeconfig: o.kubeconfig, keyPem, subject }, signal);
      const pairFile = await storePair(o.certDir, certPem, keyPem, new Date());
      attempt = 0;
      reported.clear();
      o.onRotated({ csrName: name, pairFile, notAfter: new Date(new X509Certificate(certPem).validTo) });
    } catch (err) {
      if (signal.aborted) return;
      const message = `rotating the client certificate: ${errorMessage(err)}`;
      if (!reported.has(message)) {
        reported.add(message);
        o.onError(message);
      }
      await pause(retryDelayMs(attempt++), signal);
    }
  }
}
