import { describe, expect, it } from 'vitest';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import type { EnvContext } from '../../src/lib/kuberuntime/env.js';
import { localObjectSource, memoryVolumeSize, pluginOf, podMemoryLimit, unsupportedVolumeMessage, volumePayload } from '../../src/lib/volume/plugins.js';

const MI = 1024 * 1024;

function mkPod(spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'shop', uid: 'u1', labels: { app: 'web', tier: 'front' }, annotations: { owner: 'a' } },
    spec: { containers: [{ name: 'app', image: 'busybox', resources: { limits: { memory: '64Mi', cpu: '500m' } } }], ...spec },
  };
}

function env(pod: V1Pod): EnvContext {
  return {
    pod,
    podIPs: [],
    hostIPs: ['192.168.1.2'],
    nodeName: 'n1',
    objects: { configMaps: [], secrets: [] },
    nodeAllocatable: { cpuMillis: 2000, memoryBytes: 4096 * MI, ephemeralStorageBytes: 0 },
  };
}

const objects = localObjectSource({
  configMaps: [{ metadata: { name: 'cm', namespace: 'shop' }, data: { a: 'A', b: 'B' }, binaryData: { bin: Buffer.from([0, 1, 2]).toString('base64') } }],
  secrets: [{ metadata: { name: 's', namespace: 'shop' }, data: { token: Buffer.from('t0k').toString('base64') }, stringData: { user: 'me' } }],
});

async function payload(v: V1Volume, pod = mkPod()): Promise<Record<string, [string, string]>> {
  const p = await volumePayload(v, env(pod), objects);
  return Object.fromEntries([...p].map(([k, f]) => [k, [f.data.toString('utf8'), f.mode.toString(8)]]));
}

describe('memory-backed volume size (calculateEmptyDirMemorySize)', () => {
  it('is the pod memory limit, lowered by sizeLimit, capped by node memory', () => {
    const pod = mkPod();
    expect(podMemoryLimit(pod)).toBe(64 * MI);
    expect(memoryVolumeSize(pod, undefined, 4096 * MI)).toBe(64 * MI);
    expect(memoryVolumeSize(pod, { name: 'v', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } }, 4096 * MI)).toBe(16 * MI);
    // A sizeLimit above the pod limit does not raise it.
    expect(memoryVolumeSize(pod, { name: 'v', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }, 4096 * MI)).toBe(64 * MI);
    expect(memoryVolumeSize(pod, undefined, 32 * MI)).toBe(32 * MI);
  });

  it('has no pod limit when a container has none; init containers count by max, sidecars by sum', () => {
    expect(podMemoryLimit(mkPod({ containers: [{ name: 'a' }, { name: 'b', resources: { limits: { memory: '1Gi' } } }] }))).toBeUndefined();
    expect(memoryVolumeSize(mkPod({ containers: [{ name: 'a' }] }), undefined, 4096 * MI)).toBe(4096 * MI);
    const withInit = mkPod({
      initContainers: [
        { name: 'i', resources: { limits: { memory: '256Mi' } } },
        { name: 'side', restartPolicy: 'Always', resources: { limits: { memory: '16Mi' } } },
      ],
    });
    expect(podMemoryLimit(withInit)).toBe(256 * MI);
  });
});

