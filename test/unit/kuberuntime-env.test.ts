import { describe, expect, it } from 'vitest';
import type { V1ConfigMap, V1Container, V1EnvVar, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  ContainerConfigError,
  expand,
  expandCommand,
  fieldRefValue,
  makeEnvironment,
  resourceFieldRefValue,
  type EnvContext,
} from '../../src/lib/kuberuntime/env.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

function mkPod(containers: V1Container[] = [{ name: 'app', image: 'busybox' }]): V1Pod {
  return {
    metadata: {
      name: 'web',
      namespace: 'shop',
      uid: 'uid-123',
      labels: { app: 'web', tier: 'front' },
      annotations: { 'example.com/owner': 'team-a' },
    },
    spec: { containers, serviceAccountName: 'builder' },
  };
}

const configMaps: V1ConfigMap[] = [
  { metadata: { name: 'settings', namespace: 'shop' }, data: { MODE: 'fast', LEVEL: '3' }, binaryData: { BLOB: b64('bin') } },
  { metadata: { name: 'settings', namespace: 'other' }, data: { MODE: 'from-other' } },
];
const secrets: V1Secret[] = [{ metadata: { name: 'creds', namespace: 'shop' }, data: { PASSWORD: b64('s3cret'), USER: b64('admin') } }];

function ctx(pod: V1Pod = mkPod()): EnvContext {
  return {
    pod,
    podIPs: ['10.88.0.7', 'fd00::7'],
    hostIPs: ['192.168.1.10', 'fd00::10'],
    nodeName: 'node-1',
    objects: { configMaps, secrets },
    nodeAllocatable: { cpuMillis: 4000, memoryBytes: 8 * 1024 ** 3, ephemeralStorageBytes: 100 * 1024 ** 3 },
  };
}

function envOf(env: V1EnvVar[], extra: Partial<V1Container> = {}, pod?: V1Pod): Record<string, string> {
  const c: V1Container = { name: 'app', image: 'busybox', env, ...extra };
  return Object.fromEntries(makeEnvironment(c, ctx(pod ?? mkPod([c]))).map((e) => [e.key, e.value]));
}

describe('expand', () => {
  const vars: Record<string, string> = { A: 'a', B: 'b', EMPTY: '' };
  const lookup = (n: string) => vars[n];
  it.each([
    ['$(A)', 'a'],
    ['x$(A)y', 'xay'],
    ['$(A)$(B)', 'ab'],
    ['$(EMPTY)|', '|'],
    ['$(UNDEFINED)', '$(UNDEFINED)'],
    ['pre-$(UNDEFINED)-post', 'pre-$(UNDEFINED)-post'],
    ['$$(A)', '$(A)'],
    ['$$$(A)', '$a'],
    ['$$', '$'],
    ['$A', '$A'],
    ['$', '$'],
    ['a$', 'a$'],
    ['$()', '$()'],
    ['$(A', '$(A'],
    ['$(A $$', '$(A $'],
    ['$(A $(B)', '$(A $(B)'],
    ['no refs at all', 'no refs at all'],
  ])('%j → %j', (input, want) => {
    expect(expand(input, lookup)).toBe(want);
  });
});

