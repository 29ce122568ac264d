import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/lib/errors.js';
import { parseGrpcSpec, parseHttpSpec, parseTcpSpec } from '../../src/lib/services/probe.js';

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
});
