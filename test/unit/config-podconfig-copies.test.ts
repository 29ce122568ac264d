import { describe, expect, it, vi } from 'vitest';
import { PodConfig } from '../../src/lib/config/config.js';
import * as defaults from '../../src/lib/pod/defaults.js';
import { parseManifestText, prepareManifests } from '../../src/lib/pod/manifest.js';

// Count the pod config's whole-pod copies (cloneModel of an object with a spec).
vi.mock('../../src/lib/pod/defaults.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/lib/pod/defaults.js')>();
  return { ...actual, cloneModel: vi.fn(actual.cloneModel) };
});

const podCopies = (): number => vi.mocked(defaults.cloneModel).mock.calls.filter(([v]) => typeof v === 'object' && v !== null && 'spec' in v).length;

describe('PodConfig: copies per watch event', () => {
  it('copies a pod whose status alone changed once (the RECONCILE it hands out), not twice', () => {
    const config = new PodConfig();
    const api = config.register('api');
    const load = () => prepareManifests(parseManifestText('apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  uid: 0a0a\nspec:\n  containers:\n  - name: c\n    image: busybox\n', '/a.yaml', 'file'), { nodeName: 'n1' }).pods;
    api.snapshot({ pods: load(), objects: { configMaps: [], secrets: [] }, errors: [] });
    expect(config.updates.tryTake()?.op).toBe('ADD');
    const next = load();
    next[0]!.pod.status = { phase: 'Running' };
    vi.mocked(defaults.cloneModel).mockClear();
    api.snapshot({ pods: next, objects: { configMaps: [], secrets: [] }, errors: [] });
    const u = config.updates.tryTake();
    expect(u?.op).toBe('RECONCILE');
    expect(u?.pods[0]?.status?.phase).toBe('Running');
    expect(podCopies()).toBe(1);
    // Only the resourceVersion changed: nothing to hand out, nothing copied.
    const again = load();
    again[0]!.pod.status = { phase: 'Running' };
    again[0]!.pod.metadata!.resourceVersion = '7';
    vi.mocked(defaults.cloneModel).mockClear();
    api.snapshot({ pods: again, objects: { configMaps: [], secrets: [] }, errors: [] });
    expect(config.updates.tryTake()).toBeUndefined();
    expect(podCopies()).toBe(0);
  });
});
