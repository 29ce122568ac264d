import type { V1ConfigMap, V1Pod, V1Secret, V1TokenRequestSpec } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiObjectManager, type ObjectApi, type ObjectKind, podObjectRefs, requiresRefresh } from '../../src/lib/volume/api-objects.js';
import { volumePayload } from '../../src/lib/volume/plugins.js';
import { apiObjectReference } from '../../src/lib/pod/static-pod.js';

interface FakeWatch {
  kind: ObjectKind;
  namespace: string;
  name: string;
  signal: AbortSignal;
  on: { items(items: Array<V1ConfigMap | V1Secret>): void; error(message: string): void };
}

/** An ObjectApi whose watches the test drives by hand. */
class FakeApi implements ObjectApi {
  readonly watches: FakeWatch[] = [];
  readonly tokenRequests: Array<{ namespace: string; serviceAccount: string; spec: V1TokenRequestSpec }> = [];
  failTokens = false;
  constructor(private readonly now: () => number) {}
  watchObject(kind: ObjectKind, namespace: string, name: string, on: FakeWatch['on'], signal: AbortSignal): Promise<void> {
    this.watches.push({ kind, namespace, name, on, signal });
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }
  async createServiceAccountToken(namespace: string, serviceAccount: string, spec: V1TokenRequestSpec): Promise<{ token: string; expirationTimestamp: Date }> {
    if (this.failTokens) throw new Error('API server https://x: create token: connection refused');
    this.tokenRequests.push({ namespace, serviceAccount, spec });
    return { token: `token-${this.tokenRequests.length}`, expirationTimestamp: new Date(this.now() + (spec.expirationSeconds ?? 3600) * 1000) };
  }
  live(): string[] {
    return this.watches.filter((w) => !w.signal.aborted).map((w) => `${w.kind}/${w.namespace}/${w.name}`).sort();
  }
  find(kind: ObjectKind, name: string): FakeWatch {
    const w = this.watches.find((x) => x.kind === kind && x.name === name && !x.signal.aborted);
    if (!w) throw new Error(`no live watch of ${kind} ${name}`);
    return w;
  }
}

function pod(uid: string, spec: V1Pod['spec'], namespace = 'apps'): V1Pod {
  return { metadata: { name: `pod-${uid}`, namespace, uid }, spec };
}

const cm = (name: string, rv: string, data: Record<string, string>): V1ConfigMap => ({ metadata: { name, namespace: 'apps', resourceVersion: rv }, data });

const volumesPod = (uid: string) =>
  pod(uid, {
    containers: [
      {
        name: 'main',
        image: 'busybox',
        env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
        envFrom: [{ configMapRef: { name: 'env-cm' } }],
      },
    ],
    volumes: [
      { name: 'a', configMap: { name: 'settings' } },
      { name: 'b', projected: { sources: [{ configMap: { name: 'kube-root-ca.crt' } }, { secret: { name: 'tls' } }] } },
    ],
  });

describe('podObjectRefs', () => {
  it('finds the ConfigMaps and Secrets of volumes, projected sources, env and envFrom', () => {
    const refs = podObjectRefs(volumesPod('u1'));
    expect([...refs.configMaps].sort()).toEqual(['env-cm', 'kube-root-ca.crt', 'settings']);
    expect([...refs.secrets].sort()).toEqual(['db', 'tls']);
  });
});

