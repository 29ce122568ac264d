import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InputError } from '../../src/lib/errors.js';
import { decodeModel, serializeModel } from '../../src/lib/pod/decode.js';
import {
  InvalidManifestsError,
  ManifestError,
  loadManifests,
  manifestErrorsToError,
  nestingTooDeep,
  parseManifestText,
  prepareManifests,
  readManifestDir,
  readManifestFile,
  type ManifestSet,
} from '../../src/lib/pod/manifest.js';
import { staticPodUID } from '../../src/lib/pod/static-pod.js';
import type { V1Pod } from '@kubernetes/client-node';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/manifests');
const fixture = (name: string): string => path.join(FIXTURES, name);
const NODE = 'node1';
const NOW = new Date('2024-05-01T12:00:00Z');

let tmp: string;
beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'klet-manifest-'));
});
afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

/** A fresh directory under the test's temp dir. */
async function dir(name: string): Promise<string> {
  const d = path.join(tmp, name);
  await fs.mkdir(d, { recursive: true });
  return d;
}

async function load(...files: string[]): Promise<ManifestSet> {
  return loadManifests({ files, nodeName: NODE, now: NOW });
}

const errorsOf = (set: { errors: ManifestError[] }): string[] => set.errors.map(String);

function podYaml(name: string, image = 'busybox:1.36'): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n  - name: main\n    image: ${image}\n`;
}

describe('kubeadm static pods', () => {
  it('loads the etcd manifest as kubeadm writes it (status: {}, creationTimestamp: null)', async () => {
    const file = fixture('kubeadm-etcd.yaml');
    const set = await load(file);
    expect(errorsOf(set)).toEqual([]);
    expect(set.pods).toHaveLength(1);
    const { pod, source } = set.pods[0]!;
    expect(source).toEqual({ kind: 'file', path: file, line: 1 });
    expect(pod.kind).toBe('Pod');
    expect(pod.metadata?.name).toBe('etcd-node1');
    expect(pod.metadata?.namespace).toBe('kube-system');
    expect(pod.metadata?.creationTimestamp).toBeUndefined();
    expect(pod.metadata?.uid).toMatch(/^[0-9a-f]{32}$/);
    expect(pod.metadata?.annotations).toEqual({
      'kubeadm.kubernetes.io/etcd.advertise-client-urls': 'https://10.0.0.10:2379',
      'kubernetes.io/config.hash': pod.metadata?.uid,
      'kubernetes.io/config.source': 'file',
      'kubernetes.io/config.seen': '2024-05-01T12:00:00.000Z',
    });
    expect(pod.spec?.nodeName).toBe(NODE);
    expect(pod.spec?.tolerations).toEqual([{ operator: 'Exists', effect: 'NoExecute' }]);
    expect(pod.spec?.priority).toBe(2000001000);
    expect(pod.spec?.restartPolicy).toBe('Always');
    expect(pod.status).toEqual({ phase: 'Pending' });
    const etcd = pod.spec?.containers[0];
    expect(etcd?.livenessProbe).toEqual({
      failureThreshold: 8,
      httpGet: { host: '127.0.0.1', path: '/livez', port: 2381, scheme: 'HTTP' },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      successThreshold: 1,
      timeoutSeconds: 15,
    });
    expect(etcd?.resources?.requests).toEqual({ cpu: '100m', memory: '100Mi' });
    expect(pod.spec?.volumes?.map((v) => v.hostPath?.type)).toEqual(['DirectoryOrCreate', 'DirectoryOrCreate']);
  });
});

describe('reading manifests', () => {
  it.each([
    { name: '100 000 nested flow sequences', text: `apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`, line: 5 },
    { name: '100 000 nested block sequences on one line', text: `apiVersion: v1\nkind: Pod\nspec:\n  containers:\n${'- '.repeat(100_000)}x\n`, line: 5 },
    { name: 'JSON nested 5000 deep', text: `{"apiVersion":"v1","kind":"Pod","metadata":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`, line: 1 },
  ])('hostile nesting ($name): one error naming file:line, fast, no stack overflow', ({ text, line }) => {
    const t0 = performance.now();
    const set = parseManifestText(text, 'http://host/pods.yaml');
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(set.objects).toEqual([]);
    expect(set.errors.map((e) => e.toString())).toEqual([`http://host/pods.yaml:${line}: nested more than 1000 levels deep`]);
  });

  it('a hostPath with ..: the first error is the path, not the mount that names the rejected volume', () => {
    const text = [
      'apiVersion: v1',
      'kind: Pod',
      'metadata: { name: hp }',
      'spec:',
      '  containers:',
      '    - name: c',
      '      image: busybox',
      '      volumeMounts:',
      '        - { name: v, mountPath: /data }',
      '  volumes:',
      '    - name: v',
      '      hostPath: { path: /var/../etc }',
      '',
    ].join('\n');
    const set = prepareManifests(parseManifestText(text, '/m/hp.yaml', 'file'), { nodeName: 'n' });
    expect(set.errors.map((e) => e.toString())).toEqual([
      `/m/hp.yaml:12: spec.volumes[0].hostPath.path: Invalid value: "/var/../etc": must not contain '..'`,
      '/m/hp.yaml:9: spec.containers[0].volumeMounts[0].name: Not found: "v"',
    ]);
  });

  it('real manifests are not too deep: block scalars and quoted strings full of brackets do not count', () => {
    const script = `${'[[ -f x ]] && echo "[{" '.repeat(600)}`;
    const text = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n    - name: c\n      image: busybox\n      args:\n        - |\n          ${script}\n        - "${'['.repeat(1200)}"\n`;
    expect(nestingTooDeep(text)).toBeNull();
    expect(nestingTooDeep(`a: ${'['.repeat(1000)}${']'.repeat(1000)}`)).toBeNull();
    expect(nestingTooDeep(`a: ${'['.repeat(1001)}${']'.repeat(1001)}`)).toBe(1);
  });

  it('reads every document of a multi-document file and skips empty ones', async () => {
    const set = await load(fixture('multi.yaml'));
    expect(errorsOf(set)).toEqual([]);
    expect(set.pods.map((p) => [p.pod.metadata?.name, p.source.line])).toEqual([['web-node1', 20]]);
    expect(set.configMaps.map((c) => [c.metadata?.namespace, c.metadata?.name, c.data])).toEqual([
      ['default', 'web-config', { 'index.html': '<h1>hello</h1>\n' }],
    ]);
    expect(set.secrets).toHaveLength(1);
    expect(set.secrets[0]?.type).toBe('Opaque');
    expect(set.secrets[0]?.stringData).toBeUndefined();
    expect(Buffer.from(set.secrets[0]?.data?.password ?? '', 'base64').toString()).toBe('s3cret');
  });

  it('names an unknown field by its path and line', async () => {
    const file = fixture('unknown-field.yaml');
    const set = await load(file);
    expect(set.pods).toEqual([]);
    expect(errorsOf(set)).toEqual([`${file}:9: spec.containers[0].imagePullPolicyy: unknown field`]);
    expect(set.errors[0]).toMatchObject({ file, line: 9, fieldPath: 'spec.containers[0].imagePullPolicyy', message: 'unknown field' });
  });

  it('reports invalid YAML as file:line: message and still loads the good document', async () => {
    const file = fixture('invalid-yaml.yaml');
    const set = await load(file);
    expect(set.pods.map((p) => p.pod.metadata?.name)).toEqual(['good-node1']);
    expect(errorsOf(set)).toEqual([`${file}:13: Nested mappings are not allowed in compact mappings`]);
  });

  it('reports type mismatches with their paths', async () => {
    const file = fixture('type-errors.yaml');
    expect(errorsOf(await load(file))).toEqual([
      `${file}:5: metadata.labels: Invalid value: "app": expected a map, got a string`,
      `${file}:7: spec.hostNetwork: Invalid value: "yes please": expected a boolean (true or false), got a string`,
      `${file}:11: spec.containers[0].command: Invalid value: "sh -c 'echo hi'": expected a list, got a string`,
      `${file}:13: spec.containers[0].ports[0].containerPort: Invalid value: 80.5: expected an integer, got a number`,
    ]);
  });

  it('accepts what the API server accepts: nulls, int-or-string, numeric quantities, octal modes', async () => {
    const set = await load(fixture('tolerant.yaml'));
    expect(errorsOf(set)).toEqual([]);
    const pod = set.pods[0]!.pod;
    expect(pod.metadata?.labels).toBeUndefined();
    // YAML 1.1 like Kubernetes, but dates stay strings.
    expect(pod.metadata?.annotations?.note).toBe('2024-01-02');
    const c = pod.spec!.containers[0]!;
    expect(c.args).toBeUndefined();
    expect(c.imagePullPolicy).toBe('IfNotPresent');
    expect(c.livenessProbe?.httpGet).toEqual({ port: 'http', path: '/', scheme: 'HTTP' });
    expect(c.resources).toEqual({ limits: { cpu: '500m', memory: '1G' }, requests: { cpu: '250m', memory: '1G' } });
    expect(pod.spec?.volumes).toEqual([
      { name: 'config', configMap: { name: 'app-config', defaultMode: 0o644 } },
      { name: 'scratch', emptyDir: { medium: '' } },
    ]);
  });

  it('reports API validation errors with lines, all of them', async () => {
    const dup = fixture('duplicate-containers.yaml');
    // In the API server's order (containers are validated before init containers), not by line.
    expect(errorsOf(await load(dup))).toEqual([
      `${dup}:12: spec.containers[1].name: Duplicate value: "app"`,
      `${dup}:7: spec.initContainers[0].name: Duplicate value: "setup"`,
    ]);
    const bad = fixture('bad-name.yaml');
    const errs = errorsOf(await load(bad));
    expect(errs).toHaveLength(3);
    expect(errs[0]).toBe(
      `${bad}:4: metadata.name: Invalid value: "Foo_Bar-node1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    );
    expect(errs[1]).toMatch(new RegExp(`^${bad}:5: metadata\\.namespace: Invalid value: "Kube_System": a lowercase RFC 1123 label`));
    expect(errs[2]).toMatch(new RegExp(`^${bad}:8: spec\\.containers\\[0\\]\\.name: Invalid value: "App": a lowercase RFC 1123 label`));
  });

  it('reads a PodList in JSON, keeping the good items', async () => {
    const file = fixture('podlist.json');
    const set = await load(file);
    expect(set.pods.map((p) => [p.pod.metadata?.name, p.pod.kind, p.source.line])).toEqual([['one-node1', 'Pod', 5]]);
    expect(errorsOf(set)).toEqual([`${file}:13: items[1].spec.containers[0].image: Required value`]);
  });

  it('reads a v1 List of pods, config maps and secrets', () => {
    const text = [
      'apiVersion: v1',
      'kind: List',
      'items:',
      '- apiVersion: v1',
      '  kind: ConfigMap',
      '  metadata: {name: cfg}',
      '- apiVersion: apps/v1',
      '  kind: Deployment',
      '  metadata: {name: web}',
      '- apiVersion: v1',
      '  kind: Pod',
      '  metadata: {name: p}',
      '  spec: {containers: [{name: c, image: busybox}]}',
    ].join('\n');
    const parsed = parseManifestText(text, 'list.yaml', 'file');
    expect(parsed.objects.map((o) => [o.kind, o.source.line])).toEqual([
      ['ConfigMap', 4],
      ['Pod', 10],
    ]);
    expect(parsed.errors.map(String)).toEqual([
      'list.yaml:8: items[1].kind: Unsupported value: "Deployment": supported values: "Pod", "ConfigMap", "Secret", "PodList", "List"',
    ]);
  });

  it('refuses other kinds, naming file and kind', async () => {
    const file = fixture('deployment.yaml');
    expect(errorsOf(await load(file))).toEqual([
      `${file}:2: kind: Unsupported value: "Deployment": supported values: "Pod", "ConfigMap", "Secret", "PodList", "List"`,
    ]);
  });

  it('wants apiVersion and kind, and a map', () => {
    const errs = parseManifestText('metadata: {name: x}\n---\nkind: Pod\napiVersion: v2\n---\n- a\n- b\n', 'u').errors.map(String);
    expect(errs).toEqual([
      'u:1: kind: Required value: every manifest object needs apiVersion and kind',
      'u:1: apiVersion: Required value',
      'u:4: apiVersion: Unsupported value: "v2": supported values: "v1"',
      'u:6: expected a Kubernetes object (a map with apiVersion and kind), got a list',
    ]);
  });

  it('rejects pods with only generateName: static pods need a name', async () => {
    const body = 'apiVersion: v1\nkind: Pod\nmetadata: {generateName: web-}\nspec: {containers: [{name: c, image: x}]}\n';
    const set = await loadManifests({ url: { body, url: 'http://h/p' }, nodeName: NODE });
    expect(errorsOf(set)).toEqual(['http://h/p:3: metadata.name: Required value: static pods need a name; generateName is not supported']);
  });

  it('does not run a mirror pod dumped with kubectl get -o yaml: names the annotation, as the kubelet skips it', async () => {
    const body = [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      '  annotations:',
      '    kubernetes.io/config.hash: 0123abcd',
      '    kubernetes.io/config.mirror: 0123abcd',
      '    kubernetes.io/config.source: file',
      '  creationTimestamp: "2024-01-01T00:00:00Z"',
      '  name: etcd-node1',
      '  namespace: kube-system',
      '  uid: 5f1e-mirror',
      'spec: {containers: [{name: etcd, image: x}]}',
      'status: {phase: Running}',
      '',
    ].join('\n');
    const set = await loadManifests({ url: { body, url: 'http://h/etcd.yaml' }, nodeName: NODE });
    expect(set.pods).toEqual([]);
    expect(errorsOf(set)).toEqual([
      'http://h/etcd.yaml:6: metadata.annotations[kubernetes.io/config.mirror]: Forbidden: a mirror pod (as kubectl get -o yaml writes a static pod back) is never run from a manifest, as the kubelet skips it: remove this annotation',
    ]);
  });

  it('treats a manifest from a URL as an http source', async () => {
    const set = await loadManifests({ url: { body: podYaml('web'), url: 'http://example.com/pods.yaml' }, nodeName: NODE, now: NOW });
    expect(errorsOf(set)).toEqual([]);
    const { pod, source } = set.pods[0]!;
    expect(source).toEqual({ kind: 'http', path: 'http://example.com/pods.yaml', line: 1 });
    expect(pod.metadata?.annotations?.['kubernetes.io/config.source']).toBe('http');
    // Only file pods get the NoExecute toleration (as in the kubelet).
    expect(pod.spec?.tolerations).toBeUndefined();
  });

  it('reports a pod defined twice, keeping the first', async () => {
    const d = await dir('twice');
    await fs.writeFile(path.join(d, 'a.yaml'), podYaml('web'));
    await fs.writeFile(path.join(d, 'b.yaml'), `${podYaml('web')}---\n${podYaml('web', 'nginx')}`);
    const set = await loadManifests({ dir: d, nodeName: NODE });
    expect(set.pods.map((p) => p.source.path)).toEqual([path.join(d, 'a.yaml')]);
    expect(errorsOf(set)).toEqual([
      `${d}/b.yaml:4: metadata.name: Duplicate value: "web-node1": Pod default/web-node1 is already defined at ${d}/a.yaml:1`,
      `${d}/b.yaml:13: metadata.name: Duplicate value: "web-node1": Pod default/web-node1 is already defined at ${d}/a.yaml:1`,
    ]);
  });
});