describe('makeEnvironment', () => {
  it('expands references to earlier variables only, in declaration order', () => {
    const env = envOf([
      { name: 'A', value: 'x' },
      { name: 'B', value: '$(A)-y' },
      { name: 'C', value: '$(D)' },
      { name: 'D', value: 'z' },
      { name: 'E', value: '$$(A)' },
      { name: 'F' },
    ]);
    expect(env).toEqual({ A: 'x', B: 'x-y', C: '$(D)', D: 'z', E: '$(A)', F: '' });
  });

  it('lets a later env var redefine an earlier one and see its old value', () => {
    expect(envOf([{ name: 'P', value: '/bin' }, { name: 'P', value: '$(P):/usr/bin' }])).toEqual({ P: '/bin:/usr/bin' });
  });

  it('resolves downward-API fieldRefs', () => {
    const f = (fieldPath: string): V1EnvVar => ({ name: 'X', valueFrom: { fieldRef: { fieldPath } } });
    const cases: [string, string][] = [
      ['metadata.name', 'web'],
      ['metadata.namespace', 'shop'],
      ['metadata.uid', 'uid-123'],
      ["metadata.labels['app']", 'web'],
      ["metadata.labels['missing']", ''],
      ["metadata.annotations['example.com/owner']", 'team-a'],
      ['metadata.labels', 'app="web"\ntier="front"'],
      ['spec.nodeName', 'node-1'],
      ['spec.serviceAccountName', 'builder'],
      ['status.podIP', '10.88.0.7'],
      ['status.podIPs', '10.88.0.7,fd00::7'],
      ['status.hostIP', '192.168.1.10'],
      ['status.hostIPs', '192.168.1.10,fd00::10'],
    ];
    for (const [path, want] of cases) expect(envOf([f(path)]).X, path).toBe(want);
    expect(fieldRefValue('metadata.name', ctx())).toBe('web');
    expect(() => fieldRefValue('spec.containers', ctx())).toThrow(ContainerConfigError);
  });

  it('does not expand $(VAR) in values from sources', () => {
    const pod = mkPod();
    pod.metadata = { ...pod.metadata, labels: { v: '$(A)' } };
    const c: V1Container = { name: 'app', env: [{ name: 'A', value: 'a' }, { name: 'L', valueFrom: { fieldRef: { fieldPath: "metadata.labels['v']" } } }] };
    pod.spec = { containers: [c] };
    expect(envOf(c.env ?? [], {}, pod).L).toBe('$(A)');
  });

  it('resolves resourceFieldRefs with divisors, rounding up', () => {
    const resources = { requests: { cpu: '250m', memory: '128Mi' }, limits: { cpu: '1500m', memory: '256Mi' } };
    const r = (resource: string, divisor?: string): V1EnvVar => ({ name: 'R', valueFrom: { resourceFieldRef: { resource, divisor } } });
    const cases: [V1EnvVar, string][] = [
      [r('limits.cpu'), '2'],
      [r('limits.cpu', '1m'), '1500'],
      [r('requests.cpu', '1m'), '250'],
      [r('requests.cpu'), '1'],
      [r('requests.memory', '1Mi'), '128'],
      [r('limits.memory'), String(256 * 1024 * 1024)],
      [r('limits.memory', '1Gi'), '1'],
    ];
    for (const [v, want] of cases) {
      expect(envOf([v], { resources }).R, JSON.stringify(v.valueFrom)).toBe(want);
    }
  });

  it('reports node allocatable for unset limits and 0 for unset requests', () => {
    const c: V1Container = { name: 'app' };
    const e = ctx(mkPod([c]));
    expect(resourceFieldRefValue(c, { resource: 'limits.cpu' }, e)).toBe('4');
    expect(resourceFieldRefValue(c, { resource: 'limits.cpu', divisor: '1m' }, e)).toBe('4000');
    expect(resourceFieldRefValue(c, { resource: 'limits.memory', divisor: '1Mi' }, e)).toBe('8192');
    expect(resourceFieldRefValue(c, { resource: 'limits.ephemeral-storage', divisor: '1Gi' }, e)).toBe('100');
    expect(resourceFieldRefValue(c, { resource: 'requests.cpu' }, e)).toBe('0');
    expect(resourceFieldRefValue(c, { resource: 'requests.memory' }, e)).toBe('0');
  });

  it('a zero divisor (how the API server serialises an unset one) means 1, as the kubelet takes it', () => {
    const c: V1Container = { name: 'app', resources: { limits: { cpu: '1250m', memory: '64Mi' } } };
    const e = ctx(mkPod([c]));
    expect(resourceFieldRefValue(c, { resource: 'limits.cpu', divisor: '0' }, e)).toBe('2');
    expect(resourceFieldRefValue(c, { resource: 'limits.memory', divisor: 0 }, e)).toBe(String(64 * 1024 * 1024));
  });

  it('reads another container resources by containerName', () => {
    const app: V1Container = { name: 'app', env: [{ name: 'M', valueFrom: { resourceFieldRef: { containerName: 'side', resource: 'limits.memory', divisor: '1Mi' } } }] };
    const side: V1Container = { name: 'side', resources: { limits: { memory: '64Mi' } } };
    const pod = mkPod([app, side]);
    expect(makeEnvironment(app, ctx(pod))).toEqual([{ key: 'M', value: '64' }]);
  });

  it('reads configMapKeyRef and secretKeyRef', () => {
    const env = envOf([
      { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'MODE' } } },
      { name: 'PW', valueFrom: { secretKeyRef: { name: 'creds', key: 'PASSWORD' } } },
    ]);
    expect(env).toEqual({ MODE: 'fast', PW: 's3cret' });
  });

  it('skips optional refs to missing objects or keys', () => {
    const env = envOf([
      { name: 'A', valueFrom: { configMapKeyRef: { name: 'nope', key: 'X', optional: true } } },
      { name: 'B', valueFrom: { configMapKeyRef: { name: 'settings', key: 'NOPE', optional: true } } },
      { name: 'C', valueFrom: { secretKeyRef: { name: 'nope', key: 'X', optional: true } } },
      { name: 'D', valueFrom: { secretKeyRef: { name: 'creds', key: 'NOPE', optional: true } } },
    ]);
    expect(env).toEqual({});
  });

  const missing: [string, V1EnvVar, string][] = [
    ['missing configmap', { name: 'A', valueFrom: { configMapKeyRef: { name: 'nope', key: 'X' } } }, 'configmap "nope" not found'],
    ['missing configmap key', { name: 'A', valueFrom: { configMapKeyRef: { name: 'settings', key: 'NOPE' } } }, "couldn't find key NOPE in ConfigMap shop/settings"],
    // binaryData is for volumes: env only reads data.
    ['binaryData key', { name: 'A', valueFrom: { configMapKeyRef: { name: 'settings', key: 'BLOB' } } }, "couldn't find key BLOB in ConfigMap shop/settings"],
    ['inherited property name', { name: 'A', valueFrom: { configMapKeyRef: { name: 'settings', key: 'toString' } } }, "couldn't find key toString in ConfigMap shop/settings"],
    ['missing secret', { name: 'A', valueFrom: { secretKeyRef: { name: 'nope', key: 'X' } } }, 'secret "nope" not found'],
    ['missing secret key', { name: 'A', valueFrom: { secretKeyRef: { name: 'creds', key: 'NOPE' } } }, "couldn't find key NOPE in Secret shop/creds"],
  ];
  it.each(missing)('%s is a ContainerConfigError naming its env entry', (_name, v, message) => {
    const c: V1Container = { name: 'app', env: [{ name: 'FIRST', value: '1' }, v] };
    let err: unknown;
    try {
      makeEnvironment(c, ctx(mkPod([c])));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ContainerConfigError);
    expect((err as ContainerConfigError).message).toBe(message);
    expect((err as ContainerConfigError).code).toBe('CREATE_CONTAINER_CONFIG_ERROR');
    expect((err as ContainerConfigError).field).toBe('env[1]');
  });

  it.each([
    ['envFrom[1].configMapRef', { configMapRef: { name: 'nope' } }, 'configmap "nope" not found'],
    ['envFrom[1].secretRef', { secretRef: { name: 'nope' } }, 'secret "nope" not found'],
  ])('a missing %s names that field, not env', (field, from, message) => {
    const c: V1Container = { name: 'app', envFrom: [{ configMapRef: { name: 'settings' } }, from] };
    expect(() => makeEnvironment(c, ctx(mkPod([c])))).toThrow(expect.objectContaining({ message, field }));
  });

  it('looks objects up in the pod namespace only', () => {
    const pod = mkPod();
    pod.metadata = { ...pod.metadata, namespace: 'other' };
    const c: V1Container = { name: 'app', env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'MODE' } } }] };
    expect(makeEnvironment(c, ctx(pod))).toEqual([{ key: 'MODE', value: 'from-other' }]);
  });

  it('imports envFrom with prefixes and lets env override it', () => {
    const env = envOf([{ name: 'CM_MODE', value: 'slow' }, { name: 'X', value: '$(CM_LEVEL)/$(S_USER)' }], {
      envFrom: [
        { prefix: 'CM_', configMapRef: { name: 'settings' } },
        { prefix: 'S_', secretRef: { name: 'creds' } },
        { configMapRef: { name: 'absent', optional: true } },
      ],
    });
    expect(env).toEqual({ CM_MODE: 'slow', CM_LEVEL: '3', S_PASSWORD: 's3cret', S_USER: 'admin', X: '3/admin' });
  });

  it('fails on a missing, non-optional envFrom source', () => {
    const c: V1Container = { name: 'app', envFrom: [{ secretRef: { name: 'absent' } }] };
    expect(() => makeEnvironment(c, ctx(mkPod([c])))).toThrow(ContainerConfigError);
  });
});

describe('expandCommand', () => {
  it('expands command and args with the final environment', () => {
    const c: V1Container = { name: 'app', command: ['sh', '-c', 'echo $(MSG) $$(MSG) $(NOPE)'], args: ['$(N)'] };
    expect(expandCommand(c, [{ key: 'MSG', value: 'hi' }, { key: 'N', value: '3' }])).toEqual({
      command: ['sh', '-c', 'echo hi $(MSG) $(NOPE)'],
      args: ['3'],
    });
    expect(expandCommand({ name: 'x' }, [])).toEqual({ command: [], args: [] });
  });
});
