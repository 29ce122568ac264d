/**
 * The node's configuration (lib/kubeletconfig): a KubeletConfiguration file
 * as kubeadm v1.34 writes it, the kubelet's defaults, the command line's
 * values over the file's, and errors naming file:line and the field path.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isCgroup2UnifiedMode } from '../../src/lib/cm/cgroup-version.js';
import { type ConfigPath, buildKubeletConfig, kubeletConfigurationYaml, parseConfigFile, readConfigFile, toKubeletConfiguration } from '../../src/lib/kubeletconfig/index.js';
import { TOP_LEVEL } from '../../src/lib/kubeletconfig/schema.js';
import { KUBEADM_CONFIG } from '../helpers/kubeadm-config.js';

const FILE = '/var/lib/kubelet/config.yaml';
const FLAGS: Partial<Record<ConfigPath, string>> = {
  address: '--address',
  port: '--port',
  kubeconfig: '--kubeconfig',
  staticPodPath: '--manifest-dir',
  registerWithTaints: '--register-with-taints',
  imageGCHighThresholdPercent: '--image-gc-high-threshold',
  imageGCLowThresholdPercent: '--image-gc-low-threshold',
};
const nameOf = (p: ConfigPath) => FLAGS[p];

function build(text: string | undefined, given: Parameters<typeof buildKubeletConfig>[0]['given'] = {}) {
  return buildKubeletConfig({ ...(text !== undefined ? { file: parseConfigFile(text, FILE) } : {}), given, nodeName: 'node-a', nameOf });
}

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('no error');
}

const header = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

describe('a kubeadm-written config.yaml', () => {
  const { config, warnings } = build(KUBEADM_CONFIG, { kubeconfig: '/etc/kubernetes/kubelet.conf' });

  it('sets what it names; its zero values (0s, "") leave the kubelet\'s defaults', () => {
    expect(config).toMatchObject({
      enableServer: true,
      staticPodPath: '/etc/kubernetes/manifests',
      cgroupDriver: 'systemd',
      port: 10250,
      address: '0.0.0.0',
      rotateCertificates: true,
      authentication: { x509: { clientCAFile: '/etc/kubernetes/pki/ca.crt' }, webhook: { enabled: true, cacheTTL: 120_000 }, anonymous: { enabled: false } },
      authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTL: 300_000, cacheUnauthorizedTTL: 30_000 } },
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      resolvConf: '/run/systemd/resolve/resolv.conf',
      syncFrequency: 60_000,
      fileCheckFrequency: 20_000,
      httpCheckFrequency: 20_000,
      nodeStatusUpdateFrequency: 10_000,
      nodeStatusReportFrequency: 300_000,
      runtimeRequestTimeout: 120_000,
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
      maxPods: 110,
    });
  });

  it('takes every field it sets (healthzPort and healthzBindAddress too): no warning; none for zero values', () => {
    expect(warnings).toEqual([]);
    expect(config).toMatchObject({ healthzPort: 10248, healthzBindAddress: '127.0.0.1' });
  });

  it('warns once for each field klet does not implement, naming file:line and the field', () => {
    expect(build(`${header}readOnlyPort: 10255\nshutdownGracePeriod: 30s\n`).warnings).toEqual([
      `${FILE}:3: readOnlyPort: not implemented by klet; ignored`,
      `${FILE}:4: shutdownGracePeriod: not implemented by klet; ignored`,
    ]);
  });
});

describe('precedence: defaults, then the file, then the command line', () => {
  it('a value in the file changes the default; one given on the command line wins over the file', () => {
    const text = `${header}staticPodPath: /srv/manifests\nport: 10260\nsyncFrequency: 30s\nmaxPods: 20\n`;
    expect(build(text, { port: 10250, kubeconfig: 'k' }).config).toMatchObject({ staticPodPath: '/srv/manifests', port: 10250, syncFrequency: 30_000, maxPods: 20 });
    expect(build(text, { staticPodPath: '/etc/other', maxPods: 30, kubeconfig: 'k' }).config).toMatchObject({ staticPodPath: '/etc/other', port: 10260, maxPods: 30 });
  });

  it('standalone, the server runs only when a port is given (the file\'s counts); with a kubeconfig on 10250', () => {
    expect(build(undefined).config.enableServer).toBe(false);
    expect(build(`${header}port: 10255\nauthentication:\n  anonymous:\n    enabled: true\n`).config).toMatchObject({ enableServer: true, port: 10255, authorization: { mode: 'AlwaysAllow' } });
    expect(build(undefined, { kubeconfig: 'k' }).config).toMatchObject({ enableServer: true, port: 10250, authorization: { mode: 'Webhook' } });
    expect(build(`${header}enableServer: false\n`, { kubeconfig: 'k' }).config.enableServer).toBe(false);
    expect(build(undefined, { kubeconfig: 'k', port: 0 }).config.enableServer).toBe(false);
  });

  it('a kubeadm file read standalone (no kubeconfig, no port) configures a server that does not run: no error', () => {
    expect(build(KUBEADM_CONFIG).config.enableServer).toBe(false);
  });

  it('the localhost healthz endpoint: 127.0.0.1:10248 with a kubeconfig; standalone only when given (kubeadm\'s file gives it); 0 turns it off', () => {
    expect(build(undefined, { kubeconfig: 'k' }).config).toMatchObject({ healthzPort: 10248, healthzBindAddress: '127.0.0.1' });
    expect(build(undefined).config.healthzPort).toBe(0);
    expect(build(KUBEADM_CONFIG).config.healthzPort).toBe(10248);
    expect(build(`${header}healthzPort: 0\n`, { kubeconfig: 'k' }).config.healthzPort).toBe(0);
    expect(build(undefined, { healthzPort: 20248, healthzBindAddress: '::1' }).config).toMatchObject({ healthzPort: 20248, healthzBindAddress: '::1' });
    expect(toKubeletConfiguration(build(undefined, { kubeconfig: 'k' }).config)).toMatchObject({ healthzPort: 10248, healthzBindAddress: '127.0.0.1' });
    expect(errorOf(() => build(`${header}healthzPort: 70000\n`))).toBe(`${FILE}:3: healthzPort 70000: invalid configuration: healthzPort (--healthz-port) 70000 must be between 1 and 65535, inclusive`);
    expect(errorOf(() => build(`${header}healthzBindAddress: localhost\n`))).toBe(`${FILE}:3: healthzBindAddress "localhost" is not an IP address`);
  });

  it('the status report frequency follows the update frequency when only that is set (the kubelet\'s defaulting)', () => {
    expect(build(`${header}nodeStatusUpdateFrequency: 4s\n`).config).toMatchObject({ nodeStatusUpdateFrequency: 4000, nodeStatusReportFrequency: 4000 });
    expect(build(`${header}nodeStatusUpdateFrequency: 4s\nnodeStatusReportFrequency: 1m\n`).config).toMatchObject({ nodeStatusReportFrequency: 60_000 });
  });

  it('relative paths in the file are taken relative to its directory, as the kubelet resolves them', () => {
    const { config } = build(`${header}staticPodPath: manifests\ntlsCertFile: pki/kubelet.crt\n`);
    expect(config.staticPodPath).toBe('/var/lib/kubelet/manifests');
    expect(config.tlsCertFile).toBe('/var/lib/kubelet/pki/kubelet.crt');
  });

  it('registration fields from the file: taints, reservations, maxPods', () => {
    const { config } = build(`${header}registerWithTaints:\n- key: dedicated\n  value: edge\n  effect: NoSchedule\nkubeReserved:\n  cpu: 100m\nsystemReserved:\n  memory: 1Gi\n`, { kubeconfig: 'k' });
    expect(config.registerWithTaints).toEqual([{ key: 'dedicated', value: 'edge', effect: 'NoSchedule' }]);
    expect(config.flags.reserved).toEqual({ cpuMilli: 100, memoryBytes: 1024 ** 3, ephemeralStorageBytes: 0, pid: 0 });
  });
});

describe('podLogsDir: where the runtime writes container logs', () => {
  it('defaults to /var/log/pods ("" too, as the kubelet defaults it); the file sets it, relative to its directory; no warning', () => {
    expect(build(header).config.podLogsDir).toBe('/var/log/pods');
    expect(build(`${header}podLogsDir: ""\n`).config.podLogsDir).toBe('/var/log/pods');
    const { config, warnings } = build(`${header}podLogsDir: /srv/pod-logs\n`);
    expect(config.podLogsDir).toBe('/srv/pod-logs');
    expect(warnings).toEqual([]);
    expect(build(`${header}podLogsDir: logs/pods\n`).config.podLogsDir).toBe('/var/lib/kubelet/logs/pods');
    expect(toKubeletConfiguration(config).podLogsDir).toBe('/srv/pod-logs');
  });

  it('refuses a path that is not normalized or not ASCII, naming file:line and the field, as the kubelet\'s validation does', () => {
    expect(errorOf(() => build(`${header}podLogsDir: /srv/pod-logs/\n`))).toBe(`${FILE}:3: podLogsDir "/srv/pod-logs/": must be normalized`);
    expect(errorOf(() => build(`${header}podLogsDir: /srv//pod-logs\n`))).toBe(`${FILE}:3: podLogsDir "/srv//pod-logs": must be normalized`);
    expect(errorOf(() => build(`${header}podLogsDir: /srv/pöd-logs\n`))).toBe(`${FILE}:3: podLogsDir "/srv/pöd-logs": must contain ASCII characters only`);
  });
});

describe('node resources from the file: sysctls, cgroups, image GC', () => {
  it('the defaults are the kubelet\'s; the file sets them; the command line wins', () => {
    const d = build(header).config;
    expect(d).toMatchObject({ allowedUnsafeSysctls: [], cgroupsPerQOS: true, cgroupRoot: '/', enforceNodeAllocatable: ['pods'], imageGCHighThresholdPercent: 85, imageGCLowThresholdPercent: 80, imageMinimumGCAge: 120_000 });
    const text = `${header}allowedUnsafeSysctls: ["kernel.msg*", net.core.somaxconn]\ncgroupsPerQOS: false\ncgroupRoot: /klet\nenforceNodeAllocatable: [none]\nimageGCHighThresholdPercent: 90\nimageGCLowThresholdPercent: 70\nimageMinimumGCAge: 10m\n`;
    const { config, warnings } = build(text);
    expect(warnings).toEqual([]);
    expect(config).toMatchObject({
      allowedUnsafeSysctls: ['kernel.msg*', 'net.core.somaxconn'],
      cgroupsPerQOS: false,
      cgroupRoot: '/klet',
      enforceNodeAllocatable: ['none'],
      imageGCHighThresholdPercent: 90,
      imageGCLowThresholdPercent: 70,
      imageMinimumGCAge: 600_000,
    });
    expect(build(text, { imageGCHighThresholdPercent: 95, cgroupsPerQOS: true, allowedUnsafeSysctls: [] }).config).toMatchObject({ imageGCHighThresholdPercent: 95, imageGCLowThresholdPercent: 70, cgroupsPerQOS: true });
    expect(toKubeletConfiguration(config)).toMatchObject({ cgroupRoot: '/klet', imageMinimumGCAge: '10m0s', allowedUnsafeSysctls: ['kernel.msg*', 'net.core.somaxconn'] });
  });
});

describe('podPidsLimit', () => {
  it("the kubelet's default -1 (none); the file or --pod-max-pids sets it; 0 is kept as given (no limit, as the kubelet)", () => {
    expect(build(header).config.podPidsLimit).toBe(-1);
    const { config, warnings } = build(`${header}podPidsLimit: 100\n`);
    expect([config.podPidsLimit, warnings]).toEqual([100, []]);
    expect(build(`${header}podPidsLimit: 100\n`, { podPidsLimit: 50 }).config.podPidsLimit).toBe(50);
    expect(build(`${header}podPidsLimit: 0\n`).config.podPidsLimit).toBe(0);
    expect(toKubeletConfiguration(config)).toMatchObject({ podPidsLimit: 100 });
  });
});

describe('seccompDefault', () => {
  it('off by default; the file or --seccomp-default sets it; printed for /configz', () => {
    expect(build(header).config.seccompDefault).toBe(false);
    const { config, warnings } = build(`${header}seccompDefault: true\n`);
    expect([config.seccompDefault, warnings]).toEqual([true, []]);
    expect(build(`${header}seccompDefault: true\n`, { seccompDefault: false }).config.seccompDefault).toBe(false);
    expect(toKubeletConfiguration(config)).toMatchObject({ seccompDefault: true });
    expect(errorOf(() => build(`${header}seccompDefault: yes\n`))).toBe(`${FILE}:3: seccompDefault: expected true or false, got "yes"`);
  });
});

describe('container log rotation settings', () => {
  it("the kubelet's defaults; the file sets them; the command line wins; printed as the kubelet prints them", () => {
    expect(build(header).config).toMatchObject({ containerLogMaxSize: '10Mi', containerLogMaxSizeBytes: 10 * 1024 * 1024, containerLogMaxFiles: 5, containerLogMaxWorkers: 1, containerLogMonitorInterval: 10_000 });
    const text = `${header}containerLogMaxSize: 200Ki\ncontainerLogMaxFiles: 3\ncontainerLogMaxWorkers: 2\ncontainerLogMonitorInterval: 30s\n`;
    const { config, warnings } = build(text);
    expect(warnings).toEqual([]);
    expect(config).toMatchObject({ containerLogMaxSize: '200Ki', containerLogMaxSizeBytes: 204_800, containerLogMaxFiles: 3, containerLogMaxWorkers: 2, containerLogMonitorInterval: 30_000 });
    expect(build(text, { containerLogMaxSize: '-1', containerLogMaxFiles: 2 }).config).toMatchObject({ containerLogMaxSizeBytes: -1, containerLogMaxFiles: 2, containerLogMaxWorkers: 2 });
    expect(toKubeletConfiguration(config)).toMatchObject({ containerLogMaxSize: '200Ki', containerLogMaxFiles: 3, containerLogMaxWorkers: 2, containerLogMonitorInterval: '30s' });
  });

  it.each([
    [`${header}containerLogMaxFiles: 1\n`, `${FILE}:3: containerLogMaxFiles 1: must be greater than 1`],
    [`${header}containerLogMaxWorkers: 0\n`, `${FILE}:3: containerLogMaxWorkers 0: must be greater than or equal to 1`],
    [`${header}containerLogMaxFiles: 0\n`, `${FILE}:3: containerLogMaxFiles 0: must be greater than 1`],
    [`${header}containerLogMonitorInterval: 0s\n`, `${FILE}:3: containerLogMonitorInterval 0s: must be a positive time duration greater than or equal to 3s`],
    [`${header}containerLogMonitorInterval: 2s\n`, `${FILE}:3: containerLogMonitorInterval 2s: must be a positive time duration greater than or equal to 3s`],
    [`${header}containerLogMaxSize: 10Mb\n`, `${FILE}:3: containerLogMaxSize "10Mb": `],
    [`${header}containerLogMaxSize: 100m\n`, `${FILE}:3: containerLogMaxSize "100m": must be a whole number of bytes`],
  ])('refuses %j as the kubelet does', (text, message) => {
    expect(errorOf(() => build(text))).toContain(message);
  });
});

describe('bad input: one line naming file:line and the field path, or the flag', () => {
  it.each([
    [`${header}podManifestPath: /x\n`, `${FILE}:3: unknown field "podManifestPath"`],
    [`${header}authentication:\n  x509:\n    clientCaFile: /x\n`, `${FILE}:5: unknown field "authentication.x509.clientCaFile"`],
    [`${header}port: ten\n`, `${FILE}:3: port: expected an integer, got "ten"`],
    [`${header}syncFrequency: soon\n`, `${FILE}:3: syncFrequency: "soon": not a duration`],
    [`${header}authentication:\n  anonymous:\n    enabled: "yes"\n`, `${FILE}:5: authentication.anonymous.enabled: expected true or false`],
    [`${header}address: nowhere\n`, `${FILE}:3: address "nowhere" is not an IP address`],
    [`${header}authorization:\n  mode: Sometimes\n`, `${FILE}:4: authorization.mode "Sometimes": expected one of AlwaysAllow, Webhook`],
    [`${header}registerWithTaints:\n- key: a\n  effect: Never\n`, `${FILE}:3: registerWithTaints taint "a:Never": effect "Never" is not one of`],
    [`${header}clusterDNS: [not-an-ip]\n`, `${FILE}:3: clusterDNS "not-an-ip" is not an IP address`],
    [`${header}imageGCHighThresholdPercent: 101\n`, `${FILE}:3: imageGCHighThresholdPercent 101: invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive`],
    [`${header}imageGCHighThresholdPercent: 60\nimageGCLowThresholdPercent: 70\n`, `${FILE}:4: imageGCLowThresholdPercent 70, ${FILE}:3: imageGCHighThresholdPercent 60: invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 70 must be less`],
    [`${header}port: 1\nport: 2\n`, `${FILE}:4: not valid YAML: Map keys must be unique`],
    ['apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n', `${FILE}:1: apiVersion "kubelet.config.k8s.io/v1alpha1": expected kubelet.config.k8s.io/v1beta1`],
    ['apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n', `${FILE}:2: kind "Pod": expected KubeletConfiguration`],
    ['', `${FILE}:1: empty: not a KubeletConfiguration`],
    ['- a\n- b\n', `${FILE}:1: not a KubeletConfiguration: expected a mapping of fields`],
  ])('%j', (text, message) => {
    const m = errorOf(() => build(text, { kubeconfig: 'k' }));
    expect(m).toContain(message);
    expect(m).not.toContain('\n');
  });

  it('a file that is missing or a directory: named, as the input the caller gave (its flag)', async () => {
    await expect(readConfigFile('/nonexistent/config.yaml')).rejects.toMatchObject({ text: '/nonexistent/config.yaml: no such file', input: 'config' });
    await expect(readConfigFile('/')).rejects.toMatchObject({ text: '/: a directory, not a KubeletConfiguration file', input: 'config' });
  });

  it('a value given on the command line is named by the caller\'s name for it (its flag)', () => {
    expect(errorOf(() => build(`${header}address: 10.0.0.1\n`, { address: 'nowhere', kubeconfig: 'k' }))).toBe('--address "nowhere" is not an IP address');
    expect(errorOf(() => build(undefined, { registerWithTaints: 'a:Never', kubeconfig: 'k' }))).toMatch(/^--register-with-taints taint "a:Never"/);
    expect(errorOf(() => build(`${header}imageGCHighThresholdPercent: 101\n`, { imageGCHighThresholdPercent: 90, imageGCLowThresholdPercent: 95 }))).toBe(
      '--image-gc-low-threshold 95, --image-gc-high-threshold 90: invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 95 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 90',
    );
    // One from the file, one from the command line: each named where it came from.
    expect(errorOf(() => build(`${header}imageGCLowThresholdPercent: 90\n`, { imageGCHighThresholdPercent: 90 }))).toMatch(new RegExp(`^${FILE}:3: imageGCLowThresholdPercent 90, --image-gc-high-threshold 90: invalid configuration`));
  });

  it('a server setting given for a server that does not run is an error; the same setting in a file is not', () => {
    expect(errorOf(() => build(undefined, { 'authentication.x509.clientCAFile': '/ca.crt' }))).toContain('configures the kubelet server, which runs with --kubeconfig or --port');
    expect(build(`${header}authentication:\n  x509:\n    clientCAFile: /ca.crt\n`).config.enableServer).toBe(false);
  });
});

describe('the effective configuration printed', () => {
  it('is a KubeletConfiguration that reads back to the same configuration', () => {
    const first = build(KUBEADM_CONFIG, { kubeconfig: 'k', port: 10251, maxPods: 50 });
    const printed = kubeletConfigurationYaml(first.config);
    expect(printed).toMatch(/^apiVersion: kubelet.config.k8s.io\/v1beta1\nkind: KubeletConfiguration\n/);
    const again = build(printed, { kubeconfig: 'k' });
    expect(toKubeletConfiguration(again.config)).toEqual(toKubeletConfiguration(first.config));
    expect(toKubeletConfiguration(first.config)).toMatchObject({ port: 10251, maxPods: 50, syncFrequency: '1m0s', staticPodPath: '/etc/kubernetes/manifests' });
  });
});

/**
 * The json names of k8s.io/kubelet config/v1beta1 KubeletConfiguration at v1.37.2 (types.go), in its order.
 * v1.34.4's are the same less tlsCurvePreferences, defaultPodSysctls and memoryReservationPolicy: v1.35–v1.37
 * removed or renamed none.
 */
