/**
 * The serving certificate's request and checks (the kubelet's
 * NewKubeletServerCertificateManager: newGetTemplateFn,
 * addressesToHostnamesAndIPs, certSatisfiesTemplate) and the pair files the
 * certificate manager shares with the client certificate.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { currentPair, expiryTimer, parsePair, runCertificateRotation, satisfies, servingCertificate, servingTemplate } from '../../src/lib/kube/cert-rotation.js';
import { selfSigned } from '../../src/lib/server/serving-cert.js';
import { SERVING_USAGES, checkIssued, makeCsr, storePair } from '../../src/lib/kube/tls-bootstrap.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-serving-unit-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A self-signed ECDSA certificate with this subject and SANs (openssl). */
function make(name: string, subj: string, san?: string): { cert: string; key: string } {
  const crt = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', crt, '-subj', subj, '-days', '1', ...(san ? ['-addext', `subjectAltName=${san}`] : [])],
    { stdio: 'ignore' },
  );
  return { cert: fs.readFileSync(crt, 'utf8'), key: fs.readFileSync(key, 'utf8') };
}

describe('the serving certificate request (newGetTemplateFn)', () => {
  it('is for the node with its hostname as DNS name and its IPs, sorted and unique', () => {
    expect(
      servingTemplate('n1', [
        { type: 'InternalIP', address: '10.0.0.9' },
        { type: 'Hostname', address: 'node-1' },
        { type: 'InternalIP', address: '10.0.0.10' },
        { type: 'InternalIP', address: '10.0.0.9' },
      ]),
    ).toEqual({ commonName: 'system:node:n1', organization: ['system:nodes'], dnsNames: ['node-1'], ipAddresses: ['10.0.0.10', '10.0.0.9'] });
  });

  it('takes a Hostname that is an IP as an IP', () => {
    expect(servingTemplate('n1', [{ type: 'Hostname', address: '192.168.1.4' }])?.ipAddresses).toEqual(['192.168.1.4']);
  });

  it('is not made while the node has no IP (nothing is asked)', () => {
    expect(servingTemplate('n1', [{ type: 'Hostname', address: 'node-1' }])).toBeNull();
  });

  it('uses the kubelet serving usages for an ECDSA key (no key encipherment)', () => {
    expect(SERVING_USAGES).toEqual(['digital signature', 'server auth']);
  });

  it('carries the SANs in the PKCS#10 request', async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyPem = privateKey.export({ type: 'sec1', format: 'pem' }) as string;
    const csr = await makeCsr(keyPem, servingTemplate('n1', [{ type: 'InternalIP', address: '10.1.2.3' }, { type: 'Hostname', address: 'node-1' }])!);
    fs.writeFileSync(path.join(dir, 'r.csr'), csr);
    const text = execFileSync('openssl', ['req', '-in', path.join(dir, 'r.csr'), '-noout', '-verify', '-text', '-nameopt', 'RFC2253'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(text).toContain('Subject: CN=system:node:n1,O=system:nodes');
    expect(text).toMatch(/DNS:node-1, IP Address:10\.1\.2\.3/);
  });
});

describe('the issued serving certificate', () => {
  const t = servingTemplate('n1', [{ type: 'InternalIP', address: '10.1.2.3' }, { type: 'Hostname', address: 'node-1' }])!;
  const good = make('good', '/O=system:nodes/CN=system:node:n1', 'DNS:node-1,IP:10.1.2.3,IP:10.9.9.9');
  const noIp = make('noip', '/O=system:nodes/CN=system:node:n1', 'DNS:node-1');
  const none = make('none', '/O=system:nodes/CN=system:node:n1');
  const other = make('other', '/O=system:nodes/CN=system:node:n2', 'DNS:node-1,IP:10.1.2.3');

  it('is taken when it covers the node and its addresses (extra names are fine)', () => {
    expect(() => checkIssued(good.cert, good.key, t, 'csr-a')).not.toThrow();
    expect(satisfies(new X509Certificate(good.cert), t)).toBe(true);
  });

  it('is refused, in one line naming the request, when it lacks an address or is for another node', () => {
    expect(() => checkIssued(noIp.cert, noIp.key, t, 'csr-a')).toThrow(/^certificate signing request csr-a: the issued certificate lacks the requested address 10\.1\.2\.3$/);
    expect(() => checkIssued(none.cert, none.key, t, 'csr-a')).toThrow(/^certificate signing request csr-a: the issued certificate lacks the requested addresses node-1, 10\.1\.2\.3$/);
    expect(() => checkIssued(other.cert, other.key, t, 'csr-a')).toThrow('certificate signing request csr-a: the issued certificate is for "system:node:n2", not "system:node:n1"');
  });

  it('is renewed at once when the node gained an address or it is for another name (certSatisfiesTemplate)', () => {
    expect(satisfies(new X509Certificate(noIp.cert), t)).toBe(false);
    expect(satisfies(new X509Certificate(other.cert), t)).toBe(false);
    expect(satisfies(new X509Certificate(good.cert), { ...t, ipAddresses: ['10.1.2.3', '10.1.2.4'] })).toBe(false);
  });
});

describe('the pair files (certificate.FileStore)', () => {
  it('stores kubelet-server-<time>.pem (0600) behind kubelet-server-current.pem and reads it back', async () => {
    const good = make('pair', '/O=system:nodes/CN=system:node:n1', 'IP:10.1.2.3');
    const certDir = path.join(dir, 'pki');
    expect(await currentPair(certDir, { prefix: 'kubelet-server' })).toBeUndefined();
    const file = await storePair(certDir, good.cert, good.key, new Date(2026, 0, 2, 3, 4, 5), 'kubelet-server');
    expect(path.basename(file)).toBe('kubelet-server-2026-01-02-03-04-05.pem');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readlinkSync(path.join(certDir, 'kubelet-server-current.pem'))).toBe(file);
    const pair = await currentPair(certDir, { prefix: 'kubelet-server' });
    expect(pair?.cert.serialNumber).toBe(new X509Certificate(good.cert).serialNumber);
    // The client pair is another file.
    expect(await currentPair(certDir, { prefix: 'kubelet-client' })).toBeUndefined();
  });

  it('falls back to the given certificate and key files while there is no pair', async () => {
    const given = make('given', '/CN=given');
    fs.writeFileSync(path.join(dir, 'g.crt'), given.cert);
    fs.writeFileSync(path.join(dir, 'g.key'), given.key);
    const pair = await currentPair(path.join(dir, 'empty'), { prefix: 'kubelet-server', fallback: { certFile: path.join(dir, 'g.crt'), keyFile: path.join(dir, 'g.key') } });
    expect(pair?.cert.subject).toBe('CN=given');
  });

  it('takes no pair whose key is not the certificate’s', () => {
    const a = make('a', '/CN=a');
    const b = make('b', '/CN=b');
    expect(parsePair(a.cert + b.key)).toBeUndefined();
    expect(parsePair(a.cert + a.key)?.cert.subject).toBe('CN=a');
  });
});

