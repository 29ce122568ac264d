import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Container, V1ObjectMeta, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { MountPropagation, NamespaceMode, Protocol, SecurityProfile_ProfileType } from '../../src/lib/cri/gen/api.js';
import {
  DEFAULT_MASKED_PATHS,
  DEFAULT_READONLY_PATHS,
  generateContainerConfig,
  generatePodSandboxConfig,
  seccompProfileRoot,
  type ContainerConfigContext,
} from '../../src/lib/kuberuntime/config.js';
import type { ResolvConf } from '../../src/lib/pod/dns.js';
import { ContainerConfigError } from '../../src/lib/kuberuntime/env.js';
import { containerHash } from '../../src/lib/kuberuntime/hash.js';

const host: ResolvConf = { servers: ['10.0.0.2', '10.0.0.3'], searches: ['corp.example.com', 'lab.example.com'], options: ['ndots:2', 'edns0'] };

function mkPod(spec: Partial<V1PodSpec> = {}, meta: Partial<V1ObjectMeta> = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'shop', uid: 'uid-1', labels: { app: 'web' }, annotations: { note: 'n' }, ...meta },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36' }], ...spec },
  };
}
function sandboxConfig(pod: V1Pod, attempt = 0) {
  return generatePodSandboxConfig(pod, { attempt, logDirectory: '/var/log/pods/shop_web_uid-1', dnsConfig: host, hostname: 'web', seccompProfileRoot: '/var/lib/klet/seccomp' });
}

describe('generatePodSandboxConfig', () => {
  it("runs the sandbox under the runtime's default seccomp profile, whatever the pod names (the kubelet's, since kubernetes#84623)", () => {
    const runtimeDefault = { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' };
    for (const seccompProfile of [undefined, { type: 'Localhost', localhostProfile: 'my.json' }, { type: 'Unconfined' }]) {
      const pod = mkPod(seccompProfile ? { securityContext: { seccompProfile } } : {});
      expect(sandboxConfig(pod).linux?.securityContext?.seccomp).toEqual(runtimeDefault);
    }
    expect(seccompProfileRoot('/tmp/k/')).toBe('/tmp/k/seccomp');
  });

  it('fills metadata, hostname, log directory, labels and annotations', () => {
    const cfg = sandboxConfig(mkPod(), 3);
    expect(cfg.metadata).toEqual({ name: 'web', namespace: 'shop', uid: 'uid-1', attempt: 3 });
    expect(cfg.hostname).toBe('web');
    expect(cfg.logDirectory).toBe('/var/log/pods/shop_web_uid-1');
    expect(cfg.labels).toEqual({
      app: 'web',
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'shop',
      'io.kubernetes.pod.uid': 'uid-1',
    });
    expect(cfg.annotations).toEqual({ note: 'n' });
    expect(cfg.dnsConfig).toEqual(host);
  });

  it('maps only ports with a hostPort', () => {
    const pod = mkPod({
      containers: [
        {
          name: 'app',
          ports: [
            { containerPort: 80, hostPort: 8080 },
            { containerPort: 53, hostPort: 5353, protocol: 'UDP', hostIP: '127.0.0.1' },
            { containerPort: 9090 },
          ],
        },
        { name: 'side', ports: [{ containerPort: 7000, hostPort: 7000, protocol: 'SCTP' }] },
      ],
    });
    expect(sandboxConfig(pod).portMappings).toEqual([
      { protocol: Protocol.TCP, containerPort: 80, hostPort: 8080, hostIp: '' },
      { protocol: Protocol.UDP, containerPort: 53, hostPort: 5353, hostIp: '127.0.0.1' },
      { protocol: Protocol.SCTP, containerPort: 7000, hostPort: 7000, hostIp: '' },
    ]);
    expect(sandboxConfig(mkPod()).portMappings).toEqual([]);
  });

  it.each([
    { name: 'defaults', spec: {}, want: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD } },
    { name: 'hostNetwork', spec: { hostNetwork: true }, want: { network: NamespaceMode.NODE, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD } },
    { name: 'hostPID', spec: { hostPID: true }, want: { network: NamespaceMode.POD, pid: NamespaceMode.NODE, ipc: NamespaceMode.POD } },
    { name: 'hostIPC', spec: { hostIPC: true }, want: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.NODE } },
    { name: 'shareProcessNamespace', spec: { shareProcessNamespace: true }, want: { network: NamespaceMode.POD, pid: NamespaceMode.POD, ipc: NamespaceMode.POD } },
    { name: 'hostPID wins over shareProcessNamespace', spec: { hostPID: true, shareProcessNamespace: true }, want: { network: NamespaceMode.POD, pid: NamespaceMode.NODE, ipc: NamespaceMode.POD } },
  ] as { name: string; spec: Partial<V1PodSpec>; want: object }[])('namespace options: $name', ({ spec, want }) => {
    expect(sandboxConfig(mkPod(spec)).linux?.securityContext?.namespaceOptions).toEqual(want);
  });

  it('carries the pod security context and sysctls', () => {
    const pod = mkPod({
      securityContext: { runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000], sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] },
      containers: [{ name: 'app', securityContext: { privileged: true } }],
    });
    const lx = sandboxConfig(pod).linux;
    expect(lx?.sysctls).toEqual({ 'net.core.somaxconn': '1024' });
    expect(lx?.securityContext?.runAsUser).toEqual({ value: 1000n });
    expect(lx?.securityContext?.runAsGroup).toEqual({ value: 3000n });
    expect(lx?.securityContext?.supplementalGroups).toEqual([4000n, 2000n]);
    expect(lx?.securityContext?.privileged).toBe(true);
    expect(sandboxConfig(mkPod()).linux?.securityContext?.privileged).toBe(false);
  });
});