const V1_37_FIELDS = [
  'enableServer', 'staticPodPath', 'podLogsDir', 'syncFrequency', 'fileCheckFrequency', 'httpCheckFrequency', 'staticPodURL', 'staticPodURLHeader',
  'address', 'port', 'readOnlyPort', 'tlsCertFile', 'tlsPrivateKeyFile', 'tlsCipherSuites', 'tlsCurvePreferences', 'tlsMinVersion',
  'rotateCertificates', 'serverTLSBootstrap', 'authentication', 'authorization', 'registryPullQPS', 'registryBurst',
  'imagePullCredentialsVerificationPolicy', 'preloadedImagesVerificationAllowlist', 'eventRecordQPS', 'eventBurst', 'enableDebuggingHandlers',
  'enableContentionProfiling', 'healthzPort', 'healthzBindAddress', 'oomScoreAdj', 'clusterDomain', 'clusterDNS', 'streamingConnectionIdleTimeout',
  'nodeStatusUpdateFrequency', 'nodeStatusReportFrequency', 'nodeLeaseDurationSeconds', 'imageMinimumGCAge', 'imageMaximumGCAge',
  'imageGCHighThresholdPercent', 'imageGCLowThresholdPercent', 'volumeStatsAggPeriod', 'kubeletCgroups', 'systemCgroups', 'cgroupRoot',
  'cgroupsPerQOS', 'cgroupDriver', 'cpuManagerPolicy', 'singleProcessOOMKill', 'cpuManagerPolicyOptions', 'cpuManagerReconcilePeriod',
  'memoryManagerPolicy', 'topologyManagerPolicy', 'topologyManagerScope', 'topologyManagerPolicyOptions', 'qosReserved', 'runtimeRequestTimeout',
  'hairpinMode', 'maxPods', 'podCIDR', 'podPidsLimit', 'resolvConf', 'runOnce', 'cpuCFSQuota', 'cpuCFSQuotaPeriod', 'nodeStatusMaxImages',
  'maxOpenFiles', 'contentType', 'kubeAPIQPS', 'kubeAPIBurst', 'serializeImagePulls', 'maxParallelImagePulls', 'evictionHard', 'evictionSoft',
  'evictionSoftGracePeriod', 'evictionPressureTransitionPeriod', 'evictionMaxPodGracePeriod', 'evictionMinimumReclaim',
  'mergeDefaultEvictionSettings', 'podsPerCore', 'enableControllerAttachDetach', 'protectKernelDefaults', 'makeIPTablesUtilChains',
  'iptablesMasqueradeBit', 'iptablesDropBit', 'featureGates', 'failSwapOn', 'memorySwap', 'containerLogMaxSize', 'containerLogMaxFiles',
  'containerLogMaxWorkers', 'containerLogMonitorInterval', 'configMapAndSecretChangeDetectionStrategy', 'systemReserved', 'kubeReserved',
  'reservedSystemCPUs', 'showHiddenMetricsForVersion', 'systemReservedCgroup', 'kubeReservedCgroup', 'enforceNodeAllocatable',
  'allowedUnsafeSysctls', 'defaultPodSysctls', 'volumePluginDir', 'providerID', 'kernelMemcgNotification', 'logging', 'enableSystemLogHandler',
  'enableSystemLogQuery', 'shutdownGracePeriod', 'shutdownGracePeriodCriticalPods', 'shutdownGracePeriodByPodPriority', 'crashLoopBackOff',
  'reservedMemory', 'enableProfilingHandler', 'enableDebugFlagsHandler', 'seccompDefault', 'memoryThrottlingFactor', 'memoryReservationPolicy',
  'registerWithTaints', 'registerNode', 'tracing', 'localStorageCapacityIsolation', 'containerRuntimeEndpoint', 'imageServiceEndpoint',
  'failCgroupV1', 'userNamespaces',
];

