/**
 * The one path from command-line flags to the node's configuration: the
 * kubelet's flag names mapped onto KubeletConfiguration fields (merged over
 * --config's file and checked by lib/kubeletconfig), and the container
 * manager's settings of a configuration. `klet sync` (src/cli/sync.ts) and
 * the one-shot commands' cgroup flags (src/cli/cgroups.ts) both go through
 * it. Kept apart from sync.ts so that `klet runonce`'s bundle does not take
 * in the sync loop and its dashboard.
 */
import type { BuiltConfig, ConfigPath, KubeletConfig, KubeletConfigInput } from '../lib/kubeletconfig/index.js';
import type { SyncFlags, SyncHost } from './sync.js';

/**
 * The flag of each configuration value klet sync takes from the command line
 * (the kubelet's flag names): the CLI maps flags onto the configuration's
 * fields; lib/kubeletconfig merges and checks them.
 */
export const FLAG_FIELDS = {
  'manifest-dir': 'staticPodPath',
  'manifest-url': 'staticPodURL',
  'manifest-url-header': 'staticPodURLHeader',
  'file-check-frequency': 'fileCheckFrequency',
  'http-check-frequency': 'httpCheckFrequency',
  'sync-frequency': 'syncFrequency',
  'pleg-relist-period': 'plegRelistPeriod',
  'max-parallel-syncs': 'maxParallelSyncs',
  kubeconfig: 'kubeconfig',
  'bootstrap-kubeconfig': 'bootstrapKubeconfig',
  'rotate-certificates': 'rotateCertificates',
  'node-labels': 'nodeLabels',
  'register-with-taints': 'registerWithTaints',
  'kube-reserved': 'kubeReserved',
  'system-reserved': 'systemReserved',
  'max-pods': 'maxPods',
  'node-ip': 'nodeIP',
  'cluster-dns': 'clusterDNS',
  'cluster-domain': 'clusterDomain',
  'resolv-conf': 'resolvConf',
  'rotate-server-certificates': 'serverTLSBootstrap',
  listen: 'listen',
  'auth-token-file': 'authTokenFile',
  address: 'address',
  port: 'port',
  'tls-cert-file': 'tlsCertFile',
  'tls-private-key-file': 'tlsPrivateKeyFile',
  'client-ca-file': 'authentication.x509.clientCAFile',
  'anonymous-auth': 'authentication.anonymous.enabled',
  'authentication-token-webhook': 'authentication.webhook.enabled',
  'authorization-mode': 'authorization.mode',
  'crash-loop-backoff-initial': 'crashLoopBackOffInitial',
  'crash-loop-backoff-max': 'crashLoopBackOffMax',
  'crash-loop-backoff-reset': 'crashLoopBackOffReset',
  'container-runtime-endpoint': 'containerRuntimeEndpoint',
  'runtime-request-timeout': 'runtimeRequestTimeout',
  'allowed-unsafe-sysctls': 'allowedUnsafeSysctls',
  'cgroups-per-qos': 'cgroupsPerQOS',
  'cgroup-root': 'cgroupRoot',
  'cgroup-driver': 'cgroupDriver',
  'enforce-node-allocatable': 'enforceNodeAllocatable',
  'image-gc-high-threshold': 'imageGCHighThresholdPercent',
  'image-gc-low-threshold': 'imageGCLowThresholdPercent',
  'minimum-image-gc-age': 'imageMinimumGCAge',
  'pod-max-pids': 'podPidsLimit',
  'seccomp-default': 'seccompDefault',
  'healthz-port': 'healthzPort',
  'healthz-bind-address': 'healthzBindAddress',
  'container-log-max-size': 'containerLogMaxSize',
  'container-log-max-files': 'containerLogMaxFiles',
  'eviction-hard': 'evictionHard',
  'eviction-soft': 'evictionSoft',
  'eviction-soft-grace-period': 'evictionSoftGracePeriod',
  'eviction-minimum-reclaim': 'evictionMinimumReclaim',
  'eviction-pressure-transition-period': 'evictionPressureTransitionPeriod',
  'eviction-max-pod-grace-period': 'evictionMaxPodGracePeriod',
} as const satisfies Record<string, keyof KubeletConfigInput>;

