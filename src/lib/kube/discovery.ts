/**
 * kubeadm's token discovery (cmd/kubeadm/app/discovery/token
 * RetrieveValidatedConfigInfo), for `klet join`: read the cluster-info
 * ConfigMap of kube-public anonymously, with TLS unverified (the CA is not
 * known yet), until it carries a signature for the token's ID (the
 * bootstrapsigner controller adds it a little after the token is made; kubeadm
 * retries every 5 s); check the detached JWS of its kubeconfig with the token;
 * check its CA against the pinned public keys; then read it a second time
 * with TLS verified against that CA and require the same kubeconfig.
 *
 * Errors name the server and the token's ID, never its secret.
 */
import https from 'node:https';
import { parse } from 'yaml';
import { InputError, KletError, errorMessage } from '../errors.js';
import { pause } from '../util/sleep.js';
import { type BootstrapToken, JWS_KEY_PREFIX, detachedJwsValid, parseCertificates, pinnedCertificate, publicKeyPin } from './bootstrap-token.js';

const CLUSTER_INFO_PATH = '/api/v1/namespaces/kube-public/configmaps/cluster-info';
/** kubeadm's constants.DiscoveryRetryInterval. */
const RETRY_MS = 5000;
/** kubeadm's client timeout for discovery requests (ToClientSet: 10s). */
const REQUEST_TIMEOUT_MS = 10_000;

export interface DiscoveryOptions {
  /** host:port or https://host:port */
  server: string;
  token: BootstrapToken;
  /** Canonical sha256:<hex> pins (parsePublicKeyPin); empty only with unsafeSkipCaVerification. */
  caCertHashes: string[];
  unsafeSkipCaVerification: boolean;
  /** How long to keep trying (kubeadm's discovery timeout: 5 min). */
  timeoutMs: number;
}

export interface ClusterInfo {
  /** The API server the cluster-info kubeconfig names. */
  server: string;
  /** Its CA bundle (PEM). */
  caPem: string;
  /** The pin of the CA that matched (or of the first CA, unverified). */
  caPin: string;
}

/** The https:// URL of a join endpoint (kubeadm takes host:port). */
export function endpointUrl(server: string): string {
  const withScheme = /^[a-z]+:\/\//i.test(server) ? server : `https://${server}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new InputError(`API server "${server}" is not host:port or an https URL`, { input: 'server' });
  }
  if (url.protocol !== 'https:' || (url.pathname !== '/' && url.pathname !== '') || url.search) {
    throw new InputError(`API server "${server}" is not host:port or an https URL`, { input: 'server' });
  }
  return `https://${url.host}`;
}

interface ConfigMap {
  data?: Record<string, string>;
}

/** GET cluster-info once; `ca` undefined = TLS unverified. A failure is a one-line message. */
function getClusterInfo(base: string, ca: string | undefined, signal: AbortSignal): Promise<ConfigMap> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      `${base}${CLUSTER_INFO_PATH}`,
      {
        ...(ca === undefined ? { rejectUnauthorized: false } : { ca, rejectUnauthorized: true }),
        headers: { Accept: 'application/json' },
        signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (s: string) => (body += s));
        res.on('end', () => {
          if (res.statusCode === 200) {
            try {
              resolve(JSON.parse(body) as ConfigMap);
            } catch {
              reject(new Error('the answer is not JSON'));
            }
            return;
          }
          let reason = '';
          try {
            reason = (JSON.parse(body) as { message?: string }).message ?? '';
          } catch {
            // Not a Status.
          }
          reject(new Error(`${res.statusCode} ${res.statusMessage ?? ''}${reason ? `: ${reason}` : ''}`.replace(/\s+/g, ' ').trim()));
        });
        res.on('error', reject);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.name === 'AbortError' || err.name === 'TimeoutError') reject(new Error(signal.aborted ? 'interrupted' : `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`));
      else if (err.code === 'ECONNREFUSED') reject(new Error('connection refused'));
      else reject(new Error(`${err.code ? `${err.code}: ` : ''}${errorMessage(err)}`));
    });
  });
}

