import fs from 'node:fs';
/** /var/lib/kubelet/config.yaml as kubeadm v1.34 init/join writes it (zero values included, as it marshals them). */
export const KUBEADM_CONFIG = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
resolvConf: /run/systemd/resolve/resolv.conf
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`;

/**
 * KUBEADM_CONFIG as it is on this host: its resolvConf is systemd-resolved's file only where
 * systemd-resolved runs (kubeadm checks), else /etc/resolv.conf. A resolver file that cannot be read fails
 * every pod's sandbox, with the kubelet as with klet. And its cgroupDriver is systemd only where systemd is
 * the init (kubeadm always writes systemd; where no systemd runs, the kubelet and klet both refuse to start
 * with it, so such a node's admin writes cgroupfs, as the runtime's driver).
 */
const SYSTEMD_BOOTED = fs.existsSync('/run/systemd/system');
export const KUBEADM_CONFIG_HERE = (fs.existsSync('/run/systemd/resolve/resolv.conf')
  ? KUBEADM_CONFIG
  : KUBEADM_CONFIG.replace('resolvConf: /run/systemd/resolve/resolv.conf', 'resolvConf: /etc/resolv.conf')
).replace('cgroupDriver: systemd', SYSTEMD_BOOTED ? 'cgroupDriver: systemd' : 'cgroupDriver: cgroupfs');

