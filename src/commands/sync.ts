import { Flags, type Interfaces } from '@oclif/core';
import { PodCommand } from '../base-command.js';
import { InputError } from '../lib/errors.js';
import { durationFlag } from '../flags.js';
import type { LocalApiHandlers } from '../lib/server/local-api.js';
import { nodeRegistrationFlags, registrationOptions } from '../node-flags.js';
import type { SyncOptions } from '../lib/syncloop/run-sync.js';

type SyncFlags = Interfaces.InferredFlags<(typeof Sync)['flags']>;

/** How long the process may outlive the stopped sync before it exits anyway (something was left open). */
const EXIT_GRACE_MS = 5_000;

export default class Sync extends PodCommand<typeof Sync> {
  static override summary = 'Run the kubelet sync loop: keep this node converged with its pod sources.';
  static override description = `The long-running kubelet. It watches the manifest directory (fs events, and a re-read every --file-check-frequency so missed events still converge) and/or polls --manifest-url, and keeps the node's pods matching them: one serialized worker per pod, a relisting PLEG (--pleg-relist-period; on containerd it also relists as soon as a container exits, from containerd's event service), restarts by restart policy with the kubelet's crash-loop back-off (10s doubling to 5m, reset after 10m of clean running), graceful termination with preStop hooks when a manifest is removed, activeDeadlineSeconds, postStart hooks.

With --kubeconfig it also joins that cluster as klet register-node --heartbeat does: it registers the Node (the registration flags apply), renews its Lease every 10 s and sends node status on change or every 5 minutes; while the API server is unreachable it logs, retries with back-off and keeps the static pods running. Each static pod gets a mirror pod (kubernetes.io/config.mirror, owned by the Node) carrying its status, recreated if deleted, deleted with the static pod. The pods bound to the node in the API server (list+watch on spec.nodeName) run beside the static pods; their status is patched to the server on change, and kubectl delete stops them within their grace period and then removes them from the server. New API pods are admitted as the kubelet does, counting the static pods' requests (OutOfcpu, OutOfmemory, OutOfpods, NodeAffinity, TaintToleration; a rejected pod is marked Failed). API pods' ConfigMaps and Secrets (volumes, env, envFrom) are read from the API server through one watch per referenced object, and their serviceAccountToken volumes (the kube-api-access-* volume the API server injects) get TokenRequest tokens bound to the pod, refreshed at 80% of their lifetime; static pods that reference API objects are refused (static pods may not reference configmaps). Pod and node events go to the API server as core/v1 Events with the kubelet's reasons, correlated as client-go does (repeats patch count, similar ones are combined, a per-object rate limit), sent in the background from a bounded queue. A pod's status is written as the kubelet's status manager writes it: Pending when its first sync begins, then after each sync that changed it (a change in condition times alone is not written; lastTransitionTime moves only when a condition's status does), with a full resync every 10 s. klet status shows the cluster fields while it runs.

A source that cannot be read keeps its last good pods (an unreadable URL or a deleted directory never kills running pods). On start it adopts what is already running (after a crash, even a SIGKILL, or a runtime restart): containers whose spec hash matches are kept, changed ones restarted, pods no source wants killed once every source has answered. On SIGTERM or SIGINT it stops the loop within seconds (requests to the API server in flight are cancelled) and leaves the pods running, as the kubelet does.

State is served on <root-dir>/klet.sock (mode 0600) over HTTP: /healthz, /pods (a v1 PodList), /node (runtime version and conditions, pod sources, PLEG relist, pod-worker queue), /events (newline-delimited JSON of sync-loop iterations, PLEG, pod lifecycle and probe result events: the retained ones after ?since=SEQ, then it streams new ones until the client disconnects; ?follow=false returns after the retained ones), /metrics (Prometheus). --listen 127.0.0.1:PORT also serves it on loopback TCP, only with --auth-token-file (bearer token). Watch it with klet dashboard, or run it with --tui to see the dashboard in this terminal.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests',
    "<%= config.bin %> <%= command.id %> --manifest-url https://config.example/node1.yaml --manifest-url-header 'Authorization: Bearer $TOKEN'",
    '<%= config.bin %> <%= command.id %> --listen 127.0.0.1:10250 --auth-token-file /etc/klet/token',
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests --kubeconfig /etc/kubernetes/kubelet.conf',
    "curl --unix-socket /var/lib/klet/klet.sock 'http://klet/events?follow=false'",
    "curl -N --unix-socket /var/lib/klet/klet.sock 'http://klet/events?since=42'    # follows",
    '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests --tui',
  ];
  static override flags = {
    'manifest-dir': Flags.string({
      summary: 'Directory of static pod manifests to keep running. Default /etc/kubernetes/manifests unless only --manifest-url is given.',
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
    ...nodeRegistrationFlags,
    listen: Flags.string({ summary: 'Also serve the local API on loopback TCP (127.0.0.1:PORT); needs --auth-token-file.' }),
    'auth-token-file': Flags.string({ summary: 'File holding the bearer token required on --listen (an error without --listen).' }),
    tui: Flags.boolean({
      summary: 'Show the live dashboard (as klet dashboard draws it) in this terminal; q stops the sync, pods keep running.',
      default: false,
    }),
    'crash-loop-backoff-initial': durationFlag({ summary: 'First crash-loop back-off delay (tests).', default: '10s', hidden: true }),
    'crash-loop-backoff-max': durationFlag({ summary: 'Crash-loop back-off cap (tests).', default: '5m', hidden: true }),
    'crash-loop-backoff-reset': durationFlag({ summary: 'Clean running time that resets the back-off (tests).', default: '10m', hidden: true }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Sync);
    const options = await this.syncOptions(flags);
    const deps = await this.deps();
    // Quitting the dashboard of --tui stops the sync, as a signal does.
    const controller = new AbortController();
    let tui: Promise<void> | undefined;
    deps.signal.addEventListener('abort', () => this.notice(`klet sync: ${this.interruptedBy}: stopping the sync loop; pods keep running`), { once: true });
    const { runSync } = await import('../lib/syncloop/run-sync.js');
    const sources = [options.manifestDir, options.manifestUrl].filter(Boolean).join(', ');
    const server = options.cluster ? `, API server ${options.cluster.api.server}` : '';
    await runSync(
      {
        ...options,
        cri: await this.cri(),
        rootDir: deps.rootDir,
        nodeName: deps.nodeName,
        onReady: (a) => {
          if (flags.tui) tui = this.tui(a.handlers, controller, deps.signal);
          else this.notice(`klet sync: node ${deps.nodeName}, sources ${sources}${server}; local API on ${a.socketPath}${a.tcp ? ` and ${a.tcp}` : ''}`);
        },
      },
      AbortSignal.any([deps.signal, controller.signal]),
    );
    await tui;
    // Everything is stopped: the process ends when nothing holds the event loop. Something left
    // open (a connection, a timer) must not keep it running: name it, and exit.
    setTimeout(() => {
      this.notice(`klet sync: still running ${EXIT_GRACE_MS / 1000} s after the sync stopped (open: ${process.getActiveResourcesInfo().join(', ')}); exiting`);
      process.exit(process.exitCode ?? 0);
    }, EXIT_GRACE_MS).unref();
  }

  /** The sync loop's options from the flags: every flag checked (and the cluster connected) before anything starts. */
  private async syncOptions(flags: SyncFlags): Promise<Omit<SyncOptions, 'cri' | 'rootDir' | 'nodeName' | 'onReady'>> {
    if (flags.tui && !(process.stdout.isTTY && process.stdin.isTTY)) {
      throw new InputError('--tui needs a terminal on stdin and stdout; without one, watch with klet dashboard (it prints a snapshot when not on a terminal)');
    }
    const { parseHeaders } = await import('../lib/config/manifest-url.js');
    const manifestUrlHeaders = parseHeaders(flags['manifest-url-header']);
    const listen = await this.listenFlags(flags.listen, flags['auth-token-file']);
    let cluster: SyncOptions['cluster'];
    if (flags.kubeconfig !== undefined) {
      const options = await registrationOptions({ ...flags, kubeconfig: flags.kubeconfig }, this.nodeName(), true);
      const { connectNodeApi } = await import('../lib/kube/node-api.js');
      cluster = { options, api: await connectNodeApi(flags.kubeconfig), kletVersion: (await import('../lib/node/version.js')).kubeletVersion(this.config.version) };
    }
    return {
      manifestDir: flags['manifest-dir'] ?? (flags['manifest-url'] ? undefined : '/etc/kubernetes/manifests'),
      manifestUrl: flags['manifest-url'],
      manifestUrlHeaders,
      fileCheckFrequencyMs: flags['file-check-frequency'],
      httpCheckFrequencyMs: flags['http-check-frequency'],
      plegRelistPeriodMs: flags['pleg-relist-period'],
      resyncIntervalMs: flags['sync-frequency'],
      backoff: { initialMs: flags['crash-loop-backoff-initial'], maxMs: flags['crash-loop-backoff-max'], resetAfterMs: flags['crash-loop-backoff-reset'] },
      concurrency: flags['max-parallel-syncs'],
      listen,
      cluster,
    };
  }

  /**
   * The dashboard in this process, fed by the handlers the local API serves.
   * While it is up, log lines go to its events panel instead of stderr (the
   * screen owns the terminal). Quitting it stops the sync.
   */
  private async tui(handlers: LocalApiHandlers, controller: AbortController, interrupted: AbortSignal): Promise<void> {
    const { DashboardStore } = await import('../lib/dashboard/store.js');
    const { inProcessSource } = await import('../lib/dashboard/feed.js');
    const { colorWanted } = await import('../lib/dashboard/screen.js');
    const { runDashboard } = await import('../lib/services/dashboard.js');
    const { setLogSink } = await import('../lib/log.js');
    const store = new DashboardStore();
    setLogSink((line) => store.noteLog(line));
    try {
      await runDashboard(
        { source: inProcessSource(handlers), interactive: true, columns: process.stdout.columns || 100, store },
        {
          signal: AbortSignal.any([controller.signal, interrupted]),
          write: (text) => process.stdout.write(text),
          screen: async (args) => {
            const { runScreen } = await import('../ui/dashboard/screen.js');
            await runScreen(args, { color: colorWanted() });
          },
        },
      );
    } catch (err) {
      setLogSink((line) => process.stderr.write(line + '\n'));
      this.notice(`klet sync: the dashboard failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setLogSink((line) => process.stderr.write(line + '\n'));
    }
    if (!controller.signal.aborted && !interrupted.aborted) {
      this.notice('klet sync: dashboard closed: stopping the sync loop; pods keep running');
      controller.abort();
    }
  }


  /** --listen with its token from --auth-token-file (never one without the other). */
  private async listenFlags(value: string | undefined, tokenFile: string | undefined): Promise<{ host: string; port: number; token: string } | undefined> {
    if (value === undefined) {
      if (tokenFile !== undefined) throw new InputError(`--auth-token-file "${tokenFile}" needs --listen: the token only guards the TCP listener`);
      return undefined;
    }
    const { parseListen, readAuthTokenFile } = await import('../lib/server/auth.js');
    const addr = parseListen(value);
    if (tokenFile === undefined) throw new InputError('--listen needs --auth-token-file: the TCP listener never serves without a token');
    return { host: addr.host, port: addr.port, token: await readAuthTokenFile(tokenFile) };
  }
}
