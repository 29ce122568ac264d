/**
 * Probe timing over 100 periods of a 1 s probe (real timers, an in-memory
 * handler that takes 0-300 ms, and one that sometimes takes longer than
 * the period): the mean period stays within 5% of 1 s and no run of a
 * container's probe starts before the previous one ended. ~100 s.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../../src/lib/kuberuntime/runtime-status.js';
import { ProberManager, type ProbeRunRecord } from '../../src/lib/prober/manager.js';

function running(name: string): RuntimeContainerStatus {
  return {
    id: `${name}-1`, name, sandboxId: 'sb', state: 'running', createdAt: Date.now(), startedAt: Date.now(), finishedAt: 0, exitCode: 0,
    reason: '', message: '', image: 'busybox', imageRef: 'sha256:x', hash: 'h', restartCount: 0, type: 'regular', logPath: '',
  };
}

describe('probe timing', () => {
  it('keeps a 1 s period over 100 periods, without overlapping runs', async () => {
    const runs: ProbeRunRecord[] = [];
    let n = 0;
    const m = new ProberManager({
      hostIPs: () => [],
      cri: {
        execSync: async (req) => {
          const slow = req.cmd?.[0] === 'slow' && ++n % 10 === 0;
          await new Promise((r) => setTimeout(r, slow ? 1300 : Math.random() * 300));
          return { exitCode: 0, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
        },
      },
      onRun: (r) => runs.push(r),
    });
    const pod: V1Pod = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
      spec: {
        containers: [
          { name: 'fast', image: 'busybox', readinessProbe: { exec: { command: ['fast'] }, periodSeconds: 1 } },
          { name: 'slow', image: 'busybox', readinessProbe: { exec: { command: ['slow'] }, periodSeconds: 1 } },
        ],
      },
    };
    const status: RuntimePodStatus = { uid: 'u1', name: 'p', namespace: 'ns', sandboxes: [], containers: [running('fast'), running('slow')] };
    m.addPod(pod);
    m.updatePodStatus('u1', status);
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (runs.filter((r) => r.container === 'fast').length > 100) {
          clearInterval(t);
          resolve();
        }
      }, 100);
    });
    m.stop();
    for (const name of ['fast', 'slow']) {
      const mine = runs.filter((r) => r.container === name);
      for (let i = 1; i < mine.length; i++) {
        expect(mine[i]!.startedAt, `${name} run ${i} starts after run ${i - 1} ended`).toBeGreaterThanOrEqual(mine[i - 1]!.endedAt);
      }
    }
    const fast = runs.filter((r) => r.container === 'fast').slice(0, 101);
    const mean = (fast[100]!.startedAt - fast[0]!.startedAt) / 100;
    expect(mean, `mean period ${mean} ms`).toBeGreaterThan(950);
    expect(mean, `mean period ${mean} ms`).toBeLessThan(1050);
  }, 180_000);
});
