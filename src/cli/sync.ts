/**
 * What `klet sync` does once its flags are parsed, shared by the oclif
 * command (src/commands/sync.ts) and the oclif-free entry
 * (src/cli/sync-entry.ts), so the two cannot drift: check every flag (and
 * connect to the cluster) before anything starts, run the sync loop until the
 * signal, the dashboard of --tui draws in this terminal.
 */
import type { CriClient } from '../lib/cri/client.js';
import { InputError } from '../lib/errors.js';
import type { LocalApiHandlers } from '../lib/server/local-api.js';
import type { ServiceDeps } from '../lib/services/deps.js';
import type { SyncOptions } from '../lib/syncloop/run-sync.js';
import type { NodeRegistrationFlagValues } from './registration.js';

/** The parsed flags of `klet sync` (without the global ones); durations in milliseconds. */
export interface SyncFlags extends NodeRegistrationFlagValues {
  'manifest-dir'?: string;
  'manifest-url'?: string;
  'manifest-url-header'?: string[];
  'file-check-frequency': number;
  'http-check-frequency': number;
  'pleg-relist-period': number;
  'sync-frequency': number;
  'max-parallel-syncs': number;
  'allowed-unsafe-sysctls'?: string;
  'cluster-dns'?: string[];
  'cluster-domain'?: string;
  'resolv-conf': string;
  kubeconfig?: string;
  'bootstrap-kubeconfig'?: string;
  'rotate-certificates'?: string;
  listen?: string;
  'auth-token-file'?: string;
  address: string;
  port?: number;
  'tls-cert-file'?: string;
  'rotate-server-certificates'?: string;
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
  'image-gc-high-threshold': number;
  'image-gc-low-threshold': number;
  'minimum-image-gc-age': number;
  'container-gc-period': number;
  'image-gc-period': number;
  'crash-loop-backoff-initial': number;
  'crash-loop-backoff-max': number;
  'crash-loop-backoff-reset': number;
}

export interface SyncHost {
  nodeName: string;
  /** klet's version (package.json's), for the node status' kubeletVersion. */
  kletVersion: string;
  cri(): Promise<CriClient>;
  deps(): Promise<ServiceDeps>;
  /** The signal that interrupted the run (SIGINT, SIGTERM), once one did. */
  interruptedBy(): NodeJS.Signals | undefined;
  /** One line for the user on stderr. */
  notice(line: string): void;
}

/** How long the process may outlive the stopped sync before it exits anyway (something was left open). */
const EXIT_GRACE_MS = 5_000;

