/**
 * containerd's TaskExit events as a relist trigger: the hand decoding of the
 * event envelope (a container's init process vs an exec'd process), the
 * PLEG's coalescing of requested relists, and the watcher's fall-back when
 * the runtime has no event service.
 */
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { describe, expect, it } from 'vitest';
import { decodeTaskExit, encodeSubscribeRequest } from '../../src/lib/cri/containerd-events.js';
import { CriUnimplementedError } from '../../src/lib/cri/errors.js';
import { relistOnContainerExit } from '../../src/lib/pleg/exit-trigger.js';
import { GenericPLEG } from '../../src/lib/pleg/generic.js';

function envelope(topic: string, typeUrl: string, containerId: string, id: string): Uint8Array {
  const ev = new BinaryWriter().uint32(10).string(containerId).uint32(18).string(id).uint32(24).uint32(4242).uint32(32).uint32(0).finish();
  const any = new BinaryWriter().uint32(10).string(typeUrl).uint32(18).bytes(ev).finish();
  const ts = new BinaryWriter().uint32(8).int64(1_700_000_000).finish();
  return new BinaryWriter().uint32(10).bytes(ts).uint32(18).string('k8s.io').uint32(26).string(topic).uint32(34).bytes(any).finish();
}

describe('containerd event decoding', () => {
  it("a container's init process exit is a TaskExit for that container; an exec'd process exit is not", () => {
    expect(decodeTaskExit(envelope('/tasks/exit', 'containerd.events.TaskExit', 'abc', 'abc'))).toEqual({ namespace: 'k8s.io', containerId: 'abc' });
    expect(decodeTaskExit(envelope('/tasks/exit', 'containerd.events.TaskExit', 'abc', 'exec-1'))).toBeNull();
    expect(decodeTaskExit(envelope('/tasks/start', 'containerd.events.TaskStart', 'abc', 'abc'))).toBeNull();
  });

  it('the subscribe request carries the filters as field 1', () => {
    expect([...encodeSubscribeRequest(['a'])]).toEqual([10, 1, 97]);
  });
});

describe('relist on container exit', () => {
  it('each exit asks for a relist; a burst shares one queued relist', async () => {
    let lists = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const cri = {
      listPodSandbox: async () => {
        lists++;
        if (lists === 2) await held;
        return { items: [] };
      },
      listContainers: async () => ({ containers: [] }),
    };
    const pleg = new GenericPLEG({ cri: cri as never, relistPeriodMs: 60_000 });
    pleg.start();
    await new Promise((r) => setTimeout(r, 50));
    expect(lists).toBe(1); // the first relist
    pleg.requestRelist(); // runs now, held in ListPodSandbox
    await new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < 5; i++) pleg.requestRelist(); // one more after it, not five
    release();
    await new Promise((r) => setTimeout(r, 50));
    expect(lists).toBe(3);
    await pleg.stop();
  });

  it('stops quietly when the runtime has no event service, and follows the stream otherwise', async () => {
    let asked = 0;
    const pleg = { requestRelist: async () => void asked++, podRecords: () => new Map() };
    const ctl = new AbortController();
    await relistOnContainerExit(
      {
        containerdTaskExits: () => ({
          [Symbol.asyncIterator]: () => ({
            next: () => Promise.reject(new CriUnimplementedError('unknown service', { grpcCode: 12, method: 'Events/Subscribe', endpoint: 'x' })),
          }),
        }),
      },
      pleg,
      ctl.signal,
    );
    expect(asked).toBe(0);
    async function* exits() {
      yield { namespace: 'k8s.io', containerId: 'a' };
      yield { namespace: 'k8s.io', containerId: 'b' };
      await new Promise((r) => ctl.signal.addEventListener('abort', r));
    }
    const run = relistOnContainerExit({ containerdTaskExits: () => exits() }, pleg, ctl.signal);
    await new Promise((r) => setTimeout(r, 200));
    expect(asked).toBe(2); // containers the PLEG does not have as running: one relist each
    ctl.abort();
    await run;
  });
});