describe('static pod directories', () => {
  it('reads regular files in name order, like the kubelet', async () => {
    const d = await dir('static');
    const elsewhere = await dir('elsewhere');
    await fs.writeFile(path.join(d, '20-b.manifest'), podYaml('b'));
    await fs.writeFile(path.join(d, '10-a.yaml'), podYaml('a'));
    await fs.writeFile(path.join(d, 'noext'), podYaml('c'));
    await fs.writeFile(path.join(d, '.hidden.yaml'), 'this: [is not even valid');
    await fs.writeFile(path.join(d, '10-a.yaml.bak'), podYaml('a', 'busybox:old'));
    await fs.mkdir(path.join(d, 'sub'));
    await fs.writeFile(path.join(d, 'sub', 'd.yaml'), podYaml('d'));
    await fs.writeFile(path.join(elsewhere, 'e.yaml'), podYaml('e'));
    await fs.symlink(path.join(elsewhere, 'e.yaml'), path.join(d, 'link.yaml'));
    await fs.symlink(path.join(elsewhere, 'missing.yaml'), path.join(d, 'zz-broken.yaml'));

    const set = await loadManifests({ dir: d, nodeName: NODE });
    expect(set.pods.map((p) => p.pod.metadata?.name)).toEqual(['a-node1', 'b-node1', 'e-node1', 'c-node1']);
    expect(set.pods[2]?.source.path).toBe(path.join(d, 'link.yaml'));
    expect(errorsOf(set)).toEqual([
      `${d}/10-a.yaml.bak:4: metadata.name: Duplicate value: "a-node1": Pod default/a-node1 is already defined at ${d}/10-a.yaml:1`,
      `${d}/zz-broken.yaml: no such file or directory`,
    ]);
  });

  it('skips a file removed (or removed and put back) while the directory is read, but not a dangling symlink', async () => {
    const d = await dir('racing');
    await fs.writeFile(path.join(d, 'a.yaml'), podYaml('a'));
    await fs.writeFile(path.join(d, 'b.yaml'), podYaml('b'));
    await fs.writeFile(path.join(d, 'c.yaml'), podYaml('c'));
    await fs.symlink(path.join(d, 'missing.yaml'), path.join(d, 'z.yaml'));
    // Between the listing and the read: b.yaml goes away; c.yaml goes away and comes back.
    const realOpen = fs.open.bind(fs);
    const spy = vi.spyOn(fs, 'open').mockImplementation(async (file, ...rest) => {
      const name = path.basename(String(file));
      if (name === 'b.yaml' || name === 'c.yaml') {
        await fs.unlink(String(file));
        const err = Object.assign(new Error(`ENOENT: no such file or directory, open '${String(file)}'`), { code: 'ENOENT' });
        if (name === 'c.yaml') await fs.writeFile(String(file), podYaml('c'));
        throw err;
      }
      return realOpen(file, ...(rest as [string]));
    });
    try {
      const read = await readManifestDir(d);
      expect(read.objects.map((o) => (o.object as V1Pod).metadata?.name)).toEqual(['a']);
      expect(errorsOf(read)).toEqual([`${d}/z.yaml: no such file or directory`]);
    } finally {
      spy.mockRestore();
    }
  });

  it('reads a few files at once and still reports them in name order', async () => {
    const d = await dir('concurrent');
    const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    for (const n of names) await fs.writeFile(path.join(d, `${n}.yaml`), n === 'd' ? 'kind: [broken' : podYaml(n));
    // Earlier names answer later, so the reads finish in reverse order.
    const realOpen = fs.open.bind(fs);
    let inFlight = 0;
    let maxInFlight = 0;
    const spy = vi.spyOn(fs, 'open').mockImplementation(async (file, ...rest) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        await new Promise((r) => setTimeout(r, 5 * (names.length - names.indexOf(path.basename(String(file), '.yaml')))));
        return await realOpen(file, ...(rest as [string]));
      } finally {
        inFlight -= 1;
      }
    });
    try {
      const read = await readManifestDir(d);
      expect(read.objects.map((o) => (o.object as V1Pod).metadata?.name)).toEqual(['a', 'b', 'c', 'e', 'f', 'g']);
      expect(read.files).toEqual(names.map((n) => path.join(d, `${n}.yaml`)));
      expect(errorsOf(read)).toHaveLength(1);
      expect(errorsOf(read)[0]).toMatch(new RegExp(`^${d}/d\\.yaml:1: `));
      // Several at once (the I/O waits overlap), but a bounded number (memory: each may be 10 MiB).
      expect(maxInFlight).toBeGreaterThan(1);
      expect(maxInFlight).toBeLessThanOrEqual(4);
    } finally {
      spy.mockRestore();
    }
  });

  it('reports a missing directory by name', async () => {
    const missing = path.join(tmp, 'no-such-dir');
    expect(errorsOf(await readManifestDir(missing))).toEqual([`${missing}: manifest directory does not exist`]);
    const set = await loadManifests({ dir: missing, nodeName: NODE });
    expect(set.pods).toEqual([]);
    expect(errorsOf(set)).toEqual([`${missing}: manifest directory does not exist`]);
  });

  it('reads a single file given as the directory, as --pod-manifest-path allows', async () => {
    const set = await loadManifests({ dir: fixture('kubeadm-etcd.yaml'), nodeName: NODE });
    expect(set.pods.map((p) => p.pod.metadata?.name)).toEqual(['etcd-node1']);
  });

  it('refuses a 50 MiB file without reading it, and still loads the rest', async () => {
    const d = await dir('big');
    const big = path.join(d, 'big.yaml');
    const chunk = randomBytes(1024 * 1024);
    const handle = await fs.open(big, 'w');
    for (let i = 0; i < 50; i++) await handle.write(chunk);
    await handle.close();
    await fs.writeFile(path.join(d, 'ok.yaml'), podYaml('ok'));

    const t0 = Date.now();
    const set = await loadManifests({ dir: d, nodeName: NODE });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(set.pods.map((p) => p.pod.metadata?.name)).toEqual(['ok-node1']);
    expect(errorsOf(set)).toEqual([`${big}: manifest is 50.0 MiB, larger than the 10 MiB limit`]);
  });

  it('reads a manifest of several MiB whole, however many reads it takes', async () => {
    const d = await dir('several-mib');
    const value = 'x'.repeat(3 * 1024 * 1024);
    const file = path.join(d, 'large.yaml');
    await fs.writeFile(file, `${podYaml('large')}    env:\n    - name: BIG\n      value: ${value}\n`);
    const set = await loadManifests({ dir: d, nodeName: NODE });
    expect(errorsOf(set)).toEqual([]);
    expect(set.pods[0]?.pod.spec?.containers[0]?.env?.[0]?.value).toBe(value);
    // An empty file is read as empty (one read of one byte sees its end), not as an error.
    await fs.writeFile(path.join(d, 'empty.yaml'), '');
    expect(errorsOf(await readManifestFile(path.join(d, 'empty.yaml')))).toEqual([]);
  });

  it('gives binary and UTF-16 files a one-line error', async () => {
    const d = await dir('binary');
    const png = path.join(d, 'logo.png');
    await fs.writeFile(png, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d]));
    expect(errorsOf(await readManifestFile(png))).toEqual([`${png}: not a text manifest: binary data (NUL byte at offset 8)`]);
    const latin1 = path.join(d, 'latin1.yaml');
    await fs.writeFile(latin1, Buffer.from('name: caf\xe9\n', 'latin1'));
    expect(errorsOf(await readManifestFile(latin1))).toEqual([`${latin1}: not a text manifest: it is not valid UTF-8`]);
    const utf16 = path.join(d, 'utf16.yaml');
    await fs.writeFile(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('kind: Pod\n', 'utf16le')]));
    expect(errorsOf(await readManifestFile(utf16))).toEqual([`${utf16}: manifest is UTF-16 encoded; save it as UTF-8`]);
  });

  it('names a missing file and a directory given as a file', async () => {
    const missing = path.join(tmp, 'nope.yaml');
    expect(errorsOf(await readManifestFile(missing))).toEqual([`${missing}: no such file or directory`]);
    expect(errorsOf(await readManifestFile(tmp))).toEqual([`${tmp}: is a directory, not a manifest file`]);
  });

  it('needs a node name', async () => {
    await expect(loadManifests({ files: [], nodeName: ' ' })).rejects.toBeInstanceOf(InputError);
  });
});

