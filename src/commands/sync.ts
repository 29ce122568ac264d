import { Flags } from '@oclif/core';
import { PodCommand } from '../base-command.js';
import { configDurationFlag, durationFlag } from '../flags.js';
import { cgroupFlags, nodeRegistrationFlags } from '../node-flags.js';

export default class Sync extends PodCommand<typeof Sync> {
  static override summary = 'Run the kubelet sync loop: keep this node converged with its pod sources.';
  static override description = `The long-running kubelet. It watches the manifest directory (fs events, and a re-read every --file-check-frequency so missed events still converge) and/or polls --manifest-url, and keeps the node's pods matching them: one serialized worker per pod, a relisting PLEG (--pleg-relist-period; on containerd it also relists as soon as a container exits, from containerd's event service), restarts by restart policy with the kubelet's crash-loop back-off (10s doubling to 5m, reset after 10m of clean running), graceful termination with preStop hooks when a manifest is removed, activeDeadlineSeconds, postStart hooks.

With --kubeconfig it also joins that cluster as klet register-node --heartbeat does: it registers the Node (the registration flags apply), renews its Lease every 10 s and sends node status on change or every 5 minutes; while the API server is unreachable it logs, retries with back-off and keeps the static pods running. Each static pod gets a mirror pod (kubernetes.io/config.mirror, owned by the Node) carrying its status, recreated if deleted, deleted with the static pod. The pods bound to the node in the API server (list+watch on spec.nodeName) run beside the static pods; their status is patched to the server on change, and kubectl delete stops them within their grace period and then removes them from the server. New API pods are admitted as the kubelet does, counting the static pods' requests (OutOfcpu, OutOfmemory, OutOfpods, NodeAffinity, TaintToleration; a rejected pod is marked Failed). API pods' ConfigMaps and Secrets (volumes, env, envFrom) are read from the API server through one watch per referenced object, and their serviceAccountToken volumes (the kube-api-access-* volume the API server injects) get TokenRequest tokens bound to the pod, refreshed at 80% of their lifetime; static pods that reference API objects are refused (static pods may not reference configmaps). Pod and node events go to the API server as core/v1 Events with the kubelet's reasons, correlated as client-go does (repeats patch count, similar ones are combined, a per-object rate limit), sent in the background from a bounded queue. A pod's status is written as the kubelet's status manager writes it: Pending when its first sync begins, then after each sync that changed it (a change in condition times alone is not written; lastTransitionTime moves only when a condition's status does), with a full resync every 10 s. klet status shows the cluster fields while it runs.

With --kubeconfig it also serves the kubelet server on --address:--port (0.0.0.0:10250; the Node's daemonEndpoints say where): kubectl logs, exec, attach, port-forward and the node proxy (/healthz, /pods, /configz, /metrics) reach the node there, with the kubelet's paths and answers. Clients authenticate with a certificate from --client-ca-file or a bearer token the API server accepts (TokenReview); every request is authorized with a SubjectAccessReview on nodes/<name> (kubeadm's settings: no anonymous requests). The serving certificate is --tls-cert-file, else a self-signed one in <root-dir>/pki; with --rotate-server-certificates (the kubelet's serverTLSBootstrap) it is requested instead as a kubernetes.io/kubelet-serving CertificateSigningRequest (CN system:node:<node name>, O system:nodes, usages digital signature and server auth, SANs: the node's hostname and IPs), which kube-controller-manager does not approve: approve it with kubectl certificate approve. Until it is issued the server listens but no TLS handshake succeeds, as with the kubelet; then it is kept as <root-dir>/pki/kubelet-server-<time>.pem behind kubelet-server-current.pem, served to new connections without a restart, and renewed at a jittered 70–90% of its lifetime (or at once when the node's addresses change). Standalone it serves only when --port is given; --port 0 turns it off.

With --bootstrap-kubeconfig (a kubeconfig holding a bootstrap token, as kubeadm writes /etc/kubernetes/bootstrap-kubelet.conf; klet join writes one) it first does the kubelet's TLS bootstrap when --kubeconfig is missing or its client certificate expired: an ECDSA P-256 key (0600), a CertificateSigningRequest node-csr-<digest> for CN system:node:<node name>, O system:nodes (signer kubernetes.io/kube-apiserver-client-kubelet, usages digital signature and client auth), a wait for its approval and certificate (one line on stderr; kube-controller-manager approves such requests of bootstrap tokens, or kubectl certificate approve), then <root-dir>/pki/kubelet-client-<time>.pem with the kubelet-client-current.pem link, and --kubeconfig written to use it. A denied or failed request is an error naming it. While it runs, that certificate is renewed at a jittered 70–90% of its lifetime (--rotate-certificates, as the kubelet's rotateCertificates): a new key and CSR with the node's own identity, a new kubelet-client-<time>.pem behind the link, and the API connections switched to it without a restart (watches resume with it).

Pods get the kubelet's cgroups (--cgroups-per-qos; --cgroup-driver cgroupfs, or systemd: the same tree as systemd slices, kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice, made over D-Bus): <cgroup-root>/kubepods sized to node allocatable (capacity less --kube-reserved and --system-reserved with --enforce-node-allocatable=pods), its burstable and besteffort QoS cgroups, and a pod<uid> cgroup per pod (Guaranteed pods directly in kubepods) with the pod's cpu.shares, CFS quota and memory limit from its containers, its pod-level resources and its overhead; the runtime gets it as the sandbox's cgroup parent, and it is removed with the pod. klet changes or removes only cgroups it made (recorded in <root-dir>/cgroups).

Garbage collection, as the kubelet does it, on only what this klet created: every minute dead containers beyond the newest one per pod container are removed with their log files (the one kept is what klet logs --previous reads), as are all of a gone pod's, and sandboxes that are not ready and hold no container, except a pod's newest; a dead container's older instances also go as soon as it dies. Every 5 minutes, when the image filesystem is at or above --image-gc-high-threshold, unused images klet pulled (and no other: not imported, built-in or another client's) are removed least recently used first, down to --image-gc-low-threshold; an image any container of the runtime uses stays. Failures are node events (ContainerGCFailed, ImageGCFailed, FreeDiskSpaceFailed).

Eviction, as the kubelet's: every 10 s the node's memory, the root dir's and the image filesystem's space and inodes, and its PIDs are compared with --eviction-hard and --eviction-soft; while one is met the node reports MemoryPressure, DiskPressure or PIDPressure (until --eviction-pressure-transition-period has passed without it), new API pods are refused (reason Evicted), and after container and image GC for disk, one API pod per round is evicted (Failed, reason Evicted, the kubelet's message). Static pods, like the kubelet's critical pods, are never evicted. See docs/node-resources.md.

--config takes the kubelet's configuration file (a KubeletConfiguration, kubelet.config.k8s.io/v1beta1, as kubeadm writes /var/lib/kubelet/config.yaml): defaults, then its fields, then the flags given (a flag wins over the file), checked once at start. An unknown field is an error naming file:line and the field; a known field klet does not implement is one warning each. --print-config prints the effective configuration as a KubeletConfiguration and exits. See docs/configuration.md.

A source that cannot be read keeps its last good pods (an unreadable URL or a deleted directory never kills running pods). On start it adopts what is already running (after a crash, even a SIGKILL, or a runtime restart): containers whose spec hash matches are kept, changed ones restarted, pods no source wants killed once every source has answered. On SIGTERM or SIGINT it stops the loop within seconds (requests to the API server in flight are cancelled) and leaves the pods running, as the kubelet does.

State is served on <root-dir>/klet.sock (mode 0600) over HTTP: /healthz, /pods (a v1 PodList), /node (runtime version and conditions, pod sources, PLEG relist, pod-worker queue, the MemoryPressure/DiskPressure/PIDPressure conditions), /plans (each pod's last sync: what the sync loop planned for it and how it went, as klet explain shows it), /events (newline-delimited JSON of sync-loop iterations, PLEG, pod lifecycle, pod sync plan and probe result events: the retained ones after ?since=SEQ, then it streams new ones until the client disconnects; ?follow=false returns after the retained ones), /metrics (Prometheus). --listen 127.0.0.1:PORT also serves it on loopback TCP, only with --auth-token-file (bearer token). Watch it with klet dashboard, or run it with --tui to see the dashboard in this terminal.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests',
    "<%= config.bin %> <%= command.id %> --manifest-url https://config.example/node1.yaml --manifest-url-header 'Authorization: Bearer $TOKEN'",
    '<%= config.bin %> <%= command.id %> --listen 127.0.0.1:10250 --auth-token-file /etc/klet/token',
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests --kubeconfig /etc/kubernetes/kubelet.conf',
    '<%= config.bin %> <%= command.id %> --kubeconfig /etc/kubernetes/kubelet.conf --client-ca-file /etc/kubernetes/pki/ca.crt --node-ip 10.0.0.5    # kubectl logs/exec/port-forward reach it on :10250',
    '<%= config.bin %> <%= command.id %> --bootstrap-kubeconfig /var/lib/klet/bootstrap-kubelet.conf --kubeconfig /var/lib/klet/kubelet.conf',
    '<%= config.bin %> <%= command.id %> --kubeconfig /var/lib/klet/kubelet.conf --rotate-server-certificates    # then: kubectl certificate approve csr-…',
    "curl --unix-socket /var/lib/klet/klet.sock 'http://klet/events?follow=false'",
    "curl -N --unix-socket /var/lib/klet/klet.sock 'http://klet/events?since=42'    # follows",
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests --tui',
    '<%= config.bin %> <%= command.id %> --cgroup-root /klet --kube-reserved cpu=100m,memory=256Mi    # pods in /klet/kubepods/{burstable,besteffort}/pod<uid>',
    '<%= config.bin %> <%= command.id %> --image-gc-high-threshold 90 --image-gc-low-threshold 70 --minimum-image-gc-age 10m',
    '<%= config.bin %> <%= command.id %> --config /var/lib/kubelet/config.yaml --kubeconfig /etc/kubernetes/kubelet.conf',
    '<%= config.bin %> <%= command.id %> --config /var/lib/kubelet/config.yaml --port 10251 --print-config',
  ];
  static override flags = {
    config: Flags.string({
      summary:
        "KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, as kubeadm writes /var/lib/kubelet/config.yaml): its fields set what the flags set (flags given win); an unknown field is an error, a field klet does not implement a warning. See docs/configuration.md.",
    }),
    'print-config': Flags.boolean({ summary: 'Print the effective configuration (defaults, --config, flags) as a KubeletConfiguration and exit.', default: false }),
    'manifest-dir': Flags.string({
      summary:
        "Directory of static pod manifests to keep running, or one manifest file (the kubelet's staticPodPath). Default /etc/kubernetes/manifests unless only --manifest-url is given. Alias: --pod-manifest-path.",
      aliases: ['pod-manifest-path'],
    }),
    'manifest-url': Flags.string({ summary: 'URL serving pod manifests, polled every --http-check-frequency.' }),
    'manifest-url-header': Flags.string({ summary: "HTTP header for --manifest-url, 'Name: value' (repeatable).", multiple: true }),
    'file-check-frequency': configDurationFlag({ summary: 'How often the manifest dir is re-read besides fs events.', shownDefault: '20s' }),
    'http-check-frequency': configDurationFlag({ summary: 'How often --manifest-url is polled.', shownDefault: '20s' }),
    'pleg-relist-period': configDurationFlag({ summary: 'How often the PLEG relists the runtime.', shownDefault: '1s' }),
    'sync-frequency': configDurationFlag({ summary: 'Resync period of running pods and of their configMap, secret, downwardAPI and projected volumes.', shownDefault: '1m' }),
    'max-parallel-syncs': Flags.integer({
      summary: 'How many running pods may resync or update at the same time (a new pod\'s first sync and pod terminations are never held back). Default: 8.',
      min: 1,
    }),
    'allowed-unsafe-sysctls': Flags.string({
      summary:
        "(allowedUnsafeSysctls) Comma-separated unsafe sysctls or sysctl patterns (ending in *) pods may set besides the safe ones (the kubelet's flag); a pod setting any other is rejected at admission with reason SysctlForbidden. Use at your own risk.",
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
    // No default here: one not given leaves maxPods to --config, then to 110.
    'max-pods': Flags.integer({ summary: 'Number of pods this node can run (status.capacity.pods). Default: 110.', min: 1 }),
    'cluster-dns': Flags.string({
      summary:
        'DNS server IP addresses, comma-separated (repeatable; clusterDNS): the only nameservers of pods with dnsPolicy ClusterFirst. Without any, those pods fall back to Default with a MissingClusterDNS warning, as the kubelet\'s.',
      multiple: true,
    }),
    'cluster-domain': Flags.string({
      summary: "The cluster's domain (clusterDomain, e.g. cluster.local): ClusterFirst pods search <namespace>.svc.<domain>, svc.<domain> and <domain> before the host's domains, and a pod with a subdomain is <hostname>.<subdomain>.<namespace>.svc.<domain> in its /etc/hosts.",
    }),
    'resolv-conf': Flags.string({
      summary: 'Resolver file (resolvConf) the DNS config of Default pods (and host-network ClusterFirst pods) is made from, read at each sandbox; "" for none (a loopback nameserver). Default: /etc/resolv.conf.',
    }),
    listen: Flags.string({ summary: 'Also serve the local API on loopback TCP (127.0.0.1:PORT); needs --auth-token-file.' }),
    'auth-token-file': Flags.string({ summary: 'File holding the bearer token required on --listen (an error without --listen).' }),
    address: Flags.string({ summary: 'IP address the kubelet server listens on (0.0.0.0 for all interfaces). Default: 0.0.0.0.' }),
    port: Flags.integer({
      summary: 'Port of the kubelet server (HTTPS: logs, exec, attach, port-forward for the API server). Default 10250 with --kubeconfig; standalone it serves only when given; 0 turns it off.',
      min: 0,
    }),
    'tls-cert-file': Flags.string({ summary: 'Serving certificate of the kubelet server (PEM). Default: a self-signed one made in <root-dir>/pki.' }),
    'rotate-server-certificates': Flags.string({
      summary:
        "Request the kubelet server's certificate from the API server (a kubernetes.io/kubelet-serving CSR for the node's addresses, approved with kubectl certificate approve) and renew it at 70–90% of its lifetime (the kubelet's serverTLSBootstrap); until one is issued no TLS handshake succeeds. Needs --kubeconfig.",
      options: ['true', 'false'],
    }),
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
    ...cgroupFlags,
    tui: Flags.boolean({
      summary: 'Show the live dashboard (as klet dashboard draws it) in this terminal; q stops the sync, pods keep running.',
      default: false,
    }),
    'image-gc-high-threshold': Flags.integer({
      summary: 'Disk usage (percent of the image filesystem; imageGCHighThresholdPercent) at or above which image GC runs, every 5 minutes: unused images klet pulled are removed, least recently used first. 100 turns image GC off. Default: 85.',
      min: 0,
    }),
    'image-gc-low-threshold': Flags.integer({
      summary: 'Disk usage (percent; imageGCLowThresholdPercent) image GC frees down to; less than --image-gc-high-threshold. Default: 80.',
      min: 0,
    }),
    'minimum-image-gc-age': configDurationFlag({ summary: 'Minimum age of an unused image (since klet first saw it) before image GC may remove it (imageMinimumGCAge).', shownDefault: '2m', allowZero: true }),
    'eviction-hard': Flags.string({
      summary:
        "Hard eviction thresholds, signal<quantity or percentage, comma-separated (evictionHard), e.g. memory.available<100Mi,nodefs.available<10%. Signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available. Default: the kubelet's, memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5% (any one given replaces them all).",
    }),
    'eviction-soft': Flags.string({ summary: 'Soft eviction thresholds (evictionSoft), as --eviction-hard; each needs its --eviction-soft-grace-period.' }),
    'eviction-soft-grace-period': Flags.string({ summary: 'How long each soft threshold must hold before a pod is evicted, signal=duration, comma-separated (evictionSoftGracePeriod), e.g. memory.available=1m30s.' }),
    'pod-max-pids': Flags.integer({
      summary: "Most processes a pod's containers may run together (podPidsLimit): its pod cgroup's pids.max (needs --cgroups-per-qos). -1: no limit. Default: -1.",
      min: -2147483648,
    }),
    'seccomp-default': Flags.string({
      summary: 'Run pods and containers that name no seccomp profile under the runtime\'s default profile (RuntimeDefault) instead of Unconfined (seccompDefault). Default: false.',
      options: ['true', 'false'],
    }),
    'healthz-port': Flags.integer({
      summary: 'Port of the localhost healthz endpoint (plain HTTP /healthz, what kubeadm waits on; healthzPort); 0 turns it off. Default 10248 with --kubeconfig; standalone it serves only when given.',
      min: -2147483648,
    }),
    'healthz-bind-address': Flags.string({ summary: 'IP address the healthz endpoint listens on (healthzBindAddress). Default: 127.0.0.1.' }),
    'container-log-max-size': Flags.string({
      summary: 'Size (a quantity, e.g. 10Mi; containerLogMaxSize) at which a running container\'s log file is rotated: renamed N.log.<time>, the runtime reopens N.log, older rotated files gzipped. Checked every containerLogMonitorInterval (10s). Negative: no rotation. Default: 10Mi.',
    }),
    'container-log-max-files': Flags.integer({ summary: 'Log files kept per container, the live one included (containerLogMaxFiles, at least 2); the oldest rotated ones are removed. Default: 5.', min: -2147483648 }),
    'eviction-minimum-reclaim': Flags.string({ summary: 'How much beyond a threshold to reclaim once it is met, signal=quantity or percentage, comma-separated (evictionMinimumReclaim), e.g. nodefs.available=500Mi.' }),
    'eviction-pressure-transition-period': configDurationFlag({ summary: 'How long a pressure condition (MemoryPressure, DiskPressure, PIDPressure) stays True after its threshold was last met (evictionPressureTransitionPeriod).', shownDefault: '5m' }),
    'eviction-max-pod-grace-period': Flags.integer({ summary: 'The longest grace period (seconds) a pod evicted for a soft threshold gets; its own is used when shorter (evictionMaxPodGracePeriod). Default: 0.', min: -2147483648 }),
    'maximum-dead-containers-per-container': Flags.integer({
      summary: "Dead instances of each pod container that container GC keeps (the kubelet's flag, deprecated there; at least 1 is kept for klet logs --previous).",
      default: 1,
      min: -1,
    }),
    'container-gc-period': durationFlag({ summary: 'Container GC period (tests; the kubelet\'s ContainerGCPeriod).', default: '1m', hidden: true }),
    'image-gc-period': durationFlag({ summary: 'Image GC period (tests; the kubelet\'s ImageGCPeriod).', default: '5m', hidden: true }),
    'crash-loop-backoff-initial': configDurationFlag({ summary: 'First crash-loop back-off delay (tests).', shownDefault: '10s', hidden: true }),
    'crash-loop-backoff-max': configDurationFlag({ summary: 'Crash-loop back-off cap (tests).', shownDefault: '5m', hidden: true }),
    'crash-loop-backoff-reset': configDurationFlag({ summary: 'Clean running time that resets the back-off (tests).', shownDefault: '10m', hidden: true }),
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
    await syncCommand(flags, this.syncHost());
  }
}