describe('ApiObjectManager', () => {
  it('watches each referenced object once, by name in the pod\'s namespace, from the first pod that references it until the last goes', () => {
    const api = new FakeApi(Date.now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal });
    m.registerPod(volumesPod('u1'));
    expect(api.live()).toEqual([
      'configmaps/apps/env-cm',
      'configmaps/apps/kube-root-ca.crt',
      'configmaps/apps/settings',
      'secrets/apps/db',
      'secrets/apps/tls',
    ]);
    m.registerPod(pod('u2', { containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'a', configMap: { name: 'settings' } }] }));
    expect(api.watches).toHaveLength(5); // settings is shared
    m.registerPod(volumesPod('u1')); // again: nothing new
    expect(api.watches).toHaveLength(5);
    m.unregisterPod('u1');
    expect(api.live()).toEqual(['configmaps/apps/settings']);
    m.unregisterPod('u2');
    expect(api.live()).toEqual([]);
  });

  it('an edited pod that drops a reference drops its watch', () => {
    const api = new FakeApi(Date.now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal });
    m.registerPod(pod('u1', { containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'a', configMap: { name: 'one' } }] }));
    m.registerPod(pod('u1', { containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'a', configMap: { name: 'two' } }] }));
    expect(api.live()).toEqual(['configmaps/apps/two']);
  });

  it('a read waits for the first list; a missing object is undefined (the plugin\'s "configmap not found"); changes are announced', async () => {
    const api = new FakeApi(Date.now);
    let changes = 0;
    const m = new ApiObjectManager({ api, signal: new AbortController().signal, onChange: () => changes++ });
    const p = pod('u1', { containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'a', configMap: { name: 'settings' } }] });
    m.registerPod(p);
    const src = m.source(p);
    const read = src.configMap('apps', 'settings');
    api.find('configmaps', 'settings').on.items([]);
    expect(await read).toBeUndefined();
    expect(changes).toBe(0);
    await expect(volumePayload(p.spec!.volumes![0]!, { pod: p, podIPs: [], hostIPs: [], nodeName: 'n', objects: { configMaps: [], secrets: [] }, nodeAllocatable: { cpuMillis: 1000, memoryBytes: 1, ephemeralStorageBytes: 0 } }, src)).rejects.toThrow(
      'configmap "settings" not found',
    );
    api.find('configmaps', 'settings').on.items([cm('settings', '5', { k: 'v1' })]);
    expect(changes).toBe(1);
    expect((await src.configMap('apps', 'settings'))?.data).toEqual({ k: 'v1' });
    expect(m.objects(p).configMaps.map((c) => c.data)).toEqual([{ k: 'v1' }]);
    // The same resourceVersion again (a relist): no change.
    api.find('configmaps', 'settings').on.items([cm('settings', '5', { k: 'v1' })]);
    expect(changes).toBe(1);
    // The watch fails later: the last known object is kept.
    api.find('configmaps', 'settings').on.error('API server https://x: watch configmap apps/settings: connection refused');
    expect((await src.configMap('apps', 'settings'))?.data).toEqual({ k: 'v1' });
  });

  it('a watch that cannot list fails the read with the server\'s message; one that never answers times out', async () => {
    const api = new FakeApi(Date.now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal, syncTimeoutMs: 50 });
    const p = pod('u1', { containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'a', configMap: { name: 'x' } }, { name: 'b', secret: { secretName: 'y' } }] });
    m.registerPod(p);
    const read = m.source(p).configMap('apps', 'x');
    api.find('configmaps', 'x').on.error('API server https://x: list configmap apps/x: 403 Forbidden: configmaps "x" is forbidden');
    await expect(read).rejects.toThrow('failed to sync configmap cache: API server https://x: list configmap apps/x: 403 Forbidden');
    await expect(m.source(p).secret('apps', 'y')).rejects.toThrow('failed to sync secret cache: timed out waiting for the condition');
    await expect(m.source(p).secret('apps', 'other')).rejects.toThrow('object "apps"/"other" not registered');
  });

  it('ready() waits for every watch of the pod', async () => {
    const api = new FakeApi(Date.now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal });
    const p = volumesPod('u1');
    m.registerPod(p);
    let done = false;
    const r = m.ready(p).then(() => (done = true));
    for (const w of api.watches.slice(0, 4)) w.on.items([]);
    await new Promise((res) => setTimeout(res, 10));
    expect(done).toBe(false);
    api.watches[4]!.on.items([]);
    await r;
    expect(done).toBe(true);
  });

  it('a watch not read for 5 minutes is stopped at the next check; ready() is not a read; a read restarts it and waits for its new list', async () => {
    let now = 1_000_000;
    const api = new FakeApi(() => now);
    let changes = 0;
    const m = new ApiObjectManager({ api, signal: new AbortController().signal, onChange: () => changes++, now: () => now, idleCheckMs: 3_600_000 });
    const p = pod('u1', {
      containers: [{ name: 'c', image: 'i', env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }] }],
      volumes: [{ name: 'a', configMap: { name: 'settings' } }],
    });
    m.registerPod(p);
    // Not stopped before its first list, however long that takes.
    now += 10 * 60_000;
    m.stopIdleWatches();
    expect(m.watching()).toEqual(['configmaps/apps/settings', 'secrets/apps/db']);
    api.find('configmaps', 'settings').on.items([cm('settings', '5', { k: 'v1' })]);
    api.find('secrets', 'db').on.items([{ metadata: { name: 'db', namespace: 'apps', resourceVersion: '7' }, data: { password: 'c2VjcmV0' } }]);
    expect(changes).toBe(2);
    const readAt = now;
    await m.readForContainer(p, p.spec!.containers[0]!, undefined, (msg) => new Error(msg));
    // The volume's object is read at every resync (each minute); the env-only Secret is not.
    for (let minute = 1; minute <= 6; minute++) {
      now = readAt + minute * 60_000;
      await m.source(p).configMap('apps', 'settings');
      await m.ready(p);
      m.stopIdleWatches();
    }
    expect(m.watching()).toEqual(['configmaps/apps/settings']);
    expect(api.live()).toEqual(['configmaps/apps/settings']);
    // ready() neither waits for nor restarts the stopped watch, and objects() still has the Secret.
    await m.ready(p);
    expect(api.live()).toEqual(['configmaps/apps/settings']);
    expect(m.objects(p).secrets.map((x) => x.metadata?.resourceVersion)).toEqual(['7']);
    // A container start reads it: the watch starts again and the read waits for its list.
    let read = false;
    const r = m.readForContainer(p, p.spec!.containers[0]!, undefined, (msg) => new Error(msg)).then((o) => {
      read = true;
      return o;
    });
    await new Promise((res) => setTimeout(res, 10));
    expect(read).toBe(false);
    expect(api.live()).toEqual(['configmaps/apps/settings', 'secrets/apps/db']);
    // Unchanged meanwhile: its list announces nothing.
    api.find('secrets', 'db').on.items([{ metadata: { name: 'db', namespace: 'apps', resourceVersion: '7' }, data: { password: 'c2VjcmV0' } }]);
    expect((await r).secrets.map((x) => x.metadata?.resourceVersion)).toEqual(['7']);
    expect(changes).toBe(2);
    // Stopped again, then changed while nobody watched: the restarted list announces it and the read has the new object.
    now += 6 * 60_000;
    await m.source(p).configMap('apps', 'settings');
    m.stopIdleWatches();
    expect(m.watching()).toEqual(['configmaps/apps/settings']);
    const r2 = m.readForContainer(p, p.spec!.containers[0]!, undefined, (msg) => new Error(msg));
    await new Promise((res) => setTimeout(res, 0));
    api.find('secrets', 'db').on.items([{ metadata: { name: 'db', namespace: 'apps', resourceVersion: '9' }, data: { password: 'bmV3' } }]);
    expect((await r2).secrets.map((x) => x.data)).toEqual([{ password: 'bmV3' }]);
    expect(changes).toBe(3);
  });

  it('a restarted watch that cannot list fails the container\'s read with the kubelet\'s message', async () => {
    let now = 0;
    const api = new FakeApi(() => now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal, now: () => now, idleCheckMs: 3_600_000, syncTimeoutMs: 50 });
    const c = { name: 'c', image: 'i', envFrom: [{ configMapRef: { name: 'env-cm' } }] };
    const p = pod('u1', { containers: [c] });
    m.registerPod(p);
    api.find('configmaps', 'env-cm').on.items([cm('env-cm', '1', { A: 'a' })]);
    now += 6 * 60_000;
    m.stopIdleWatches();
    expect(m.watching()).toEqual([]);
    const r = m.readForContainer(p, c, undefined, (msg) => new Error(msg));
    await new Promise((res) => setTimeout(res, 0));
    api.find('configmaps', 'env-cm').on.error('API server https://x: list configmap apps/env-cm: 403 Forbidden');
    await expect(r).rejects.toThrow('failed to sync configmap cache: API server https://x: list configmap apps/env-cm: 403 Forbidden');
  });

  it('an immutable object\'s watch stops after its first read and never starts again', async () => {
    const now = 0;
    const api = new FakeApi(() => now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal, now: () => now, idleCheckMs: 3_600_000 });
    const p = pod('u1', { containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'a', configMap: { name: 'frozen' } }] });
    m.registerPod(p);
    const first = m.source(p).configMap('apps', 'frozen');
    api.find('configmaps', 'frozen').on.items([{ ...cm('frozen', '3', { k: 'v' }), immutable: true }]);
    expect((await first)?.data).toEqual({ k: 'v' });
    expect(m.watching()).toEqual([]);
    expect((await m.source(p).configMap('apps', 'frozen'))?.data).toEqual({ k: 'v' });
    expect(api.live()).toEqual([]);
    expect(api.watches).toHaveLength(1);
  });

  it('aborting the signal stops every watch', () => {
    const api = new FakeApi(Date.now);
    const ctrl = new AbortController();
    const m = new ApiObjectManager({ api, signal: ctrl.signal });
    m.registerPod(volumesPod('u1'));
    ctrl.abort();
    expect(api.live()).toEqual([]);
  });
});