describe('an expired serving certificate is not used (the manager\'s Current() gives nil past notAfter)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('the expiry timer fires once, just after notAfter; a new certificate replaces the old deadline; the signal stops it', () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z') });
    const fired: string[] = [];
    const ac = new AbortController();
    const t = expiryTimer(ac.signal, (d) => fired.push(d.toISOString()));
    t.set(new Date('2026-01-01T00:00:10Z'));
    vi.advanceTimersByTime(10_000);
    expect(fired).toEqual([]); // at notAfter itself it is still valid
    vi.advanceTimersByTime(2);
    expect(fired).toEqual(['2026-01-01T00:00:10.000Z']);
    // Renewed before the end: only the new certificate's end counts.
    t.set(new Date('2026-01-01T00:01:00Z'));
    vi.advanceTimersByTime(20_000);
    t.set(new Date('2026-02-15T00:00:00Z')); // longer than one timer can wait
    vi.advanceTimersByTime(40 * 24 * 3600_000);
    expect(fired).toHaveLength(1);
    vi.advanceTimersByTime(6 * 24 * 3600_000);
    expect(fired).toEqual(['2026-01-01T00:00:10.000Z', '2026-02-15T00:00:00.000Z']);
    t.set(new Date('2026-03-01T00:00:00Z'));
    ac.abort();
    vi.advanceTimersByTime(30 * 24 * 3600_000);
    expect(fired).toHaveLength(2);
  });

  it('while renewals keep failing, the certificate in use is given up at its end (onExpired), not served expired', async () => {
    const certDir = fs.mkdtempSync(path.join(dir, 'expiring-'));
    // Valid for two more seconds (a year-long certificate made a year ago).
    const made = await selfSigned('node-1', ['10.1.2.3'], new Date(Date.now() - 365 * 24 * 3600_000 + 2_000));
    await storePair(certDir, made.cert, made.key, new Date(), 'kubelet-server');
    const notAfter = Date.parse(new X509Certificate(made.cert).validTo);
    // Every request fails: nothing listens on the API server's port.
    const kubeconfig = path.join(certDir, 'kubelet.conf');
    fs.writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: abc\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n');
    const ac = new AbortController();
    const errors: string[] = [];
    const expired = new Promise<Date>((resolve) => {
      void runCertificateRotation(
        {
          kubeconfig,
          certDir,
          certificate: servingCertificate('n1', () => [{ type: 'InternalIP', address: '10.1.2.3' }]),
          onRotated: () => errors.push('rotated'),
          onError: (m) => errors.push(m),
          onExpired: resolve,
          waitMs: 300,
        },
        ac.signal,
      );
    });
    try {
      const at = await Promise.race([expired, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not given up: ${errors.join('; ')}`)), 30_000))]);
      expect(at.getTime()).toBe(notAfter);
      expect(Date.now()).toBeGreaterThan(notAfter);
      // The failed renewal is reported too; on a loaded machine the two seconds may end before its first try has failed.
      for (let i = 0; i < 100 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(errors[0]).toMatch(/^rotating the serving certificate: /);
      expect(errors).not.toContain('rotated');
    } finally {
      ac.abort();
    }
  }, 40_000);
});
