import type { V1Container, V1Pod, V1PodSpec, V1Secret } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { applyPodDefaults, applySecretDefaults, cloneModel } from '../../src/lib/pod/defaults.js';
import { defaultImagePullPolicy, parseImageReference } from '../../src/lib/image/reference.js';

const DIGEST = 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';

function pod(spec: Partial<V1PodSpec> = {}, container: Partial<V1Container> = {}): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p' },
    spec: { containers: [{ name: 'c', image: 'nginx:1.27', ...container }], ...spec },
  };
}

function defaulted(spec: Partial<V1PodSpec> = {}, container: Partial<V1Container> = {}): V1Pod {
  return applyPodDefaults(pod(spec, container));
}

describe('defaultImagePullPolicy', () => {
  const cases: [string, string][] = [
    ['nginx', 'Always'],
    ['nginx:latest', 'Always'],
    ['docker.io/library/nginx', 'Always'],
    ['nginx:1.27', 'IfNotPresent'],
    [`nginx@${DIGEST}`, 'IfNotPresent'],
    [`nginx:latest@${DIGEST}`, 'Always'],
    [`nginx:1.27@${DIGEST}`, 'IfNotPresent'],
    ['localhost:5000/nginx', 'Always'],
    ['localhost:5000/nginx:1.0', 'IfNotPresent'],
    ['registry.k8s.io/etcd:3.5.15-0', 'IfNotPresent'],
    ['[::1]:5000/team/app:v2', 'IfNotPresent'],
    // Unparseable references: Go's ParseImageName fails and no tag means IfNotPresent.
    ['NGINX', 'IfNotPresent'],
    ['', 'IfNotPresent'],
  ];
  it.each(cases)('%j -> %s', (image, want) => {
    expect(defaultImagePullPolicy(image)).toBe(want);
  });

  it('does not mistake a registry port for a tag', () => {
    expect(parseImageReference('localhost:5000/nginx')).toEqual({ name: 'localhost:5000/nginx', tag: undefined, digest: undefined });
  });
});