describe('ApiObjectManager: service account tokens', () => {
  const tokenPod = pod('u1', { serviceAccountName: 'builder', containers: [{ name: 'c', image: 'i' }] });

  it('asks for a token bound to the pod, with the audience and lifetime asked for, and caches it until 80% of its TTL', async () => {
    let now = 1_000_000;
    const api = new FakeApi(() => now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal, now: () => now });
    expect(await m.token(tokenPod, { path: 'token', audience: 'vault', expirationSeconds: 3600 })).toBe('token-1');
    expect(api.tokenRequests).toEqual([
      {
        namespace: 'apps',
        serviceAccount: 'builder',
        spec: { audiences: ['vault'], expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'pod-u1', uid: 'u1' } },
      },
    ]);
    now += 2879_000; // just under 80% of 3600 s
    expect(await m.token(tokenPod, { path: 'token', audience: 'vault', expirationSeconds: 3600 })).toBe('token-1');
    now += 2_000;
    expect(await m.token(tokenPod, { path: 'token', audience: 'vault', expirationSeconds: 3600 })).toBe('token-2');
    // No audience: the server's own (none sent); another key, another token.
    expect(await m.token(tokenPod, { path: 'token', expirationSeconds: 3607 })).toBe('token-3');
    expect(api.tokenRequests[2]?.spec.audiences).toBeUndefined();
  });

  it('a failed refresh keeps the cached token while it is valid, then fails with the cause', async () => {
    let now = 0;
    const api = new FakeApi(() => now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal, now: () => now, onWarning: () => {} });
    const src = { path: 'token', expirationSeconds: 600 };
    expect(await m.token(tokenPod, src)).toBe('token-1');
    api.failTokens = true;
    now = 500_000; // past 80%, before expiry
    expect(await m.token(tokenPod, src)).toBe('token-1');
    now = 601_000;
    await expect(m.token(tokenPod, src)).rejects.toThrow('failed to fetch token: API server https://x: create token: connection refused');
  });

  it('the pod\'s tokens go with the pod', async () => {
    const api = new FakeApi(Date.now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal });
    await m.token(tokenPod, { path: 'token', expirationSeconds: 3600 });
    m.unregisterPod('u1');
    await m.token(tokenPod, { path: 'token', expirationSeconds: 3600 });
    expect(api.tokenRequests).toHaveLength(2);
  });

  it('requiresRefresh: at 80% of the TTL, or after 24 h however long the token lives', () => {
    const h = 3600_000;
    expect(requiresRefresh({ issuedAt: 0, expiresAt: h }, 0.79 * h)).toBe(false);
    expect(requiresRefresh({ issuedAt: 0, expiresAt: h }, 0.8 * h)).toBe(true);
    expect(requiresRefresh({ issuedAt: 0, expiresAt: 48 * h }, 23.9 * h)).toBe(false);
    expect(requiresRefresh({ issuedAt: 0, expiresAt: 48 * h }, 24 * h)).toBe(true);
  });

  it('a projected serviceAccountToken source is written with the volume\'s mode, 0600 with an fsGroup', async () => {
    const api = new FakeApi(Date.now);
    const m = new ApiObjectManager({ api, signal: new AbortController().signal });
    const env = (p: V1Pod) => ({ pod: p, podIPs: [], hostIPs: [], nodeName: 'n', objects: { configMaps: [], secrets: [] }, nodeAllocatable: { cpuMillis: 1000, memoryBytes: 1, ephemeralStorageBytes: 0 } });
    const vol = { name: 'kube-api-access-x', projected: { defaultMode: 0o644, sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3607 } }] } };
    const plain = await volumePayload(vol, env(tokenPod), m.source(tokenPod));
    expect(plain.get('token')).toEqual({ data: Buffer.from('token-1'), mode: 0o644 });
    const grouped = { ...tokenPod, spec: { ...tokenPod.spec!, securityContext: { fsGroup: 2000 } } };
    expect((await volumePayload(vol, env(grouped), m.source(grouped))).get('token')?.mode).toBe(0o600);
  });
});

