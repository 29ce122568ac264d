/**
 * API defaulting: what the API server's SetDefaults_* functions (and the
 * v1 conversion) fill in before a Pod, Secret or ConfigMap is validated
 * and stored. klet applies them to manifests so that a pod runs exactly as
 * it would from the API server, and so that the static pod UID (a hash of
 * the defaulted pod) matches across equivalent spellings of one manifest.
 *
 * Go defaults a non-pointer field when it holds its zero value (0, "")
 * and a pointer field when it is nil; the helpers below keep that
 * distinction. Every exported function is pure: it returns a defaulted
 * copy and leaves its argument alone.
 */
import type {
  V1ConfigMap,
  V1Container,
  V1ContainerPort,
  V1DownwardAPIVolumeFile,
  V1EphemeralContainer,
  V1HTTPGetAction,
  V1Lifecycle,
  V1Pod,
  V1PodSpec,
  V1Probe,
  V1Secret,
  V1Volume,
} from '@kubernetes/client-node';
import { modelAttributes } from './decode.js';
import { defaultImagePullPolicy } from '../image/reference.js';

export const DEFAULT_NAMESPACE = 'default';
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30;
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';
export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';
/** 0644, the mode of files in configMap/secret/downwardAPI/projected volumes. */
export const DEFAULT_VOLUME_FILE_MODE = 0o644;
/** Default lifetime of a projected service account token. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;

/** Deep copy that keeps class prototypes (V1Pod stays a V1Pod) and copies Dates. */
export function cloneModel<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v: unknown) => cloneModel(v)) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (value !== null && typeof value === 'object') {
    const out = Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>;
    for (const [k, v] of Object.entries(value)) out[k] = cloneModel(v);
    return out as T;
  }
  return value;
}

function empty(s: string | undefined): boolean {
  return s === undefined || s === '';
}
function zero(n: number | undefined): boolean {
  return n === undefined || n === 0;
}

function defaultHTTPGet(action: V1HTTPGetAction | undefined): void {
  if (action === undefined) return;
  if (empty(action.path)) action.path = '/';
  if (empty(action.scheme)) action.scheme = 'HTTP';
}

function defaultProbe(probe: V1Probe | undefined): void {
  if (probe === undefined) return;
  if (zero(probe.timeoutSeconds)) probe.timeoutSeconds = 1;
  if (zero(probe.periodSeconds)) probe.periodSeconds = 10;
  if (zero(probe.successThreshold)) probe.successThreshold = 1;
  if (zero(probe.failureThreshold)) probe.failureThreshold = 3;
  defaultHTTPGet(probe.httpGet);
}

function defaultLifecycle(lifecycle: V1Lifecycle | undefined): void {
  defaultHTTPGet(lifecycle?.postStart?.httpGet);
  defaultHTTPGet(lifecycle?.preStop?.httpGet);
}

function defaultPort(port: V1ContainerPort, hostNetwork: boolean): void {
  if (empty(port.protocol)) port.protocol = 'TCP';
  // With the host's network namespace the container port *is* the host port.
  if (hostNetwork && zero(port.hostPort)) port.hostPort = port.containerPort;
}

function defaultFieldRefs(items: V1DownwardAPIVolumeFile[] | undefined): void {
  for (const item of items ?? []) {
    if (item.fieldRef !== undefined && empty(item.fieldRef.apiVersion)) item.fieldRef.apiVersion = 'v1';
  }
}

function defaultContainer(c: V1Container | V1EphemeralContainer, hostNetwork: boolean): void {
  if (empty(c.imagePullPolicy)) c.imagePullPolicy = defaultImagePullPolicy(c.image);
  if (empty(c.terminationMessagePath)) c.terminationMessagePath = DEFAULT_TERMINATION_MESSAGE_PATH;
  if (empty(c.terminationMessagePolicy)) c.terminationMessagePolicy = 'File';
  for (const port of c.ports ?? []) defaultPort(port, hostNetwork);
  for (const env of c.env ?? []) {
    const ref = env.valueFrom?.fieldRef;
    if (ref !== undefined && empty(ref.apiVersion)) ref.apiVersion = 'v1';
  }
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
  defaultLifecycle(c.lifecycle);
}

/** SetDefaults_Pod: containers without requests get requests = limits. */
function defaultRequestsFromLimits(c: V1Container): void {
  const limits = c.resources?.limits;
  if (c.resources === undefined || limits === undefined) return;
  const requests = (c.resources.requests ??= {});
  for (const [name, value] of Object.entries(limits)) {
    if (!Object.hasOwn(requests, name)) requests[name] = value;
  }
}

/**
 * The source fields of V1Volume (hostPath, emptyDir, configMap, ...): every
 * field but `name`, read from client-node's model metadata so that volume
 * types added by newer Kubernetes versions are known without a code change.
 */
