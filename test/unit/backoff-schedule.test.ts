/**
 * The crash-loop back-off schedule of syncPod (checkBackoff), driven with a
 * fake clock: a container that keeps crashing is restarted at once the
 * first time, then after 10s, 20s, 40s, 80s, 160s and 300s (the cap) for
 * ever, with the kubelet's waiting message; ten minutes of running resets
 * the back-off.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ContainerSyncState } from '../../src/lib/kuberuntime/poddir.js';
import type { RuntimePodStatus } from '../../src/lib/kuberuntime/runtime-status.js';
import { DEFAULT_BACKOFF, checkBackoff } from '../../src/lib/kuberuntime/sync-pod.js';

const POD: V1Pod = { metadata: { name: 'crash-node1', namespace: 'ns1', uid: 'u-1' }, spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] } };
const C = POD.spec!.containers[0] as V1Container;
const MESSAGE_TAIL = 'restarting failed container=c pod=crash-node1_ns1(u-1)';

/** The runtime's view: one exited instance of `c` (the newest), as getRuntimePodStatus returns it. */
function exited(startedAt: number, finishedAt: number, restartCount: number): RuntimePodStatus {
  return {
    uid: 'u-1',
    name: 'crash-node1',
    namespace: 'ns1',
    sandboxes: [{ id: 'sb', ready: true, attempt: 0, createdAt: 0, ip: '10.88.0.2', additionalIps: [], hostNetwork: false }],
    containers: [
      {
        id: `c-${restartCount}`,
        name: 'c',
        sandboxId: 'sb',
        state: 'exited',
        createdAt: startedAt,
        startedAt,
        finishedAt,
        exitCode: 1,
        reason: 'Error',
        message: '',
        image: 'busybox:1.36',
        imageRef: 'sha256:1',
        hash: 'h',
        restartCount,
        type: 'regular',
        logPath: '',
      },
    ],
  };
}

/**
 * A container that crashes `runMs` after every start, `crashes` times. For
 * each crash: how long after it the restart happened, and the messages
 * checkBackoff gave while it held the restart back. The clock only moves
 * when checkBackoff says when to retry, exactly then: the schedule itself,
 * without the sync loop's tick.
 */
function crashLoop(
  crashes: number,
  opts: { runMs?: number | ((n: number) => number); backoff?: typeof DEFAULT_BACKOFF; state?: ContainerSyncState; start?: number } = {},
): { delays: number[]; messages: string[][]; state: ContainerSyncState; now: number } {
  let now = opts.start ?? 1_700_000_000_000;
  const ctx = { now: () => now, backoff: opts.backoff };
  const state: ContainerSyncState = opts.state ?? {};
  const delays: number[] = [];
  const messages: string[][] = [];
  for (let n = 0; n < crashes; n++) {
    const run = typeof opts.runMs === 'function' ? opts.runMs(n) : (opts.runMs ?? 1000);
    const startedAt = now;
    const finishedAt = startedAt + run;
    now = finishedAt;
    const status = exited(startedAt, finishedAt, n);
    const held: string[] = [];
    for (let guard = 0; ; guard++) {
      expect(guard, 'checkBackoff never lets the container restart').toBeLessThan(5);
      const b = checkBackoff(ctx, POD, C, status, state);
      if (b === null) break;
      held.push(b.message);
      expect(b.retryInMs).toBeGreaterThan(0);
      // One millisecond early is still too early.
      if (b.retryInMs > 1) {
        const at = now;
        now += b.retryInMs - 1;
        const early = checkBackoff(ctx, POD, C, status, { ...state });
        expect(early?.retryInMs).toBe(1);
        now = at;
      }
      now += b.retryInMs;
    }
    delays.push(now - finishedAt);
    messages.push(held);
  }
  return { delays, messages, state, now };
}

