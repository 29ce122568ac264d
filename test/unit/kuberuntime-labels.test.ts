import { describe, expect, it } from 'vitest';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  CONTAINER_HASH_ANNOTATION,
  CONTAINER_NAME_LABEL,
  CONTAINER_PORTS_ANNOTATION,
  CONTAINER_PRESTOP_HANDLER_ANNOTATION,
  CONTAINER_RESTART_COUNT_ANNOTATION,
  CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION,
  CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION,
  POD_DELETION_GRACE_PERIOD_ANNOTATION,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_TERMINATION_GRACE_PERIOD_ANNOTATION,
  POD_UID_LABEL,
  KLET_INSTANCE_LABEL,
  containerAnnotations,
  containerLabels,
  instanceSelector,
  kletInstance,
  podSandboxAnnotations,
  podSandboxLabels,
  readContainerLabels,
} from '../../src/lib/kuberuntime/labels.js';

const pod: V1Pod = {
  metadata: {
    name: 'web',
    namespace: 'shop',
    uid: '6f1c-uid',
    labels: { app: 'web', [POD_NAME_LABEL]: 'spoofed' },
    annotations: { 'example.com/note': 'hello' },
  },
  spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }], terminationGracePeriodSeconds: 45 },
};

describe('kubelet label and annotation keys', () => {
  it('uses the kubelet key strings', () => {
    expect({
      POD_NAME_LABEL,
      POD_NAMESPACE_LABEL,
      POD_UID_LABEL,
      CONTAINER_NAME_LABEL,
      POD_DELETION_GRACE_PERIOD_ANNOTATION,
      POD_TERMINATION_GRACE_PERIOD_ANNOTATION,
      CONTAINER_HASH_ANNOTATION,
      CONTAINER_RESTART_COUNT_ANNOTATION,
      CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION,
      CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION,
      CONTAINER_PRESTOP_HANDLER_ANNOTATION,
      CONTAINER_PORTS_ANNOTATION,
    }).toEqual({
      POD_NAME_LABEL: 'io.kubernetes.pod.name',
      POD_NAMESPACE_LABEL: 'io.kubernetes.pod.namespace',
      POD_UID_LABEL: 'io.kubernetes.pod.uid',
      CONTAINER_NAME_LABEL: 'io.kubernetes.container.name',
      POD_DELETION_GRACE_PERIOD_ANNOTATION: 'io.kubernetes.pod.deletionGracePeriod',
      POD_TERMINATION_GRACE_PERIOD_ANNOTATION: 'io.kubernetes.pod.terminationGracePeriod',
      CONTAINER_HASH_ANNOTATION: 'io.kubernetes.container.hash',
      CONTAINER_RESTART_COUNT_ANNOTATION: 'io.kubernetes.container.restartCount',
      CONTAINER_TERMINATION_MESSAGE_PATH_ANNOTATION: 'io.kubernetes.container.terminationMessagePath',
      CONTAINER_TERMINATION_MESSAGE_POLICY_ANNOTATION: 'io.kubernetes.container.terminationMessagePolicy',
      CONTAINER_PRESTOP_HANDLER_ANNOTATION: 'io.kubernetes.container.preStopHandler',
      CONTAINER_PORTS_ANNOTATION: 'io.kubernetes.container.ports',
    });
  });
});

describe('sandbox labels and annotations', () => {
  it('are the pod labels plus name, namespace and UID (which win over pod labels)', () => {
    expect(podSandboxLabels(pod)).toEqual({
      app: 'web',
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'shop',
      'io.kubernetes.pod.uid': '6f1c-uid',
    });
  });

  it('annotations are the pod annotations', () => {
    expect(podSandboxAnnotations(pod)).toEqual({ 'example.com/note': 'hello' });
    expect(podSandboxAnnotations({ metadata: { name: 'x' } })).toEqual({});
  });

  it('defaults the namespace', () => {
    expect(podSandboxLabels({ metadata: { name: 'x', uid: 'u' } })['io.kubernetes.pod.namespace']).toBe('default');
  });
});

