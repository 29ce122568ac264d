/**
 * The node's configuration, made once at start as the kubelet makes its
 * KubeletConfiguration and KubeletFlags: defaults, then the file (--config),
 * then the values given on the command line, merged into one typed,
 * validated object that the sync loop and every service receive.
 *
 * Values are named by their KubeletConfiguration field paths
 * (`authentication.x509.clientCAFile`); settings that are kubelet flags
 * without a field (kubeconfig, nodeLabels, nodeIP) and klet's own
 * (listen, maxParallelSyncs) by their camel-case names. This module names no
 * command-line flags: the caller says how to name a value it gave
 * (`describe`), and errors about a file's value name file:line and the path.
 */
import net from 'node:net';
import path from 'node:path';
import { DEFAULT_RUNTIME_ENDPOINT } from '../cri/endpoint.js';
import { InputError, errorMessage } from '../errors.js';
import { validateImageGCPolicy } from '../kuberuntime/image-gc.js';
import { type Reservation, type Taint, addReservations, parseNodeLabels, parseReservation, parseTaints, validateNodeIP, validateNodeName } from '../node/config.js';
import { DEFAULT_POD_LOGS_ROOT } from '../logs/paths.js';
import { parseQuantity, quantityError } from '../pod/quantity.js';
import { parseListen } from '../server/auth.js';
import { isCgroup2UnifiedMode } from '../cm/cgroup-version.js';
import { formatDuration } from '../util/duration.js';
import type { ConfigFile } from './file.js';
import { NOT_ACTED_ON, READ_NOT_IMPLEMENTED } from './schema.js';
import { DEFAULT_PRESSURE_TRANSITION_PERIOD_MS, ThresholdError, effectiveEvictionHard, parseSignalMap, parseThresholdConfig, withAllocatableThresholds, type EvictionSettings, type Threshold } from '../eviction/thresholds.js';

export type AuthorizationMode = 'AlwaysAllow' | 'Webhook';
export type MemoryReservationPolicy = 'None' | 'TieredReservation';
const MEMORY_RESERVATION_POLICIES: readonly MemoryReservationPolicy[] = ['None', 'TieredReservation'];

/**
 * The key exchange mechanisms (Go crypto/tls CurveIDs) the Go of the kubelet
 * v1.37.2 (go1.26) knows: P-256, P-384, P-521, X25519, SecP256r1MLKEM768,
 * X25519MLKEM768, SecP384r1MLKEM1024; what tlsCurvePreferences may name.
 */
const GO_CURVE_IDS: ReadonlySet<number> = new Set([23, 24, 25, 29, 4587, 4588, 4589]);
export const AUTHORIZATION_MODES: readonly AuthorizationMode[] = ['AlwaysAllow', 'Webhook'];

/** What the caller may give, by field path (the command line's values, mapped onto the fields). Durations in milliseconds. */
export interface KubeletConfigInput {
  // KubeletConfiguration fields
  enableServer?: boolean;
  staticPodPath?: string;
  staticPodURL?: string;
  /** `Name: value` lines (the kubelet's --manifest-url-header form). */
  staticPodURLHeader?: string[];
  syncFrequency?: number;
  fileCheckFrequency?: number;
  httpCheckFrequency?: number;
  address?: string;
  /** 0 turns the kubelet server off (klet's choice: the kubelet always serves). */
  port?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  rotateCertificates?: boolean;
  serverTLSBootstrap?: boolean;
  'authentication.x509.clientCAFile'?: string;
  'authentication.webhook.enabled'?: boolean;
  'authentication.anonymous.enabled'?: boolean;
  'authorization.mode'?: string;
  clusterDomain?: string;
  clusterDNS?: string[];
  resolvConf?: string;
  podLogsDir?: string;
  runtimeRequestTimeout?: number;
  /** `key=value:Effect,...` */
  registerWithTaints?: string;
  /** `cpu=100m,memory=1Gi,...` */
  kubeReserved?: string;
  systemReserved?: string;
  maxPods?: number;
  containerRuntimeEndpoint?: string;
  allowedUnsafeSysctls?: string[];
  cgroupsPerQOS?: boolean;
  cgroupRoot?: string;
  cgroupDriver?: string;
  enforceNodeAllocatable?: string[];
  imageGCHighThresholdPercent?: number;
  imageGCLowThresholdPercent?: number;
  /** ms */
  imageMinimumGCAge?: number;
  /** `signal<value,...` (the flag) or the file's map. */
  evictionHard?: string | Record<string, string>;
  evictionSoft?: string | Record<string, string>;
  /** `signal=duration,...` or the file's map. */
  evictionSoftGracePeriod?: string | Record<string, string>;
  /** `signal=value,...` or the file's map. */
  evictionMinimumReclaim?: string | Record<string, string>;
  /** ms */
  evictionPressureTransitionPeriod?: number;
  evictionMaxPodGracePeriod?: number;
  mergeDefaultEvictionSettings?: boolean;
  /** A quantity ("10Mi"); negative turns log rotation off. */
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
  /** Processes per pod (its cgroup's pids.max); -1 or 0: no limit. */
  podPidsLimit?: number;
  enableSystemLogHandler?: boolean;
  /** RuntimeDefault for pods and containers that name no seccomp profile. */
  seccompDefault?: boolean;
  /** 0 turns the localhost healthz endpoint off. */
  healthzPort?: number;
  healthzBindAddress?: string;
  // The kubelet's flags without a field
  kubeconfig?: string;
  bootstrapKubeconfig?: string;
  /** `key=value,...` */
  nodeLabels?: string;
  nodeIP?: string;
  // klet's own
  /** HOST:PORT on loopback for the local API. */
  listen?: string;
  authTokenFile?: string;
  plegRelistPeriod?: number;
  maxParallelSyncs?: number;
  crashLoopBackOffInitial?: number;
  crashLoopBackOffMax?: number;
  crashLoopBackOffReset?: number;
}

