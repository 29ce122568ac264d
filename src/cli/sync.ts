/**
 * What `klet sync` does once its flags are parsed, shared by the oclif
 * command (src/commands/sync.ts) and the oclif-free entry
 * (src/cli/sync-entry.ts), so the two cannot drift: map the flags onto the
 * node's configuration (lib/kubeletconfig merges them over --config's file
 * and checks them), load what it names (and connect to the cluster) before
 * anything starts, run the sync loop until the signal, the dashboard of --tui
 * draws in this terminal.
 */
import type { CriClient } from '../lib/cri/client.js';
import { InputError } from '../lib/errors.js';
import type { BuiltConfig, KubeletConfig } from '../lib/kubeletconfig/index.js';
import type { LocalApiHandlers } from '../lib/server/local-api.js';
import type { ServiceDeps } from '../lib/services/deps.js';
import type { SyncOptions } from '../lib/syncloop/run-sync.js';

/**
 * The parsed flags of `klet sync` (without the global ones); durations in
 * milliseconds. The flags that set a KubeletConfiguration field have no
 * default here: one not given leaves the field to the --config file, then to
 * the default (lib/kubeletconfig).
 */
export interface SyncFlags {
  config?: string;
  'print-config': boolean;
  'manifest-dir'?: string;
  'manifest-url'?: string;
  'manifest-url-header'?: string[];
  'file-check-frequency'?: number;
  'http-check-frequency'?: number;
  'pleg-relist-period'?: number;
  'sync-frequency'?: number;
  'max-parallel-syncs'?: number;
  'allowed-unsafe-sysctls'?: string;
  kubeconfig?: string;
  'bootstrap-kubeconfig'?: string;
  'rotate-certificates'?: string;
  'node-labels'?: string;
  'register-with-taints'?: string;
  'kube-reserved'?: string;
  'system-reserved'?: string;
  'max-pods'?: number;
  'node-ip'?: string;
  'cluster-dns'?: string[];
  'cluster-domain'?: string;
  'resolv-conf'?: string;
  'rotate-server-certificates'?: string;
  listen?: string;
  'auth-token-file'?: string;
  address?: string;
  port?: number;
  'tls-cert-file'?: string;
  'tls-private-key-file'?: string;
  'client-ca-file'?: string;
  'anonymous-auth'?: string;
  'authentication-token-webhook'?: string;
  'authorization-mode'?: string;
  /** 'true' or 'false' (the kubelet's bool); unset: false (callers without the flag). */
  'cgroups-per-qos'?: string;
  'cgroup-root'?: string;
  'cgroup-driver'?: string;
  'enforce-node-allocatable'?: string;
  tui: boolean;
  'image-gc-high-threshold'?: number;
  'image-gc-low-threshold'?: number;
  'minimum-image-gc-age'?: number;
  'pod-max-pids'?: number;
  'seccomp-default'?: string;
  'healthz-port'?: number;
  'healthz-bind-address'?: string;
  'container-log-max-size'?: string;
  'container-log-max-files'?: number;
  'eviction-hard'?: string;
  'eviction-soft'?: string;
  'eviction-soft-grace-period'?: string;
  'eviction-minimum-reclaim'?: string;
  'eviction-pressure-transition-period'?: number;
  'eviction-max-pod-grace-period'?: number;
  'maximum-dead-containers-per-container': number;
  'container-gc-period': number;
  'image-gc-period': number;
  'crash-loop-backoff-initial'?: number;
  'crash-loop-backoff-max'?: number;
  'crash-loop-backoff-reset'?: number;
}

/** The runtime of this run: the CRI client and the services' dependencies, on the configuration's endpoint. */
export interface SyncRuntime {
  cri(): Promise<CriClient>;
  deps(): Promise<ServiceDeps>;
}

