import type { V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { type ServiceApi, ServiceLister } from '../../src/lib/node/service-lister.js';

/** A ServiceApi whose list+watch delivers what the test pushes, until the signal aborts. */
function fakeApi() {
  let on: Parameters<ServiceApi['watchServices']>[0] | undefined;
  const api: ServiceApi = {
    watchServices: (o, signal) =>
      new Promise<void>((resolve) => {
        on = o;
        signal.addEventListener('abort', () => resolve(), { once: true });
      }),
  };
  return { api, push: (items: V1Service[]) => on?.items(items), fail: (m: string) => on?.error(m) };
}

const svc = (name: string): V1Service => ({ metadata: { name, namespace: 'default' }, spec: { clusterIP: '10.0.0.1', ports: [{ port: 443 }] } });

describe("ServiceLister (the kubelet's service informer)", () => {
  it('is synced after the first list, answers the latest set, and keeps it across watch failures', async () => {
    const f = fakeApi();
    const warnings: string[] = [];
    const lister = new ServiceLister({ api: f.api, onWarning: (m) => warnings.push(m) });
    const ctrl = new AbortController();
    const done = lister.run(ctrl.signal);
    expect(lister.synced).toBe(false);
    expect(lister.list()).toEqual([]);
    const waiting = lister.waitSynced(60_000, ctrl.signal);
    f.push([svc('kubernetes')]);
    await waiting;
    expect(lister.synced).toBe(true);
    expect(lister.list().map((s) => s.metadata?.name)).toEqual(['kubernetes']);
    f.fail('watch services: connection refused');
    expect(warnings).toEqual(['services: watch services: connection refused']);
    expect(lister.list()).toHaveLength(1);
    f.push([svc('kubernetes'), svc('web')]);
    expect(lister.list()).toHaveLength(2);
    ctrl.abort();
    await done;
  });

  it('waitSynced gives up after its timeout, or at once when the signal aborts', async () => {
    const lister = new ServiceLister({ api: fakeApi().api });
    await lister.waitSynced(50);
    expect(lister.synced).toBe(false);
    const ctrl = new AbortController();
    const w = lister.waitSynced(60_000, ctrl.signal);
    ctrl.abort();
    await w;
    expect(lister.synced).toBe(false);
  });
});