export type ConfigPath = keyof KubeletConfigInput | 'containerLogMaxWorkers' | 'containerLogMonitorInterval' | 'authentication.webhook.cacheTTL' | 'authorization.webhook.cacheAuthorizedTTL' | 'authorization.webhook.cacheUnauthorizedTTL' | 'nodeStatusUpdateFrequency' | 'nodeStatusReportFrequency' | 'registerNode'
  // Fields only the file sets (no flag of klet's)
  | 'failCgroupV1'
  | 'crashLoopBackOff.maxContainerRestartPeriod'
  | 'tlsCurvePreferences'
  | 'memoryReservationPolicy'
  | 'defaultPodSysctls'
  | 'eventRecordQPS'
  | 'eventBurst'
  | 'imageMaximumGCAge';

/** The effective configuration. Durations in milliseconds. */
export interface KubeletConfig {
  /** The kubelet server runs (with a kubeconfig, or standalone with a port given). */
  enableServer: boolean;
  staticPodPath?: string;
  staticPodURL?: string;
  staticPodURLHeader: Record<string, string[]>;
  syncFrequency: number;
  fileCheckFrequency: number;
  httpCheckFrequency: number;
  address: string;
  port: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  rotateCertificates: boolean;
  serverTLSBootstrap: boolean;
  authentication: {
    x509: { clientCAFile?: string };
    webhook: { enabled: boolean; cacheTTL: number };
    anonymous: { enabled: boolean };
  };
  authorization: { mode: AuthorizationMode; webhook: { cacheAuthorizedTTL: number; cacheUnauthorizedTTL: number } };
  clusterDomain?: string;
  clusterDNS: string[];
  resolvConf: string;
  /** The root of the pod log dirs (`<ns>_<name>_<uid>/<container>/<n>.log`). */
  podLogsDir: string;
  nodeStatusUpdateFrequency: number;
  nodeStatusReportFrequency: number;
  runtimeRequestTimeout: number;
  maxPods: number;
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  registerWithTaints: Taint[];
  registerNode: boolean;
  containerRuntimeEndpoint: string;
  /** Unsafe sysctls (names or patterns ending in *) pods may set besides the safe ones. */
  allowedUnsafeSysctls: string[];
  cgroupsPerQOS: boolean;
  cgroupRoot: string;
  /** cgroupfs or systemd (checked with the container manager's settings). */
  cgroupDriver: string;
  enforceNodeAllocatable: string[];
  imageGCHighThresholdPercent: number;
  imageGCLowThresholdPercent: number;
  imageMinimumGCAge: number;
  /** The effective hard thresholds (the kubelet's defaults when none are set), and the rest as given. */
  evictionHard: Record<string, string>;
  evictionSoft: Record<string, string>;
  evictionSoftGracePeriod: Record<string, string>;
  evictionMinimumReclaim: Record<string, string>;
  evictionPressureTransitionPeriod: number;
  evictionMaxPodGracePeriod: number;
  mergeDefaultEvictionSettings: boolean;
  /** The thresholds parsed from the eviction fields (lib/eviction). */
  evictionThresholds: Threshold[];
  /** Container log rotation (lib/logs/rotation.ts): the quantity as given, and in bytes (negative: off). */
  containerLogMaxSize: string;
  containerLogMaxSizeBytes: number;
  containerLogMaxFiles: number;
  containerLogMaxWorkers: number;
  containerLogMonitorInterval: number;
  /** pids.max of every pod cgroup; -1 (or 0): none. */
  podPidsLimit: number;
  /** The kubelet server's /logs/ (the node's /var/log). */
  enableSystemLogHandler: boolean;
  /** Pods and containers without a seccomp profile get RuntimeDefault (else Unconfined). */
  seccompDefault: boolean;
  /** The localhost healthz endpoint (server/healthz-server.ts); 0: off. */
  healthzPort: number;
  healthzBindAddress: string;
  /** Refuse to start on a cgroup v1 host (checked here, before anything starts). */
  failCgroupV1: boolean;
  // Read and checked as the kubelet v1.37 checks them, not acted on: a value other than what klet does is warned about.
  /** Go crypto/tls CurveIDs; [] for the defaults (klet's server: Node's). */
  tlsCurvePreferences: number[];
  memoryReservationPolicy: MemoryReservationPolicy;
  /** Events per second (0: no limit, from v1.37) and burst; klet's event client does 50 and 100. */
  eventRecordQPS: number;
  eventBurst: number;
  /** ms; 0: none. */
  imageMaximumGCAge: number;
  /** The kubelet's flags without a KubeletConfiguration field, and klet's own settings. */
  flags: {
    /** The --config file read, if any. */
    config?: string;
    kubeconfig?: string;
    bootstrapKubeconfig?: string;
    nodeName: string;
    nodeLabels: Record<string, string>;
    nodeIP?: string;
    /** kubeReserved + systemReserved, in base units. */
    reserved: Reservation;
    listen?: { host: string; port: number };
    authTokenFile?: string;
    plegRelistPeriod: number;
    maxParallelSyncs: number;
    crashLoopBackOff: { initial: number; max: number; reset: number };
  };
}

