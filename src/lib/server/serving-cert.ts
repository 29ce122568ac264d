/**
 * The kubelet server's serving certificate: the files given
 * (--tls-cert-file, --tls-private-key-file), or, as the kubelet does without
 * them, a self-signed one kept in the certificate dir (<root-dir>/pki:
 * kubelet.crt, kubelet.key) for the node's hostname and addresses, made once
 * and reused until it expires. The key is ECDSA P-256, written 0600 and
 * renamed into place, so a half-written key is never read.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { InputError, errorMessage } from '../errors.js';
import { callInChild } from '../util/child-call.js';

export interface ServingCertificate {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
  /** True when this call made it. */
  generated: boolean;
}

export interface ServingCertificateOptions {
  certFile?: string;
  keyFile?: string;
  /** Where the self-signed pair lives. */
  certDir: string;
  hostname: string;
  /** The node's addresses, for the certificate's IP SANs. */
  addresses: string[];
  now?: Date;
}

async function readPair(certFile: string, keyFile: string): Promise<{ cert: string; key: string }> {
  const read = async (file: string, input: string) => {
    try {
      return await fsp.readFile(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new InputError(`${file}: ${code === 'ENOENT' ? 'no such file' : errorMessage(err)}`, { input });
    }
  };
  const cert = await read(certFile, 'tlsCertFile');
  const key = await read(keyFile, 'tlsPrivateKeyFile');
  try {
    new X509Certificate(cert);
  } catch {
    throw new InputError(`${certFile}: not a PEM certificate`, { input: 'tlsCertFile' });
  }
  try {
    createPrivateKey(key);
  } catch {
    throw new InputError(`${keyFile}: not a PEM private key`, { input: 'tlsPrivateKeyFile' });
  }
  return { cert, key };
}

/** A certificate file needs its key file and the other way round. */
export function checkBothGiven(certFile: string | undefined, keyFile: string | undefined): void {
  if ((certFile === undefined) !== (keyFile === undefined)) {
    // Named after the file that was given: it is the one that lacks its other half.
    throw new InputError(certFile === undefined ? `${keyFile}: a private key without its certificate: give the certificate file too` : `${certFile}: a certificate without its private key: give the key file too`, {
      input: certFile === undefined ? 'tlsPrivateKeyFile' : 'tlsCertFile',
    });
  }
}

/** The serving certificate and key to use; the self-signed pair is made when missing or expired. */
export async function servingCertificate(opts: ServingCertificateOptions): Promise<ServingCertificate> {
  checkBothGiven(opts.certFile, opts.keyFile);
  if (opts.certFile !== undefined && opts.keyFile !== undefined) {
    return { ...(await readPair(opts.certFile, opts.keyFile)), certFile: opts.certFile, keyFile: opts.keyFile, generated: false };
  }
  const certFile = path.join(opts.certDir, 'kubelet.crt');
  const keyFile = path.join(opts.certDir, 'kubelet.key');
  const now = opts.now ?? new Date();
  try {
    const cert = await fsp.readFile(certFile, 'utf8');
    const key = await fsp.readFile(keyFile, 'utf8');
    if (Date.parse(new X509Certificate(cert).validTo) > now.getTime()) return { cert, key, certFile, keyFile, generated: false };
  } catch {
    // Missing, unreadable or not a certificate: made anew below.
  }
  const made = await selfSigned(opts.hostname, opts.addresses, now);
  await fsp.mkdir(opts.certDir, { recursive: true, mode: 0o700 });
  await writeAtomic(keyFile, made.key, 0o600);
  await writeAtomic(certFile, made.cert, 0o644);
  return { ...made, certFile, keyFile, generated: true };
}

async function writeAtomic(file: string, text: string, mode: number): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    await fsp.writeFile(tmp, text, { mode, flag: 'w' });
    await fsp.chmod(tmp, mode);
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
}

/** A self-signed ECDSA P-256 serving certificate for `hostname` and `addresses` (CN host@unix-seconds, as the kubelet names its own), made in a child process (kube/x509-make.ts). */
export async function selfSigned(hostname: string, addresses: string[], now: Date): Promise<{ cert: string; key: string }> {
  return callInChild(import.meta.url, '../kube/x509-make', 'selfSignedPair', [hostname, addresses, now.toISOString()]);
}
