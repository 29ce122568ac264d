/**
 * The order a pod's containers stop in (KEP-753): regular containers first,
 * then sidecars in reverse spec order; pods without sidecars stop all at once.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { terminationOrdering } from '../../src/lib/kuberuntime/termination-order.js';

const pod: V1Pod = {
  spec: {
    initContainers: [{ name: 'mesh', restartPolicy: 'Always' }, { name: 'setup' }, { name: 'logs', restartPolicy: 'Always' }],
    containers: [{ name: 'app' }, { name: 'worker' }],
  },
};

describe('termination ordering', () => {
  it('regular containers first, then sidecars in reverse order, among the containers being stopped', () => {
    const o = terminationOrdering(pod, ['app', 'worker', 'mesh', 'logs'])!;
    expect(o.prerequisites('app')).toEqual([]);
    expect(o.prerequisites('worker')).toEqual([]);
    expect(o.prerequisites('logs')).toEqual(['app', 'worker']);
    expect(o.prerequisites('mesh')).toEqual(['app', 'worker', 'logs']);
    // Only what is being stopped counts.
    expect(terminationOrdering(pod, ['mesh', 'app'])!.prerequisites('mesh')).toEqual(['app']);
  });

  it('a sidecar’s turn comes once its prerequisites have stopped', async () => {
    const o = terminationOrdering(pod, ['app', 'mesh', 'logs'])!;
    const order: string[] = [];
    const turn = (n: string) => o.waitForTurn(n).then(() => order.push(n));
    const waits = [turn('mesh'), turn('logs')];
    await Promise.resolve();
    expect(order).toEqual([]);
    o.stopped('app');
    await waits[1];
    expect(order).toEqual(['logs']);
    o.stopped('logs');
    await waits[0];
    expect(order).toEqual(['logs', 'mesh']);
  });

  it('a pod without sidecars has no ordering', () => {
    expect(terminationOrdering({ spec: { containers: [{ name: 'a' }] } }, ['a'])).toBeUndefined();
  });
});