export interface SyncHost {
  nodeName: string;
  /** klet's version (package.json's), for the node status' kubeletVersion. */
  kletVersion: string;
  /** The global flags that set KubeletConfiguration fields, when given (on the command line or through their environment variable). */
  globals: { 'container-runtime-endpoint'?: string; 'runtime-request-timeout'?: number };
  /** The runtime on the effective endpoint and request timeout (made once). */
  runtime(endpoint: string, timeoutMs: number): SyncRuntime;
  /** The signal that interrupted the run (SIGINT, SIGTERM), once one did. */
  interruptedBy(): NodeJS.Signals | undefined;
  /** One line for the user on stderr. */
  notice(line: string): void;
}

/** How long the process may outlive the stopped sync before it exits anyway (something was left open). */
const EXIT_GRACE_MS = 5_000;

import { checkedCgroupSettings, syncConfig } from './config-flags.js';

export { FLAG_FIELDS, checkedCgroupSettings, givenValues, syncConfig } from './config-flags.js';

/** Run `klet sync` until its signal (or the dashboard of --tui quits); errors are thrown. */
export async function syncCommand(flags: SyncFlags, host: SyncHost): Promise<void> {
  const built = await syncConfig(flags, host);
  const config = built.config;
  if (flags['print-config']) {
    const { kubeletConfigurationYaml } = await import('../lib/kubeletconfig/index.js');
    process.stdout.write(kubeletConfigurationYaml(config));
    return;
  }
  const runtime = host.runtime(config.containerRuntimeEndpoint, config.runtimeRequestTimeout);
  const options = await syncOptions(flags, built, host, runtime);
  const deps = await runtime.deps();
  // Quitting the dashboard of --tui stops the sync, as a signal does.
  const controller = new AbortController();
  let tui: Promise<void> | undefined;
  let kubelet: string | undefined;
  deps.signal.addEventListener('abort', () => host.notice(`klet sync: ${host.interruptedBy()}: stopping the sync loop; pods keep running`), { once: true });
  const signal = AbortSignal.any([deps.signal, controller.signal]);
  const kubeconfig = config.flags.kubeconfig;
  const rotation = options.cluster && kubeconfig !== undefined && config.rotateCertificates ? await certificateRotation(kubeconfig, options.cluster.api, deps.rootDir, host, signal) : undefined;
  const { runSync } = await import('../lib/syncloop/run-sync.js');
  const sources = [config.staticPodPath, config.staticPodURL].filter(Boolean).join(', ');
  const server = options.cluster ? `, API server ${options.cluster.api.server}` : '';
  await runSync(
    {
      ...options,
      cri: await runtime.cri(),
      rootDir: deps.rootDir,
      nodeName: deps.nodeName,
      onKubeletServer: (k) => {
        kubelet = `https://${k.address.includes(':') ? `[${k.address}]` : k.address}:${k.port}`;
      },
      onReady: (a) => {
        if (flags.tui) tui = runTui(a.handlers, controller, deps.signal, host);
        else host.notice(`klet sync: node ${deps.nodeName}, sources ${sources}${server}; local API on ${a.socketPath}${a.tcp ? ` and ${a.tcp}` : ''}${kubelet ? `; kubelet server on ${kubelet}` : ''}`);
      },
    },
    signal,
  );
  await tui;
  await rotation?.done;
  // Everything is stopped: the process ends when nothing holds the event loop. Something left
  // open (a connection, a timer) must not keep it running: name it, and exit.
  setTimeout(() => {
    host.notice(`klet sync: still running ${EXIT_GRACE_MS / 1000} s after the sync stopped (open: ${process.getActiveResourcesInfo().join(', ')}); exiting`);
    process.exit(process.exitCode ?? 0);
  }, EXIT_GRACE_MS).unref();
}