describe('applyPodDefaults', () => {
  // [what, pod, path into the defaulted pod, expected value]
  const cases: [string, V1Pod, (p: V1Pod) => unknown, unknown][] = [
    ['restartPolicy Always', pod(), (p) => p.spec?.restartPolicy, 'Always'],
    ['restartPolicy kept', pod({ restartPolicy: 'Never' }), (p) => p.spec?.restartPolicy, 'Never'],
    ['terminationGracePeriodSeconds 30', pod(), (p) => p.spec?.terminationGracePeriodSeconds, 30],
    ['terminationGracePeriodSeconds 0 kept (pointer field)', pod({ terminationGracePeriodSeconds: 0 }), (p) => p.spec?.terminationGracePeriodSeconds, 0],
    ['dnsPolicy ClusterFirst', pod(), (p) => p.spec?.dnsPolicy, 'ClusterFirst'],
    ['dnsPolicy ClusterFirst with hostNetwork too', pod({ hostNetwork: true }), (p) => p.spec?.dnsPolicy, 'ClusterFirst'],
    ['schedulerName', pod(), (p) => p.spec?.schedulerName, 'default-scheduler'],
    ['securityContext {}', pod(), (p) => p.spec?.securityContext, {}],
    ['enableServiceLinks true', pod(), (p) => p.spec?.enableServiceLinks, true],
    ['enableServiceLinks false kept', pod({ enableServiceLinks: false }), (p) => p.spec?.enableServiceLinks, false],
    ['priority stays unset', pod(), (p) => p.spec?.priority, undefined],
    ['serviceAccountName from deprecated serviceAccount', pod({ serviceAccount: 'sa' }), (p) => p.spec?.serviceAccountName, 'sa'],
    ['imagePullPolicy for a tag', pod(), (p) => p.spec?.containers[0]?.imagePullPolicy, 'IfNotPresent'],
    ['imagePullPolicy for latest', pod({}, { image: 'nginx' }), (p) => p.spec?.containers[0]?.imagePullPolicy, 'Always'],
    ['imagePullPolicy kept', pod({}, { image: 'nginx', imagePullPolicy: 'Never' }), (p) => p.spec?.containers[0]?.imagePullPolicy, 'Never'],
    ['terminationMessagePath', pod(), (p) => p.spec?.containers[0]?.terminationMessagePath, '/dev/termination-log'],
    ['terminationMessagePolicy', pod(), (p) => p.spec?.containers[0]?.terminationMessagePolicy, 'File'],
    ['port protocol TCP', pod({}, { ports: [{ containerPort: 80 }] }), (p) => p.spec?.containers[0]?.ports?.[0], { containerPort: 80, protocol: 'TCP' }],
    [
      'hostPort = containerPort with hostNetwork',
      pod({ hostNetwork: true }, { ports: [{ containerPort: 80, protocol: 'UDP' }] }),
      (p) => p.spec?.containers[0]?.ports?.[0],
      { containerPort: 80, hostPort: 80, protocol: 'UDP' },
    ],
    ['no hostPort without hostNetwork', pod({}, { ports: [{ containerPort: 80 }] }), (p) => p.spec?.containers[0]?.ports?.[0]?.hostPort, undefined],
    [
      'probe thresholds and timings',
      pod({}, { livenessProbe: { exec: { command: ['true'] } } }),
      (p) => p.spec?.containers[0]?.livenessProbe,
      { exec: { command: ['true'] }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 },
    ],
    [
      'probe values kept, zero ones defaulted',
      pod({}, { readinessProbe: { tcpSocket: { port: 80 }, periodSeconds: 5, timeoutSeconds: 0 } }),
      (p) => p.spec?.containers[0]?.readinessProbe,
      { tcpSocket: { port: 80 }, timeoutSeconds: 1, periodSeconds: 5, successThreshold: 1, failureThreshold: 3 },
    ],
    ['httpGet path and scheme', pod({}, { startupProbe: { httpGet: { port: 'http' } } }), (p) => p.spec?.containers[0]?.startupProbe?.httpGet, { port: 'http', path: '/', scheme: 'HTTP' }],
    [
      'lifecycle httpGet too',
      pod({}, { lifecycle: { preStop: { httpGet: { port: 8080 } } } }),
      (p) => p.spec?.containers[0]?.lifecycle?.preStop?.httpGet,
      { port: 8080, path: '/', scheme: 'HTTP' },
    ],
    [
      'env fieldRef apiVersion v1',
      pod({}, { env: [{ name: 'N', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }),
      (p) => p.spec?.containers[0]?.env?.[0]?.valueFrom?.fieldRef,
      { fieldPath: 'metadata.name', apiVersion: 'v1' },
    ],
    [
      'requests default to limits',
      pod({}, { resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '500m' } } }),
      (p) => p.spec?.containers[0]?.resources?.requests,
      { cpu: '500m', memory: '1Gi' },
    ],
    [
      'init containers are defaulted too',
      pod({ initContainers: [{ name: 'i', image: 'busybox', resources: { limits: { cpu: '1' } } }] }),
      (p) => p.spec?.initContainers?.[0],
      {
        name: 'i',
        image: 'busybox',
        imagePullPolicy: 'Always',
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        resources: { limits: { cpu: '1' }, requests: { cpu: '1' } },
      },
    ],
    ['a volume without a source is an emptyDir', pod({ volumes: [{ name: 'v' }] }), (p) => p.spec?.volumes?.[0], { name: 'v', emptyDir: { medium: '' } }],
    ['emptyDir medium ""', pod({ volumes: [{ name: 'v', emptyDir: {} }] }), (p) => p.spec?.volumes?.[0]?.emptyDir, { medium: '' }],
    ['emptyDir medium kept', pod({ volumes: [{ name: 'v', emptyDir: { medium: 'Memory' } }] }), (p) => p.spec?.volumes?.[0]?.emptyDir, { medium: 'Memory' }],
    ['hostPath type ""', pod({ volumes: [{ name: 'v', hostPath: { path: '/x' } }] }), (p) => p.spec?.volumes?.[0]?.hostPath, { path: '/x', type: '' }],
    ['configMap defaultMode 420', pod({ volumes: [{ name: 'v', configMap: { name: 'cm' } }] }), (p) => p.spec?.volumes?.[0]?.configMap?.defaultMode, 0o644],
    ['secret defaultMode 420', pod({ volumes: [{ name: 'v', secret: { secretName: 's' } }] }), (p) => p.spec?.volumes?.[0]?.secret?.defaultMode, 420],
    ['secret defaultMode kept', pod({ volumes: [{ name: 'v', secret: { secretName: 's', defaultMode: 0o400 } }] }), (p) => p.spec?.volumes?.[0]?.secret?.defaultMode, 0o400],
    [
      'downwardAPI defaultMode and fieldRef apiVersion',
      pod({ volumes: [{ name: 'v', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } }] }),
      (p) => p.spec?.volumes?.[0]?.downwardAPI,
      { defaultMode: 420, items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels', apiVersion: 'v1' } }] },
    ],
    [
      'projected token expiration',
      pod({ volumes: [{ name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }] }),
      (p) => p.spec?.volumes?.[0]?.projected,
      { defaultMode: 420, sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }] },
    ],
  ];
  it.each(cases)('%s', (_what, input, get, want) => {
    expect(get(applyPodDefaults(input))).toEqual(want);
  });

  it('is pure: the input is not changed', () => {
    const input = pod({ volumes: [{ name: 'v' }] }, { ports: [{ containerPort: 80 }] });
    const before = structuredClone(input);
    applyPodDefaults(input);
    expect(input).toEqual(before);
  });

  it('is idempotent', () => {
    const once = defaulted({ hostNetwork: true, volumes: [{ name: 'v' }] }, { ports: [{ containerPort: 80 }], livenessProbe: { httpGet: { port: 80 } } });
    expect(applyPodDefaults(once)).toEqual(once);
  });

  it('gives a pod without spec an empty container list (validation then says Required)', () => {
    const out = applyPodDefaults({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } });
    expect(out.spec?.containers).toEqual([]);
    expect(out.spec?.restartPolicy).toBe('Always');
  });
});

describe('applySecretDefaults', () => {
  it('defaults type to Opaque and merges stringData into data as base64', () => {
    const secret: V1Secret = { metadata: { name: 's' }, data: { a: 'YQ==', b: 'b2xk' }, stringData: { b: 'new', c: 'ünï' } };
    const out = applySecretDefaults(secret);
    expect(out.type).toBe('Opaque');
    expect(out.stringData).toBeUndefined();
    expect(out.data).toEqual({ a: 'YQ==', b: Buffer.from('new').toString('base64'), c: Buffer.from('ünï').toString('base64') });
    expect(secret.stringData).toEqual({ b: 'new', c: 'ünï' });
  });

  it('keeps an explicit type', () => {
    expect(applySecretDefaults({ type: 'kubernetes.io/tls' }).type).toBe('kubernetes.io/tls');
  });
});

describe('cloneModel', () => {
  it('keeps prototypes and copies dates', () => {
    class Thing {
      when = new Date(0);
      list = [1, { a: 2 }];
    }
    const t = new Thing();
    const c = cloneModel(t);
    expect(c).toBeInstanceOf(Thing);
    expect(c).toEqual(t);
    expect(c.when).not.toBe(t.when);
    expect(c.list[1]).not.toBe(t.list[1]);
  });
});
