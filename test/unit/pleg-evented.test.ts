/**
 * detectEventedSupport against fake GetContainerEvents streams.
 */
import { describe, expect, it } from 'vitest';
import {
  ContainerEventResponse,
  ContainerEventType,
  CriCancelledError,
  CriUnavailableError,
  CriUnimplementedError,
  type CallOptions,
} from '../../src/lib/cri/index.js';
import { detectEventedSupport } from '../../src/lib/pleg/index.js';

const ctx = { method: 'GetContainerEvents', endpoint: 'unix:///fake.sock' };

/** A stream that stays open until its signal aborts (then throws as CriClient does). */
async function* openStream(opts: CallOptions = {}): AsyncGenerator<ContainerEventResponse, void, undefined> {
  await new Promise<void>((_resolve, reject) => {
    opts.signal?.addEventListener('abort', () => reject(new CriCancelledError('GetContainerEvents: cancelled', { ...ctx, grpcCode: 1 })));
  });
  yield ContainerEventResponse.fromPartial({}); // never reached
}

/** A stream whose first read fails with `err`, as grpc-js reports an error status. */
function failing(err: Error): AsyncIterable<ContainerEventResponse> {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(err) }),
  };
}

describe('detectEventedSupport', () => {
  it('is false when the runtime answers Unimplemented (containerd 1.6), without waiting', async () => {
    async function* unimplemented(): AsyncGenerator<ContainerEventResponse, void, undefined> {
      yield* failing(new CriUnimplementedError('does not implement GetContainerEvents', { ...ctx, grpcCode: 12 }));
    }
    const t0 = performance.now();
    expect(await detectEventedSupport({ getContainerEvents: unimplemented }, { waitMs: 5000 })).toBe(false);
    expect(performance.now() - t0).toBeLessThan(500);
  });

  it('is true when the stream stays open for the whole wait', async () => {
    const t0 = performance.now();
    expect(await detectEventedSupport({ getContainerEvents: openStream }, { waitMs: 50 })).toBe(true);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(45);
  });

  it('is true as soon as an event arrives, and closes the stream', async () => {
    let closed = false;
    async function* oneEvent(): AsyncGenerator<ContainerEventResponse, void, undefined> {
      try {
        yield ContainerEventResponse.fromPartial({ containerId: 'c1', containerEventType: ContainerEventType.CONTAINER_STARTED_EVENT });
        await new Promise(() => undefined);
      } finally {
        closed = true;
      }
    }
    expect(await detectEventedSupport({ getContainerEvents: oneEvent }, { waitMs: 5000 })).toBe(true);
    expect(closed).toBe(true);
  });

  it('throws other failures: an unreachable runtime says nothing about the feature', async () => {
    async function* unavailable(): AsyncGenerator<ContainerEventResponse, void, undefined> {
      yield* failing(new CriUnavailableError('cannot reach the container runtime', { ...ctx, grpcCode: 14 }));
    }
    await expect(detectEventedSupport({ getContainerEvents: unavailable })).rejects.toBeInstanceOf(CriUnavailableError);
  });
});
