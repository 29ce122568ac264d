import type { V1Pod } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { PodConfig, identityKey, type PodUpdate } from '../../src/lib/config/config.js';
import { keepLastGood, mergeUnits, type SourceSnapshot } from '../../src/lib/config/source.js';
import { setLogSink } from '../../src/lib/log.js';
import { type LoadedPod, ManifestError, parseManifestText, prepareManifests } from '../../src/lib/pod/manifest.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION } from '../../src/lib/pod/static-pod.js';

const NODE = 'node1';

// Keep conflict warnings out of the test output.
beforeAll(() => setLogSink(() => {}));

function podYaml(name: string, image = 'busybox:1.36', extra = ''): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n${extra}spec:\n  containers:\n  - name: main\n    image: ${image}\n`;
}

/** Static pods as a source would load them from `file`. */
function load(text: string, file = '/etc/kubernetes/manifests/pods.yaml', now = new Date('2024-05-01T12:00:00Z')): LoadedPod[] {
  const set = prepareManifests(parseManifestText(text, file, 'file'), { nodeName: NODE, now });
  expect(set.errors.map(String)).toEqual([]);
  return set.pods;
}

function snap(pods: LoadedPod[]): SourceSnapshot {
  return { pods, objects: { configMaps: [], secrets: [] }, errors: [] };
}

function drain(config: PodConfig): PodUpdate[] {
  const out: PodUpdate[] = [];
  for (let u = config.updates.tryTake(); u !== undefined; u = config.updates.tryTake()) out.push(u);
  return out;
}

/** `OP source name@uid,...` per update, for compact assertions. */
function summary(updates: PodUpdate[]): string[] {
  return updates.map((u) => `${u.op} ${u.source} ${u.pods.map((p) => `${p.metadata?.name}@${p.metadata?.uid?.slice(0, 8)}`).join(',')}`.trim());
}

const uid = (p: V1Pod | LoadedPod): string => ('pod' in p ? p.pod : p).metadata?.uid ?? '';

describe('PodConfig: SET semantics', () => {
  it('turns snapshots into ADD, UPDATE and REMOVE, and is quiet when nothing changed', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const [a, b] = [load(podYaml('a'))[0]!, load(podYaml('b'))[0]!];
    file.snapshot(snap([a, b]));
    expect(summary(drain(config))).toEqual([`ADD file a-node1@${uid(a).slice(0, 8)},b-node1@${uid(b).slice(0, 8)}`]);

    // Same manifests read again later: only config.seen differs.
    file.snapshot(snap(load(podYaml('a') + '---\n' + podYaml('b'), undefined, new Date('2025-01-01T00:00:00Z'))));
    expect(drain(config)).toEqual([]);

    file.snapshot(snap([a]));
    const removed = drain(config);
    expect(summary(removed)).toEqual([`REMOVE file b-node1@${uid(b).slice(0, 8)}`]);
    expect(config.pods().map((p) => p.metadata?.name)).toEqual(['a-node1']);
  });

  it('pod(namespace, name): a copy of that one current pod, as pods() would find it', () => {
    const config = new PodConfig();
    const file = config.register('file');
    file.snapshot(snap(load(podYaml('a') + '---\n' + podYaml('b', 'busybox:1.36', '  namespace: other\n'))));
    expect(config.pod('default', 'a-node1')?.metadata?.name).toBe('a-node1');
    expect(config.pod('other', 'b-node1')?.metadata?.uid).toBe(config.pods().find((p) => p.metadata?.name === 'b-node1')?.metadata?.uid);
    expect(config.pod('default', 'b-node1')).toBeUndefined();
    expect(config.pod('default', 'nosuch')).toBeUndefined();
    // A copy: changing it changes nothing in the config.
    config.pod('default', 'a-node1')!.spec!.containers[0]!.image = 'changed';
    expect(config.pod('default', 'a-node1')?.spec?.containers[0]?.image).toBe('busybox:1.36');
  });

  it('sends an empty ADD for a first snapshot without pods, and is ready only when every source has delivered', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const http = config.register('http');
    expect(config.sourcesReady()).toBe(false);
    file.snapshot(snap([]));
    expect(drain(config)).toEqual([{ op: 'ADD', source: 'file', pods: [] }]);
    expect(config.sourcesReady()).toBe(false);
    // A failed read is not a snapshot: the source is still unknown.
    http.failed([]);
    expect(config.sourcesReady()).toBe(false);
    http.snapshot(snap(load(podYaml('web'))));
    expect(config.sourcesReady()).toBe(true);
    expect(summary(drain(config))).toEqual([expect.stringMatching(/^ADD http web-node1@/)]);
    // A second empty snapshot of an empty source says nothing.
    file.snapshot(snap([]));
    expect(drain(config)).toEqual([]);
  });

  it('reconciles a status-only change and orders REMOVE, ADD, UPDATE, RECONCILE', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const [a, b, c] = ['a', 'b', 'c'].map((n) => load(podYaml(n))[0]!);
    file.snapshot(snap([a!, b!, c!]));
    drain(config);
    const a2 = load(podYaml('a', 'busybox:1.37'))[0]!;
    const b2 = load(podYaml('b', 'busybox:1.36', ''))[0]!;
    b2.pod.status = { phase: 'Pending', message: 'from the manifest' };
    const d = load(podYaml('d'))[0]!;
    file.snapshot(snap([a2, b2, d]));
    expect(drain(config).map((u) => `${u.op} ${u.pods.map((p) => p.metadata?.name).join(',')}`)).toEqual([
      'REMOVE c-node1',
      'ADD d-node1',
      'UPDATE a-node1',
      'RECONCILE b-node1',
    ]);
  });

  it('hands out copies: mutating an update does not change its state', () => {
    const config = new PodConfig();
    const file = config.register('file');
    file.snapshot(snap(load(podYaml('a'))));
    const [add] = drain(config);
    add!.pods[0]!.spec!.containers[0]!.image = 'mutated';
    expect(config.pods()[0]!.spec?.containers[0]?.image).toBe('busybox:1.36');
  });
});

describe('PodConfig: identity across edits', () => {
  it('keeps the UID (and config.hash, config.seen) of an edited pod and sends an UPDATE', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const v1 = load(podYaml('etcd'))[0]!;
    file.snapshot(snap([v1]));
    drain(config);

    const v2 = load(podYaml('etcd', 'busybox:1.37'), undefined, new Date('2025-01-01T00:00:00Z'))[0]!;
    expect(uid(v2)).not.toBe(uid(v1)); // the content hash changed
    file.snapshot(snap([v2]));
    const updates = drain(config);
    expect(updates.map((u) => u.op)).toEqual(['UPDATE']);
    const pod = updates[0]!.pods[0]!;
    expect(pod.metadata?.uid).toBe(uid(v1));
    expect(pod.metadata?.annotations?.[CONFIG_HASH_ANNOTATION]).toBe(uid(v1));
    expect(pod.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION]).toBe('2024-05-01T12:00:00.000Z');
    expect(pod.spec?.containers[0]?.image).toBe('busybox:1.37');
    expect(config.origin(uid(v1))).toEqual({ source: 'file', manifest: v2.source });

    // The same edit delivered again is not another update.
    file.snapshot(snap([load(podYaml('etcd', 'busybox:1.37'))[0]!]));
    expect(drain(config)).toEqual([]);
  });

  it('keeps the identity when a manifest moves to another file (new UID, same pod): no update at all', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const v1 = load(podYaml('etcd'), '/m/etcd.yaml')[0]!;
    file.snapshot(snap([v1]));
    drain(config);
    const moved = load(podYaml('etcd'), '/m/etcd-main.yaml')[0]!;
    expect(uid(moved)).not.toBe(uid(v1));
    file.snapshot(snap([moved]));
    expect(drain(config)).toEqual([]);
    expect(config.pods().map((p) => p.metadata?.uid)).toEqual([uid(v1)]);
  });

  it('forgets the identity of a removed pod', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const v1 = load(podYaml('etcd'))[0]!;
    file.snapshot(snap([v1]));
    file.snapshot(snap([]));
    const v2 = load(podYaml('etcd', 'busybox:1.37'))[0]!;
    file.snapshot(snap([v2]));
    expect(summary(drain(config))).toEqual([
      `ADD file etcd-node1@${uid(v1).slice(0, 8)}`,
      `REMOVE file etcd-node1@${uid(v1).slice(0, 8)}`,
      `ADD file etcd-node1@${uid(v2).slice(0, 8)}`,
    ]);
  });

  it('lets keepIdentity turn an edit into REMOVE + ADD', () => {
    const config = new PodConfig({ keepIdentity: (cur, next) => cur.spec?.hostNetwork === next.spec?.hostNetwork });
    const file = config.register('file');
    const v1 = load(podYaml('etcd'))[0]!;
    file.snapshot(snap([v1]));
    drain(config);
    const v2 = load(podYaml('etcd').replace('spec:\n', 'spec:\n  hostNetwork: true\n'))[0]!;
    file.snapshot(snap([v2]));
    expect(summary(drain(config))).toEqual([`REMOVE file etcd-node1@${uid(v1).slice(0, 8)}`, `ADD file etcd-node1@${uid(v2).slice(0, 8)}`]);
  });

  it('adopts seeded UIDs in the first snapshot only', () => {
    const config = new PodConfig();
    config.seedIdentities(
      new Map([
        [identityKey('file', 'default', 'etcd-node1'), 'running-etcd-uid'],
        [identityKey('file', 'default', 'gone-node1'), 'running-gone-uid'],
        [identityKey('http', 'default', 'etcd-node1'), 'other-source-uid'],
      ]),
    );
    const file = config.register('file');
    const etcd = load(podYaml('etcd', 'busybox:1.37'))[0]!;
    file.snapshot(snap([etcd]));
    const [add] = drain(config);
    expect(add?.pods[0]?.metadata?.uid).toBe('running-etcd-uid');
    expect(add?.pods[0]?.metadata?.annotations?.[CONFIG_HASH_ANNOTATION]).toBe('running-etcd-uid');

    // A seed the first snapshot did not use is gone: a pod that comes later is new.
    file.snapshot(snap([etcd, load(podYaml('gone'))[0]!]));
    const [later] = drain(config);
    expect(later?.op).toBe('ADD');
    expect(later?.pods[0]?.metadata?.uid).not.toBe('running-gone-uid');
  });

  it('reports a UID two pods would share and keeps the first', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const a = load(podYaml('a', 'busybox:1.36', '  uid: fixed\n'))[0]!;
    const b = load(podYaml('b', 'busybox:1.36', '  uid: fixed\n'), '/m/b.yaml')[0]!;
    file.snapshot(snap([a, b]));
    expect(summary(drain(config))).toEqual(['ADD file a-node1@fixed']);
    expect(config.errors().get('file')?.map(String)).toEqual([
      '/m/b.yaml:1: metadata.uid: Duplicate value: "fixed": already the UID of pod default/a-node1',
    ]);
  });
});

describe('PodConfig: several sources', () => {
  it('gives a name to the source that runs it, reports the duplicate, and hands it over when freed', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const http = config.register('http');
    const fromHttp = load(podYaml('web', 'nginx:1'), 'https://config.example/pods.yaml')[0]!;
    const fromFile = load(podYaml('web', 'nginx:2'), '/m/web.yaml')[0]!;

    http.snapshot(snap([fromHttp]));
    file.snapshot(snap([fromFile]));
    // file is registered first, but http already runs web: it keeps it.
    expect(summary(drain(config))).toEqual([`ADD http web-node1@${uid(fromHttp).slice(0, 8)}`, 'ADD file']);
    expect(config.errors().get('file')?.map(String)).toEqual([
      '/m/web.yaml:1: metadata.name: Duplicate value: "web-node1": pod default/web-node1 is already defined by the http source',
    ]);
    expect(config.errors().get('http')).toEqual([]);

    // http gives web up: it is removed there, then the file's web is added
    // without the file source having to send anything.
    http.snapshot(snap([]));
    expect(summary(drain(config))).toEqual([
      `REMOVE http web-node1@${uid(fromHttp).slice(0, 8)}`,
      `ADD file web-node1@${uid(fromFile).slice(0, 8)}`,
    ]);
    expect(config.errors().get('file')).toEqual([]);
    expect(config.origin(uid(fromFile))?.source).toBe('file');
  });

  it('gives a freed name to the first registered source that wants it', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const http = config.register('http');
    const api = config.register('api');
    const web = (image: string, where: string) => load(podYaml('web', image), where)[0]!;
    api.snapshot(snap([web('nginx:0', 'api://web')]));
    http.snapshot(snap([web('nginx:1', 'https://config.example/pods.yaml')]));
    file.snapshot(snap([web('nginx:2', '/m/web.yaml')]));
    drain(config);
    expect(config.errors().get('file')?.[0]?.message).toMatch(/already defined by the api source/);
    expect(config.errors().get('http')?.[0]?.message).toMatch(/already defined by the api source/);
    // http asked first, but file is registered first.
    api.snapshot(snap([]));
    expect(drain(config).map((u) => `${u.op} ${u.source} ${u.pods[0]?.spec?.containers[0]?.image}`)).toEqual([
      'REMOVE api nginx:0',
      'ADD file nginx:2',
    ]);
    expect(config.errors().get('http')?.[0]?.message).toMatch(/already defined by the file source/);
  });

  it('logs a problem once, and when it is gone', () => {
    const lines: string[] = [];
    setLogSink((line) => lines.push(line));
    try {
      const config = new PodConfig();
      const http = config.register('http');
      const down = new ManifestError({ file: 'https://config.example/pods.yaml', message: 'HTTP 503 Service Unavailable' });
      http.failed([down]);
      http.failed([down]);
      http.failed([down]);
      http.snapshot(snap([]));
      expect(lines).toEqual([
        'warning: pod source http: https://config.example/pods.yaml: HTTP 503 Service Unavailable',
        'pod source http: all manifests read cleanly again',
      ]);
    } finally {
      setLogSink(() => {});
    }
  });

  it('keeps pods and records errors on a failed read, and clears them on the next snapshot', () => {
    const config = new PodConfig();
    const http = config.register('http');
    http.snapshot(snap(load(podYaml('web'))));
    drain(config);
    http.failed([new ManifestError({ file: 'https://config.example/pods.yaml', message: 'HTTP 500 Internal Server Error' })]);
    expect(drain(config)).toEqual([]);
    expect(config.pods()).toHaveLength(1);
    expect(config.errors().get('http')?.map(String)).toEqual(['https://config.example/pods.yaml: HTTP 500 Internal Server Error']);
    http.snapshot(snap(load(podYaml('web'))));
    expect(config.errors().get('http')).toEqual([]);
  });

  it('does not merge again a snapshot it merged last (the file source hands the same read back when nothing changed)', () => {
    const config = new PodConfig();
    const file = config.register('file');
    let reads = 0;
    const counted = (lp: LoadedPod): LoadedPod => ({
      ...lp,
      pod: new Proxy(lp.pod, {
        get(target, key, receiver) {
          reads++;
          return Reflect.get(target, key, receiver);
        },
      }),
    });
    const read = snap(load(podYaml('a') + '---\n' + podYaml('b')).map(counted));
    file.snapshot(read);
    expect(summary(drain(config))).toEqual([expect.stringMatching(/^ADD file a-node1@.*,b-node1@/)]);
    const before = config.sourceStatus()[0]!.lastReadAt!;
    reads = 0;
    file.snapshot(read);
    expect(reads).toBe(0);
    expect(drain(config)).toEqual([]);
    expect(config.sourceStatus()[0]!.lastReadAt).toBeGreaterThanOrEqual(before);
    // A failure in between: the same snapshot is merged again, and clears the error.
    file.failed([new ManifestError({ file: '/etc/kubernetes/manifests', message: 'permission denied' })]);
    expect(config.errors().get('file')).toHaveLength(1);
    file.snapshot(read);
    expect(config.errors().get('file')).toEqual([]);
    expect(drain(config)).toEqual([]);
    expect(config.pods().map((p) => p.metadata?.name)).toEqual(['a-node1', 'b-node1']);
  });

  it('neither copies nor compares a pod the source hands again as the same object (the API source: one object per watched version)', () => {
    const config = new PodConfig();
    const api = config.register('api');
    const reads = new Map<string, number>();
    const counted = (lp: LoadedPod): LoadedPod => ({
      ...lp,
      pod: new Proxy(lp.pod, {
        get(target, key, receiver) {
          // Its spec is read to copy or compare it (its name and UID are read to place it, which is cheap).
          const name = target.metadata?.name ?? '';
          if (key === 'spec') reads.set(name, (reads.get(name) ?? 0) + 1);
          return Reflect.get(target, key, receiver);
        },
      }),
    });
    const [a, b] = load(podYaml('a') + '---\n' + podYaml('b')).map(counted);
    api.snapshot(snap([a!, b!]));
    expect(summary(drain(config))).toEqual([expect.stringMatching(/^ADD api a-node1@.*,b-node1@/)]);
    // b's status changed (a new object from the watch); a is the same object as before.
    const b2 = counted(load(podYaml('b'))[0]!);
    b2.pod.status = { phase: 'Running' };
    reads.clear();
    api.snapshot(snap([a!, b2]));
    expect(drain(config).map((u) => `${u.op} ${u.pods.map((p) => p.metadata?.name).join(',')}`)).toEqual(['RECONCILE b-node1']);
    expect(reads.get('a-node1') ?? 0).toBe(0);
    expect(reads.get('b-node1')).toBeGreaterThan(0);
    // What the config keeps is its own: changing the source's object afterwards changes nothing.
    b2.pod.status.phase = 'Failed';
    b2.pod.spec!.containers[0]!.image = 'changed';
    expect(config.pods().find((p) => p.metadata?.name === 'b-node1')?.status?.phase).toBe('Running');
    expect(config.pods().find((p) => p.metadata?.name === 'b-node1')?.spec?.containers[0]?.image).toBe('busybox:1.36');
    b2.pod.status.phase = 'Running';
    b2.pod.spec!.containers[0]!.image = 'busybox:1.36';
    // The same object again after a change was merged: still nothing to do, and b2 is not read again.
    reads.clear();
    api.snapshot(snap([a!, b2]));
    expect(drain(config)).toEqual([]);
    expect([...reads.values()].reduce((x, y) => x + y, 0)).toBe(0);
    expect(config.pods().find((p) => p.metadata?.name === 'b-node1')?.status?.phase).toBe('Running');
  });

  it('serves each source its own objects', () => {
    const config = new PodConfig();
    const file = config.register('file');
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n';
    const set = prepareManifests(parseManifestText(text, '/m/cfg.yaml', 'file'), { nodeName: NODE });
    file.snapshot({ pods: [], objects: { configMaps: set.configMaps, secrets: [] }, errors: [] });
    expect(config.objects('file').configMaps.map((c) => c.metadata?.name)).toEqual(['cfg']);
    expect(config.objects('http')).toEqual({ configMaps: [], secrets: [] });
  });

  it('refuses duplicate source names and sources added after start', async () => {
    const config = new PodConfig();
    config.register('file');
    expect(() => config.register('file')).toThrow(/already registered/);
    config.start();
    expect(() => config.addSource({ name: 'late', run: async () => {} })).toThrow(/before start/);
    await config.stop();
  });
});

describe('keepLastGood and mergeUnits', () => {
  it('keeps what a broken unit lost, and takes the fresh version of what it still has', () => {
    const last = keepLastGood('/m/a.yaml', prepareManifests(parseManifestText(podYaml('a') + '---\n' + podYaml('b'), '/m/a.yaml', 'file'), { nodeName: NODE }), undefined);
    const broken = prepareManifests(parseManifestText(podYaml('a', 'busybox:1.37') + '---\nkind: Pod\n', '/m/a.yaml', 'file'), { nodeName: NODE });
    expect(broken.errors.length).toBeGreaterThan(0);
    const kept = keepLastGood('/m/a.yaml', broken, last);
    expect(kept.pods.map((p) => `${p.pod.metadata?.name} ${p.pod.spec?.containers[0]?.image}`)).toEqual(['a-node1 busybox:1.37', 'b-node1 busybox:1.36']);
  });

  it('reports a pod defined by two units on the later one', () => {
    const unit = (file: string) =>
      keepLastGood(file, prepareManifests(parseManifestText(podYaml('etcd'), file, 'file'), { nodeName: NODE }), undefined);
    const merged = mergeUnits([unit('/m/etcd.yaml'), unit('/m/etcd.yaml.bak')]);
    expect(merged.pods.map((p) => p.source.path)).toEqual(['/m/etcd.yaml']);
    expect(merged.errors.map(String)).toEqual([
      '/m/etcd.yaml.bak:1: metadata.name: Duplicate value: "etcd-node1": Pod default/etcd-node1 is already defined at /m/etcd.yaml:1',
    ]);
  });
});

describe('PodConfig: static pods in cluster mode', () => {
  const withConfigMap = podYaml('cm') + '  volumes:\n  - name: v\n    configMap:\n      name: settings\n';
  const withServiceAccount = podYaml('sa') + '  serviceAccountName: builder\n';

  it('refuses a static pod that references API objects with the kubelet\'s message, and runs the others', () => {
    const config = new PodConfig({ rejectStaticApiReferences: true });
    const file = config.register('file');
    const plain = load(podYaml('plain'), '/m/plain.yaml')[0]!;
    file.snapshot(snap([plain, load(withConfigMap, '/m/cm.yaml')[0]!, load(withServiceAccount, '/m/sa.yaml')[0]!]));
    expect(summary(drain(config))).toEqual([`ADD file plain-node1@${uid(plain).slice(0, 8)}`]);
    expect(config.errors().get('file')?.map(String)).toEqual([
      '/m/cm.yaml:1: static pods may not reference configmaps',
      '/m/sa.yaml:1: static pods may not reference serviceaccounts',
    ]);
  });

  it('lets the API source\'s pods reference anything, and static pods too in standalone mode', () => {
    const cluster = new PodConfig({ rejectStaticApiReferences: true });
    const api = cluster.register('api');
    const apiPod = load(withConfigMap, 'https://apiserver/api/v1/namespaces/default/pods/cm')[0]!;
    api.snapshot(snap([apiPod]));
    expect(summary(drain(cluster))).toEqual([`ADD api cm-node1@${uid(apiPod).slice(0, 8)}`]);
    expect(cluster.errors().get('api')).toEqual([]);

    const standalone = new PodConfig();
    const file = standalone.register('file');
    const staticPod = load(withConfigMap, '/m/cm.yaml')[0]!;
    file.snapshot(snap([staticPod]));
    expect(summary(drain(standalone))).toEqual([`ADD file cm-node1@${uid(staticPod).slice(0, 8)}`]);
  });
});
