import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ContainerConfigError, type EnvContext, expandCommand, makeEnvironment } from '../../src/lib/kuberuntime/env.js';
import { fromServices, serviceEnvVars } from '../../src/lib/kuberuntime/service-env.js';

const svc = (namespace: string, name: string, clusterIP: string, ports: Array<{ name?: string; port: number; protocol?: string }>): V1Service => ({
  metadata: { namespace, name },
  spec: { clusterIP, ports },
});

const services = [
  svc('default', 'kubernetes', '10.0.0.1', [{ name: 'https', port: 443, protocol: 'TCP' }]),
  svc('shop', 'fooservice', '10.0.0.11', [{ port: 8765, protocol: 'TCP' }]),
  svc('shop', 'web-front', '10.0.0.12', [{ name: 'http', port: 80 }, { name: 'dns-udp', port: 53, protocol: 'UDP' }]),
  svc('shop', 'headless', 'None', [{ port: 1 }]),
  svc('other', 'elsewhere', '10.0.0.13', [{ port: 99 }]),
];

describe('service environment variables (pkg/kubelet/envvars, getServiceEnvVarMap)', () => {
  it("each service's variables in the kubelet's order, named ports, the Docker link variables, IPv6 in brackets", () => {
    expect(fromServices([services[2]!])).toEqual([
      { name: 'WEB_FRONT_SERVICE_HOST', value: '10.0.0.12' },
      { name: 'WEB_FRONT_SERVICE_PORT', value: '80' },
      { name: 'WEB_FRONT_SERVICE_PORT_HTTP', value: '80' },
      { name: 'WEB_FRONT_SERVICE_PORT_DNS_UDP', value: '53' },
      { name: 'WEB_FRONT_PORT', value: 'tcp://10.0.0.12:80' },
      { name: 'WEB_FRONT_PORT_80_TCP', value: 'tcp://10.0.0.12:80' },
      { name: 'WEB_FRONT_PORT_80_TCP_PROTO', value: 'tcp' },
      { name: 'WEB_FRONT_PORT_80_TCP_PORT', value: '80' },
      { name: 'WEB_FRONT_PORT_80_TCP_ADDR', value: '10.0.0.12' },
      { name: 'WEB_FRONT_PORT_53_UDP', value: 'udp://10.0.0.12:53' },
      { name: 'WEB_FRONT_PORT_53_UDP_PROTO', value: 'udp' },
      { name: 'WEB_FRONT_PORT_53_UDP_PORT', value: '53' },
      { name: 'WEB_FRONT_PORT_53_UDP_ADDR', value: '10.0.0.12' },
    ]);
    expect(fromServices([svc('x', 'v6', 'fd00::1', [{ port: 80 }])]).find((e) => e.name === 'V6_PORT')?.value).toBe('tcp://[fd00::1]:80');
    expect(fromServices([services[3]!])).toEqual([]);
  });

  it("the namespace's services with enableServiceLinks, the default namespace's kubernetes always, never another namespace's or a headless one", () => {
    const linked = serviceEnvVars(services, 'shop', true);
    expect(linked.get('FOOSERVICE_SERVICE_HOST')).toBe('10.0.0.11');
    expect(linked.get('FOOSERVICE_PORT_8765_TCP_ADDR')).toBe('10.0.0.11');
    expect(linked.get('KUBERNETES_SERVICE_HOST')).toBe('10.0.0.1');
    expect(linked.get('KUBERNETES_SERVICE_PORT_HTTPS')).toBe('443');
    expect([...linked.keys()].some((k) => k.startsWith('ELSEWHERE') || k.startsWith('HEADLESS'))).toBe(false);
    const unlinked = serviceEnvVars(services, 'shop', false);
    expect([...unlinked.keys()].every((k) => k.startsWith('KUBERNETES_'))).toBe(true);
    expect(unlinked.get('KUBERNETES_PORT')).toBe('tcp://10.0.0.1:443');
  });

  const pod = (extra: Partial<NonNullable<V1Pod['spec']>> = {}, annotations?: Record<string, string>): V1Pod => ({
    metadata: { name: 'p', namespace: 'shop', uid: 'u', ...(annotations ? { annotations } : {}) },
    spec: {
      containers: [
        {
          name: 'c',
          image: 'i',
          env: [
            { name: 'FOOSERVICE_SERVICE_PORT', value: 'mine' },
            { name: 'URL', value: 'http://$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)' },
          ],
          args: ['$(KUBERNETES_SERVICE_HOST)'],
        },
      ],
      ...extra,
    },
  });
  const ctx = (p: V1Pod, synced = true): EnvContext => ({
    pod: p,
    podIPs: [],
    hostIPs: [],
    nodeName: 'n',
    objects: { configMaps: [], secrets: [] },
    nodeAllocatable: { cpuMillis: 1000, memoryBytes: 1, ephemeralStorageBytes: 0 },
    services: { synced, list: () => services },
  });

  it("a container's environment: its own variables first (referring to service ones), then the service variables it does not set", () => {
    const p = pod();
    const env = makeEnvironment(p.spec!.containers[0]!, ctx(p));
    expect(env.slice(0, 2)).toEqual([
      { key: 'FOOSERVICE_SERVICE_PORT', value: 'mine' },
      { key: 'URL', value: 'http://10.0.0.11:mine' },
    ]);
    expect(env.filter((e) => e.key === 'FOOSERVICE_SERVICE_PORT')).toHaveLength(1);
    expect(env).toContainEqual({ key: 'FOOSERVICE_SERVICE_HOST', value: '10.0.0.11' });
    expect(env).toContainEqual({ key: 'WEB_FRONT_SERVICE_PORT_HTTP', value: '80' });
    expect(expandCommand(p.spec!.containers[0]!, env).args).toEqual(['10.0.0.1']);
    // Without an API server there are none.
    expect(makeEnvironment(p.spec!.containers[0]!, { ...ctx(p), services: undefined }).map((e) => e.key)).toEqual(['FOOSERVICE_SERVICE_PORT', 'URL']);
  });

  it('enableServiceLinks: false leaves only the master service', () => {
    const p = pod({ enableServiceLinks: false });
    const keys = makeEnvironment(p.spec!.containers[0]!, ctx(p)).map((e) => e.key);
    expect(keys).toContain('KUBERNETES_SERVICE_HOST');
    expect(keys).not.toContain('FOOSERVICE_SERVICE_HOST');
  });

  it('an API pod waits for the services to be listed once; a static pod does not', () => {
    const p = pod();
    expect(() => makeEnvironment(p.spec!.containers[0]!, ctx(p, false))).toThrow(ContainerConfigError);
    expect(() => makeEnvironment(p.spec!.containers[0]!, ctx(p, false))).toThrow('services have not yet been read at least once, cannot construct envvars');
    const s = pod({}, { 'kubernetes.io/config.source': 'file' });
    expect(makeEnvironment(s.spec!.containers[0]!, ctx(s, false)).map((e) => e.key)).toContain('KUBERNETES_SERVICE_HOST');
  });
});