describe('static pod UID', () => {
  async function uidOf(file: string, nodeName = NODE, now = NOW): Promise<string> {
    const set = await loadManifests({ files: [file], nodeName, now });
    expect(errorsOf(set)).toEqual([]);
    return set.pods[0]?.pod.metadata?.uid ?? '';
  }

  it('is deterministic, and changes with the content, the path and the node', async () => {
    const d = await dir('uid');
    const a = path.join(d, 'a.yaml');
    const b = path.join(d, 'b.yaml');
    await fs.writeFile(a, podYaml('web'));
    await fs.writeFile(b, podYaml('web'));
    const uid = await uidOf(a);
    expect(uid).toMatch(/^[0-9a-f]{32}$/);
    // Not the time it was seen.
    expect(await uidOf(a, NODE, new Date(0))).toBe(uid);
    expect(await uidOf(b)).not.toBe(uid);
    expect(await uidOf(a, 'node2')).not.toBe(uid);
    await fs.writeFile(a, podYaml('web', 'busybox:1.37'));
    expect(await uidOf(a)).not.toBe(uid);
  });

  it('depends on the pod, not on how the manifest spells it', async () => {
    const d = await dir('uid-spelling');
    const file = path.join(d, 'web.yaml');
    await fs.writeFile(file, podYaml('web'));
    const uid = await uidOf(file);
    // Same pod: JSON, other key order, defaults written out.
    await fs.writeFile(
      file,
      JSON.stringify({
        spec: { restartPolicy: 'Always', containers: [{ image: 'busybox:1.36', name: 'main', imagePullPolicy: 'IfNotPresent' }] },
        metadata: { name: 'web' },
        kind: 'Pod',
        apiVersion: 'v1',
      }),
    );
    expect(await uidOf(file)).toBe(uid);
  });

  it('keeps a uid written in the manifest, as the kubelet does', async () => {
    const d = await dir('uid-kept');
    const file = path.join(d, 'web.yaml');
    await fs.writeFile(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', uid: 'e8c3a1f2-0000-4000-8000-000000000000' },
        spec: { containers: [{ image: 'busybox:1.36', name: 'main' }] },
      }),
    );
    expect(await uidOf(file)).toBe('e8c3a1f2-0000-4000-8000-000000000000');
  });

  it('is md5 over the canonical pod, host and source', async () => {
    const d = await dir('uid-md5');
    const file = path.join(d, 'web.yaml');
    await fs.writeFile(file, podYaml('web'));
    const set = await loadManifests({ files: [file], nodeName: NODE });
    const parsed = await readManifestFile(file);
    const { applyPodDefaults } = await import('../../src/lib/pod/defaults.js');
    const raw = parsed.objects[0]!.object as V1Pod;
    expect(staticPodUID(applyPodDefaults(raw), { kind: 'file', path: file }, NODE)).toBe(set.pods[0]?.pod.metadata?.uid);
  });
});

