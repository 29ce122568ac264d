/**
 * The effective configuration in the KubeletConfiguration's shape
 * (kubelet.config.k8s.io/v1beta1, durations as Go prints them): what
 * `klet sync --print-config` prints and the kubelet server's /configz serves.
 * Only fields klet reads appear; the kubelet's flags without a field
 * (kubeconfig, node labels) are not part of it, as in the kubelet's /configz.
 */
import { stringify } from 'yaml';
import { formatDuration } from '../util/duration.js';
import type { KubeletConfig } from './config.js';
import { API_VERSION, KIND } from './schema.js';

export function toKubeletConfiguration(c: KubeletConfig): Record<string, unknown> {
  const d = formatDuration;
  const out: Record<string, unknown> = {
    apiVersion: API_VERSION,
    kind: KIND,
    enableServer: c.enableServer,
    staticPodPath: c.staticPodPath,
    syncFrequency: d(c.syncFrequency),
    fileCheckFrequency: d(c.fileCheckFrequency),
    httpCheckFrequency: d(c.httpCheckFrequency),
    staticPodURL: c.staticPodURL,
    staticPodURLHeader: Object.keys(c.staticPodURLHeader).length > 0 ? c.staticPodURLHeader : undefined,
    address: c.address,
    port: c.port,
    tlsCertFile: c.tlsCertFile,
    tlsPrivateKeyFile: c.tlsPrivateKeyFile,
    rotateCertificates: c.rotateCertificates,
    serverTLSBootstrap: c.serverTLSBootstrap,
    authentication: {
      x509: { clientCAFile: c.authentication.x509.clientCAFile },
      webhook: { enabled: c.authentication.webhook.enabled, cacheTTL: d(c.authentication.webhook.cacheTTL) },
      anonymous: { enabled: c.authentication.anonymous.enabled },
    },
    authorization: {
      mode: c.authorization.mode,
      webhook: { cacheAuthorizedTTL: d(c.authorization.webhook.cacheAuthorizedTTL), cacheUnauthorizedTTL: d(c.authorization.webhook.cacheUnauthorizedTTL) },
    },
    clusterDomain: c.clusterDomain,
    clusterDNS: c.clusterDNS.length > 0 ? c.clusterDNS : undefined,
    nodeStatusUpdateFrequency: d(c.nodeStatusUpdateFrequency),
    nodeStatusReportFrequency: d(c.nodeStatusReportFrequency),
    runtimeRequestTimeout: d(c.runtimeRequestTimeout),
    maxPods: c.maxPods,
    resolvConf: c.resolvConf,
    podLogsDir: c.podLogsDir,
    systemReserved: Object.keys(c.systemReserved).length > 0 ? c.systemReserved : undefined,
    kubeReserved: Object.keys(c.kubeReserved).length > 0 ? c.kubeReserved : undefined,
    registerWithTaints: c.registerWithTaints.length > 0 ? c.registerWithTaints : undefined,
    registerNode: c.registerNode,
    containerRuntimeEndpoint: c.containerRuntimeEndpoint,
    allowedUnsafeSysctls: c.allowedUnsafeSysctls.length > 0 ? c.allowedUnsafeSysctls : undefined,
    cgroupsPerQOS: c.cgroupsPerQOS,
    cgroupRoot: c.cgroupRoot,
    cgroupDriver: c.cgroupDriver,
    enforceNodeAllocatable: c.enforceNodeAllocatable,
    imageGCHighThresholdPercent: c.imageGCHighThresholdPercent,
    imageGCLowThresholdPercent: c.imageGCLowThresholdPercent,
    imageMinimumGCAge: d(c.imageMinimumGCAge),
    evictionHard: c.evictionHard,
    evictionSoft: Object.keys(c.evictionSoft).length > 0 ? c.evictionSoft : undefined,
    evictionSoftGracePeriod: Object.keys(c.evictionSoftGracePeriod).length > 0 ? c.evictionSoftGracePeriod : undefined,
    evictionPressureTransitionPeriod: d(c.evictionPressureTransitionPeriod),
    evictionMaxPodGracePeriod: c.evictionMaxPodGracePeriod !== 0 ? c.evictionMaxPodGracePeriod : undefined,
    evictionMinimumReclaim: Object.keys(c.evictionMinimumReclaim).length > 0 ? c.evictionMinimumReclaim : undefined,
    mergeDefaultEvictionSettings: c.mergeDefaultEvictionSettings,
    containerLogMaxSize: c.containerLogMaxSize,
    containerLogMaxFiles: c.containerLogMaxFiles,
    containerLogMaxWorkers: c.containerLogMaxWorkers,
    containerLogMonitorInterval: d(c.containerLogMonitorInterval),
    healthzPort: c.healthzPort,
    healthzBindAddress: c.healthzBindAddress,
    podPidsLimit: c.podPidsLimit,
    seccompDefault: c.seccompDefault,
    enableSystemLogHandler: c.enableSystemLogHandler,
  };
  // Unset optional fields are left out, as the kubelet's omitempty does.
  return JSON.parse(JSON.stringify(out)) as Record<string, unknown>;
}

/** The YAML `klet sync --print-config` prints. */
export function kubeletConfigurationYaml(c: KubeletConfig): string {
  return stringify(toKubeletConfiguration(c));
}
