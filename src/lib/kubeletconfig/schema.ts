/**
 * The KubeletConfiguration's fields (kubelet.config.k8s.io/v1beta1, as of
 * Kubernetes v1.34: k8s.io/kubelet/config/v1beta1 types.go): which ones klet
 * reads, with the shape of their value, and which ones it knows but does not
 * implement (a file that sets one gets a warning naming it).
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
};

/** The structs klet reads field by field: any other key in them is unknown. */
export const STRUCTS: Readonly<Record<string, readonly string[]>> = {
  authentication: ['x509', 'webhook', 'anonymous'],
  'authentication.x509': ['clientCAFile'],
  'authentication.webhook': ['enabled', 'cacheTTL'],
  'authentication.anonymous': ['enabled'],
  authorization: ['mode', 'webhook'],
  'authorization.webhook': ['cacheAuthorizedTTL', 'cacheUnauthorizedTTL'],
};

/**
 * Fields klet reads into its configuration but does not act on in this
 * build: set to anything but their zero value or default, they are warned
 * about like the fields klet does not know how to act on at all.
 */
export const NOT_ACTED_ON: ReadonlySet<string> = new Set<string>([]);

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
  'eventRecordQPS',
  'eventBurst',
  'enableDebuggingHandlers',
  'enableContentionProfiling',
  'oomScoreAdj',
  'streamingConnectionIdleTimeout',
  'nodeLeaseDurationSeconds',
  'imageMaximumGCAge',
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
  'crashLoopBackOff',
  'reservedMemory',
  'enableProfilingHandler',
  'enableDebugFlagsHandler',
  'memoryThrottlingFactor',
  'tracing',
  'localStorageCapacityIsolation',
  'imageServiceEndpoint',
  'failCgroupV1',
  'userNamespaces',
];

/** The top-level keys of a KubeletConfiguration klet knows. */
export const TOP_LEVEL: ReadonlySet<string> = new Set([
  'apiVersion',
  'kind',
  ...Object.keys(FILE_FIELDS).map((p) => p.split('.')[0] as string),
  ...NOT_IMPLEMENTED,
]);
