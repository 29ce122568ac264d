import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/lib/errors.js';
import { parseAdHoc, parseGrpcSpec, parseHttpSpec, parseTcpSpec, probe, type ProbeDeps } from '../../src/lib/services/probe.js';

describe('klet probe ad-hoc specs', () => {
  it('reads [SCHEME://]PORT/PATH, PORT and PORT[/service]', () => {
    expect(parseHttpSpec('8080/healthz')).toEqual({ handler: 'httpGet', scheme: 'HTTP', port: 8080, path: '/healthz' });
    expect(parseHttpSpec('https://8443/livez?verbose')).toEqual({ handler: 'httpGet', scheme: 'HTTPS', port: 8443, path: '/livez?verbose' });
    expect(parseHttpSpec('80')).toEqual({ handler: 'httpGet', scheme: 'HTTP', port: 80, path: '/' });
    expect(parseTcpSpec('2379')).toEqual({ handler: 'tcpSocket', port: 2379 });
    expect(parseGrpcSpec('9090')).toEqual({ handler: 'grpc', port: 9090, service: '' });
    expect(parseGrpcSpec('9090/etcd.Health')).toEqual({ handler: 'grpc', port: 9090, service: 'etcd.Health' });
  });

  it('rejects bad specs and ports out of range, naming the input', () => {
    for (const [fn, text] of [
      [parseHttpSpec, 'localhost:80/x'],
      [parseHttpSpec, '0/x'],
      [parseHttpSpec, 'ftp://21/'],
      [parseTcpSpec, '70000'],
      [parseTcpSpec, 'http'],
      [parseGrpcSpec, '/svc'],
    ] as const) {
      expect(() => fn(text)).toThrow(InputError);
      expect(() => fn(text)).toThrow(`"${text}"`);
    }
  });

  it('picks the one ad-hoc probe given, and its errors carry the input they are about', () => {
    expect(parseAdHoc({})).toBeUndefined();
    expect(parseAdHoc({ exec: 'test -f /ok' })).toEqual({ handler: 'exec', command: 'test -f /ok' });
    expect(parseAdHoc({ tcp: '2379' })).toEqual({ handler: 'tcpSocket', port: 2379 });
    for (const [input, spec] of [
      ['http', { http: 'abc' }],
      ['tcp', { tcp: '0' }],
      ['grpc', { grpc: 'x' }],
    ] as const) {
      let err: unknown;
      try {
        parseAdHoc(spec);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InputError);
      expect((err as InputError).input).toBe(input);
    }
  });

  it('refuses a timeout that is not whole seconds before touching the runtime', async () => {
    const untouched = new Proxy({}, { get: () => { throw new Error('the runtime was called'); } }) as ProbeDeps['cri'];
    const deps: ProbeDeps = { cri: untouched, rootDir: '/nonexistent', nodeName: 'n', signal: new AbortController().signal };
    for (const timeoutMs of [500, 1500, 0]) {
      const err = await probe({ pod: 'p', type: 'all', timeoutMs }, deps).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InputError);
      expect((err as InputError).input).toBe('timeout');
      expect((err as InputError).text).toMatch(/whole number of seconds/);
    }
  });
});