/** What the sync loop needs besides the configuration, loaded (token file, TLS bootstrap, the cluster connection, the server's files) before anything starts. */
async function syncOptions(
  flags: SyncFlags,
  built: BuiltConfig,
  host: SyncHost,
  runtime: SyncRuntime,
): Promise<Omit<SyncOptions, 'cri' | 'rootDir' | 'nodeName' | 'onReady'>> {
  const config = built.config;
  if (flags.tui && !(process.stdout.isTTY && process.stdin.isTTY)) {
    throw new InputError('--tui needs a terminal on stdin and stdout; without one, watch with klet dashboard (it prints a snapshot when not on a terminal)');
  }
  const gc = await gcOptions(flags, config);
  let listen: SyncOptions['listen'];
  if (config.flags.listen !== undefined && config.flags.authTokenFile !== undefined) {
    const { readAuthTokenFile } = await import('../lib/server/auth.js');
    listen = { ...config.flags.listen, token: await readAuthTokenFile(config.flags.authTokenFile) };
  }
  let cluster: SyncOptions['cluster'];
  const kubeconfig = config.flags.kubeconfig;
  if (config.flags.bootstrapKubeconfig !== undefined && kubeconfig !== undefined) {
    await tlsBootstrap(kubeconfig, config.flags.bootstrapKubeconfig, host, runtime);
  }
  if (kubeconfig !== undefined) {
    const { registerNodeOptionsOf } = await import('../lib/services/register-node.js');
    const { connectNodeApi } = await import('../lib/kube/node-api.js');
    cluster = {
      options: registerNodeOptionsOf({ ...config, flags: { ...config.flags, kubeconfig } }, true),
      api: await connectNodeApi(kubeconfig),
      kletVersion: (await import('../lib/node/version.js')).kubeletVersion(host.kletVersion),
    };
  }
  // Checked before the runtime is started for the sync: a bad root leaves nothing behind.
  const cgroups = await checkedCgroupSettings(config, built.describe);
  const sysctls = await sysctlFlags(config.allowedUnsafeSysctls, built.describe('allowedUnsafeSysctls'));
  return {
    config,
    kubeletServer: await kubeletServer(built, host, runtime),
    listen,
    cluster,
    gc,
    sysctls,
    ...(cgroups ? { cgroups } : {}),
    dns: { clusterDNS: config.clusterDNS, clusterDomain: config.clusterDomain ?? '', resolvConf: config.resolvConf },
  };
}

/** Garbage collection's settings (the kubelet's names and defaults; the thresholds were checked with the configuration). */
async function gcOptions(flags: SyncFlags, config: KubeletConfig): Promise<NonNullable<SyncOptions['gc']>> {
  const imagePolicy = {
    highThresholdPercent: config.imageGCHighThresholdPercent,
    lowThresholdPercent: config.imageGCLowThresholdPercent,
    minAgeMs: config.imageMinimumGCAge,
  };
  const { DEFAULT_CONTAINER_GC_POLICY } = await import('../lib/kuberuntime/container-gc.js');
  const containerPolicy = { ...DEFAULT_CONTAINER_GC_POLICY, maxPerPodContainer: flags['maximum-dead-containers-per-container'] ?? DEFAULT_CONTAINER_GC_POLICY.maxPerPodContainer };
  return { imagePolicy, containerPolicy, containerGCPeriodMs: flags['container-gc-period'], imageGCPeriodMs: flags['image-gc-period'] };
}

/**
 * The dashboard in this process, fed by the handlers the local API serves.
 * While it is up, log lines go to its events panel instead of stderr (the
 * screen owns the terminal). Quitting it stops the sync.
 */
