import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/lib/errors.js';
import { parseEndpoint, socketPathOf } from '../../src/lib/cri/index.js';

describe('parseEndpoint', () => {
  it('accepts unix:///absolute/path', () => {
    expect(parseEndpoint('unix:///run/containerd/containerd.sock')).toEqual({
      uri: 'unix:///run/containerd/containerd.sock',
      socketPath: '/run/containerd/containerd.sock',
    });
  });

  it('accepts a bare absolute path, as the kubelet does', () => {
    expect(parseEndpoint('/tmp/k/containerd.sock')).toEqual({
      uri: 'unix:///tmp/k/containerd.sock',
      socketPath: '/tmp/k/containerd.sock',
    });
  });

  it('normalizes the path', () => {
    expect(parseEndpoint('unix:///run//containerd/../containerd/c.sock').socketPath).toBe('/run/containerd/c.sock');
  });

  it.each([
    ['tcp://127.0.0.1:1234', 'only unix:// endpoints are supported'],
    ['npipe:////./pipe/containerd', 'only unix:// endpoints are supported'],
    ['unix:run/containerd.sock', 'only unix:// endpoints are supported'],
    ['unix://run/containerd.sock', 'must be absolute'],
    ['run/containerd.sock', 'must be absolute'],
    ['unix://', 'socket path is empty'],
    ['', 'an endpoint is required'],
  ])('rejects %j', (value, why) => {
    let caught: unknown;
    try {
      parseEndpoint(value);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InputError);
    const err = caught as InputError;
    // The library names the value and which input it is; the command layer adds the flag.
    expect(err.message.startsWith(`${JSON.stringify(value)}: `)).toBe(true);
    expect(err.input).toBe('containerRuntimeEndpoint');
    expect(err.message).toContain(why);
    expect(err.exitCode).toBe(2);
  });

  it('words the tcp refusal as documented', () => {
    expect(() => parseEndpoint('tcp://x')).toThrow('"tcp://x": only unix:// endpoints are supported');
  });
});

describe('socketPathOf', () => {
  it('strips the scheme', () => {
    expect(socketPathOf('unix:///a/b.sock')).toBe('/a/b.sock');
    expect(socketPathOf('/a/b.sock')).toBe('/a/b.sock');
  });
});