describe("Kubernetes v1.37's KubeletConfiguration", () => {
  /** Build with the host's cgroup version given (failCgroupV1's check). */
  const at = (text: string, cgroupV2: boolean, given: Parameters<typeof buildKubeletConfig>[0]['given'] = {}) =>
    buildKubeletConfig({ file: parseConfigFile(text, FILE), given, nodeName: 'node-a', nameOf, cgroupV2: () => cgroupV2 });

  it('knows every field of v1.37 and no other', () => {
    expect(V1_37_FIELDS).toHaveLength(126);
    expect([...TOP_LEVEL].filter((f) => f !== 'apiVersion' && f !== 'kind').sort()).toEqual([...V1_37_FIELDS].sort());
  });

  it('the fields v1.35–v1.37 added, set to what klet does, are taken without a warning', () => {
    const text = `${header}memoryReservationPolicy: None
eventRecordQPS: 50
eventBurst: 100
tlsCurvePreferences: []
defaultPodSysctls: {}
imageMaximumGCAge: 0s
crashLoopBackOff: {}
failCgroupV1: false
`;
    const { config, warnings } = at(text, false);
    expect(warnings).toEqual([]);
    expect(config).toMatchObject({ memoryReservationPolicy: 'None', eventRecordQPS: 50, eventBurst: 100, tlsCurvePreferences: [], imageMaximumGCAge: 0, failCgroupV1: false });
    expect(build(header).config).toMatchObject({ memoryReservationPolicy: 'None', eventRecordQPS: 50, eventBurst: 100, tlsCurvePreferences: [], imageMaximumGCAge: 0, failCgroupV1: false });
  });

  it('set to anything else, they are read, checked, and warned about as not implemented, naming file:line and the field', () => {
    const text = `${header}tlsCurvePreferences: [29, 4588, 23]
memoryReservationPolicy: TieredReservation
eventRecordQPS: 0
eventBurst: 200
imageMaximumGCAge: 1h
`;
    const { config, warnings } = at(text, false);
    expect(warnings).toEqual([
      `${FILE}:3: tlsCurvePreferences: not implemented by klet; ignored`,
      `${FILE}:4: memoryReservationPolicy: not implemented by klet; ignored`,
      `${FILE}:5: eventRecordQPS: not implemented by klet; ignored`,
      `${FILE}:6: eventBurst: not implemented by klet; ignored`,
      `${FILE}:7: imageMaximumGCAge: not implemented by klet; ignored`,
    ]);
    expect(config).toMatchObject({ tlsCurvePreferences: [29, 4588, 23], memoryReservationPolicy: 'TieredReservation', eventRecordQPS: 0, eventBurst: 200, imageMaximumGCAge: 3_600_000 });
  });

  it('crashLoopBackOff.maxContainerRestartPeriod caps the crash-loop back-off (the first delay no longer, reset after twice it); klet\'s flag wins', () => {
    expect(build(header).config.flags.crashLoopBackOff).toEqual({ initial: 10_000, max: 300_000, reset: 600_000 });
    const { config, warnings } = build(`${header}crashLoopBackOff:\n  maxContainerRestartPeriod: 1m\n`);
    expect([config.flags.crashLoopBackOff, warnings]).toEqual([{ initial: 10_000, max: 60_000, reset: 120_000 }, []]);
    expect(build(`${header}crashLoopBackOff:\n  maxContainerRestartPeriod: 5s\n`).config.flags.crashLoopBackOff).toEqual({ initial: 5_000, max: 5_000, reset: 10_000 });
    expect(build(`${header}crashLoopBackOff:\n  maxContainerRestartPeriod: 1m\n`, { crashLoopBackOffMax: 2_000 }).config.flags.crashLoopBackOff).toEqual({ initial: 10_000, max: 2_000, reset: 600_000 });
    expect(errorOf(() => build(`${header}crashLoopBackOff:\n  maxContainerRestartPeriod: 1m\n  initial: 1s\n`))).toBe(`${FILE}:5: unknown field "crashLoopBackOff.initial" (not a field of kubelet.config.k8s.io/v1beta1 KubeletConfiguration)`);
  });

  it.each([
    // validation.go
    [`${header}eventRecordQPS: -1\n`, `${FILE}:3: eventRecordQPS -1: invalid configuration: eventRecordQPS (--event-qps) -1 must not be a negative number`],
    [`${header}eventBurst: -5\n`, `${FILE}:3: eventBurst -5: invalid configuration: eventBurst (--event-burst) -5 must not be a negative number`],
    [`${header}crashLoopBackOff:\n  maxContainerRestartPeriod: 500ms\n`, `${FILE}:4: crashLoopBackOff.maxContainerRestartPeriod 500ms: invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 0.5 seconds) must be set between 1s and 300s`],
    [`${header}crashLoopBackOff:\n  maxContainerRestartPeriod: 400s\n`, `${FILE}:4: crashLoopBackOff.maxContainerRestartPeriod 6m40s: invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 400 seconds) must be set between 1s and 300s`],
    [`${header}crashLoopBackOff:\n  maxContainerRestartPeriod: 0s\n`, `${FILE}:4: crashLoopBackOff.maxContainerRestartPeriod 0s: invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 0 seconds) must be set between 1s and 300s`],
    [`${header}memoryReservationPolicy: none\n`, `${FILE}:3: memoryReservationPolicy "none": invalid configuration: option "none" specified for memoryReservationPolicy. Valid options are "None" or "TieredReservation"`],
    [`${header}defaultPodSysctls:\n  net.ipv4.ip_forward: "1"\n`, `${FILE}:3: defaultPodSysctls: invalid configuration: DefaultPodSysctls feature gate is required for Kubelet configuration option defaultPodSysctls`],
    [`${header}imageMaximumGCAge: 1m\n`, `${FILE}:3: imageMaximumGCAge 1m0s: invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s`],
    [`${header}imageMinimumGCAge: 90s\nimageMaximumGCAge: 1m\n`, `${FILE}:4: imageMaximumGCAge 1m0s, ${FILE}:3: imageMinimumGCAge 1m30s: invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 1m30s`],
    // component-base cli/flag TLSCurvePreferences, with the Go of the kubelet v1.37.2 (go1.26)
    [`${header}tlsCurvePreferences: [0]\n`, `${FILE}:3: tlsCurvePreferences [0]: curve preference 0 is out of range (must be 1-65535)`],
    [`${header}tlsCurvePreferences: [23, 70000]\n`, `${FILE}:3: tlsCurvePreferences [23, 70000]: curve preference 70000 is out of range (must be 1-65535)`],
    [`${header}tlsCurvePreferences: [23, 23]\n`, `${FILE}:3: tlsCurvePreferences [23, 23]: duplicate curve preference 23`],
    [`${header}tlsCurvePreferences: [99]\n`, `${FILE}:3: tlsCurvePreferences [99]: curve preference 99 is not supported by the current Go version`],
    // shapes, in klet's words
    [`${header}tlsCurvePreferences: X25519\n`, `${FILE}:3: tlsCurvePreferences: expected a list of integers, got "X25519"`],
    [`${header}tlsCurvePreferences: [X25519]\n`, `${FILE}:3: tlsCurvePreferences: [0]: expected a 32-bit integer, got "X25519"`],
    [`${header}failCgroupV1: "yes"\n`, `${FILE}:3: failCgroupV1: expected true or false, got "yes"`],
    [`${header}crashLoopBackOff: 1m\n`, `${FILE}:3: crashLoopBackOff: expected a mapping of maxContainerRestartPeriod`],
  ])('refuses %j as the kubelet v1.37 does: one line naming file:line and the field', (text, message) => {
    const m = errorOf(() => at(text, true));
    expect(m).toBe(message);
  });

  it('failCgroupV1: false by default (the kubelet v1.34\'s; v1.35 made it true); true refuses a cgroup v1 host with the kubelet v1.37\'s message, not a cgroup v2 one', () => {
    expect(at(header, false).config.failCgroupV1).toBe(false);
    expect(at(`${header}failCgroupV1: false\n`, false).warnings).toEqual([]);
    expect(errorOf(() => at(`${header}failCgroupV1: true\n`, false))).toBe(
      `${FILE}:3: failCgroupV1 true: kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release`,
    );
    const v2 = at(`${header}failCgroupV1: true\n`, true);
    expect([v2.config.failCgroupV1, v2.warnings]).toEqual([true, []]);
  });

  it('the host is cgroup v2 when /sys/fs/cgroup is cgroup2fs, as the kubelet decides (a hybrid host\'s is a tmpfs)', () => {
    expect(isCgroup2UnifiedMode('/nonexistent')).toBe(false);
    expect(isCgroup2UnifiedMode('/proc')).toBe(false);
    if (fs.existsSync('/sys/fs/cgroup/unified/cgroup.controllers')) expect(isCgroup2UnifiedMode('/sys/fs/cgroup/unified')).toBe(true);
    expect(isCgroup2UnifiedMode()).toBe(fs.existsSync('/sys/fs/cgroup/cgroup.controllers'));
  });
});
