import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KletError } from '../../src/lib/errors.js';
import {
  CriAlreadyExistsError,
  CriCancelledError,
  CriDeadlineExceededError,
  CriError,
  CriInvalidArgumentError,
  CriNotFoundError,
  CriUnavailableError,
  CriUnimplementedError,
  toCriError,
} from '../../src/lib/cri/index.js';
import { formatDuration } from '../../src/lib/util/duration.js';
import { GrpcStatus as status } from '../../src/lib/cri/grpc-status.js';
import { GrpcCallError } from '../../src/lib/cri/transport.js';

/** A failed call as the transport reports it. */
function serviceError(code: status, details: string): GrpcCallError {
  return new GrpcCallError(code, details);
}

let dir: string;
let server: Server;
let liveSocket: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'klet-cri-errors-'));
  liveSocket = join(dir, 'live.sock');
  server = createServer();
  await new Promise<void>((resolve) => server.listen(liveSocket, resolve));
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('toCriError', () => {
  it('explains a missing socket', () => {
    const endpoint = `unix://${dir}/x.sock`;
    const err = toCriError(
      serviceError(status.UNAVAILABLE, `No connection established. Last error: connect ENOENT ${dir}/x.sock`),
      { method: 'Version', endpoint },
    );
    expect(err).toBeInstanceOf(CriUnavailableError);
    expect(err).toBeInstanceOf(CriError);
    expect(err).toBeInstanceOf(KletError);
    expect(err.message).toBe(`cannot reach the container runtime at ${endpoint}: no such socket; is containerd running?`);
    expect(err.suggestions).toContain('start one with: klet runtime start');
    // No flag names in the library: the command layer adds --container-runtime-endpoint.
    expect(err.suggestions.join(' ')).not.toMatch(/--[a-z]/);
    expect(err.grpcCode).toBe(status.UNAVAILABLE);
    expect(err.method).toBe('Version');
    expect(err.endpoint).toBe(endpoint);
    expect(err.code).toBe('CRI_UNAVAILABLE');
  });

  it('says when the path is not a socket', () => {
    const file = join(dir, 'plain-file');
    writeFileSync(file, '');
    const err = toCriError(serviceError(status.UNAVAILABLE, 'connect ENOTSOCK'), {
      method: 'Version',
      endpoint: `unix://${file}`,
    });
    expect(err.message).toBe(`cannot reach the container runtime at unix://${file}: ${file} is not a socket`);
  });

  it('says connection refused for a socket nobody listens on', () => {
    const err = toCriError(
      serviceError(status.UNAVAILABLE, `No connection established. Last error: connect ECONNREFUSED ${liveSocket}`),
      { method: 'Status', endpoint: `unix://${liveSocket}` },
    );
    expect(err).toBeInstanceOf(CriUnavailableError);
    expect(err.message).toMatch(/^cannot reach the container runtime at unix:\/\/\S+: connection refused/);
  });

  it('names the method and the deadline on DeadlineExceeded', () => {
    const err = toCriError(serviceError(status.DEADLINE_EXCEEDED, 'Deadline exceeded after 120.001s'), {
      method: 'RunPodSandbox',
      endpoint: 'unix:///x.sock',
      timeoutMs: 120_000,
    });
    expect(err).toBeInstanceOf(CriDeadlineExceededError);
    expect(err.message).toBe('the container runtime at unix:///x.sock did not answer RunPodSandbox within 2m0s');
  });

  it("reports the runtime's own DeadlineExceeded (ExecSync timeout) in its words", () => {
    const details = 'failed to exec in container: timeout 1s exceeded: context deadline exceeded';
    const err = toCriError(serviceError(status.DEADLINE_EXCEEDED, details), {
      method: 'ExecSync',
      endpoint: 'unix:///x.sock',
      timeoutMs: 121_000,
      deadlineAt: Date.now() + 120_000,
    });
    expect(err).toBeInstanceOf(CriDeadlineExceededError);
    expect(err.message).toBe(`ExecSync: ${details}`);
  });

  it('blames our deadline when it has passed', () => {
    const err = toCriError(serviceError(status.DEADLINE_EXCEEDED, 'Deadline exceeded after 0.301s'), {
      method: 'ExecSync',
      endpoint: 'unix:///x.sock',
      timeoutMs: 300,
      deadlineAt: Date.now() - 1,
    });
    expect(err.message).toBe('the container runtime at unix:///x.sock did not answer ExecSync within 300ms');
  });

  it('names the method on Unimplemented', () => {
    const err = toCriError(
      serviceError(status.UNIMPLEMENTED, 'unknown method GetContainerEvents for service runtime.v1.RuntimeService'),
      { method: 'GetContainerEvents', endpoint: 'unix:///x.sock' },
    );
    expect(err).toBeInstanceOf(CriUnimplementedError);
    expect(err.message).toBe('the container runtime at unix:///x.sock does not implement GetContainerEvents');
    expect(err.details).toContain('unknown method');
  });

  it.each([
    [status.NOT_FOUND, CriNotFoundError, 'an error occurred when try to find container "abc": not found'],
    [status.INVALID_ARGUMENT, CriInvalidArgumentError, 'sandbox config is nil'],
    [status.ALREADY_EXISTS, CriAlreadyExistsError, 'name "x" is reserved for "abc"'],
    [status.INTERNAL, CriError, 'failed to create containerd task: boom'],
    [status.UNKNOWN, CriError, 'failed to start: exec format error'],
  ])('maps code %i to %o with "<Method>: <details>"', (code, cls, details) => {
    const err = toCriError(serviceError(code, details), { method: 'ContainerStatus', endpoint: 'unix:///x.sock' });
    expect(err).toBeInstanceOf(cls);
    expect(err.constructor).toBe(cls);
    expect(err.message).toBe(`ContainerStatus: ${details}`);
    expect(err.grpcCode).toBe(code);
  });

  it('maps Cancelled', () => {
    const err = toCriError(serviceError(status.CANCELLED, 'Cancelled on client'), {
      method: 'ExecSync',
      endpoint: 'unix:///x.sock',
    });
    expect(err).toBeInstanceOf(CriCancelledError);
    expect(err.message).toBe('ExecSync: cancelled');
  });

  it('never puts a stack trace in the message, and keeps the cause', () => {
    const cause = serviceError(status.INTERNAL, 'boom');
    const err = toCriError(cause, { method: 'StartContainer', endpoint: 'unix:///x.sock' });
    expect(err.message).not.toContain('\n');
    expect(err.message).not.toMatch(/\bat .*:\d+:\d+/);
    expect(err.cause).toBe(cause);
  });

  it('strips grpc-js\'s "<code> <NAME>: " prefix when details are missing', () => {
    const err = toCriError(Object.assign(new Error('13 INTERNAL: oops'), { code: status.INTERNAL }), {
      method: 'Version',
      endpoint: 'unix:///x.sock',
    });
    expect(err.message).toBe('Version: oops');
  });

  it('wraps a non-gRPC error as a generic CriError', () => {
    const err = toCriError(new TypeError('bad thing'), { method: 'Version', endpoint: 'unix:///x.sock' });
    expect(err.constructor).toBe(CriError);
    expect(err.grpcCode).toBe(status.UNKNOWN);
    expect(err.message).toBe('Version: bad thing');
  });

  it('passes a CriError through', () => {
    const first = toCriError(serviceError(status.NOT_FOUND, 'x'), { method: 'A', endpoint: 'unix:///x.sock' });
    expect(toCriError(first, { method: 'B', endpoint: 'unix:///y.sock' })).toBe(first);
  });
});

describe('formatDuration', () => {
  it.each([
    [120_000, '2m0s'],
    [125_000, '2m5s'],
    [1_500, '1.5s'],
    [250, '250ms'],
    [3_600_000, '1h0m0s'],
    [0, '0s'],
  ])('%i ms → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