describe('strict decoding', () => {
  it('gives what client-node\'s own ObjectSerializer gives, from the build-time schema', async () => {
    const { ObjectSerializer } = await import('@kubernetes/client-node/dist/gen/models/ObjectSerializer.js');
    const wire = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'x', namespace: 'ns', labels: { a: 'b' }, creationTimestamp: '2026-01-02T03:04:05Z' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'c',
            image: 'busybox:1.36',
            ports: [{ containerPort: 80, protocol: 'TCP' }],
            env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
            resources: { limits: { memory: '64Mi' } },
            volumeMounts: [{ name: 'v', mountPath: '/v' }],
            livenessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 5 },
          },
        ],
        volumes: [{ name: 'v', emptyDir: { medium: 'Memory' } }],
        securityContext: { runAsUser: 1000 },
      },
    };
    const { value, errors } = decodeModel<V1Pod>(structuredClone(wire), 'V1Pod');
    expect(errors).toEqual([]);
    expect(value).toEqual(ObjectSerializer.deserialize(structuredClone(wire), 'V1Pod', ''));
    expect(value?.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(serializeModel(value, 'V1Pod')).toEqual(ObjectSerializer.serialize(value, 'V1Pod', ''));
  });

  it('turns nulls into unset fields and keeps typed models', () => {
    const { value, errors } = decodeModel<V1Pod>(
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x', creationTimestamp: null, labels: { a: null } }, spec: { containers: [null] }, status: {} },
      'V1Pod',
    );
    expect(errors).toEqual([]);
    expect(value?.metadata?.creationTimestamp).toBeUndefined();
    expect(value?.metadata?.labels).toEqual({ a: '' });
    expect(value?.spec?.containers).toEqual([{}]);
  });

  it('parses timestamps into Dates and rejects malformed ones', () => {
    const ok = decodeModel<V1Pod>({ metadata: { creationTimestamp: '2024-01-02T03:04:05Z' } }, 'V1Pod');
    expect(ok.value?.metadata?.creationTimestamp).toEqual(new Date('2024-01-02T03:04:05Z'));
    const bad = decodeModel<V1Pod>({ metadata: { creationTimestamp: 'yesterday' } }, 'V1Pod');
    expect(bad.errors.map(String)).toEqual(['metadata.creationTimestamp: Invalid value: "yesterday": expected an RFC 3339 date-time (e.g. 2006-01-02T15:04:05Z)']);
  });

  it('checks base64 in secret data', () => {
    const bad = decodeModel({ data: { key: 'not base64!' } }, 'V1Secret');
    expect(bad.errors.map(String)).toEqual(['data[key]: Invalid value: "<binary>": illegal base64 data at input byte 3']);
  });

  it('collects every unknown field', () => {
    const { errors } = decodeModel({ spec: { containerz: [], nodeSelector: { a: 'b' }, hostnetwork: true } }, 'V1Pod');
    expect(errors.map(String)).toEqual(['spec.containerz: unknown field', 'spec.hostnetwork: unknown field']);
  });
});