const VOLUME_SOURCE_FIELDS: readonly (keyof V1Volume)[] = [...(modelAttributes('V1Volume')?.values() ?? [])]
  .map((a) => a.name as keyof V1Volume)
  .filter((name) => name !== 'name');

/** The volume source fields set on `volume` (exactly one in a valid pod). */
export function volumeSources(volume: V1Volume): (keyof V1Volume)[] {
  return VOLUME_SOURCE_FIELDS.filter((k) => volume[k] !== undefined);
}

function defaultVolume(v: V1Volume): void {
  // SetDefaults_Volume: a volume with no source is an emptyDir.
  if (volumeSources(v).length === 0) v.emptyDir = {};
  if (v.emptyDir !== undefined && v.emptyDir.medium === undefined) v.emptyDir.medium = '';
  if (v.hostPath !== undefined && v.hostPath.type === undefined) v.hostPath.type = '';
  if (v.configMap !== undefined) v.configMap.defaultMode ??= DEFAULT_VOLUME_FILE_MODE;
  if (v.secret !== undefined) v.secret.defaultMode ??= DEFAULT_VOLUME_FILE_MODE;
  if (v.downwardAPI !== undefined) {
    v.downwardAPI.defaultMode ??= DEFAULT_VOLUME_FILE_MODE;
    defaultFieldRefs(v.downwardAPI.items);
  }
  if (v.projected !== undefined) {
    v.projected.defaultMode ??= DEFAULT_VOLUME_FILE_MODE;
    for (const source of v.projected.sources ?? []) {
      if (source.serviceAccountToken !== undefined) {
        source.serviceAccountToken.expirationSeconds ??= DEFAULT_TOKEN_EXPIRATION_SECONDS;
      }
      defaultFieldRefs(source.downwardAPI?.items);
    }
  }
  if (v.iscsi !== undefined && empty(v.iscsi.iscsiInterface)) v.iscsi.iscsiInterface = 'default';
  if (v.rbd !== undefined) {
    if (empty(v.rbd.pool)) v.rbd.pool = 'rbd';
    if (empty(v.rbd.user)) v.rbd.user = 'admin';
    if (empty(v.rbd.keyring)) v.rbd.keyring = '/etc/ceph/keyring';
  }
}

function defaultPodSpec(spec: V1PodSpec): void {
  if (empty(spec.dnsPolicy)) spec.dnsPolicy = 'ClusterFirst';
  if (empty(spec.restartPolicy)) spec.restartPolicy = 'Always';
  spec.terminationGracePeriodSeconds ??= DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  spec.securityContext ??= {};
  if (empty(spec.schedulerName)) spec.schedulerName = DEFAULT_SCHEDULER_NAME;
  spec.enableServiceLinks ??= true;
  // v1 conversion: the deprecated serviceAccount and serviceAccountName mirror each other.
  if (empty(spec.serviceAccountName) && !empty(spec.serviceAccount)) spec.serviceAccountName = spec.serviceAccount;
  if (!empty(spec.serviceAccountName)) spec.serviceAccount = spec.serviceAccountName;

  const hostNetwork = spec.hostNetwork === true;
  for (const c of spec.initContainers ?? []) {
    defaultContainer(c, hostNetwork);
    defaultRequestsFromLimits(c);
  }
  for (const c of spec.containers ?? []) {
    defaultContainer(c, hostNetwork);
    defaultRequestsFromLimits(c);
  }
  for (const c of spec.ephemeralContainers ?? []) defaultContainer(c, false);
  for (const v of spec.volumes ?? []) defaultVolume(v);
}

/** A copy of `pod` with the API server's defaults filled in (SetDefaults_Pod and friends). */
export function applyPodDefaults(pod: V1Pod): V1Pod {
  const out = cloneModel(pod);
  out.spec ??= { containers: [] };
  out.spec.containers ??= [];
  defaultPodSpec(out.spec);
  return out;
}

/**
 * A copy of `secret` as the API server stores it: type Opaque when unset,
 * and stringData (a write-only convenience) merged into data as base64,
 * winning over data on conflicts.
 */
export function applySecretDefaults(secret: V1Secret): V1Secret {
  const out = cloneModel(secret);
  if (empty(out.type)) out.type = 'Opaque';
  if (out.stringData !== undefined) {
    const data = (out.data ??= {});
    for (const [k, v] of Object.entries(out.stringData)) data[k] = Buffer.from(v, 'utf8').toString('base64');
    delete out.stringData;
  }
  return out;
}

/** ConfigMaps have no API defaults; this returns a copy for symmetry with the others. */
export function applyConfigMapDefaults(configMap: V1ConfigMap): V1ConfigMap {
  return cloneModel(configMap);
}