/**
 * Read cluster-info until it holds a signature for the token (or the time is
 * up: the last failure is the error).
 */
async function signedClusterInfo(base: string, o: DiscoveryOptions, ca: string | undefined, signal: AbortSignal): Promise<ConfigMap> {
  const deadline = Date.now() + o.timeoutMs;
  const key = JWS_KEY_PREFIX + o.token.id;
  for (;;) {
    let last: KletError;
    try {
      const cm = await getClusterInfo(base, ca, signal);
      if (cm.data?.[key]) return cm;
      last = new InputError(`token id "${o.token.id}" is invalid for this cluster or it has expired: the cluster-info ConfigMap of ${base} holds no signature for it`, { input: 'token' });
    } catch (err) {
      last = new KletError(`API server ${base}: reading the cluster-info ConfigMap of kube-public: ${errorMessage(err)}`);
    }
    if (signal.aborted) throw new KletError(`API server ${base}: reading the cluster-info ConfigMap: interrupted`);
    const left = deadline - Date.now();
    if (left <= 0) throw last;
    await pause(Math.min(RETRY_MS, left), signal);
  }
}

/** Verify cluster-info of `options.server` with the token and the pins: the API server and CA to trust. */
export async function discoverClusterInfo(o: DiscoveryOptions, signal: AbortSignal): Promise<ClusterInfo> {
  const base = endpointUrl(o.server);
  const cm = await signedClusterInfo(base, o, undefined, signal);
  const kubeconfig = cm.data?.kubeconfig ?? '';
  if (kubeconfig === '') throw new KletError(`API server ${base}: the cluster-info ConfigMap has no kubeconfig key: this API server is not set up for token bootstrapping`);
  if (!detachedJwsValid(cm.data?.[JWS_KEY_PREFIX + o.token.id] ?? '', kubeconfig, o.token)) {
    throw new InputError(`the cluster-info ConfigMap of ${base} is not signed with token "${o.token.id}" (its JWS signature does not verify): this API server cannot be trusted with it`, { input: 'token' });
  }
  const { server, caPem } = clusterOf(kubeconfig, base);
  const certs = (() => {
    try {
      return parseCertificates(caPem);
    } catch {
      return [];
    }
  })();
  if (certs.length === 0) throw new KletError(`API server ${base}: the kubeconfig of the cluster-info ConfigMap has no CA certificate`);
  if (o.unsafeSkipCaVerification && o.caCertHashes.length === 0) return { server, caPem, caPin: publicKeyPin(certs[0]!) };
  const pinned = pinnedCertificate(certs, o.caCertHashes);
  if (pinned === undefined) {
    throw new InputError(`the cluster CA of ${base} (public key ${certs.map(publicKeyPin).join(', ')}) is not pinned: it does not match ${o.caCertHashes.join(', ')}`, {
      input: 'discoveryTokenCaCertHash',
    });
  }
  // Again, now trusting only that CA: the same kubeconfig must come back.
  const again = await signedClusterInfo(base, o, caPem, signal);
  if (again.data?.kubeconfig !== kubeconfig) throw new KletError(`API server ${base}: the cluster-info ConfigMap read with verified TLS differs from the first one read`);
  return { server, caPem, caPin: publicKeyPin(pinned) };
}

/** The server and CA (PEM) of the kubeconfig in cluster-info (its only, or current, cluster). */
function clusterOf(kubeconfig: string, base: string): { server: string; caPem: string } {
  let doc: { clusters?: Array<{ name?: string; cluster?: { server?: string; 'certificate-authority-data'?: string } }> };
  try {
    doc = parse(kubeconfig) as typeof doc;
  } catch (err) {
    throw new KletError(`API server ${base}: the kubeconfig in the cluster-info ConfigMap is not YAML: ${errorMessage(err).split('\n')[0]}`);
  }
  const cluster = doc?.clusters?.at(-1)?.cluster;
  if (!cluster?.server) throw new KletError(`API server ${base}: the kubeconfig in the cluster-info ConfigMap names no cluster server`);
  return { server: cluster.server, caPem: Buffer.from(cluster['certificate-authority-data'] ?? '', 'base64').toString('utf8') };
}