describe('ManifestError', () => {
  it('is an InputError with a file:line: field: message one-liner', () => {
    const e = new ManifestError({ file: 'pod.yaml', line: 12, fieldPath: 'spec.containers[0].image', message: 'Required value' });
    expect(e).toBeInstanceOf(InputError);
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe('Required value');
    expect(String(e)).toBe('pod.yaml:12: spec.containers[0].image: Required value');
    expect(String(new ManifestError({ file: 'pod.yaml', message: 'is a directory' }))).toBe('pod.yaml: is a directory');
    expect(JSON.parse(JSON.stringify(e))).toEqual({
      file: 'pod.yaml',
      line: 12,
      fieldPath: 'spec.containers[0].image',
      message: 'Required value',
      text: 'pod.yaml:12: spec.containers[0].image: Required value',
    });
  });

  it('becomes one throwable error for a whole set', () => {
    const errs = [
      new ManifestError({ file: 'a.yaml', line: 1, message: 'one' }),
      new ManifestError({ file: 'b.yaml', line: 2, fieldPath: 'kind', message: 'two' }),
    ];
    const thrown = manifestErrorsToError(errs);
    expect(thrown).toBeInstanceOf(InvalidManifestsError);
    expect(thrown).toBeInstanceOf(InputError);
    expect(thrown.message).toBe('a.yaml:1: one (and 1 more)\nb.yaml:2: kind: two');
    expect(thrown.errors).toBe(errs);
  });
});

