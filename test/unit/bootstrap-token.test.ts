/**
 * The pure parts of token discovery and the TLS bootstrap, against the
 * answers of the Go code they follow: cluster-bootstrap's JWS test vectors,
 * kubeadm's pin format, the kubelet's CSR subject, usages and name.
 */
import { X509Certificate, createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  detachedJws,
  detachedJwsValid,
  parseBootstrapToken,
  parseCertificates,
  parsePublicKeyPin,
  pinnedCertificate,
  publicKeyPin,
} from '../../src/lib/kube/bootstrap-token.js';
import { CLIENT_USAGES, checkIssued, clientConfigStillValid, csrObjectName, issued, makeCsr, nodeClientSubject } from '../../src/lib/kube/tls-bootstrap.js';
import { retryDelayMs, rotationDeadline } from '../../src/lib/kube/cert-rotation.js';
import { endpointUrl } from '../../src/lib/kube/discovery.js';
import { loadKubeconfig } from '../../src/lib/kube/kubeconfig.js';
import { checkJoinOptions } from '../../src/lib/services/join.js';

describe('detached JWS (k8s.io/cluster-bootstrap/token/jws test vectors)', () => {
  // jws_test.go: id "joshua", secret "my voice is my passcode" (not a valid bootstrap token: the vectors take any strings).
  const token = { id: 'joshua', secret: 'my voice is my passcode' };
  const content = 'Hello from the other side. I must have called a thousand times.';

  it('computes the signatures ComputeDetachedSignature makes', () => {
    expect(detachedJws(content, token)).toBe('eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8');
    expect(detachedJws('', token)).toBe('eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk');
    expect(detachedJws(content, { id: 'joshua', secret: '' })).toBe('eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8');
  });

  it('accepts exactly the signature of this content with this token', () => {
    const sig = 'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8';
    expect(detachedJwsValid(sig, content, token)).toBe(true);
    expect(detachedJwsValid(sig + 'foo', content, token)).toBe(false);
    expect(detachedJwsValid(sig, content + ' ', token)).toBe(false);
    expect(detachedJwsValid(sig, content, { ...token, secret: 'another secret' })).toBe(false);
    expect(detachedJwsValid(sig, content, { ...token, id: 'joshub' })).toBe(false);
    expect(detachedJwsValid('', content, token)).toBe(false);
  });
});

describe('bootstrap tokens', () => {
  it('takes ID.SECRET of [a-z0-9]{6}.[a-z0-9]{16}', () => {
    expect(parseBootstrapToken('abcdef.0123456789abcdef')).toEqual({ id: 'abcdef', secret: '0123456789abcdef' });
  });

  it.each(['abcdef', 'abcdef.0123456789abcde', 'ABCDEF.0123456789abcdef', 'abcdef:0123456789abcdef', ' abcdef.0123456789abcdef'])(
    'refuses %j without showing it',
    (t) => {
      let msg = '';
      try {
        parseBootstrapToken(t);
      } catch (err) {
        msg = (err as Error).message;
      }
      expect(msg).toBe('the bootstrap token does not match the pattern [a-z0-9]{6}.[a-z0-9]{16}');
      expect(msg).not.toContain('0123456789');
    },
  );
});

describe('CA public key pins (kubeadm pubkeypin)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-pin-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'ca.key'), '-out', path.join(dir, 'ca.crt'), '-subj', '/CN=pin-ca', '-days', '1'], { stdio: 'ignore' });
  const pem = fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8');
  // What the kubeadm docs tell users to run.
  const der = execFileSync('sh', ['-c', `openssl x509 -pubkey -in ${path.join(dir, 'ca.crt')} | openssl pkey -pubin -outform der`]);
  const want = `sha256:${createHash('sha256').update(der).digest('hex')}`;
  fs.rmSync(dir, { recursive: true, force: true });

  it('is sha256 of the SubjectPublicKeyInfo, as openssl computes it', () => {
    expect(publicKeyPin(new X509Certificate(pem))).toBe(want);
  });

  it('parses sha256:<hex> in any case to lower case, and refuses other forms naming the value', () => {
    expect(parsePublicKeyPin(want.toUpperCase().replace('SHA256', 'Sha256'))).toBe(want);
    expect(() => parsePublicKeyPin('abc')).toThrow('"abc": invalid hash, expected "format:hex-value" (known format: sha256)');
    expect(() => parsePublicKeyPin('md5:abc')).toThrow('"md5:abc": unknown hash format "md5" (known format: sha256)');
    expect(() => parsePublicKeyPin('sha256:abcd')).toThrow('"sha256:abcd": expected a 32-byte SHA-256 hash in hex');
  });

  it('finds the pinned certificate of a bundle, none when no key matches', () => {
    const certs = parseCertificates(`${pem}\n${pem}`);
    expect(certs).toHaveLength(2);
    expect(pinnedCertificate(certs, [want])).toBe(certs[0]);
    expect(pinnedCertificate(certs, [`sha256:${'0'.repeat(64)}`])).toBeUndefined();
  });

  it('join needs a pin or the explicit skip', () => {
    expect(() => checkJoinOptions({ server: 'x:1', token: 'abcdef.0123456789abcdef', caCertHashes: [], unsafeSkipCaVerification: false })).toThrow(/without a CA public key pin/);
    expect(checkJoinOptions({ server: 'x:1', token: 'abcdef.0123456789abcdef', caCertHashes: [], unsafeSkipCaVerification: true }).pins).toEqual([]);
    expect(checkJoinOptions({ server: 'x:1', token: 'abcdef.0123456789abcdef', caCertHashes: [want], unsafeSkipCaVerification: false }).pins).toEqual([want]);
  });
});

