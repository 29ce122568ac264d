/**
 * The KubeletConfiguration's fields (kubelet.config.k8s.io/v1beta1, as of
 * Kubernetes v1.37: k8s.io/kubelet/config/v1beta1 types.go): which ones klet
 * reads, with the shape of their value, and which ones it knows but does not
 * implement (a file that sets one gets a warning naming it).
 *
 * From v1.34 to v1.37 the type gained tlsCurvePreferences (1.36),
 * memoryReservationPolicy (1.36) and defaultPodSysctls (1.37), and lost
 * nothing; two defaults changed: failCgroupV1 false → true (1.35; klet keeps
 * false until its version moves to v1.37: config.ts) and
 * memoryThrottlingFactor 0.9 → nil (1.37; not implemented here).
 */

export const API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KIND = 'KubeletConfiguration';

/**
 * How a field's value is written in the file. Zero values (0, "", a 0s
 * duration) mean "not set" for every one of them but the plain booleans, as
 * the kubelet's defaulting reads them.
 */
export type FieldKind =
  | 'bool' // *bool in the Go type: false is false
  | 'plainBool' // bool: absent is false in the kubelet; klet keeps its own default for absent
  | 'string'
  | 'path' // a string; relative paths are taken relative to the file's directory
  | 'int'
  | 'intPtr' // *int32 in the Go type: 0 is a value (the kubelet's validation judges it)
  | 'duration'
  | 'durationPtr' // *metav1.Duration: 0s is a value
  | 'strings'
  | 'int32s' // []int32: a list of integers
  | 'stringMap'
  | 'headers' // map[string][]string
  | 'taints';

/** The fields klet reads from the file, by path, with their kinds. */
export const FILE_FIELDS: Readonly<Record<string, FieldKind>> = {
  enableServer: 'bool',
  staticPodPath: 'path',
  syncFrequency: 'duration',
  fileCheckFrequency: 'duration',
  httpCheckFrequency: 'duration',
  staticPodURL: 'string',
  staticPodURLHeader: 'headers',
  address: 'string',
  port: 'int',
  tlsCertFile: 'path',
  tlsPrivateKeyFile: 'path',
  rotateCertificates: 'plainBool',
  serverTLSBootstrap: 'plainBool',
  'authentication.x509.clientCAFile': 'path',
  'authentication.webhook.enabled': 'bool',
  'authentication.webhook.cacheTTL': 'duration',
  'authentication.anonymous.enabled': 'bool',
  'authorization.mode': 'string',
  'authorization.webhook.cacheAuthorizedTTL': 'duration',
  'authorization.webhook.cacheUnauthorizedTTL': 'duration',
  clusterDomain: 'string',
  clusterDNS: 'strings',
  resolvConf: 'path',
  podLogsDir: 'path',
  nodeStatusUpdateFrequency: 'duration',
  nodeStatusReportFrequency: 'duration',
  runtimeRequestTimeout: 'duration',
  maxPods: 'int',
  kubeReserved: 'stringMap',
  systemReserved: 'stringMap',
  registerWithTaints: 'taints',
  registerNode: 'bool',
  containerRuntimeEndpoint: 'string',
  allowedUnsafeSysctls: 'strings',
  cgroupsPerQOS: 'bool',
  cgroupRoot: 'string',
  cgroupDriver: 'string',
  enforceNodeAllocatable: 'strings',
  imageGCHighThresholdPercent: 'int',
  imageGCLowThresholdPercent: 'int',
  imageMinimumGCAge: 'duration',
  evictionHard: 'stringMap',
  evictionSoft: 'stringMap',
  evictionSoftGracePeriod: 'stringMap',
  evictionMinimumReclaim: 'stringMap',
  evictionPressureTransitionPeriod: 'duration',
  evictionMaxPodGracePeriod: 'int',
  mergeDefaultEvictionSettings: 'bool',
  containerLogMaxSize: 'string',
  containerLogMaxFiles: 'intPtr',
  containerLogMaxWorkers: 'intPtr',
  containerLogMonitorInterval: 'durationPtr',
  healthzPort: 'intPtr',
  healthzBindAddress: 'string',
  podPidsLimit: 'intPtr',
  seccompDefault: 'bool',
  enableSystemLogHandler: 'bool',
  // The kubelet's default is true from v1.35; klet's stays v1.34's false (config.ts).
  failCgroupV1: 'bool',
  'crashLoopBackOff.maxContainerRestartPeriod': 'durationPtr',
  // Read and checked as the kubelet checks them; not implemented (READ_NOT_IMPLEMENTED).
  tlsCurvePreferences: 'int32s',
  memoryReservationPolicy: 'string',
  defaultPodSysctls: 'stringMap',
  eventRecordQPS: 'intPtr',
  eventBurst: 'int',
  imageMaximumGCAge: 'duration',
};

