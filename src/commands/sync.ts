import { Flags } from '@oclif/core';
import { PodCommand } from '../base-command.js';
import { durationFlag } from '../flags.js';
import { nodeRegistrationFlags } from '../node-flags.js';

export default class Sync extends PodCommand<typeof Sync> {
  static override summary = 'Run the kubelet sync loop: keep this node converged with its pod sources.';
  static override description = `The long-running kubelet. It watches the manifest directory (fs events, and a re-read every --file-check-frequency so missed events still converge) and/or polls --manifest-url, and keeps the node's pods matching them: one serialized worker per pod, a relisting PLEG (--pleg-relist-period; on containerd it also relists as soon as a container exits, from containerd's event service), restarts by restart policy with the kubelet's crash-loop back-off (10s doubling to 5m, reset after 10m of clean running), graceful termination with preStop hooks when a manifest is removed, activeDeadlineSeconds, postStart hooks.

With --kubeconfig it also joins that cluster as klet register-node --heartbeat does: it registers the Node (the registration flags apply), renews its Lease every 10 s and sends node status on change or every 5 minutes; while the API server is unreachable it logs, retries with back-off and keeps the static pods running. Each static pod gets a mirror pod (kubernetes.io/config.mirror, owned by the Node) carrying its status, recreated if deleted, deleted with the static pod. The pods bound to the node in the API server (list+watch on spec.nodeName) run beside the static pods; their status is patched to the server on change, and kubectl delete stops them within their grace period and then removes them from the server. New API pods are admitted as the kubelet does, counting the static pods' requests (OutOfcpu, OutOfmemory, OutOfpods, NodeAffinity, TaintToleration; a rejected pod is marked Failed). API pods' ConfigMaps and Secrets (volumes, env, envFrom) are read from the API server through one watch per referenced object, and their serviceAccountToken volumes (the kube-api-access-* volume the API server injects) get TokenRequest tokens bound to the pod, refreshed at 80% of their lifetime; static pods that reference API objects are refused (static pods may not reference configmaps). Pod and node events go to the API server as core/v1 Events with the kubelet's reasons, correlated as client-go does (repeats patch count, similar ones are combined, a per-object rate limit), sent in the background from a bounded queue. A pod's status is written as the kubelet's status manager writes it: Pending when its first sync begins, then after each sync that changed it (a change in condition times alone is not written; lastTransitionTime moves only when a condition's status does), with a full resync every 10 s. klet status shows the cluster fields while it runs.

With --kubeconfig it also serves the kubelet server on --address:--port (0.0.0.0:10250; the Node's daemonEndpoints say where): kubectl logs, exec, attach, port-forward and the node proxy (/healthz, /pods, /configz, /metrics) reach the node there, with the kubelet's paths and answers. Clients authenticate with a certificate from --client-ca-file or a bearer token the API server accepts (TokenReview); every request is authorized with a SubjectAccessReview on nodes/<name> (kubeadm's settings: no anonymous requests). The serving certificate is --tls-cert-file, else a self-signed one in <root-dir>/pki. Standalone it serves only when --port is given; --port 0 turns it off.

With --bootstrap-kubeconfig (a kubeconfig holding a bootstrap token, as kubeadm writes /etc/kubernetes/bootstrap-kubelet.conf; klet join writes one) it first does the kubelet's TLS bootstrap when --kubeconfig is missing or its client certificate expired: an ECDSA P-256 key (0600), a CertificateSigningRequest node-csr-<digest> for CN system:node:<node name>, O system:nodes (signer kubernetes.io/kube-apiserver-client-kubelet, usages digital signature and client auth), a wait for its approval and certificate (one line on stderr; kube-controller-manager approves such requests of bootstrap tokens, or kubectl certificate approve), then <root-dir>/pki/kubelet-client-<time>.pem with the kubelet-client-current.pem link, and --kubeconfig written to use it. A denied or failed request is an error naming it. While it runs, that certificate is renewed at a jittered 70–90% of its lifetime (--rotate-certificates, as the kubelet's rotateCertificates): a new key and CSR with the node's own identity, a new kubelet-client-<time>.pem behind the link, and the API connections switched to it without a restart (watches resume with it).

A source that cannot be read keeps its last good pods (an unreadable URL or a deleted directory never kills running pods). On start it adopts what is already running (after a crash, even a SIGKILL, or a runtime restart): containers whose spec hash matches are kept, changed ones restarted, pods no source wants killed once every source has answered. On SIGTERM or SIGINT it stops the loop within seconds (requests to the API server in flight are cancelled) and leaves the pods running, as the kubelet does.

State is served on <root-dir>/klet.sock (mode 0600) over HTTP: /healthz, /pods (a v1 PodList), /node (runtime version and conditions, pod sources, PLEG relist, pod-worker queue), /plans (each pod's last sync: what the sync loop planned for it and how it went, as klet explain shows it), /events (newline-delimited JSON of sync-loop iterations, PLEG, pod lifecycle, pod sync plan and probe result events: the retained ones after ?since=SEQ, then it streams new ones until the client disconnects; ?follow=false returns after the retained ones), /metrics (Prometheus). --listen 127.0.0.1:PORT also serves it on loopback TCP, only with --auth-token-file (bearer token). Watch it with klet dashboard, or run it with --tui to see the dashboard in this terminal.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests',
    "<%= config.bin %> <%= command.id %> --manifest-url https://config.example/node1.yaml --manifest-url-header 'Authorization: Bearer $TOKEN'",
    '<%= config.bin %> <%= command.id %> --listen 127.0.0.1:10250 --auth-token-file /etc/klet/token',
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests --kubeconfig /etc/kubernetes/kubelet.conf',
    '<%= config.bin %> <%= command.id %> --kubeconfig /etc/kubernetes/kubelet.conf --client-ca-file /etc/kubernetes/pki/ca.crt --node-ip 10.0.0.5    # kubectl logs/exec/port-forward reach it on :10250',
    '<%= config.bin %> <%= command.id %> --bootstrap-kubeconfig /var/lib/klet/bootstrap-kubelet.conf --kubeconfig /var/lib/klet/kubelet.conf',
    "curl --unix-socket /var/lib/klet/klet.sock 'http://klet/events?follow=false'",
    "curl -N --unix-socket /var/lib/klet/klet.sock 'http://klet/events?since=42'    # follows",
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests --tui',
  ];
  static override flags = {
    'manifest-dir': Flags.string({
      summary:
        "Directory of static pod manifests to keep running, or one manifest file (the kubelet's staticPodPath). Default /etc/kubernetes/manifests unless only --manifest-url is given. Alias: --pod-manifest-path.",
      aliases: ['pod-manifest-path'],
    }),
    'manifest-url': Flags.string({ summary: 'URL serving pod manifests, polled every --http-check-frequency.' }),
    'manifest-url-header': Flags.string({ summary: "HTTP header for --manifest-url, 'Name: value' (repeatable).", multiple: true }),
    'file-check-frequency': durationFlag({ summary: 'How often the manifest dir is re-read besides fs events.', default: '20s' }),
    'http-check-frequency': durationFlag({ summary: 'How often --manifest-url is polled.', default: '20s' }),
    'pleg-relist-period': durationFlag({ summary: 'How often the PLEG relists the runtime.', default: '1s' }),
    'sync-frequency': durationFlag({ summary: 'Resync period of running pods and of their configMap, secret, downwardAPI and projected volumes.', default: '1m' }),
    'max-parallel-syncs': Flags.integer({
      summary: 'How many running pods may resync or update at the same time (a new pod\'s first sync and pod terminations are never held back).',
      default: 8,
      min: 1,
    }),
    kubeconfig: Flags.string({
      summary: 'Join the cluster of this kubeconfig: register the node and keep its Lease and status fresh, run the pods bound to it, mirror pods for static pods.',
    }),
    'bootstrap-kubeconfig': Flags.string({
      summary: 'TLS bootstrap, as the kubelet: when --kubeconfig is missing or its client certificate expired, request one with this (bootstrap token) kubeconfig and write --kubeconfig.',
    }),
    'rotate-certificates': Flags.string({
      summary: 'Renew the client certificate at 70–90% of its lifetime through the CSR API, switching the API connections to it (default true when the --kubeconfig certificate is the bootstrapped <root-dir>/pki/kubelet-client-current.pem).',
      options: ['true', 'false'],
    }),
    ...nodeRegistrationFlags,
    listen: Flags.string({ summary: 'Also serve the local API on loopback TCP (127.0.0.1:PORT); needs --auth-token-file.' }),
    'auth-token-file': Flags.string({ summary: 'File holding the bearer token required on --listen (an error without --listen).' }),
    address: Flags.string({ summary: 'IP address the kubelet server listens on (0.0.0.0 for all interfaces).', default: '0.0.0.0' }),
    port: Flags.integer({
      summary: 'Port of the kubelet server (HTTPS: logs, exec, attach, port-forward for the API server). Default 10250 with --kubeconfig; standalone it serves only when given; 0 turns it off.',
      min: 0,
    }),
    'tls-cert-file': Flags.string({ summary: 'Serving certificate of the kubelet server (PEM). Default: a self-signed one made in <root-dir>/pki.' }),
    'tls-private-key-file': Flags.string({ summary: 'Private key of --tls-cert-file (PEM).' }),
    'client-ca-file': Flags.string({ summary: 'CA bundle that client certificates of kubelet server requests must verify against (CN is the user, O the groups).' }),
    'anonymous-auth': Flags.string({
      summary: 'Serve requests that carry no credentials as system:anonymous (default false, as kubeadm configures the kubelet).',
      options: ['true', 'false'],
    }),
    'authentication-token-webhook': Flags.string({
      summary: 'Check bearer tokens with a TokenReview on the API server, cached 2m (default true with --kubeconfig).',
      options: ['true', 'false'],
    }),
    'authorization-mode': Flags.string({
      summary: 'Authorize kubelet server requests with a SubjectAccessReview on nodes/<name>/<subresource> (Webhook, default with --kubeconfig; allowed cached 5m, denied 30s) or allow every authenticated one (AlwaysAllow, default standalone).',
      options: ['AlwaysAllow', 'Webhook'],
    }),
    tui: Flags.boolean({
      summary: 'Show the live dashboard (as klet dashboard draws it) in this terminal; q stops the sync, pods keep running.',
      default: false,
    }),
    'crash-loop-backoff-initial': durationFlag({ summary: 'First crash-loop back-off delay (tests).', default: '10s', hidden: true }),
    'crash-loop-backoff-max': durationFlag({ summary: 'Crash-loop back-off cap (tests).', default: '5m', hidden: true }),
    'crash-loop-backoff-reset': durationFlag({ summary: 'Clean running time that resets the back-off (tests).', default: '10m', hidden: true }),
  };

  override async init(): Promise<void> {
    // The kubelet's bare boolean form (--authentication-token-webhook) means =true.
    const { normalizeKubeletBools } = await import('../cli/kubelet-bools.js');
    this.argv = normalizeKubeletBools(this.argv);
    await super.init();
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Sync);
    const { syncCommand } = await import('../cli/sync.js');
    await syncCommand(flags, {
      nodeName: this.nodeName(),
      kletVersion: this.config.version,
      cri: () => this.cri(),
      deps: () => this.deps(),
      interruptedBy: () => this.interruptedBy,
      notice: (line) => this.notice(line),
    });
  }
}