describe('the join endpoint', () => {
  it.each([
    ['10.0.0.1:6443', 'https://10.0.0.1:6443'],
    ['https://10.0.0.1:6443', 'https://10.0.0.1:6443'],
    ['https://cp.example:6443/', 'https://cp.example:6443'],
    ['[fd00::1]:6443', 'https://[fd00::1]:6443'],
  ])('%s is %s', (given, url) => {
    expect(endpointUrl(given)).toBe(url);
  });

  it.each(['http://10.0.0.1:6443', 'https://10.0.0.1:6443/api', 'a b'])('%s is refused', (given) => {
    expect(() => endpointUrl(given)).toThrow(`API server "${given}" is not host:port or an https URL`);
  });
});

describe('the node client CSR (kubelet requestNodeCertificate)', () => {
  it('asks for CN system:node:<name>, O system:nodes, with the key, no extensions', async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyPem = privateKey.export({ type: 'sec1', format: 'pem' }) as string;
    const csrPem = await makeCsr(keyPem, nodeClientSubject('node-1'));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-csr-'));
    fs.writeFileSync(path.join(dir, 'r.csr'), csrPem);
    const text = execFileSync('openssl', ['req', '-in', path.join(dir, 'r.csr'), '-noout', '-verify', '-subject', '-nameopt', 'RFC2253', '-pubkey'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    fs.rmSync(dir, { recursive: true, force: true });
    // RFC 2253 prints the last RDN first: O came before CN in the request, as Go's pkix.Name orders them.
    expect(text).toContain('subject=CN=system:node:node-1,O=system:nodes');
    const pub = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/.exec(text)![0];
    expect(createPublicKey(pub).export({ type: 'spki', format: 'der' })).toEqual(createPublicKey(privateKey).export({ type: 'spki', format: 'der' }));
  });

  it('uses the kubelet usages for an ECDSA key and names the request by digest of key, subject and usages', () => {
    expect(CLIENT_USAGES).toEqual(['digital signature', 'client auth']);
    const spki = Buffer.from('spki');
    const name = csrObjectName(spki, nodeClientSubject('n'), CLIENT_USAGES);
    // digestedName: SHA-512/256 over base64url(part)+"|" for each part.
    const h = createHash('sha512-256');
    for (const part of ['spki', 'system:node:n', 'system:nodes', 'digital signature', 'client auth']) h.update(Buffer.from(part).toString('base64url') + '|');
    expect(name).toBe(`node-csr-${h.digest().toString('base64url')}`);
    expect(name).toMatch(/^node-csr-[A-Za-z0-9_-]{43}$/);
    expect(csrObjectName(spki, nodeClientSubject('m'), CLIENT_USAGES)).not.toBe(name);
    expect(csrObjectName(Buffer.from('other'), nodeClientSubject('n'), CLIENT_USAGES)).not.toBe(name);
  });

  it('waits while not approved or not issued; a denied or failed request is an error naming it', () => {
    const cert = Buffer.from('-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n').toString('base64');
    expect(issued('node-csr-a', undefined)).toBeUndefined();
    expect(issued('node-csr-a', { conditions: [{ type: 'Approved' }] })).toBeUndefined();
    expect(issued('node-csr-a', { certificate: cert })).toBeUndefined();
    expect(issued('node-csr-a', { conditions: [{ type: 'Approved' }], certificate: cert })).toContain('BEGIN CERTIFICATE');
    expect(() => issued('node-csr-a', { conditions: [{ type: 'Denied', reason: 'NotMine', message: 'no' }] })).toThrow('certificate signing request node-csr-a is denied, reason: NotMine, message: no');
    expect(() => issued('node-csr-a', { conditions: [{ type: 'Approved' }, { type: 'Failed', reason: 'SignerError', message: 'bad' }], certificate: cert })).toThrow(
      'certificate signing request node-csr-a failed, reason: SignerError, message: bad',
    );
  });
});

describe('client certificate rotation (certificate_manager.go)', () => {
  const notBefore = new Date('2026-01-01T00:00:00Z');
  const notAfter = new Date('2026-01-01T01:40:00Z'); // 100 minutes

  it('is due at 70–90 % of the lifetime from notBefore, by the jitter', () => {
    expect(rotationDeadline(notBefore, notAfter, 0).toISOString()).toBe('2026-01-01T01:10:00.000Z');
    expect(rotationDeadline(notBefore, notAfter, 0.5).toISOString()).toBe('2026-01-01T01:20:00.000Z');
    expect(rotationDeadline(notBefore, notAfter, 1).toISOString()).toBe('2026-01-01T01:30:00.000Z');
  });

  it('retries after 2 s doubling for 5 steps, then every 32 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 20].map(retryDelayMs)).toEqual([2000, 4000, 8000, 16_000, 32_000, 32_000, 32_000, 32_000]);
  });
});