/** The structs klet reads field by field: any other key in them is unknown. */
export const STRUCTS: Readonly<Record<string, readonly string[]>> = {
  authentication: ['x509', 'webhook', 'anonymous'],
  'authentication.x509': ['clientCAFile'],
  'authentication.webhook': ['enabled', 'cacheTTL'],
  'authentication.anonymous': ['enabled'],
  authorization: ['mode', 'webhook'],
  'authorization.webhook': ['cacheAuthorizedTTL', 'cacheUnauthorizedTTL'],
  crashLoopBackOff: ['maxContainerRestartPeriod'],
};

/**
 * Fields klet reads into its configuration but does not act on in this
 * build: set to anything but their zero value or default, they are warned
 * about like the fields klet does not know how to act on at all.
 */
export const NOT_ACTED_ON: ReadonlySet<string> = new Set<string>([]);

/**
 * Fields klet reads from the file and checks as the kubelet checks them
 * (config.ts, with the kubelet's messages) but does not implement, each
 * with the value that is what klet does: set to another, they get the
 * "not implemented" warning of the NOT_IMPLEMENTED fields.
 */
export const READ_NOT_IMPLEMENTED: Readonly<Record<string, unknown>> = {
  // The kubelet server's curves are Node's defaults (src/lib/server).
  tlsCurvePreferences: undefined,
  // klet writes no memory.min or memory.low: what None means.
  memoryReservationPolicy: 'None',
  // klet's event client: 50 events/s, bursts of 100 (src/lib/node/event-recorder.ts), the kubelet's defaults.
  eventRecordQPS: 50,
  eventBurst: 100,
  // Image GC by thresholds and minimum age only (src/lib/kuberuntime/image-gc.ts).
  imageMaximumGCAge: undefined,
};

/**
 * Every other KubeletConfiguration field: known (a file written for the
 * kubelet may set them) and not implemented by klet.
 */
export const NOT_IMPLEMENTED: readonly string[] = [
  'readOnlyPort',
  'tlsCipherSuites',
  'tlsMinVersion',
  'registryPullQPS',
  'registryBurst',
  'imagePullCredentialsVerificationPolicy',
  'preloadedImagesVerificationAllowlist',
  'enableDebuggingHandlers',
  'enableContentionProfiling',
  'oomScoreAdj',
  'streamingConnectionIdleTimeout',
  'nodeLeaseDurationSeconds',
  'volumeStatsAggPeriod',
  'kubeletCgroups',
  'systemCgroups',
  'cpuManagerPolicy',
  'singleProcessOOMKill',
  'cpuManagerPolicyOptions',
  'cpuManagerReconcilePeriod',
  'memoryManagerPolicy',
  'topologyManagerPolicy',
  'topologyManagerScope',
  'topologyManagerPolicyOptions',
  'qosReserved',
  'hairpinMode',
  'podCIDR',
  'runOnce',
  'cpuCFSQuota',
  'cpuCFSQuotaPeriod',
  'nodeStatusMaxImages',
  'maxOpenFiles',
  'contentType',
  'kubeAPIQPS',
  'kubeAPIBurst',
  'serializeImagePulls',
  'maxParallelImagePulls',
  'podsPerCore',
  'enableControllerAttachDetach',
  'protectKernelDefaults',
  'makeIPTablesUtilChains',
  'iptablesMasqueradeBit',
  'iptablesDropBit',
  'featureGates',
  'failSwapOn',
  'memorySwap',
  'configMapAndSecretChangeDetectionStrategy',
  'reservedSystemCPUs',
  'showHiddenMetricsForVersion',
  'systemReservedCgroup',
  'kubeReservedCgroup',
  'volumePluginDir',
  'providerID',
  'kernelMemcgNotification',
  'logging',
  'enableSystemLogQuery',
  'shutdownGracePeriod',
  'shutdownGracePeriodCriticalPods',
  'shutdownGracePeriodByPodPriority',
  'reservedMemory',
  'enableProfilingHandler',
  'enableDebugFlagsHandler',
  'memoryThrottlingFactor',
  'tracing',
  'localStorageCapacityIsolation',
  'imageServiceEndpoint',
  'userNamespaces',
];

/** The top-level keys of a KubeletConfiguration klet knows. */
export const TOP_LEVEL: ReadonlySet<string> = new Set([
  'apiVersion',
  'kind',
  ...Object.keys(FILE_FIELDS).map((p) => p.split('.')[0] as string),
  ...NOT_IMPLEMENTED,
]);