const BOOL_FLAGS = new Set(['rotate-certificates', 'rotate-server-certificates', 'anonymous-auth', 'authentication-token-webhook', 'cgroups-per-qos', 'seccomp-default']);
/** Flags that are comma-separated lists of the configuration's list fields. */
const LIST_FLAGS = new Set(['allowed-unsafe-sysctls', 'enforce-node-allocatable']);

/** The configuration's values given on the command line, by field (kubelet booleans true|false made booleans, --cluster-dns lists split). */
export function givenValues(flags: Partial<SyncFlags>, globals: SyncHost['globals']): KubeletConfigInput {
  const given: Record<string, unknown> = {};
  // The global flags count only when given (their defaults must not override the file): `globals`, never `flags`.
  const { 'container-runtime-endpoint': _endpoint, 'runtime-request-timeout': _timeout, ...own } = flags as Partial<SyncFlags> & SyncHost['globals'];
  const all = { ...own, ...globals } as Record<string, unknown>;
  for (const [flag, field] of Object.entries(FLAG_FIELDS)) {
    const v = all[flag];
    if (v === undefined) continue;
    if (BOOL_FLAGS.has(flag)) given[field] = v === 'true';
    else if (flag === 'cluster-dns') given[field] = (v as string[]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '');
    else if (LIST_FLAGS.has(flag)) given[field] = (v as string).split(',').map((s) => s.trim()).filter((s) => s !== '');
    else given[field] = v;
  }
  return given as KubeletConfigInput;
}

/** The flag of a configuration value, as messages name it. */
function flagOf(field: ConfigPath): string | undefined {
  const flag = Object.entries(FLAG_FIELDS).find(([, f]) => f === field)?.[0];
  return flag === undefined ? undefined : `--${flag}`;
}

/** The node's configuration: --config's file, then the flags over it; warnings (fields klet does not act on) go to stderr. */
export async function syncConfig(flags: Partial<SyncFlags>, host: Pick<SyncHost, 'nodeName' | 'globals' | 'notice'>, quiet = false): Promise<BuiltConfig> {
  const { buildKubeletConfig, readConfigFile } = await import('../lib/kubeletconfig/index.js');
  const built = buildKubeletConfig({
    ...(flags.config !== undefined ? { file: await readConfigFile(flags.config) } : {}),
    given: givenValues(flags, host.globals),
    nodeName: host.nodeName,
    nameOf: flagOf,
  });
  if (!quiet) for (const w of built.warnings) host.notice(`klet sync: warning: ${w}`);
  return built;
}

/**
 * The container manager's settings of a configuration (the kubelet's
 * cgroupsPerQOS, cgroupRoot, cgroupDriver, enforceNodeAllocatable,
 * reservations), its --cgroup-root checked; null without cgroupsPerQOS.
 */
export async function checkedCgroupSettings(
  config: KubeletConfig,
  describe?: (field: import('../lib/cm/settings.js').CgroupField) => string,
): Promise<import('../lib/cm/settings.js').CgroupSettings | null> {
  const { cgroupSettings } = await import('../lib/cm/settings.js');
  const reserved = (m: Record<string, string>) => (Object.keys(m).length > 0 ? Object.entries(m).map(([k, v]) => `${k}=${v}`).join(',') : undefined);
  const cgroups = cgroupSettings({
    cgroupsPerQOS: config.cgroupsPerQOS,
    cgroupRoot: config.cgroupRoot,
    cgroupDriver: config.cgroupDriver,
    enforceNodeAllocatable: config.enforceNodeAllocatable,
    kubeReserved: reserved(config.kubeReserved),
    systemReserved: reserved(config.systemReserved),
    podPidsLimit: config.podPidsLimit,
    ...(describe ? { describe } : {}),
  });
  if (cgroups) await (await import('../lib/cm/manager.js')).checkCgroupRoot(cgroups);
  return cgroups;
}