describe('apiObjectReference (static pods in cluster mode)', () => {
  const c = [{ name: 'c', image: 'i' }];
  it('names the first kind of API object a pod references, in the kubelet\'s order', () => {
    expect(apiObjectReference({ spec: { containers: c } })).toBeUndefined();
    expect(apiObjectReference({ spec: { containers: c, volumes: [{ name: 'h', hostPath: { path: '/etc' } }, { name: 'e', emptyDir: {} }] } })).toBeUndefined();
    expect(apiObjectReference({ spec: { containers: c, serviceAccountName: 'x', volumes: [{ name: 's', secret: { secretName: 's' } }] } })).toBe('serviceaccounts');
    expect(apiObjectReference({ spec: { containers: [{ name: 'c', image: 'i', env: [{ name: 'E', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }] } })).toBe('secrets');
    expect(apiObjectReference({ spec: { containers: c, imagePullSecrets: [{ name: 'reg' }] } })).toBe('secrets');
    expect(apiObjectReference({ spec: { containers: [{ name: 'c', image: 'i', envFrom: [{ configMapRef: { name: 'm' } }] }] } })).toBe('configmaps');
    expect(apiObjectReference({ spec: { containers: c, volumes: [{ name: 'p', projected: { sources: [{ configMap: { name: 'm' } }] } }] } })).toBe('configmaps');
    expect(apiObjectReference({ spec: { containers: c, volumes: [{ name: 'p', persistentVolumeClaim: { claimName: 'data' } }] } })).toBe('persistentvolumeclaims');
    expect(apiObjectReference({ spec: { containers: c, volumes: [{ name: 'p', projected: { sources: [{ serviceAccountToken: { path: 't' } }] } }] } })).toBe('serviceaccounts');
  });
});