describe('generateContainerConfig', () => {
  let dir: string;
  let data: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'klet-config-'));
    data = path.join(dir, 'volumes', 'data');
    fs.mkdirSync(data, { recursive: true });
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function ctx(pod: V1Pod, extra: Partial<ContainerConfigContext> = {}): ContainerConfigContext {
    return {
      env: {
        pod,
        podIPs: ['10.88.0.7'],
        hostIPs: ['192.168.1.10'],
        nodeName: 'node-1',
        objects: { configMaps: [], secrets: [] },
        nodeAllocatable: { cpuMillis: 2000, memoryBytes: 4 * 1024 ** 3, ephemeralStorageBytes: 0 },
      },
      volumes: new Map([['data', data]]),
      imageRef: 'sha256:feed',
      restartCount: 2,
      type: 'regular',
      etcHostsPath: path.join(dir, 'etc-hosts'),
      terminationMessagePath: path.join(dir, 'containers', 'app', 'abcd'),
      memoryCapacity: 4 * 1024 ** 3,
      seccompProfileRoot: '/var/lib/klet/seccomp',
      ...extra,
    };
  }
  function gen(c: V1Container, spec: Partial<V1PodSpec> = {}, extra: Partial<ContainerConfigContext> = {}) {
    const pod = mkPod({ ...spec, containers: [c] });
    return generateContainerConfig(pod, c, ctx(pod, extra));
  }

  it('fills metadata, image, log path, command, env, labels and annotations', () => {
    const c: V1Container = {
      name: 'app',
      image: 'busybox:1.36',
      command: ['sh', '-c'],
      args: ['echo $(GREETING)'],
      env: [{ name: 'GREETING', value: 'hi' }],
      workingDir: '/work',
      tty: true,
    };
    const cfg = gen(c);
    expect(cfg.metadata).toEqual({ name: 'app', attempt: 2 });
    expect(cfg.image).toEqual({ image: 'sha256:feed', userSpecifiedImage: 'busybox:1.36' });
    expect(cfg.logPath).toBe('app/2.log');
    expect(cfg.command).toEqual(['sh', '-c']);
    expect(cfg.args).toEqual(['echo hi']);
    expect(cfg.envs).toEqual([{ key: 'GREETING', value: 'hi' }]);
    expect(cfg.workingDir).toBe('/work');
    expect(cfg).toMatchObject({ tty: true, stdin: false, stdinOnce: false });
    expect(cfg.labels?.['io.kubernetes.container.name']).toBe('app');
    expect(cfg.annotations?.['io.kubernetes.container.hash']).toBe(containerHash(c));
    expect(cfg.annotations?.['io.kubernetes.container.restartCount']).toBe('2');
  });

  it('mounts volumes, subPaths, /etc/hosts and the termination log', () => {
    const c: V1Container = {
      name: 'app',
      volumeMounts: [
        { name: 'data', mountPath: '/data', readOnly: true },
        { name: 'data', mountPath: '/cache', subPath: 'cache/app', mountPropagation: 'HostToContainer' },
      ],
    };
    const cfg = gen(c);
    expect(cfg.mounts).toEqual([
      { containerPath: '/data', hostPath: data, readonly: true, propagation: MountPropagation.PROPAGATION_PRIVATE },
      { containerPath: '/cache', hostPath: path.join(data, 'cache', 'app'), readonly: false, propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER },
      { containerPath: '/etc/hosts', hostPath: path.join(dir, 'etc-hosts'), readonly: false, propagation: MountPropagation.PROPAGATION_PRIVATE },
      { containerPath: '/dev/termination-log', hostPath: path.join(dir, 'containers', 'app', 'abcd'), readonly: false, propagation: MountPropagation.PROPAGATION_PRIVATE },
    ]);
    // Planning creates nothing: the volume manager prepares subPaths (volume/subpath.ts).
    expect(fs.existsSync(path.join(data, 'cache', 'app'))).toBe(false);
  });

  it('uses prepared subPath binds and mounts API-data volumes read-only', () => {
    const c: V1Container = {
      name: 'app',
      volumeMounts: [
        { name: 'data', mountPath: '/data' },
        { name: 'data', mountPath: '/cache', subPath: 'cache' },
      ],
    };
    const cfg = gen(c, {}, { readOnlyVolumes: new Set(['data']), subPaths: new Map([[1, '/bind/target']]) });
    expect(cfg.mounts?.slice(0, 2)).toEqual([
      { containerPath: '/data', hostPath: data, readonly: true, propagation: MountPropagation.PROPAGATION_PRIVATE },
      { containerPath: '/cache', hostPath: '/bind/target', readonly: true, propagation: MountPropagation.PROPAGATION_PRIVATE },
    ]);
  });

  it('leaves out /etc/hosts on the host network and when the container mounts its own', () => {
    const hostNet = gen({ name: 'app' }, { hostNetwork: true }, { etcHostsPath: null });
    expect(hostNet.mounts?.map((m) => m.containerPath)).toEqual(['/dev/termination-log']);
    const own = gen({ name: 'app', volumeMounts: [{ name: 'data', mountPath: '/etc/hosts', subPath: 'hosts' }] });
    expect(own.mounts?.filter((m) => m.containerPath === '/etc/hosts')).toHaveLength(1);
  });

  it('mounts the termination message at a custom path, or not at all', () => {
    expect(gen({ name: 'app', terminationMessagePath: '/tmp/msg' }).mounts?.map((m) => m.containerPath)).toContain('/tmp/msg');
    expect(gen({ name: 'app' }, {}, { terminationMessagePath: null }).mounts?.map((m) => m.containerPath)).toEqual(['/etc/hosts']);
  });

  it('expands subPathExpr from the environment', () => {
    const c: V1Container = {
      name: 'app',
      env: [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
      volumeMounts: [{ name: 'data', mountPath: '/logs', subPathExpr: 'logs/$(POD)' }],
    };
    expect(gen(c).mounts?.[0]?.hostPath).toBe(path.join(data, 'logs', 'web'));
  });

  it('refuses a subPathExpr with an undefined variable instead of mounting the volume root', () => {
    const c: V1Container = { name: 'app', volumeMounts: [{ name: 'data', mountPath: '/logs', subPathExpr: '$(NOPE)' }] };
    expect(() => gen(c)).toThrow(new ContainerConfigError('missing value for NOPE'));
  });

  it('refuses subPaths that escape the volume and unknown volumes', () => {
    expect(() => gen({ name: 'app', volumeMounts: [{ name: 'data', mountPath: '/x', subPath: '../../etc' }] })).toThrow(ContainerConfigError);
    expect(() => gen({ name: 'app', volumeMounts: [{ name: 'nope', mountPath: '/x' }] })).toThrow(ContainerConfigError);
  });

  it('masks /proc paths for unprivileged containers only', () => {
    const plain = gen({ name: 'app' }).linux?.securityContext;
    expect(plain?.maskedPaths).toEqual(DEFAULT_MASKED_PATHS);
    expect(plain?.readonlyPaths).toEqual(DEFAULT_READONLY_PATHS);
    const priv = gen({ name: 'app', securityContext: { privileged: true } }).linux?.securityContext;
    expect(priv?.privileged).toBe(true);
    expect(priv?.maskedPaths).toEqual([]);
    expect(priv?.readonlyPaths).toEqual([]);
    const unmasked = gen({ name: 'app', securityContext: { procMount: 'Unmasked' } }).linux?.securityContext;
    expect(unmasked?.maskedPaths).toEqual([]);
  });

  it.each([
    { allow: undefined, noNewPrivs: false },
    { allow: true, noNewPrivs: false },
    { allow: false, noNewPrivs: true },
  ])('allowPrivilegeEscalation $allow → noNewPrivs $noNewPrivs', ({ allow, noNewPrivs }) => {
    expect(gen({ name: 'app', securityContext: { allowPrivilegeEscalation: allow } }).linux?.securityContext?.noNewPrivs).toBe(noNewPrivs);
  });

  it('passes capabilities, read-only rootfs and seccomp', () => {
    const sc = gen({
      name: 'app',
      securityContext: {
        capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] },
        readOnlyRootFilesystem: true,
        seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/audit.json' },
      },
    }).linux?.securityContext;
    expect(sc?.capabilities).toEqual({ addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] });
    expect(sc?.readonlyRootfs).toBe(true);
    // Resolved under <root-dir>/seccomp, as the kubelet does.
    expect(sc?.seccomp).toEqual({ profileType: SecurityProfile_ProfileType.Localhost, localhostRef: '/var/lib/klet/seccomp/profiles/audit.json' });
    expect(gen({ name: 'app' }).linux?.securityContext?.seccomp?.profileType).toBe(SecurityProfile_ProfileType.Unconfined);
    const fromPod = gen({ name: 'app' }, { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } });
    expect(fromPod.linux?.securityContext?.seccomp?.profileType).toBe(SecurityProfile_ProfileType.RuntimeDefault);
  });

  it('seccompDefault: a container whose pod and self name no profile gets RuntimeDefault; a named one stays as named', () => {
    const on = { seccompDefault: true };
    expect(gen({ name: 'app' }, {}, on).linux?.securityContext?.seccomp?.profileType).toBe(SecurityProfile_ProfileType.RuntimeDefault);
    expect(gen({ name: 'app', securityContext: { seccompProfile: { type: 'Unconfined' } } }, {}, on).linux?.securityContext?.seccomp?.profileType).toBe(
      SecurityProfile_ProfileType.Unconfined,
    );
    expect(gen({ name: 'app' }, { securityContext: { seccompProfile: { type: 'Unconfined' } } }, on).linux?.securityContext?.seccomp?.profileType).toBe(
      SecurityProfile_ProfileType.Unconfined,
    );
  });

  it('lets the container runAsUser/runAsGroup override the pod ones', () => {
    const podSc = { runAsUser: 1000, runAsGroup: 1000, supplementalGroups: [5], fsGroup: 7 };
    const inherited = gen({ name: 'app' }, { securityContext: podSc }).linux?.securityContext;
    expect(inherited?.runAsUser).toEqual({ value: 1000n });
    expect(inherited?.runAsGroup).toEqual({ value: 1000n });
    expect(inherited?.supplementalGroups).toEqual([5n, 7n]);
    const own = gen({ name: 'app', securityContext: { runAsUser: 0, runAsGroup: 2 } }, { securityContext: podSc }).linux?.securityContext;
    expect(own?.runAsUser).toEqual({ value: 0n });
    expect(own?.runAsGroup).toEqual({ value: 2n });
    expect(gen({ name: 'app' }).linux?.securityContext?.runAsUser).toBeUndefined();
  });

  it('shares the pod namespace options and sets resources', () => {
    const cfg = gen({ name: 'app', resources: { requests: { cpu: '500m' }, limits: { cpu: '1', memory: '256Mi' } } }, { shareProcessNamespace: true });
    expect(cfg.linux?.securityContext?.namespaceOptions).toEqual({ network: NamespaceMode.POD, pid: NamespaceMode.POD, ipc: NamespaceMode.POD });
    expect(cfg.linux?.resources).toMatchObject({ cpuShares: 512n, cpuQuota: 100_000n, cpuPeriod: 100_000n, memoryLimitInBytes: 268_435_456n });
  });

  it('fails with ContainerConfigError when env cannot be built', () => {
    const c: V1Container = { name: 'app', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'absent', key: 'k' } } }] };
    expect(() => gen(c)).toThrow(ContainerConfigError);
  });
});