describe('payloads', () => {
  it('configMap: every key with defaultMode (binaryData as bytes), or the items with their modes', async () => {
    expect(await payload({ name: 'v', configMap: { name: 'cm', defaultMode: 0o600 } })).toEqual({
      a: ['A', '600'],
      b: ['B', '600'],
      bin: ['\u0000\u0001\u0002', '600'],
    });
    expect(await payload({ name: 'v', configMap: { name: 'cm', items: [{ key: 'a', path: 'x/y', mode: 0o400 }, { key: 'b', path: 'b' }] } })).toEqual({
      'x/y': ['A', '400'],
      b: ['B', '644'],
    });
  });

  it('missing objects and keys: the kubelet messages; optional ones are skipped', async () => {
    await expect(payload({ name: 'v', configMap: { name: 'nope' } })).rejects.toThrow('configmap "nope" not found');
    await expect(payload({ name: 'v', secret: { secretName: 'nope' } })).rejects.toThrow('secret "nope" not found');
    await expect(payload({ name: 'v', configMap: { name: 'cm', items: [{ key: 'zz', path: 'z' }] } })).rejects.toThrow(
      'configmap references non-existent config key: zz',
    );
    await expect(payload({ name: 'v', secret: { secretName: 's', items: [{ key: 'zz', path: 'z' }] } })).rejects.toThrow('references non-existent secret key: zz');
    expect(await payload({ name: 'v', configMap: { name: 'nope', optional: true } })).toEqual({});
    expect(await payload({ name: 'v', configMap: { name: 'cm', optional: true, items: [{ key: 'zz', path: 'z' }] } })).toEqual({});
  });

  it('secret: data decoded from base64, stringData as text', async () => {
    expect(await payload({ name: 'v', secret: { secretName: 's' } })).toEqual({ token: ['t0k', '644'], user: ['me', '644'] });
  });

  it('downwardAPI: labels and annotations in the kubelet format, resource fields by divisor', async () => {
    expect(
      await payload({
        name: 'v',
        downwardAPI: {
          items: [
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
            { path: 'tier', fieldRef: { fieldPath: "metadata.labels['tier']" } },
            { path: 'mem', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' } },
            { path: 'cpu', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' }, mode: 0o400 },
          ],
        },
      }),
    ).toEqual({ labels: ['app="web"\ntier="front"', '644'], tier: ['front', '644'], mem: ['64', '644'], cpu: ['500', '400'] });
  });

  it('projected: configMap, secret and downwardAPI sources into one payload; serviceAccountToken needs a cluster', async () => {
    expect(
      await payload({
        name: 'v',
        projected: {
          defaultMode: 0o440,
          sources: [
            { configMap: { name: 'cm', items: [{ key: 'a', path: 'cfg/a' }] } },
            { secret: { name: 's', items: [{ key: 'token', path: 'token', mode: 0o400 }] } },
            { downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
          ],
        },
      }),
    ).toEqual({ 'cfg/a': ['A', '440'], token: ['t0k', '400'], name: ['web', '440'] });
    await expect(payload({ name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } })).rejects.toThrow('serviceAccountToken');
  });

  it('plugins: which volumes are memory-backed, read-only and updated in place', () => {
    expect(pluginOf({ name: 'v', secret: { secretName: 's' } })).toEqual({ kind: 'secret', memory: true, readOnly: true, updatable: true });
    expect(pluginOf({ name: 'v', projected: { sources: [] } })).toMatchObject({ memory: true, readOnly: true });
    expect(pluginOf({ name: 'v', configMap: { name: 'c' } })).toMatchObject({ memory: false, readOnly: true });
    expect(pluginOf({ name: 'v', emptyDir: { medium: 'Memory' } })).toMatchObject({ memory: true, readOnly: false, updatable: false });
    expect(pluginOf({ name: 'v', nfs: { server: 's', path: '/x' } })).toBeNull();
  });
});

describe('volumes klet cannot set up', () => {
  it('an image volume names what it needs: a runtime that mounts images, not a cluster or a storage driver', () => {
    expect(unsupportedVolumeMessage({ name: 'models', image: { reference: 'quay.io/x/models:1' } })).toBe(
      'volume "models": an image volume needs a container runtime that mounts images as volumes (containerd 2.1 or later), which klet does not support yet',
    );
    expect(unsupportedVolumeMessage({ name: 'data', persistentVolumeClaim: { claimName: 'c' } })).toBe(
      'volume "data": this volume type needs a cluster or a storage driver and is not supported by klet',
    );
  });
});