/** The defaults of what has one: the kubelet's, but where a comment says klet's. */
export const DEFAULTS = {
  syncFrequency: 60_000,
  fileCheckFrequency: 20_000,
  httpCheckFrequency: 20_000,
  address: '0.0.0.0',
  port: 10250,
  /** klet: on (it renews only a bootstrapped client certificate, <root-dir>/pki/kubelet-client-current.pem). */
  rotateCertificates: true,
  /** kubeadm's setting (the kubelet's v1beta1 default is false too). */
  anonymousAuth: false,
  webhookCacheTTL: 2 * 60_000,
  cacheAuthorizedTTL: 5 * 60_000,
  cacheUnauthorizedTTL: 30_000,
  resolvConf: '/etc/resolv.conf',
  podLogsDir: DEFAULT_POD_LOGS_ROOT,
  nodeStatusUpdateFrequency: 10_000,
  nodeStatusReportFrequency: 5 * 60_000,
  runtimeRequestTimeout: 2 * 60_000,
  maxPods: 110,
  containerRuntimeEndpoint: DEFAULT_RUNTIME_ENDPOINT,
  cgroupsPerQOS: true,
  cgroupRoot: '/',
  cgroupDriver: 'cgroupfs',
  enforceNodeAllocatable: ['pods'],
  imageGCHighThresholdPercent: 85,
  imageGCLowThresholdPercent: 80,
  imageMinimumGCAge: 2 * 60_000,
  evictionPressureTransitionPeriod: DEFAULT_PRESSURE_TRANSITION_PERIOD_MS,
  containerLogMaxSize: '10Mi',
  containerLogMaxFiles: 5,
  containerLogMaxWorkers: 1,
  containerLogMonitorInterval: 10_000,
  podPidsLimit: -1,
  /** With a kubeconfig; standalone only when given (klet's choice, as for the kubelet server's port). */
  healthzPort: 10248,
  healthzBindAddress: '127.0.0.1',
  /** klet: the manifest directory kubeadm writes, unless only a URL is given. */
  staticPodPath: '/etc/kubernetes/manifests',
  plegRelistPeriod: 1000,
  maxParallelSyncs: 8,
  crashLoopBackOff: { initial: 10_000, max: 300_000, reset: 600_000 },
  /**
   * klet: false, the kubelet v1.34's default (klet follows v1.34.4). The kubelet's is true
   * from v1.35 (no start on a cgroup v1 host); klet's becomes true when its version moves
   * to v1.37 (src/lib/node/version.ts KUBERNETES_VERSION).
   */
  failCgroupV1: false,
  memoryReservationPolicy: 'None',
  eventRecordQPS: 50,
  eventBurst: 100,
} as const;

/** The server's settings, which only matter when it runs. */
const SERVER_FIELDS: readonly ConfigPath[] = ['tlsCertFile', 'tlsPrivateKeyFile', 'serverTLSBootstrap', 'authentication.x509.clientCAFile', 'authentication.anonymous.enabled', 'authentication.webhook.enabled', 'authorization.mode'];

export interface BuildOptions {
  /** The file, read (readConfigFile). */
  file?: ConfigFile;
  /** The caller's values (the command line's), over the file's. */
  given: KubeletConfigInput;
  nodeName: string;
  /** How the caller names a value it gave or could give (a flag); default: the field path. */
  nameOf?: (path: ConfigPath) => string | undefined;
  /** Whether the host is cgroup v2 (asked only for failCgroupV1: true); default: /sys/fs/cgroup is cgroup2fs, as the kubelet decides. */
  cgroupV2?: () => boolean;
}

export interface BuiltConfig {
  config: KubeletConfig;
  /** One line each: known fields klet does not act on. */
  warnings: string[];
  /** How to name a field in a message: where its value came from (file:line, the caller's name for it) and its path. */
  describe(path: ConfigPath): string;
}

