import { Args, Flags } from '@oclif/core';
import { PodCommand } from '../base-command.js';
import { durationFlag } from '../flags.js';
import Sync from './sync.js';

/** klet sync's flags but the two kubeconfigs, which join writes. */
const { kubeconfig: _kubeconfig, 'bootstrap-kubeconfig': _bootstrap, 'print-config': _printConfig, ...syncFlags } = Sync.flags;

export default class Join extends PodCommand<typeof Join> {
  static override summary = 'Join a cluster with a bootstrap token, as kubeadm join does for the kubelet, then run klet sync.';
  static override description = `For nodes without kubeadm: kubeadm's token discovery and the kubelet's TLS bootstrap, then klet sync --kubeconfig <root-dir>/kubelet.conf, so one command takes a bare node to a Ready one.

Discovery: the cluster-info ConfigMap of kube-public is read from SERVER (host:port or https://host:port) anonymously, with TLS unverified for that request as kubeadm does; its kubeconfig must carry the detached JWS signature jws-kubeconfig-<token id> made with --token (the bootstrapsigner controller of kube-controller-manager signs it for every token with usage-bootstrap-signing), and its CA's public key must match a --discovery-token-ca-cert-hash (sha256 of the SubjectPublicKeyInfo, as kubeadm token create --print-join-command prints it). cluster-info is then read again with TLS verified against that CA. Until the signature appears (or the server answers) it retries every 5 s for --discovery-timeout.

It writes <root-dir>/bootstrap-kubelet.conf (mode 0600: the token, and the pinned CA) and bootstraps <root-dir>/kubelet.conf as klet sync --bootstrap-kubeconfig does (a CertificateSigningRequest for CN system:node:<node name>, O system:nodes; the key and certificate in <root-dir>/pki/kubelet-client-current.pem), then runs klet sync with the sync flags given. With --no-sync it stops once the files are written; a later klet sync --kubeconfig <root-dir>/kubelet.conf needs no token.

A wrong CA hash, an unknown or expired token, an unreachable server: one-line errors naming them. The token's secret is never printed; only bootstrap-kubelet.conf holds it.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> 10.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef',
    '<%= config.bin %> <%= command.id %> 10.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef --no-sync',
    '<%= config.bin %> <%= command.id %> 10.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef --manifest-dir /etc/kubernetes/manifests --node-labels node.kubernetes.io/pool=edge',
    "openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum    # the CA hash, on a control-plane node",
  ];
  static override args = {
    server: Args.string({ description: 'The API server: host:port (as kubeadm join takes it) or https://host:port.', required: true }),
  };
  static override flags = {
    token: Flags.string({ summary: 'The bootstrap token, ID.SECRET ([a-z0-9]{6}.[a-z0-9]{16}), for discovery and the TLS bootstrap.', required: true }),
    'discovery-token-ca-cert-hash': Flags.string({
      summary: "Pin of the cluster CA's public key, sha256:<hex> (repeatable; one must match).",
      multiple: true,
    }),
    'discovery-token-unsafe-skip-ca-verification': Flags.boolean({
      summary: 'Trust the CA in cluster-info without a --discovery-token-ca-cert-hash pin (its signature is still checked).',
      default: false,
    }),
    'discovery-timeout': durationFlag({ summary: 'How long discovery keeps retrying (kubeadm: timeouts.discovery).', default: '5m' }),
    'no-sync': Flags.boolean({ summary: 'Stop once bootstrap-kubelet.conf and kubelet.conf are written.', default: false }),
    ...syncFlags,
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Join);
    // The sync's configuration is checked before anything is written (a bad --config leaves nothing behind).
    const { syncConfig } = await import('../cli/sync.js');
    const host = this.syncHost();
    await syncConfig({ ...this.syncFlags(flags), kubeconfig: 'kubelet.conf' }, host, true);
    const { join } = await import('../lib/services/join.js');
    const notice = (line: string) => this.notice(`klet join: ${line}`);
    const r = await join(
      {
        server: args.server,
        token: flags.token,
        caCertHashes: flags['discovery-token-ca-cert-hash'] ?? [],
        unsafeSkipCaVerification: flags['discovery-token-unsafe-skip-ca-verification'],
        discoveryTimeoutMs: flags['discovery-timeout'],
      },
      { rootDir: this.flags['root-dir'], nodeName: this.nodeName(), signal: this.signal, progress: notice },
    );
    notice(
      r.bootstrapped
        ? `client certificate ${r.pairFile} issued (${r.csrName}); wrote ${r.bootstrapKubeconfig} and ${r.kubeconfig}`
        : `wrote ${r.bootstrapKubeconfig}; ${r.kubeconfig} is still valid`,
    );
    if (flags['no-sync']) return;
    const rest = this.syncFlags(flags);
    const { syncCommand } = await import('../cli/sync.js');
    // The kubelet server takes the API server's client certificate, signed by the cluster's CA (kubeadm's clientCAFile),
    // unless --client-ca-file or the --config file names one.
    const { readConfigFile } = await import('../lib/kubeletconfig/index.js');
    const fileCa = rest.config !== undefined && (await readConfigFile(rest.config)).values.has('authentication.x509.clientCAFile');
    await syncCommand({ ...rest, kubeconfig: r.kubeconfig, 'client-ca-file': rest['client-ca-file'] ?? (fileCa ? undefined : r.caFile) }, host);
  }

  /** The flags klet sync takes. */
  private syncFlags(flags: Record<string, unknown>): import('../cli/sync.js').SyncFlags {
    const {
      token: _token,
      'discovery-token-ca-cert-hash': _hash,
      'discovery-token-unsafe-skip-ca-verification': _unsafe,
      'discovery-timeout': _timeout,
      'no-sync': _noSync,
      ...rest
    } = flags;
    return { ...(rest as unknown as import('../cli/sync.js').SyncFlags), 'print-config': false };
  }
}