async function runTui(handlers: LocalApiHandlers, controller: AbortController, interrupted: AbortSignal, host: SyncHost): Promise<void> {
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
    host.notice(`klet sync: the dashboard failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    setLogSink((line) => process.stderr.write(line + '\n'));
  }
  if (!controller.signal.aborted && !interrupted.aborted) {
    host.notice('klet sync: dashboard closed: stopping the sync loop; pods keep running');
    controller.abort();
  }
}

/**
 * The kubelet server's files, loaded when it runs (with a kubeconfig on
 * 10250 with kubeadm's settings, standalone only with a port): the client
 * CA, the serving certificate (or a self-signed one made in <root-dir>/pki).
 */
async function kubeletServer(built: BuiltConfig, host: SyncHost, runtime: SyncRuntime): Promise<SyncOptions['kubeletServer']> {
  const config: KubeletConfig = built.config;
  if (!config.enableServer) return undefined;
  const { kubeletServerSettings, loadKubeletServerSettings } = await import('../lib/server/kubelet-server-config.js');
  const deps = await runtime.deps();
  return loadKubeletServerSettings(kubeletServerSettings(config), {
    rootDir: deps.rootDir,
    ...(config.flags.nodeIP ? { nodeIP: config.flags.nodeIP } : {}),
    hostname: host.nodeName,
    hasApiServer: config.flags.kubeconfig !== undefined,
    describe: built.describe,
  });
}

/**
 * The kubelet's TLS bootstrap (--bootstrap-kubeconfig): when --kubeconfig is
 * missing or its client certificate expired, get one through a
 * CertificateSigningRequest and write --kubeconfig (certificates in <root-dir>/pki).
 */
async function tlsBootstrap(kubeconfig: string, bootstrapKubeconfig: string, host: SyncHost, runtime: SyncRuntime): Promise<void> {
  const deps = await runtime.deps();
  const path = await import('node:path');
  const { ensureClientCertificate } = await import('../lib/kube/tls-bootstrap.js');
  const r = await ensureClientCertificate(
    { kubeconfig, bootstrapKubeconfig, certDir: path.join(deps.rootDir, 'pki'), nodeName: host.nodeName },
    deps.signal,
    (line) => host.notice(`klet sync: ${line}`),
  );
  if (r.bootstrapped) host.notice(`klet sync: client certificate ${r.pairFile} issued (${r.csrName}); wrote ${kubeconfig}`);
}

/**
 * --rotate-certificates (default on): when the kubeconfig's client
 * certificate is the bootstrapped pair (<root-dir>/pki/kubelet-client-current.pem),
 * renew it at 70–90 % of its lifetime in the background; the API client
 * switches to each new one. Other kubeconfigs (tokens, certificates of their
 * own) are left alone.
 */
async function certificateRotation(kubeconfig: string, api: { reloadCredentials?(): void }, rootDir: string, host: SyncHost, signal: AbortSignal): Promise<{ done: Promise<void> } | undefined> {
  const path = await import('node:path');
  const { loadKubeconfig } = await import('../lib/kube/kubeconfig.js');
  const { currentPairPath } = await import('../lib/kube/tls-bootstrap.js');
  const certDir = path.join(rootDir, 'pki');
  const { user } = await loadKubeconfig(kubeconfig);
  if (!user.certFile || path.resolve(user.certFile) !== path.resolve(currentPairPath(certDir))) return undefined;
  const { clientCertificate, runCertificateRotation } = await import('../lib/kube/cert-rotation.js');
  const { log } = await import('../lib/log.js');
  const done = runCertificateRotation(
    {
      kubeconfig,
      certDir,
      certificate: clientCertificate(host.nodeName),
      onRotated: (r) => {
        api.reloadCredentials?.();
        log.info(`client certificate rotated: ${r.pairFile} (${r.csrName}), valid until ${r.notAfter.toISOString()}`);
      },
      onError: (message) => log.warn(message),
    },
    signal,
  );
  return { done };
}

/** allowedUnsafeSysctls (--allowed-unsafe-sysctls, comma-separated) with this kernel's safe sysctls: the node's allowlist; errors name the value as `name`. */
async function sysctlFlags(unsafe: string[], name: string): Promise<import('../lib/node/sysctl.js').SysctlAllowlist> {
  const { nodeSysctlAllowlist } = await import('../lib/node/sysctl.js');
  const { release } = await import('node:os');
  try {
    return nodeSysctlAllowlist(release(), unsafe);
  } catch (err) {
    if (err instanceof InputError) throw new InputError(`${name}: ${err.text}`);
    throw err;
  }
}