/** Defaults, then the file, then the given values: one validated configuration, or an InputError naming the value. */
export function buildKubeletConfig(o: BuildOptions): BuiltConfig {
  const file = o.file;
  const given = o.given as Record<string, unknown>;
  const isGiven = (p: ConfigPath) => given[p] !== undefined;
  const fromFile = (p: ConfigPath) => file?.values.get(p);
  const describe = (p: ConfigPath): string => {
    if (isGiven(p)) return o.nameOf?.(p) ?? p;
    const f = fromFile(p);
    if (f !== undefined && file !== undefined) return `${file.path}:${f.line}: ${p}`;
    return o.nameOf?.(p) ?? p;
  };
  /** The given value, else the file's, else undefined. */
  const pick = <T>(p: ConfigPath): T | undefined => (isGiven(p) ? (given[p] as T) : (fromFile(p)?.value as T | undefined));
  const fail = (p: ConfigPath, detail: string): never => {
    throw new InputError(`${describe(p)} ${detail}`);
  };
  /** Run a parser of lib/node/config.ts, naming the value in its error. */
  const named = <T>(p: ConfigPath, fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof InputError) return fail(p, err.text);
      throw err;
    }
  };
  const positive = (p: ConfigPath, d: number): number => {
    const v = pick<number>(p) ?? d;
    if (!(v > 0)) fail(p, `${v}: must be a positive duration`);
    return v;
  };

  const kubeconfig = pick<string>('kubeconfig');
  const cluster = kubeconfig !== undefined;
  const bootstrapKubeconfig = pick<string>('bootstrapKubeconfig');
  if (bootstrapKubeconfig !== undefined && !cluster) {
    fail('bootstrapKubeconfig', `"${bootstrapKubeconfig}" needs ${o.nameOf?.('kubeconfig') ?? 'kubeconfig'}: the file the bootstrap writes the node's credentials to`);
  }

  // Pod sources
  const staticPodURL = pick<string>('staticPodURL');
  const staticPodPath = pick<string>('staticPodPath') ?? (staticPodURL !== undefined ? undefined : DEFAULTS.staticPodPath);
  const staticPodURLHeader: Record<string, string[]> = {};
  if (isGiven('staticPodURLHeader')) {
    for (const line of o.given.staticPodURLHeader ?? []) {
      const i = line.indexOf(':');
      if (i <= 0) fail('staticPodURLHeader', `"${line.split(':')[0]}": expected "Name: value"`);
      (staticPodURLHeader[line.slice(0, i).trim()] ??= []).push(line.slice(i + 1).trim());
    }
  } else {
    for (const [k, v] of Object.entries((fromFile('staticPodURLHeader')?.value as Record<string, string[]> | undefined) ?? {})) staticPodURLHeader[k] = [...v];
  }

  // The local API's TCP listener and its token: never one without the other.
  const listenText = pick<string>('listen');
  const authTokenFile = pick<string>('authTokenFile');
  if (listenText === undefined && authTokenFile !== undefined) {
    fail('authTokenFile', `"${authTokenFile}" needs ${o.nameOf?.('listen') ?? 'listen'}: the token only guards the TCP listener`);
  }
  const listen = listenText === undefined ? undefined : named('listen', () => parseListen(listenText));
  if (listen !== undefined && authTokenFile === undefined) {
    fail('listen', `needs ${o.nameOf?.('authTokenFile') ?? 'authTokenFile'}: the TCP listener never serves without a token`);
  }

  // The kubelet server: with a kubeconfig on 10250; standalone only when a port is given; port 0 (given) turns it off.
  const portGiven = pick<number>('port');
  const enableServerSetting = pick<boolean>('enableServer') ?? true;
  const port = portGiven ?? DEFAULTS.port;
  const enableServer = enableServerSetting && port !== 0 && (cluster || portGiven !== undefined);
  if (!enableServer && portGiven === undefined && !cluster) {
    // A server setting given (not read from a file written for a cluster node) for a server that does not run.
    const stray = SERVER_FIELDS.find(isGiven);
    if (stray !== undefined) fail(stray, `configures the kubelet server, which runs with ${o.nameOf?.('kubeconfig') ?? 'a kubeconfig'} or ${o.nameOf?.('port') ?? 'a port'}: give one of them`);
  }
  const address = pick<string>('address') ?? DEFAULTS.address;
  if (net.isIP(address) === 0) fail('address', `"${address}" is not an IP address`);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail('port', `${port} is not a port (0-65535)`);
  const mode = pick<string>('authorization.mode') ?? (cluster ? 'Webhook' : 'AlwaysAllow');
  if (!(AUTHORIZATION_MODES as readonly string[]).includes(mode)) fail('authorization.mode', `"${mode}": expected one of ${AUTHORIZATION_MODES.join(', ')}`);
  const anonymous = pick<boolean>('authentication.anonymous.enabled') ?? DEFAULTS.anonymousAuth;
  const webhook = pick<boolean>('authentication.webhook.enabled') ?? cluster;
  const clientCAFile = pick<string>('authentication.x509.clientCAFile');
  if (enableServer) {
    if (mode === 'Webhook' && !cluster) {
      fail('authorization.mode', `Webhook authorization asks the API server (SubjectAccessReview): it needs ${o.nameOf?.('kubeconfig') ?? 'a kubeconfig'}; use AlwaysAllow without one`);
    }
    if (webhook && !cluster) fail('authentication.webhook.enabled', `token authentication asks the API server (TokenReview): it needs ${o.nameOf?.('kubeconfig') ?? 'a kubeconfig'}`);
    if (!anonymous && !webhook && clientCAFile === undefined) {
      fail('authentication.x509.clientCAFile', 'no way to authenticate a request: give a client CA file, enable token authentication, or allow anonymous requests');
    }
  }

  // Registration
  const nodeIP = pick<string>('nodeIP');
  if (nodeIP !== undefined) named('nodeIP', () => validateNodeIP(nodeIP));
  const nodeLabels = named('nodeLabels', () => parseNodeLabels(pick<string>('nodeLabels') ?? ''));
  const taintsText = isGiven('registerWithTaints')
    ? o.given.registerWithTaints
    : (fromFile('registerWithTaints')?.value as Array<{ key: string; value?: string; effect: string }> | undefined)?.map((t) => `${t.key}${t.value !== undefined ? `=${t.value}` : ''}:${t.effect}`).join(',');
  const registerWithTaints = named('registerWithTaints', () => parseTaints(taintsText ?? ''));
  const reservation = (p: 'kubeReserved' | 'systemReserved'): { map: Record<string, string>; parsed: Reservation } => {
    const v = pick<string | Record<string, string>>(p);
    const text = typeof v === 'string' ? v : Object.entries(v ?? {}).map(([k, x]) => `${k}=${x}`).join(',');
    const parsed = named(p, () => parseReservation(text));
    const map: Record<string, string> = {};
    for (const item of text.split(',').filter((s) => s.trim() !== '')) {
      const eq = item.indexOf('=');
      map[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
    }
    return { map, parsed };
  };
  const kubeReserved = reservation('kubeReserved');
  const systemReserved = reservation('systemReserved');
  const maxPods = pick<number>('maxPods') ?? DEFAULTS.maxPods;
  if (!Number.isInteger(maxPods) || maxPods < 1) fail('maxPods', `${maxPods}: must be at least 1`);
  if (cluster) named('nodeName' as ConfigPath, () => validateNodeName(o.nodeName));
  const registerNode = pick<boolean>('registerNode') ?? true;

  const clusterDNS = pick<string[]>('clusterDNS') ?? [];
  for (const ip of clusterDNS) if (net.isIP(ip) === 0) fail('clusterDNS', `"${ip}" is not an IP address`);

  // The kubelet's validation of podLogsDir (a relative path in the file is the file's directory's, as the kubelet resolves it).
  const podLogsDir = pick<string>('podLogsDir') || DEFAULTS.podLogsDir;
  if (!path.isAbsolute(podLogsDir)) fail('podLogsDir', `"${podLogsDir}": must be an absolute path`);
  if (podLogsDir !== '/' && (path.normalize(podLogsDir) !== podLogsDir || podLogsDir.endsWith('/'))) fail('podLogsDir', `"${podLogsDir}": must be normalized`);
  // eslint-disable-next-line no-control-regex
  if (/[^\x00-\x7f]/.test(podLogsDir)) fail('podLogsDir', `"${podLogsDir}": must contain ASCII characters only`);

  const updateFrequency = positive('nodeStatusUpdateFrequency', DEFAULTS.nodeStatusUpdateFrequency);
  // The kubelet: without a report frequency, the update frequency when one is set, else 5m.
  const reportFrequency = positive('nodeStatusReportFrequency', pick('nodeStatusUpdateFrequency') !== undefined ? updateFrequency : DEFAULTS.nodeStatusReportFrequency);

  // Eviction: the maps (a flag's `k<v,...` / `k=v,...` text or the file's mapping), checked as the kubelet's ParseThresholdConfig checks them.
  const signalMap = (p: keyof EvictionSettings, separator: '<' | '='): Record<string, string> | undefined => {
    const v = pick<string | Record<string, string>>(p);
    if (v === undefined) return undefined;
    if (typeof v !== 'string') return { ...v };
    try {
      return parseSignalMap(v, separator);
    } catch (err) {
      return fail(p, `"${v}": ${errorMessage(err)}`);
    }
  };
  const mergeDefaultEvictionSettings = pick<boolean>('mergeDefaultEvictionSettings') ?? false;
  const eviction: EvictionSettings = {
    evictionHard: effectiveEvictionHard(signalMap('evictionHard', '<'), mergeDefaultEvictionSettings),
    evictionSoft: signalMap('evictionSoft', '<') ?? {},
    evictionSoftGracePeriod: signalMap('evictionSoftGracePeriod', '=') ?? {},
    evictionMinimumReclaim: signalMap('evictionMinimumReclaim', '=') ?? {},
  };
  const enforceNodeAllocatable = pick<string[]>('enforceNodeAllocatable') ?? [...DEFAULTS.enforceNodeAllocatable];
  const evictionThresholds = ((): Threshold[] => {
    try {
      return withAllocatableThresholds(parseThresholdConfig(eviction), enforceNodeAllocatable);
    } catch (err) {
      if (err instanceof ThresholdError) return fail(err.field, `is invalid: ${err.message}`);
      throw err;
    }
  })();
  const evictionMaxPodGracePeriod = pick<number>('evictionMaxPodGracePeriod') ?? 0;
  if (!Number.isInteger(evictionMaxPodGracePeriod)) fail('evictionMaxPodGracePeriod', `${evictionMaxPodGracePeriod}: expected an integer`);

  // Container log rotation, checked as the kubelet's validation and its log manager's constructor check it.
  const containerLogMaxSize = String(pick<string | number>('containerLogMaxSize') ?? DEFAULTS.containerLogMaxSize);
  const containerLogMaxSizeBytes = ((): number => {
    const bad = quantityError(containerLogMaxSize);
    if (bad !== undefined) return fail('containerLogMaxSize', `"${containerLogMaxSize}": ${bad}`);
    const bytes = parseQuantity(containerLogMaxSize).toNumber();
    if (!Number.isSafeInteger(bytes)) return fail('containerLogMaxSize', `"${containerLogMaxSize}": must be a whole number of bytes`);
    return bytes;
  })();
  const containerLogMaxFiles = pick<number>('containerLogMaxFiles') ?? DEFAULTS.containerLogMaxFiles;
  if (!Number.isInteger(containerLogMaxFiles) || containerLogMaxFiles <= 1) fail('containerLogMaxFiles', `${containerLogMaxFiles}: must be greater than 1`);
  const containerLogMaxWorkers = pick<number>('containerLogMaxWorkers') ?? DEFAULTS.containerLogMaxWorkers;
  if (!Number.isInteger(containerLogMaxWorkers) || containerLogMaxWorkers < 1) fail('containerLogMaxWorkers', `${containerLogMaxWorkers}: must be greater than or equal to 1`);
  const containerLogMonitorInterval = pick<number>('containerLogMonitorInterval') ?? DEFAULTS.containerLogMonitorInterval;
  if (!(containerLogMonitorInterval >= 3000)) fail('containerLogMonitorInterval', `${containerLogMonitorInterval / 1000}s: must be a positive time duration greater than or equal to 3s`);

  // The localhost healthz endpoint: the kubelet serves it always; klet standalone only when a port is
  // given (flag or file, as kubeadm's config.yaml gives it), so that a klet beside a kubelet or another
  // klet does not take 127.0.0.1:10248 from them.
  const healthzPort = pick<number>('healthzPort') ?? (cluster ? DEFAULTS.healthzPort : 0);
  if (!Number.isInteger(healthzPort) || healthzPort < 0 || healthzPort > 65535) fail('healthzPort', `${healthzPort}: invalid configuration: healthzPort (--healthz-port) ${healthzPort} must be between 1 and 65535, inclusive`);
  const healthzBindAddress = pick<string>('healthzBindAddress') ?? DEFAULTS.healthzBindAddress;
  if (net.isIP(healthzBindAddress) === 0) fail('healthzBindAddress', `"${healthzBindAddress}" is not an IP address`);

  // The fields of v1.35–v1.37 klet reads, checked with the kubelet v1.37's messages (its validation.go, and
  // component-base's TLSCurvePreferences for tlsCurvePreferences).
  const eventRecordQPS = pick<number>('eventRecordQPS') ?? DEFAULTS.eventRecordQPS;
  if (eventRecordQPS < 0) fail('eventRecordQPS', `${eventRecordQPS}: invalid configuration: eventRecordQPS (--event-qps) ${eventRecordQPS} must not be a negative number`);
  const eventBurst = pick<number>('eventBurst') ?? DEFAULTS.eventBurst;
  if (eventBurst < 0) fail('eventBurst', `${eventBurst}: invalid configuration: eventBurst (--event-burst) ${eventBurst} must not be a negative number`);
  const imageMinimumGCAge = pick<number>('imageMinimumGCAge') ?? DEFAULTS.imageMinimumGCAge;
  const imageMaximumGCAge = pick<number>('imageMaximumGCAge') ?? 0;
  if (imageMaximumGCAge > 0 && imageMaximumGCAge <= imageMinimumGCAge) {
    const values = [`${describe('imageMaximumGCAge')} ${formatDuration(imageMaximumGCAge)}`, ...(pick('imageMinimumGCAge') !== undefined ? [`${describe('imageMinimumGCAge')} ${formatDuration(imageMinimumGCAge)}`] : [])];
    throw new InputError(`${values.join(', ')}: invalid configuration: imageMaximumGCAge ${formatDuration(imageMaximumGCAge)} must be greater than imageMinimumGCAge ${formatDuration(imageMinimumGCAge)}`);
  }
  // DefaultPodSysctls is alpha (off) in v1.37, and klet runs with the feature gates' defaults (featureGates: not implemented).
  if (pick('defaultPodSysctls') !== undefined) {
    throw new InputError(`${describe('defaultPodSysctls')}: invalid configuration: DefaultPodSysctls feature gate is required for Kubelet configuration option defaultPodSysctls`);
  }
  const memoryReservationPolicy = pick<string>('memoryReservationPolicy') ?? DEFAULTS.memoryReservationPolicy;
  if (!(MEMORY_RESERVATION_POLICIES as readonly string[]).includes(memoryReservationPolicy)) {
    fail('memoryReservationPolicy', `${JSON.stringify(memoryReservationPolicy)}: invalid configuration: option ${JSON.stringify(memoryReservationPolicy)} specified for memoryReservationPolicy. Valid options are "None" or "TieredReservation"`);
  }
  // KubeletCrashLoopBackOffMax is beta (on) in v1.37: the cap of the crash-loop back-off, 1s to 300s; the first
  // delay no longer than it, and the back-off reset after twice it (flowcontrol's), as the kubelet has them.
  // klet's own --crash-loop-backoff-max wins over it.
  const maxRestartPeriod = pick<number>('crashLoopBackOff.maxContainerRestartPeriod');
  if (maxRestartPeriod !== undefined && (Math.trunc(maxRestartPeriod) < 1000 || Math.trunc(maxRestartPeriod) > 300_000)) {
    fail('crashLoopBackOff.maxContainerRestartPeriod', `${formatDuration(maxRestartPeriod)}: invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: ${maxRestartPeriod / 1000} seconds) must be set between 1s and 300s`);
  }
  const fileBackOffMax = isGiven('crashLoopBackOffMax') ? undefined : maxRestartPeriod;
  const backOffMax = positive('crashLoopBackOffMax', fileBackOffMax ?? DEFAULTS.crashLoopBackOff.max);
  const crashLoopBackOff = {
    initial: positive('crashLoopBackOffInitial', fileBackOffMax !== undefined ? Math.min(DEFAULTS.crashLoopBackOff.initial, fileBackOffMax) : DEFAULTS.crashLoopBackOff.initial),
    max: backOffMax,
    reset: positive('crashLoopBackOffReset', fileBackOffMax !== undefined ? 2 * fileBackOffMax : DEFAULTS.crashLoopBackOff.reset),
  };
  // The kubelet v1.37's validateKubeletOSConfiguration: an explicit failCgroupV1: true on a cgroup v1 host
  // (legacy or hybrid) stops it before anything starts. klet's default stays v1.34's false (DEFAULTS).
  const failCgroupV1 = pick<boolean>('failCgroupV1') ?? DEFAULTS.failCgroupV1;
  if (failCgroupV1 && !(o.cgroupV2 ?? isCgroup2UnifiedMode)()) {
    fail('failCgroupV1', 'true: kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release');
  }
  // Checked when the kubelet makes its TLS options (InitializeTLS), after its configuration's validation.
  const tlsCurvePreferences = pick<number[]>('tlsCurvePreferences') ?? [];
  const seenCurves = new Set<number>();
  for (const id of tlsCurvePreferences) {
    const bad = (why: string) => fail('tlsCurvePreferences', `[${tlsCurvePreferences.join(', ')}]: ${why}`);
    if (id <= 0 || id > 65535) bad(`curve preference ${id} is out of range (must be 1-65535)`);
    if (seenCurves.has(id)) bad(`duplicate curve preference ${id}`);
    seenCurves.add(id);
    if (!GO_CURVE_IDS.has(id)) bad(`curve preference ${id} is not supported by the current Go version`);
  }

  const config: KubeletConfig = {
    enableServer,
    ...(staticPodPath !== undefined ? { staticPodPath } : {}),
    ...(staticPodURL !== undefined ? { staticPodURL } : {}),
    staticPodURLHeader,
    syncFrequency: positive('syncFrequency', DEFAULTS.syncFrequency),
    fileCheckFrequency: positive('fileCheckFrequency', DEFAULTS.fileCheckFrequency),
    httpCheckFrequency: positive('httpCheckFrequency', DEFAULTS.httpCheckFrequency),
    address,
    port,
    ...optional('tlsCertFile', pick<string>('tlsCertFile')),
    ...optional('tlsPrivateKeyFile', pick<string>('tlsPrivateKeyFile')),
    rotateCertificates: pick<boolean>('rotateCertificates') ?? DEFAULTS.rotateCertificates,
    serverTLSBootstrap: pick<boolean>('serverTLSBootstrap') ?? false,
    authentication: {
      x509: clientCAFile !== undefined ? { clientCAFile } : {},
      webhook: { enabled: webhook, cacheTTL: positive('authentication.webhook.cacheTTL', DEFAULTS.webhookCacheTTL) },
      anonymous: { enabled: anonymous },
    },
    authorization: {
      mode: mode as AuthorizationMode,
      webhook: {
        cacheAuthorizedTTL: positive('authorization.webhook.cacheAuthorizedTTL', DEFAULTS.cacheAuthorizedTTL),
        cacheUnauthorizedTTL: positive('authorization.webhook.cacheUnauthorizedTTL', DEFAULTS.cacheUnauthorizedTTL),
      },
    },
    ...optional('clusterDomain', pick<string>('clusterDomain')),
    clusterDNS,
    resolvConf: pick<string>('resolvConf') ?? DEFAULTS.resolvConf,
    podLogsDir,
    nodeStatusUpdateFrequency: updateFrequency,
    nodeStatusReportFrequency: reportFrequency,
    runtimeRequestTimeout: positive('runtimeRequestTimeout', DEFAULTS.runtimeRequestTimeout),
    maxPods,
    kubeReserved: kubeReserved.map,
    systemReserved: systemReserved.map,
    registerWithTaints,
    registerNode,
    containerRuntimeEndpoint: pick<string>('containerRuntimeEndpoint') ?? DEFAULTS.containerRuntimeEndpoint,
    // Checked where they are used (lib/node/sysctl.ts, lib/cm/settings.ts), named by describe(); the image GC thresholds below.
    allowedUnsafeSysctls: pick<string[]>('allowedUnsafeSysctls') ?? [],
    cgroupsPerQOS: pick<boolean>('cgroupsPerQOS') ?? DEFAULTS.cgroupsPerQOS,
    cgroupRoot: pick<string>('cgroupRoot') ?? DEFAULTS.cgroupRoot,
    cgroupDriver: pick<string>('cgroupDriver') ?? DEFAULTS.cgroupDriver,
    enforceNodeAllocatable,
    imageGCHighThresholdPercent: pick<number>('imageGCHighThresholdPercent') ?? DEFAULTS.imageGCHighThresholdPercent,
    imageGCLowThresholdPercent: pick<number>('imageGCLowThresholdPercent') ?? DEFAULTS.imageGCLowThresholdPercent,
    imageMinimumGCAge,
    ...eviction,
    evictionPressureTransitionPeriod: positive('evictionPressureTransitionPeriod', DEFAULTS.evictionPressureTransitionPeriod),
    evictionMaxPodGracePeriod,
    mergeDefaultEvictionSettings,
    evictionThresholds,
    containerLogMaxSize,
    containerLogMaxSizeBytes,
    containerLogMaxFiles,
    containerLogMaxWorkers,
    containerLogMonitorInterval,
    healthzPort,
    healthzBindAddress,
    podPidsLimit: pick<number>('podPidsLimit') ?? DEFAULTS.podPidsLimit,
    seccompDefault: pick<boolean>('seccompDefault') ?? false,
    enableSystemLogHandler: pick<boolean>('enableSystemLogHandler') ?? true,
    failCgroupV1,
    tlsCurvePreferences,
    memoryReservationPolicy: memoryReservationPolicy as MemoryReservationPolicy,
    eventRecordQPS,
    eventBurst,
    imageMaximumGCAge,
    flags: {
      ...optional('config', file?.path),
      ...optional('kubeconfig', kubeconfig),
      ...optional('bootstrapKubeconfig', bootstrapKubeconfig),
      nodeName: o.nodeName,
      nodeLabels,
      ...optional('nodeIP', nodeIP),
      reserved: addReservations(kubeReserved.parsed, systemReserved.parsed),
      ...optional('listen', listen),
      ...optional('authTokenFile', authTokenFile),
      plegRelistPeriod: positive('plegRelistPeriod', DEFAULTS.plegRelistPeriod),
      maxParallelSyncs: pick<number>('maxParallelSyncs') ?? DEFAULTS.maxParallelSyncs,
      crashLoopBackOff,
    },
  };
  if (config.flags.maxParallelSyncs < 1) fail('maxParallelSyncs', `${config.flags.maxParallelSyncs}: must be at least 1`);
  const gc = validateImageGCPolicy({ highThresholdPercent: config.imageGCHighThresholdPercent, lowThresholdPercent: config.imageGCLowThresholdPercent });
  // Each value it is about, named where it came from (file:line and field, or the caller's name).
  if (gc !== null) throw new InputError(`${gc.fields.map((f) => `${describe(f)} ${config[f]}`).join(', ')}: ${gc.message}`);

  const warnings: string[] = [];
  for (const f of file?.notImplemented ?? []) warnings.push(`${file!.path}:${f.line}: ${String(f.value)}: not implemented by klet; ignored`);
  for (const [p, klets] of Object.entries(READ_NOT_IMPLEMENTED)) {
    const v = fromFile(p as ConfigPath)?.value;
    if (v !== undefined && JSON.stringify(v) !== JSON.stringify(klets)) warnings.push(`${describe(p as ConfigPath)}: not implemented by klet; ignored`);
  }
  const defaults: Record<string, unknown> = { clusterDNS: [], serverTLSBootstrap: false, resolvConf: DEFAULTS.resolvConf };
  for (const p of NOT_ACTED_ON) {
    const v = pick<unknown>(p as ConfigPath);
    if (v !== undefined && JSON.stringify(v) !== JSON.stringify(defaults[p])) warnings.push(`${describe(p as ConfigPath)}: not acted on by this klet yet; ignored`);
  }
  if (!registerNode) warnings.push(`${describe('registerNode')}: false is not implemented (klet always registers the node with a kubeconfig); ignored`);
  // The file's in the order of its lines.
  const lineOf = (w: string) => (file !== undefined && w.startsWith(`${file.path}:`) ? Number.parseInt(w.slice(file.path.length + 1), 10) : Infinity);
  warnings.sort((a, b) => lineOf(a) - lineOf(b));
  return { config, warnings, describe };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