/** Run `klet sync` until its signal (or the dashboard of --tui quits); errors are thrown. */
export async function syncCommand(flags: SyncFlags, host: SyncHost): Promise<void> {
  const options = await syncOptions(flags, host);
  const deps = await host.deps();
  // Quitting the dashboard of --tui stops the sync, as a signal does.
  const controller = new AbortController();
  let tui: Promise<void> | undefined;
  let kubelet: string | undefined;
  deps.signal.addEventListener('abort', () => host.notice(`klet sync: ${host.interruptedBy()}: stopping the sync loop; pods keep running`), { once: true });
  const signal = AbortSignal.any([deps.signal, controller.signal]);
  const rotation = options.cluster && flags.kubeconfig !== undefined && flags['rotate-certificates'] !== 'false' ? await certificateRotation(flags.kubeconfig, options.cluster.api, deps.rootDir, host, signal) : undefined;
  const { runSync } = await import('../lib/syncloop/run-sync.js');
  const sources = [options.manifestDir, options.manifestUrl].filter(Boolean).join(', ');
  const server = options.cluster ? `, API server ${options.cluster.api.server}` : '';
  await runSync(
    {
      ...options,
      cri: await host.cri(),
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

/** The sync loop's options from the flags: every flag checked (and the cluster connected) before anything starts. */
async function syncOptions(flags: SyncFlags, host: SyncHost): Promise<Omit<SyncOptions, 'cri' | 'rootDir' | 'nodeName' | 'onReady'>> {
  if (flags.tui && !(process.stdout.isTTY && process.stdin.isTTY)) {
    throw new InputError('--tui needs a terminal on stdin and stdout; without one, watch with klet dashboard (it prints a snapshot when not on a terminal)');
  }
  const gc = await gcOptions(flags);
  const { parseHeaders } = await import('../lib/config/manifest-url.js');
  const manifestUrlHeaders = parseHeaders(flags['manifest-url-header']);
  const listen = await listenFlags(flags.listen, flags['auth-token-file']);
  let cluster: SyncOptions['cluster'];
  if (flags['bootstrap-kubeconfig'] !== undefined) {
    if (flags.kubeconfig === undefined) throw new InputError(`--bootstrap-kubeconfig "${flags['bootstrap-kubeconfig']}" needs --kubeconfig: the file the bootstrap writes the node's credentials to`);
    await tlsBootstrap(flags.kubeconfig, flags['bootstrap-kubeconfig'], host);
  }
  if (flags.kubeconfig !== undefined) {
    const { registrationOptions } = await import('./registration.js');
    const options = await registrationOptions({ ...flags, kubeconfig: flags.kubeconfig }, host.nodeName, true);
    const { connectNodeApi } = await import('../lib/kube/node-api.js');
    cluster = { options, api: await connectNodeApi(flags.kubeconfig), kletVersion: (await import('../lib/node/version.js')).kubeletVersion(host.kletVersion) };
  }
  const kubeletServer = await kubeletServerFlags(flags, host, cluster?.options.nodeIP);
  const { cgroupSettings } = await import('../lib/cm/settings.js');
  const cgroups = cgroupSettings({
    cgroupsPerQOS: flags['cgroups-per-qos'] === 'true',
    cgroupRoot: flags['cgroup-root'],
    cgroupDriver: flags['cgroup-driver'],
    enforceNodeAllocatable: flags['enforce-node-allocatable']?.split(',') ?? [],
    kubeReserved: flags['kube-reserved'],
    systemReserved: flags['system-reserved'],
  });
  // Checked before the runtime is started for the sync: a bad root leaves nothing behind.
  if (cgroups) await (await import('../lib/cm/manager.js')).checkCgroupRoot(cgroups);
  const sysctls = await sysctlFlags(flags['allowed-unsafe-sysctls']);
  return {
    sysctls,
    ...(cgroups ? { cgroups } : {}),
    kubeletServer,
    manifestDir: flags['manifest-dir'] ?? (flags['manifest-url'] ? undefined : '/etc/kubernetes/manifests'),
    manifestUrl: flags['manifest-url'],
    manifestUrlHeaders,
    fileCheckFrequencyMs: flags['file-check-frequency'],
    httpCheckFrequencyMs: flags['http-check-frequency'],
    plegRelistPeriodMs: flags['pleg-relist-period'],
    resyncIntervalMs: flags['sync-frequency'],
    backoff: { initialMs: flags['crash-loop-backoff-initial'], maxMs: flags['crash-loop-backoff-max'], resetAfterMs: flags['crash-loop-backoff-reset'] },
    concurrency: flags['max-parallel-syncs'],
    dns: await dnsFlags(flags),
    listen,
    cluster,
    gc,
  };
}

/** Garbage collection's flags (the kubelet's names and defaults), checked as the kubelet checks them. */
async function gcOptions(flags: SyncFlags): Promise<NonNullable<SyncOptions['gc']>> {
  const { validateImageGCPolicy } = await import('../lib/kuberuntime/image-gc.js');
  const imagePolicy = {
    highThresholdPercent: flags['image-gc-high-threshold'],
    lowThresholdPercent: flags['image-gc-low-threshold'],
    minAgeMs: flags['minimum-image-gc-age'],
  };
  const problem = validateImageGCPolicy(imagePolicy);
  if (problem !== null) throw new InputError(problem);
  return { imagePolicy, containerGCPeriodMs: flags['container-gc-period'], imageGCPeriodMs: flags['image-gc-period'] };
}

/**
 * The pods' DNS settings from --cluster-dns (comma-separated, repeatable),
 * --cluster-domain and --resolv-conf. The kubelet logs and skips an entry
 * of --cluster-dns that is not an IP; klet refuses it.
 */
async function dnsFlags(flags: SyncFlags): Promise<NonNullable<SyncOptions['dns']>> {
  const { invalidClusterDNS } = await import('../lib/pod/dns.js');
  const clusterDNS = (flags['cluster-dns'] ?? []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
  const bad = invalidClusterDNS(clusterDNS);
  if (bad.length > 0) throw new InputError(`--cluster-dns: ${JSON.stringify(bad[0])} is not an IP address`);
  return { clusterDNS, clusterDomain: flags['cluster-domain'] ?? '', resolvConf: flags['resolv-conf'] };
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
 * The kubelet server's flags (the kubelet's names). With --kubeconfig it
 * serves on --address:--port (0.0.0.0:10250) with kubeadm's settings:
 * client certificates from --client-ca-file, bearer tokens reviewed by the
 * API server, no anonymous requests, Webhook authorization. Standalone it
 * serves only when --port is given, with AlwaysAllow and client
 * certificates (a webhook needs an API server). --port 0 turns it off.
 */
async function kubeletServerFlags(flags: SyncFlags, host: SyncHost, nodeIP: string | undefined): Promise<SyncOptions['kubeletServer']> {
  const cluster = flags.kubeconfig !== undefined;
  const port = flags.port ?? (cluster ? 10250 : undefined);
  const serverFlags = ['tls-cert-file', 'tls-private-key-file', 'rotate-server-certificates', 'client-ca-file', 'anonymous-auth', 'authentication-token-webhook', 'authorization-mode'] as const;
  if (port === undefined) {
    const stray = serverFlags.find((f) => flags[f] !== undefined);
    if (stray !== undefined) throw new InputError(`--${stray} configures the kubelet server, which runs with --kubeconfig or --port: give one of them`);
    return undefined;
  }
  if (port === 0) return undefined;
  const { KUBEADM_SERVER_DEFAULTS, loadKubeletServerSettings } = await import('../lib/server/kubelet-server-config.js');
  const bool = (v: string | undefined, d: boolean) => (v === undefined ? d : v === 'true');
  const settings = {
    address: flags.address,
    port,
    ...(flags['tls-cert-file'] !== undefined ? { tlsCertFile: flags['tls-cert-file'] } : {}),
    ...(flags['tls-private-key-file'] !== undefined ? { tlsPrivateKeyFile: flags['tls-private-key-file'] } : {}),
    ...(flags['client-ca-file'] !== undefined ? { clientCaFile: flags['client-ca-file'] } : {}),
    anonymousAuth: bool(flags['anonymous-auth'], KUBEADM_SERVER_DEFAULTS.anonymousAuth),
    authenticationTokenWebhook: bool(flags['authentication-token-webhook'], cluster && KUBEADM_SERVER_DEFAULTS.authenticationTokenWebhook),
    authorizationMode: (flags['authorization-mode'] ?? (cluster ? KUBEADM_SERVER_DEFAULTS.authorizationMode : 'AlwaysAllow')) as 'AlwaysAllow' | 'Webhook',
    serverTLSBootstrap: bool(flags['rotate-server-certificates'], false),
  };
  const deps = await host.deps();
  return loadKubeletServerSettings(settings, { rootDir: deps.rootDir, hasApiServer: cluster, ...(nodeIP ? { nodeIP } : {}), hostname: host.nodeName });
}

/**
 * The kubelet's TLS bootstrap (--bootstrap-kubeconfig): when --kubeconfig is
 * missing or its client certificate expired, get one through a
 * CertificateSigningRequest and write --kubeconfig (certificates in <root-dir>/pki).
 */
async function tlsBootstrap(kubeconfig: string, bootstrapKubeconfig: string, host: SyncHost): Promise<void> {
  const deps = await host.deps();
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
  const { loadKubeconfig } = await import('../lib/kube/node-api.js');
  const { currentPairPath } = await import('../lib/kube/tls-bootstrap.js');
  const certDir = path.join(rootDir, 'pki');
  const user = (await loadKubeconfig(kubeconfig)).kc.getCurrentUser();
  if (!user?.certFile || path.resolve(user.certFile) !== currentPairPath(certDir)) return undefined;
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

/** --allowed-unsafe-sysctls (comma-separated, as the kubelet's string slice) with this kernel's safe sysctls: the node's allowlist. */
async function sysctlFlags(value: string | undefined): Promise<import('../lib/node/sysctl.js').SysctlAllowlist> {
  const { nodeSysctlAllowlist } = await import('../lib/node/sysctl.js');
  const { release } = await import('node:os');
  const unsafe = (value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  try {
    return nodeSysctlAllowlist(release(), unsafe);
  } catch (err) {
    if (err instanceof InputError) throw new InputError(`--allowed-unsafe-sysctls: ${err.text}`);
    throw err;
  }
}

/** --listen with its token from --auth-token-file (never one without the other). */
async function listenFlags(value: string | undefined, tokenFile: string | undefined): Promise<{ host: string; port: number; token: string } | undefined> {
  if (value === undefined) {
    if (tokenFile !== undefined) throw new InputError(`--auth-token-file "${tokenFile}" needs --listen: the token only guards the TCP listener`);
    return undefined;
  }
  const { parseListen, readAuthTokenFile } = await import('../lib/server/auth.js');
  const addr = parseListen(value);
  if (tokenFile === undefined) throw new InputError('--listen needs --auth-token-file: the TCP listener never serves without a token');
  return { host: addr.host, port: addr.port, token: await readAuthTokenFile(tokenFile) };
}