describe('crash-loop back-off schedule (checkBackoff)', () => {
  it('restarts at once the first time, then after 10s, 20s, 40s, 80s, 160s, 300s, 300s: the kubelet defaults', () => {
    expect(DEFAULT_BACKOFF).toEqual({ initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 });
    const { delays, messages } = crashLoop(9);
    expect(delays.map((d) => d / 1000)).toEqual([0, 10, 20, 40, 80, 160, 300, 300, 300]);
    // While held back, the waiting message names the current back-off (Go's duration format).
    expect(messages).toEqual([
      [],
      [`back-off 10s ${MESSAGE_TAIL}`],
      [`back-off 20s ${MESSAGE_TAIL}`],
      [`back-off 40s ${MESSAGE_TAIL}`],
      [`back-off 1m20s ${MESSAGE_TAIL}`],
      [`back-off 2m40s ${MESSAGE_TAIL}`],
      [`back-off 5m0s ${MESSAGE_TAIL}`],
      [`back-off 5m0s ${MESSAGE_TAIL}`],
      [`back-off 5m0s ${MESSAGE_TAIL}`],
    ]);
  });

  it('measures from when the container exited: a crash seen late waits only what is left', () => {
    let now = 1_700_000_000_000;
    const state: ContainerSyncState = { backoffMs: 40_000 };
    const status = exited(now - 5000, now - 1000, 3);
    const b = checkBackoff({ now: () => now }, POD, C, status, state);
    expect(b).toEqual({ message: `back-off 40s ${MESSAGE_TAIL}`, retryInMs: 39_000 });
    now += 39_000;
    expect(checkBackoff({ now: () => now }, POD, C, status, state)).toBeNull();
    expect(state.backoffMs).toBe(80_000);
  });

  it('ten minutes of running resets the back-off; a minute less does not', () => {
    // At the cap after 7 crashes.
    const capped = crashLoop(7);
    expect(capped.state.backoffMs).toBe(300_000);

    // 9m59.999s of running: still at the cap.
    const almost = crashLoop(1, { runMs: 600_000 - 1, state: { ...capped.state }, start: capped.now });
    expect(almost.delays).toEqual([300_000]);
    expect(almost.messages).toEqual([[`back-off 5m0s ${MESSAGE_TAIL}`]]);

    // 10m of running: restarted at once, and the schedule starts over at 10s.
    const reset = crashLoop(4, { runMs: (n) => (n === 0 ? 600_000 : 1000), state: { ...capped.state }, start: capped.now });
    expect(reset.delays.map((d) => d / 1000)).toEqual([0, 10, 20, 40]);
  });

  it('follows --crash-loop-backoff-initial/-max: 1s doubling to 8s gives 0, 1, 2, 4, 8, 8', () => {
    const { delays, messages } = crashLoop(6, { backoff: { initialMs: 1000, maxMs: 8000, resetAfterMs: 600_000 } });
    expect(delays.map((d) => d / 1000)).toEqual([0, 1, 2, 4, 8, 8]);
    expect(messages.map((m) => m.map((s) => s.split(' ')[1]))).toEqual([[], ['1s'], ['2s'], ['4s'], ['8s'], ['8s']]);
  });

  it("a new image or new resources start the back-off over (the kubelet's GetBackoffKey); other edits do not", () => {
    const capped = crashLoop(7);
    expect(capped.state.backoffMs).toBe(300_000);
    const status = exited(capped.now - 1000, capped.now, 7);
    const at = (c: V1Container) => checkBackoff({ now: () => capped.now }, POD, c, status, { ...capped.state });
    // Same container, or another command: held back for the 5 minutes.
    expect(at(C)?.retryInMs).toBe(300_000);
    expect(at({ ...C, command: ['sh', '-c', 'exit 2'] })?.retryInMs).toBe(300_000);
    // Another image: restarted at once, and the schedule starts over at 10s.
    const state = { ...capped.state };
    expect(checkBackoff({ now: () => capped.now }, POD, { ...C, image: 'busybox:1.37' }, status, state)).toBeNull();
    expect(state.backoffMs).toBe(10_000);
    // Other resources: the same.
    expect(at({ ...C, resources: { limits: { memory: '64Mi' } } })).toBeNull();
  });

  it('a container that never started (StartError: startedAt 0) backs off like one that crashed: 0, 10s, 20s, 40s', () => {
    // The runtime reports startedAt 0 for a container whose start failed; its
    // "run time" is not 54 years, and must not reset the back-off each time.
    let now = 1_700_000_000_000;
    const ctx = { now: () => now };
    const state: ContainerSyncState = {};
    const delays: number[] = [];
    for (let n = 0; n < 4; n++) {
      const finishedAt = now + 50;
      now = finishedAt;
      const status = exited(0, finishedAt, n);
      status.containers[0]!.exitCode = 128;
      status.containers[0]!.reason = 'StartError';
      let held: ReturnType<typeof checkBackoff>;
      while ((held = checkBackoff(ctx, POD, C, status, state)) !== null) now += held.retryInMs;
      delays.push(now - finishedAt);
    }
    expect(delays.map((d) => d / 1000)).toEqual([0, 10, 20, 40]);
    expect(state.backoffMs).toBe(80_000);
  });

  it('does nothing for a container that is not exited or never ran', () => {
    const state: ContainerSyncState = {};
    const none: RuntimePodStatus = { uid: 'u-1', name: 'crash-node1', namespace: 'ns1', sandboxes: [], containers: [] };
    expect(checkBackoff({}, POD, C, none, state)).toBeNull();
    const running = exited(1000, 0, 0);
    running.containers[0]!.state = 'running';
    expect(checkBackoff({}, POD, C, running, state)).toBeNull();
    expect(state).toEqual({});
  });
});