describe('quoted scalars read as slices', () => {
  // Long double-quoted values without escapes are read through the single-quoted
  // path (one slice instead of a per-character rope): the values and the error
  // lines must be exactly what the YAML means, whatever the content.
  const long = 'v'.repeat(70);
  it.each([
    ['plain text', `"${long} and more"`, `${long} and more`],
    ['an escape', `"${long}\\tend"`, `${long}\tend`],
    ['a unicode escape', `"${long}\\u00e9"`, `${long}é`],
    ['a single quote inside', `"${long}'s"`, `${long}'s`],
    ['trailing blanks', `"${long}   "`, `${long}   `],
    ['a folded line', `"${long}\n            next"`, `${long} next`],
    ['a short value', '"a\\"b"', 'a"b'],
    ['a dollar reference', `"$(HOME)${long}"`, `$(HOME)${long}`],
  ])('%s', (_what, yamlValue, want) => {
    const text = ['apiVersion: v1', 'kind: Pod', 'metadata:', '  name: q', 'spec:', '  containers:', '    - name: c', '      image: busybox', '      env:', `        - name: V`, `          value: ${yamlValue}`, ''].join('\n');
    const parsed = parseManifestText(text, '/m/q.yaml', 'file');
    expect(parsed.errors).toEqual([]);
    const pod = parsed.objects[0]?.object as V1Pod;
    expect(pod.spec?.containers[0]?.env?.[0]?.value).toBe(want);
  });

  it('keeps error lines after long quoted values', () => {
    const text = ['apiVersion: v1', 'kind: Pod', 'metadata:', '  name: q', 'spec:', '  containers:', '    - name: c', '      image: busybox', '      env:', `        - name: V`, `          value: "${long}"`, '      bogusField: 1', ''].join('\n');
    const set = prepareManifests(parseManifestText(text, '/m/q.yaml', 'file'), { nodeName: NODE });
    expect(set.errors.map((e) => String(e))).toEqual([expect.stringMatching(/q\.yaml:12\b/)]);
  });
});
