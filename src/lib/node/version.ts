/**
 * The Kubernetes release whose kubelet klet follows (its flags, defaults,
 * messages and API shapes): the one place that names it. Node status
 * reports it as kubeletVersion, with klet's own version as semver build
 * metadata (as k3s reports `v1.30.4+k3s1`): clients and the control plane
 * compare node versions as `vMAJOR.MINOR.PATCH` and ignore the metadata,
 * so klet's node is a v1.34 node to them. httpGet probes send
 * `kube-probe/<major>.<minor>` of it, as that kubelet does.
 * test/cluster/go.mod pins the same release for the cluster tests (a unit
 * test keeps the two equal).
 */
export const KUBERNETES_VERSION = 'v1.34.4';

/** `v1.34.4+klet.0.1.0`: node status' kubeletVersion for klet `kletVersion` (package.json's, `0.1.0`). */
export function kubeletVersion(kletVersion: string): string {
  return `${KUBERNETES_VERSION}+klet.${kletVersion.replace(/^v/, '').replace(/[^0-9A-Za-z.-]/g, '-')}`;
}

/** The User-Agent of httpGet probes: `kube-probe/1.34`. */
export const PROBE_USER_AGENT = `kube-probe/${/^v(\d+\.\d+)/.exec(KUBERNETES_VERSION)![1]}`;
