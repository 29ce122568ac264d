/**
 * `klet join`: take a bare node into a cluster from a bootstrap token, as
 * `kubeadm join` does for the kubelet: token discovery of the API server and
 * its CA (kube/discovery.ts), the bootstrap kubeconfig
 * <root-dir>/bootstrap-kubelet.conf (token identity, the pinned CA; kubeadm's
 * names), then the kubelet's TLS bootstrap (kube/tls-bootstrap.ts) to
 * <root-dir>/kubelet.conf with a client certificate in <root-dir>/pki. The
 * sync that follows needs only kubelet.conf.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { InputError } from '../errors.js';
import { parseBootstrapToken, parsePublicKeyPin } from '../kube/bootstrap-token.js';
import { writeFileAtomic } from '../kuberuntime/poddir.js';

/** kubeadm's discovery timeout (constants.DiscoveryTimeout). */
export const DEFAULT_DISCOVERY_TIMEOUT_MS = 5 * 60_000;
/** kubeadm's TokenUser and DefaultClusterName. */
const TOKEN_USER = 'tls-bootstrap-token-user';
const CLUSTER_NAME = 'kubernetes';

export interface JoinOptions {
  server: string;
  /** ID.SECRET */
  token: string;
  caCertHashes: string[];
  unsafeSkipCaVerification: boolean;
  discoveryTimeoutMs?: number;
}

export interface JoinDeps {
  rootDir: string;
  nodeName: string;
  signal: AbortSignal;
  /** Progress lines for the user. */
  progress(line: string): void;
}

export interface JoinResult {
  server: string;
  caPin: string;
  bootstrapKubeconfig: string;
  kubeconfig: string;
  /** The cluster's CA, written where the node's kubelet server reads client certificates against (kubeadm: pki/ca.crt). */
  caFile: string;
  /** False when kubelet.conf was valid already. */
  bootstrapped: boolean;
  csrName?: string;
  pairFile?: string;
}

/** The join's files under the root dir (kubeadm: /etc/kubernetes/bootstrap-kubelet.conf, kubelet.conf). */
export function joinPaths(rootDir: string): { bootstrapKubeconfig: string; kubeconfig: string; certDir: string } {
  const root = path.resolve(rootDir);
  return { bootstrapKubeconfig: path.join(root, 'bootstrap-kubelet.conf'), kubeconfig: path.join(root, 'kubelet.conf'), certDir: path.join(root, 'pki') };
}

/** Check the options before anything is asked of the network. */
export function checkJoinOptions(o: JoinOptions): { token: ReturnType<typeof parseBootstrapToken>; pins: string[] } {
  const token = parseBootstrapToken(o.token);
  const pins = o.caCertHashes.map(parsePublicKeyPin);
  if (pins.length === 0 && !o.unsafeSkipCaVerification) {
    throw new InputError('token-based discovery without a CA public key pin can be unsafe: give the CA hash, or skip the verification explicitly', {
      input: 'discoveryTokenCaCertHash',
    });
  }
  return { token, pins };
}

export async function join(o: JoinOptions, deps: JoinDeps): Promise<JoinResult> {
  const { token, pins } = checkJoinOptions(o);
  const { discoverClusterInfo } = await import('../kube/discovery.js');
  const info = await discoverClusterInfo(
    { server: o.server, token, caCertHashes: pins, unsafeSkipCaVerification: o.unsafeSkipCaVerification, timeoutMs: o.discoveryTimeoutMs ?? DEFAULT_DISCOVERY_TIMEOUT_MS },
    deps.signal,
  );
  deps.progress(`cluster-info of ${info.server} verified with token "${token.id}"; CA ${info.caPin}`);
  const paths = joinPaths(deps.rootDir);
  await fsp.mkdir(path.dirname(paths.bootstrapKubeconfig), { recursive: true, mode: 0o700 });
  const context = `${TOKEN_USER}@${CLUSTER_NAME}`;
  const bootstrap = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: CLUSTER_NAME, cluster: { server: info.server, 'certificate-authority-data': Buffer.from(info.caPem).toString('base64') } }],
    contexts: [{ name: context, context: { cluster: CLUSTER_NAME, user: TOKEN_USER } }],
    'current-context': context,
    users: [{ name: TOKEN_USER, user: { token: o.token } }],
  };
  await writeFileAtomic(paths.bootstrapKubeconfig, stringify(bootstrap), 0o600);
  // As kubeadm join writes /etc/kubernetes/pki/ca.crt: the API server's kubelet client certificate verifies against it.
  const caFile = path.join(paths.certDir, 'ca.crt');
  await fsp.mkdir(paths.certDir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(caFile, info.caPem, 0o644);

  const { ensureClientCertificate } = await import('../kube/tls-bootstrap.js');
  const r = await ensureClientCertificate(
    { kubeconfig: paths.kubeconfig, bootstrapKubeconfig: paths.bootstrapKubeconfig, certDir: paths.certDir, nodeName: deps.nodeName },
    deps.signal,
    deps.progress,
  );
  return {
    server: info.server,
    caPin: info.caPin,
    bootstrapKubeconfig: paths.bootstrapKubeconfig,
    kubeconfig: paths.kubeconfig,
    caFile,
    bootstrapped: r.bootstrapped,
    ...(r.csrName ? { csrName: r.csrName } : {}),
    ...(r.pairFile ? { pairFile: r.pairFile } : {}),
  };
}