describe('container labels and annotations', () => {
  const c: V1Container = { name: 'nginx', image: 'nginx:1.27' };

  it('labels name the pod and the container, and nothing else', () => {
    expect(containerLabels(pod, c)).toEqual({
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'shop',
      'io.kubernetes.pod.uid': '6f1c-uid',
      'io.kubernetes.container.name': 'nginx',
    });
  });

  it('annotations carry hash, restart count, termination message settings and grace period', () => {
    expect(containerAnnotations(pod, c, { hash: 'a1b2c3', restartCount: 2, type: 'regular' })).toEqual({
      'io.kubernetes.container.hash': 'a1b2c3',
      'io.kubernetes.container.restartCount': '2',
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.container.type': 'regular',
      'io.kubernetes.pod.terminationGracePeriod': '45',
    });
  });

  it('adds deletion grace period, preStop handler and ports as JSON when set', () => {
    const deleting: V1Pod = { ...pod, metadata: { ...pod.metadata, deletionGracePeriodSeconds: 10 } };
    const full: V1Container = {
      ...c,
      terminationMessagePath: '/tmp/msg',
      terminationMessagePolicy: 'FallbackToLogsOnError',
      lifecycle: { preStop: { exec: { command: ['nginx', '-s', 'quit'] } } },
      ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
    };
    const a = containerAnnotations(deleting, full, { hash: 'ff', restartCount: 0, type: 'init' });
    expect(a['io.kubernetes.pod.deletionGracePeriod']).toBe('10');
    expect(a['io.kubernetes.container.terminationMessagePath']).toBe('/tmp/msg');
    expect(a['io.kubernetes.container.terminationMessagePolicy']).toBe('FallbackToLogsOnError');
    expect(JSON.parse(a['io.kubernetes.container.preStopHandler'] ?? '')).toEqual({ exec: { command: ['nginx', '-s', 'quit'] } });
    expect(JSON.parse(a['io.kubernetes.container.ports'] ?? '')).toEqual([{ name: 'http', containerPort: 80, protocol: 'TCP' }]);
    expect(a['io.kubernetes.container.type']).toBe('init');
  });

  it('omits ports and preStop when there are none', () => {
    const a = containerAnnotations(pod, { ...c, ports: [] }, { hash: 'ff', restartCount: 0, type: 'regular' });
    expect(a).not.toHaveProperty('io.kubernetes.container.ports');
    expect(a).not.toHaveProperty('io.kubernetes.container.preStopHandler');
  });

  it('round-trips through readContainerLabels', () => {
    for (const type of ['regular', 'init'] as const) {
      const info = readContainerLabels(containerLabels(pod, c), containerAnnotations(pod, c, { hash: 'abc123', restartCount: 7, type }));
      expect(info).toEqual({
        podName: 'web',
        podNamespace: 'shop',
        podUid: '6f1c-uid',
        containerName: 'nginx',
        hash: 'abc123',
        restartCount: 7,
        type,
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        podTerminationGracePeriod: 45,
      });
    }
  });

  it('reads containers created by someone else with defaults', () => {
    expect(readContainerLabels({}, { 'io.kubernetes.container.restartCount': 'x' })).toEqual({
      podName: '',
      podNamespace: '',
      podUid: '',
      containerName: '',
      hash: '',
      restartCount: 0,
      type: 'regular',
      terminationMessagePath: '',
      terminationMessagePolicy: '',
      podTerminationGracePeriod: null,
    });
  });
});

describe('klet instance label', () => {
  it('names the root dir and node name: stable, and different for either', () => {
    const a = kletInstance('/var/lib/klet', 'node-1');
    expect(a).toMatch(/^[0-9a-f]{20}$/);
    expect(kletInstance('/var/lib/klet/', 'node-1')).toBe(a);
    expect(kletInstance('/var/lib/klet2', 'node-1')).not.toBe(a);
    expect(kletInstance('/var/lib/klet', 'node-2')).not.toBe(a);
    expect(instanceSelector({ rootDir: '/var/lib/klet', nodeName: 'node-1' })).toEqual({ [KLET_INSTANCE_LABEL]: a });
  });

  it('is on sandboxes and containers when given, over a pod label of the same key', () => {
    const spoof: V1Pod = { ...pod, metadata: { ...pod.metadata, labels: { [KLET_INSTANCE_LABEL]: 'someone-else' } } };
    expect(podSandboxLabels(spoof, 'abc')[KLET_INSTANCE_LABEL]).toBe('abc');
    expect(containerLabels(pod, { name: 'c' }, 'abc')[KLET_INSTANCE_LABEL]).toBe('abc');
  });
});
