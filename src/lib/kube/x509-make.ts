/**
 * What klet makes with @peculiar/x509: the kubelet server's self-signed
 * certificate and the PKCS#10 requests of the TLS bootstrap and certificate
 * rotation. Never imported by the rest of klet: called through
 * util/child-call.ts (serving-cert.ts selfSigned, tls-bootstrap.ts makeCsr),
 * so that the library, loaded once in a long-running `klet sync`, does not
 * stay in its memory for good (~24 MB of RSS).
 */
import { KeyObject, createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import net from 'node:net';
import type { ClientSubject } from './tls-bootstrap.js';

/** How long a generated certificate is valid (the kubelet's self-signed one: a year). */
const VALIDITY_MS = 365 * 24 * 3600 * 1000;
/** Valid from an hour back: a clock a little behind the client's must not make it "not yet valid". */
const BACKDATE_MS = 3600 * 1000;

async function library(): Promise<typeof import('@peculiar/x509')> {
  // @peculiar/x509 (through tsyringe) needs the Reflect metadata polyfill.
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  return x509;
}

/** A self-signed ECDSA P-256 serving certificate for `hostname` and `addresses` (CN host@unix-seconds, as the kubelet names its own). */
export async function selfSignedPair(hostname: string, addresses: string[], nowIso: string): Promise<{ cert: string; key: string }> {
  const now = new Date(nowIso);
  const x509 = await library();
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const names = [
    { type: 'dns' as const, value: hostname },
    ...[...new Set(addresses)].filter((a) => net.isIP(a) !== 0).map((a) => ({ type: 'ip' as const, value: a })),
  ];
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16))).toString('hex').replace(/^[89a-f]/, '1'),
    name: `CN=${hostname.replace(/[,=+<>#;"\\]/g, '')}@${Math.floor(now.getTime() / 1000)}`,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: new Date(now.getTime() + VALIDITY_MS),
    signingAlgorithm: alg,
    keys: keys as unknown as Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'],
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
    ],
  });
  const key = KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }) as string;
  return { cert: cert.toString('pem'), key };
}

/** A PKCS#10 request for `subject` signed with `keyPem` (x509.CreateCertificateRequest: its SANs, if any, as the only extension). */
export async function csrPem(keyPem: string, subject: ClientSubject): Promise<string> {
  const x509 = await library();
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const priv = createPrivateKey(keyPem);
  const pkcs8 = priv.export({ type: 'pkcs8', format: 'der' });
  const spki = createPublicKey(priv).export({ type: 'spki', format: 'der' });
  const privateKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, alg, false, ['sign']);
  const publicKey = await webcrypto.subtle.importKey('spki', spki, alg, true, ['verify']);
  // Go's pkix.Name orders O before CN.
  const name = [...subject.organization.map((o) => ({ O: [o] })), { CN: [subject.commonName] }];
  const sans = [...(subject.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })), ...(subject.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value }))];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys: { privateKey, publicKey } as unknown as Parameters<typeof x509.Pkcs10CertificateRequestGenerator.create>[0]['keys'],
    signingAlgorithm: alg,
    ...(sans.length > 0 ? { extensions: [new x509.SubjectAlternativeNameExtension(sans)] } : {}),
  });
  return csr.toString('pem');
}