describe('is the kubeconfig still valid? (isClientConfigStillValid)', () => {
  it('yes with an unexpired client certificate; no when it expired, holds none, or is missing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-kc-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(dir, 'c.key'), '-out', path.join(dir, 'c.crt'), '-subj', '/CN=system:node:n', '-days', '1'], { stdio: 'ignore' });
    const kc = (user: string) =>
      `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n${user}\n`;
    fs.writeFileSync(path.join(dir, 'cert.conf'), kc('    client-certificate: c.crt\n    client-key: c.key'));
    fs.writeFileSync(path.join(dir, 'token.conf'), kc('    token: abc'));
    const now = new Date();
    expect(await clientConfigStillValid(path.join(dir, 'cert.conf'), now)).toBe(true);
    expect(await clientConfigStillValid(path.join(dir, 'cert.conf'), new Date(now.getTime() + 2 * 86400_000))).toBe(false);
    expect(await clientConfigStillValid(path.join(dir, 'token.conf'), now)).toBe(false);
    expect(await clientConfigStillValid(path.join(dir, 'missing.conf'), now)).toBe(false);
    fs.rmSync(path.join(dir, 'c.key'));
    expect(await clientConfigStillValid(path.join(dir, 'cert.conf'), now)).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('the issued certificate', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-issued-'));
  const make = (name: string, subj: string) => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(dir, `${name}.key`), '-out', path.join(dir, `${name}.crt`), '-subj', subj, '-days', '1'], { stdio: 'ignore' });
    return { cert: fs.readFileSync(path.join(dir, `${name}.crt`), 'utf8'), key: fs.readFileSync(path.join(dir, `${name}.key`), 'utf8') };
  };
  const mine = make('mine', '/O=system:nodes/CN=system:node:n1');
  const other = make('other', '/O=system:nodes/CN=system:node:n2');
  fs.rmSync(dir, { recursive: true, force: true });

  it('is taken for this key and node', () => {
    expect(() => checkIssued(mine.cert, mine.key, nodeClientSubject('n1'), 'node-csr-x')).not.toThrow();
  });

  it('is refused when signed for another node name, or for another key', () => {
    expect(() => checkIssued(other.cert, other.key, nodeClientSubject('n1'), 'node-csr-x')).toThrow('certificate signing request node-csr-x: the issued certificate is for "system:node:n2", not "system:node:n1"');
    expect(() => checkIssued(mine.cert, other.key, nodeClientSubject('n1'), 'node-csr-x')).toThrow('certificate signing request node-csr-x: the issued certificate is not for the requested key');
    expect(() => checkIssued('junk', mine.key, nodeClientSubject('n1'), 'node-csr-x')).toThrow('the issued certificate is not a PEM certificate');
  });
});

describe('kubeconfigs with client certificates (loadKubeconfig)', () => {
  it('loads one whose files are there; a missing or half pair is an error naming the kubeconfig and the file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-kcc-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(dir, 'c.key'), '-out', path.join(dir, 'c.crt'), '-subj', '/CN=system:node:n', '-days', '1'], { stdio: 'ignore' });
    const kc = (user: string) =>
      `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n${user}\n`;
    const file = path.join(dir, 'k.conf');
    fs.writeFileSync(file, kc('    client-certificate: c.crt\n    client-key: c.key'));
    expect((await loadKubeconfig(file)).server).toBe('https://127.0.0.1:1');
    fs.writeFileSync(file, kc('    client-certificate: missing.crt\n    client-key: c.key'));
    await expect(loadKubeconfig(file)).rejects.toThrow(`kubeconfig ${file}: user "u" client-certificate ${path.join(dir, 'missing.crt')}: no such file`);
    fs.writeFileSync(file, kc('    client-certificate: c.crt'));
    await expect(loadKubeconfig(file)).rejects.toThrow(`kubeconfig ${file}: user "u" has a client certificate without its key`);
    fs.writeFileSync(file, kc('    client-certificate: c.key\n    client-key: c.key'));
    await expect(loadKubeconfig(file)).rejects.toThrow(`kubeconfig ${file}: user "u" client-certificate ${path.join(dir, 'c.key')}: not PEM`);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
