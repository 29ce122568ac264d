/**
 * Validation of Pods, ConfigMaps and Secrets, following the API server's
 * pkg/apis/core/validation (ValidatePodCreate, ValidateConfigMap,
 * ValidateSecret) for the parts that matter to a node: names, containers,
 * ports, env, resources, volumes and mounts, probes, restart and DNS
 * policies. Messages and field paths are Go's, so a manifest rejected by
 * klet reads like one rejected by `kubectl apply`. Every error is
 * collected; nothing stops at the first.
 *
 * Run it on *defaulted* objects (see defaults.ts), as the API server does:
 * e.g. an unset restartPolicy is Always by then, not an error.
 *
 * klet-specific additions, which the API server leaves to the kubelet or
 * runtime: volumeMounts[].mountPath must be absolute.
 */
import { isIP } from 'node:net';
import path from 'node:path/posix';
import type {
  IntOrString,
  V1ConfigMap,
  V1Container,
  V1EnvFromSource,
  V1EnvVar,
  V1HTTPGetAction,
  V1DownwardAPIVolumeFile,
  V1KeyToPath,
  V1Lifecycle,
  V1LifecycleHandler,
  V1ObjectFieldSelector,
  V1ObjectMeta,
  V1Pod,
  V1PodSpec,
  V1ProjectedVolumeSource,
  V1Probe,
  V1ResourceFieldSelector,
  V1ResourceRequirements,
  V1Secret,
  V1Toleration,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { volumeSources } from './defaults.js';
import {
  type FieldError,
  FieldPath,
  duplicate,
  forbidden,
  invalid,
  notFound,
  notSupported,
  required,
  tooLong,
} from './field.js';
import {
  byteLength,
  inclusiveRangeError,
  isConfigMapKey,
  isDNS1123Label,
  isDNS1123Subdomain,
  isDNS1123SubdomainWithUnderscore,
  isEnvVarName,
  isQualifiedName,
  isValidLabelValue,
  isValidPortName,
  isValidPortNum,
} from './names.js';
import { Quantity, QuantityError } from './quantity.js';
import { MAX_DNS_NAMESERVERS, MAX_DNS_SEARCH_LIST_CHARS, MAX_DNS_SEARCH_PATHS } from './dns.js';

/** Total size of all annotations of one object (TotalAnnotationSizeLimitB). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;
/** Largest ConfigMap / Secret payload (core.MaxSecretSize). */
export const MAX_SECRET_SIZE = 1024 * 1024;

const MAX_INT32 = 2 ** 31 - 1;
const FILE_MODE_ERROR = 'must be a number between 0 and 0777 (octal), both inclusive';
const NEGATIVE_ERROR = 'must be greater than or equal to 0';
const INIT_FORBIDDEN = 'may not be set for init containers without restartPolicy=Always';

const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const TERMINATION_MESSAGE_POLICIES = ['File', 'FallbackToLogsOnError'];
const PORT_PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const HTTP_SCHEMES = ['HTTP', 'HTTPS'];
const MOUNT_PROPAGATIONS = ['Bidirectional', 'HostToContainer', 'None'];
export const HOST_PATH_TYPES = [
  '',
  'BlockDevice',
  'CharDevice',
  'Directory',
  'DirectoryOrCreate',
  'File',
  'FileOrCreate',
  'Socket',
] as const;
const TOLERATION_OPERATORS = ['Equal', 'Exists'];
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** fieldRef paths an env var may use (validEnvDownwardAPIFieldPathExpressions). */
export const ENV_FIELD_PATHS = [
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
] as const;
/** fieldRef paths a downwardAPI volume file may use. */
const VOLUME_FIELD_PATHS = ['metadata.annotations', 'metadata.labels', 'metadata.name', 'metadata.namespace', 'metadata.uid'];
const RESOURCE_FIELD_PATHS = [
  'limits.cpu',
  'limits.ephemeral-storage',
  'limits.memory',
  'requests.cpu',
  'requests.ephemeral-storage',
  'requests.memory',
];
const CPU_DIVISORS = new Set(['1m', '1']);
const MEMORY_DIVISORS = new Set(['1', '1k', '1M', '1G', '1T', '1P', '1E', '1Ki', '1Mi', '1Gi', '1Ti', '1Pi', '1Ei']);
/** Every fieldPath the v1 downward API knows (ConvertDownwardAPIFieldLabel). */
const KNOWN_FIELD_LABELS = new Set([
  'metadata.annotations',
  'metadata.labels',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.serviceAccountName',
  'spec.schedulerName',
  'status.phase',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
]);

type NameFn = (name: string, prefix: boolean) => string[];

/** Names of most objects (pods, config maps, secrets): DNS-1123 subdomains. */
const subdomainName: NameFn = (name, prefix) => isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);

/** generateName may end in '-': validate it as if it did not (maskTrailingDash). */
function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith('-') ? `${name.slice(0, -2)}a` : name;
}

function each(path: FieldPath, value: unknown, msgs: string[]): FieldError[] {
  return msgs.map((m) => invalid(path, value, m));
}

// ---------------------------------------------------------------- metadata

export function validateLabels(labels: Record<string, string> | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    errs.push(...each(fld, k, isQualifiedName(k)));
    errs.push(...each(fld, v, isValidLabelValue(v)));
  }
  return errs;
}

export function validateAnnotations(annotations: Record<string, string> | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  let total = 0;
  for (const [k, v] of Object.entries(annotations ?? {})) {
    errs.push(...each(fld, k, isQualifiedName(k.toLowerCase())));
    total += byteLength(k) + byteLength(v);
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT) errs.push(tooLong(fld, TOTAL_ANNOTATION_SIZE_LIMIT));
  return errs;
}

/** ValidateObjectMeta for a namespaced object whose names are DNS subdomains. */
export function validateObjectMeta(meta: V1ObjectMeta | undefined, fld: FieldPath = FieldPath.of('metadata')): FieldError[] {
  const errs: FieldError[] = [];
  const name = meta?.name ?? '';
  const generateName = meta?.generateName ?? '';
  if (generateName !== '') errs.push(...each(fld.child('generateName'), generateName, subdomainName(generateName, true)));
  if (name === '') {
    if (generateName === '') errs.push(required(fld.child('name'), 'name or generateName is required'));
  } else {
    errs.push(...each(fld.child('name'), name, subdomainName(name, false)));
  }
  const namespace = meta?.namespace ?? '';
  if (namespace === '') errs.push(required(fld.child('namespace')));
  else errs.push(...each(fld.child('namespace'), namespace, isDNS1123Label(namespace)));
  errs.push(...validateLabels(meta?.labels, fld.child('labels')));
  errs.push(...validateAnnotations(meta?.annotations, fld.child('annotations')));
  return errs;
}

// ------------------------------------------------------------------- paths

function validatePathNoBacksteps(target: string, fld: FieldPath): FieldError[] {
  return target.split('/').includes('..') ? [invalid(fld, target, "must not contain '..'")] : [];
}

function validateLocalDescendingPath(target: string, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (path.isAbsolute(target)) errs.push(invalid(fld, target, 'must be a relative path'));
  errs.push(...validatePathNoBacksteps(target, fld));
  return errs;
}

function validateLocalNonReservedPath(target: string, fld: FieldPath): FieldError[] {
  const errs = validateLocalDescendingPath(target, fld);
  if (target.startsWith('..') && !target.startsWith('../')) errs.push(invalid(fld, target, "must not start with '..'"));
  // klet: a file path with an empty segment (a//b, a/) names no file the atomic writer can project.
  if (target !== '' && !path.isAbsolute(target) && target.split('/').some((seg) => seg === '')) {
    errs.push(invalid(fld, target, 'must not contain empty path segments'));
  }
  return errs;
}

/** Two files of one volume written to the same path (the kubelet's projected "conflicting duplicate paths"). */
function validateUniquePaths(paths: { path: string; fld: FieldPath }[]): FieldError[] {
  const seen = new Set<string>();
  const errs: FieldError[] = [];
  for (const p of paths) {
    if (p.path === '') continue;
    const norm = path.posix.normalize(p.path);
    if (seen.has(norm)) errs.push(invalid(p.fld, p.path, 'conflicting duplicate paths'));
    seen.add(norm);
  }
  return errs;
}

function validateFileMode(mode: number | undefined, fld: FieldPath): FieldError[] {
  return mode !== undefined && (mode < 0 || mode > 0o777) ? [invalid(fld, mode, FILE_MODE_ERROR)] : [];
}

// -------------------------------------------------------------- quantities

function parseQuantityAt(value: string, fld: FieldPath, errs: FieldError[]): Quantity | undefined {
  try {
    return Quantity.parse(value);
  } catch (err) {
    if (!(err instanceof QuantityError)) throw err;
    errs.push(invalid(fld, value, err.message));
    return undefined;
  }
}

function isNativeResource(name: string): boolean {
  return !name.includes('/') || name.includes('kubernetes.io/');
}
function isHugePages(name: string): boolean {
  return name.startsWith('hugepages-');
}
/** Extended resources (vendor.com/gpu) and huge pages cannot be overcommitted. */
function isOvercommitAllowed(name: string): boolean {
  return isNativeResource(name) && !isHugePages(name);
}
function isExtendedResource(name: string): boolean {
  return !isNativeResource(name) && !name.startsWith('requests.');
}

function validateContainerResourceName(name: string, fld: FieldPath): FieldError[] {
  const errs = each(fld, name, isQualifiedName(name));
  if (!name.includes('/')) {
    if (!['cpu', 'memory', 'ephemeral-storage'].includes(name) && !isHugePages(name)) {
      errs.push(invalid(fld, name, 'must be a standard resource for containers'));
    }
  } else if (!isNativeResource(name) && !isExtendedResource(name)) {
    errs.push(invalid(fld, name, "doesn't follow extended resource name standard"));
  }
  return errs;
}

function validateResourceQuantity(name: string, q: Quantity, fld: FieldPath): FieldError[] {
  if (q.sign() < 0) return [invalid(fld, q.toString(), NEGATIVE_ERROR)];
  if (isExtendedResource(name) && q.milliValue() % 1000 !== 0) return [invalid(fld, q.toString(), 'must be an integer')];
  return [];
}

export function validateResourceRequirements(req: V1ResourceRequirements | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const limPath = fld.child('limits');
  const reqPath = fld.child('requests');
  const limits = new Map<string, Quantity>();
  for (const [name, value] of Object.entries(req?.limits ?? {})) {
    const p = limPath.key(name);
    errs.push(...validateContainerResourceName(name, p));
    const q = parseQuantityAt(value, p, errs);
    if (q === undefined) continue;
    errs.push(...validateResourceQuantity(name, q, p));
    limits.set(name, q);
  }
  for (const [name, value] of Object.entries(req?.requests ?? {})) {
    const p = reqPath.key(name);
    errs.push(...validateContainerResourceName(name, p));
    const q = parseQuantityAt(value, p, errs);
    if (q === undefined) continue;
    errs.push(...validateResourceQuantity(name, q, p));
    const limit = limits.get(name);
    if (limit !== undefined) {
      if (q.cmp(limit) !== 0 && !isOvercommitAllowed(name)) {
        errs.push(invalid(p, q.toString(), `must be equal to ${name} limit of ${limit.toString()}`));
      } else if (q.cmp(limit) > 0) {
        errs.push(invalid(p, q.toString(), `must be less than or equal to ${name} limit of ${limit.toString()}`));
      }
    } else if (!isOvercommitAllowed(name) && !Object.hasOwn(req?.limits ?? {}, name)) {
      errs.push(required(limPath, 'Limit must be set for non overcommitable resources'));
    }
  }
  return errs;
}

// --------------------------------------------------------------------- env

function validateFieldSelector(ref: V1ObjectFieldSelector, allowed: readonly string[], fld: FieldPath): FieldError[] {
  const apiVersion = ref.apiVersion ?? '';
  const fieldPath = ref.fieldPath ?? '';
  if (apiVersion === '') return [required(fld.child('apiVersion'))];
  if (fieldPath === '') return [required(fld.child('fieldPath'))];
  if (apiVersion !== 'v1') {
    return [invalid(fld.child('fieldPath'), fieldPath, `error converting fieldPath: unsupported pod version: ${apiVersion}`)];
  }
  const sub = /^(metadata\.(?:labels|annotations))\['(.*)'\]$/.exec(fieldPath);
  if (sub !== null) {
    const key = sub[2] as string;
    if (sub[1] === 'metadata.annotations') return each(fld, key.toLowerCase(), isQualifiedName(key.toLowerCase()));
    return each(fld, key, isQualifiedName(key));
  }
  const base = fieldPath.replace(/\[.*$/, '');
  if (!KNOWN_FIELD_LABELS.has(base)) {
    return [invalid(fld.child('fieldPath'), fieldPath, `error converting fieldPath: field label not supported: ${fieldPath}`)];
  }
  if (base !== fieldPath) return [invalid(fld, base, 'does not support subscript')];
  if (!allowed.includes(fieldPath)) return [notSupported(fld.child('fieldPath'), fieldPath, [...allowed].sort())];
  return [];
}

function validateResourceFieldSelector(ref: V1ResourceFieldSelector, fld: FieldPath, volume: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const resource = ref.resource ?? '';
  if (volume && (ref.containerName ?? '') === '') errs.push(required(fld.child('containerName')));
  else if (resource === '') errs.push(required(fld.child('resource')));
  else if (!RESOURCE_FIELD_PATHS.includes(resource) && !/^(limits|requests)\.hugepages-/.test(resource)) {
    errs.push(notSupported(fld.child('resource'), resource, RESOURCE_FIELD_PATHS));
  }
  if (ref.divisor !== undefined) {
    const q = parseQuantityAt(ref.divisor, fld.child('divisor'), errs);
    if (q !== undefined && !q.isZero) {
      const d = q.toString();
      if ((resource === 'limits.cpu' || resource === 'requests.cpu') && !CPU_DIVISORS.has(d)) {
        errs.push(invalid(fld.child('divisor'), resource, "only divisor's values 1m and 1 are supported with the cpu resource"));
      } else if (/\.(memory|ephemeral-storage)$/.test(resource) && !MEMORY_DIVISORS.has(d)) {
        const what = resource.endsWith('memory') ? 'memory' : 'local ephemeral storage';
        errs.push(
          invalid(
            fld.child('divisor'),
            resource,
            `only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the ${what} resource`,
          ),
        );
      }
    }
  }
  return errs;
}

function validateKeySelector(ref: { name?: string; key?: string }, fld: FieldPath): FieldError[] {
  const errs = each(fld.child('name'), ref.name ?? '', subdomainName(ref.name ?? '', false));
  const key = ref.key ?? '';
  if (key === '') errs.push(required(fld.child('key')));
  else errs.push(...each(fld.child('key'), key, isConfigMapKey(key)));
  return errs;
}

function validateEnvVar(ev: V1EnvVar, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const name = ev.name ?? '';
  if (name === '') errs.push(required(fld.child('name')));
  else errs.push(...each(fld.child('name'), name, isEnvVarName(name)));
  const from = ev.valueFrom;
  if (from === undefined) return errs;
  const fromPath = fld.child('valueFrom');
  let sources = 0;
  if (from.fieldRef !== undefined) {
    sources++;
    errs.push(...validateFieldSelector(from.fieldRef, ENV_FIELD_PATHS, fromPath.child('fieldRef')));
  }
  if (from.resourceFieldRef !== undefined) {
    sources++;
    errs.push(...validateResourceFieldSelector(from.resourceFieldRef, fromPath.child('resourceFieldRef'), false));
  }
  if (from.configMapKeyRef !== undefined) {
    sources++;
    errs.push(...validateKeySelector(from.configMapKeyRef, fromPath.child('configMapKeyRef')));
  }
  if (from.secretKeyRef !== undefined) {
    sources++;
    errs.push(...validateKeySelector(from.secretKeyRef, fromPath.child('secretKeyRef')));
  }
  if (from.fileKeyRef !== undefined) {
    sources++;
    const p = fromPath.child('fileKeyRef');
    if ((from.fileKeyRef.volumeName ?? '') === '') errs.push(required(p.child('volumeName')));
    if ((from.fileKeyRef.path ?? '') === '') errs.push(required(p.child('path')));
    else errs.push(...validateLocalDescendingPath(from.fileKeyRef.path, p.child('path')));
    if ((from.fileKeyRef.key ?? '') === '') errs.push(required(p.child('key')));
  }
  if (sources === 0) {
    errs.push(invalid(fromPath, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`'));
  } else if ((ev.value ?? '') !== '') {
    errs.push(invalid(fromPath, '', 'may not be specified when `value` is not empty'));
  } else if (sources > 1) {
    errs.push(invalid(fromPath, '', 'may not have more than one field specified at a time'));
  }
  return errs;
}

function validateEnvFrom(envFrom: V1EnvFromSource[], fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  envFrom.forEach((ev, i) => {
    const p = fld.index(i);
    if ((ev.prefix ?? '') !== '') errs.push(...each(p.child('prefix'), ev.prefix, isEnvVarName(ev.prefix ?? '')));
    let sources = 0;
    for (const [field, ref] of [
      ['configMapRef', ev.configMapRef],
      ['secretRef', ev.secretRef],
    ] as const) {
      if (ref === undefined) continue;
      sources++;
      const name = ref.name ?? '';
      if (name === '') errs.push(required(p.child(field, 'name')));
      else errs.push(...each(p.child(field, 'name'), name, subdomainName(name, false)));
    }
    if (sources === 0) errs.push(invalid(fld, '', 'must specify one of: `configMapRef` or `secretRef`'));
    else if (sources > 1) errs.push(invalid(fld, '', 'may not have more than one field specified at a time'));
  });
  return errs;
}

// ------------------------------------------------------- probes and hooks

function validatePortNumOrName(port: IntOrString | undefined, fld: FieldPath): FieldError[] {
  if (typeof port === 'number') return each(fld, port, isValidPortNum(port));
  if (typeof port === 'string') return each(fld, port, isValidPortName(port));
  return [required(fld)];
}

function validateHTTPGet(action: V1HTTPGetAction, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if ((action.path ?? '') === '') errs.push(required(fld.child('path')));
  errs.push(...validatePortNumOrName(action.port, fld.child('port')));
  if (!HTTP_SCHEMES.includes(action.scheme ?? '')) errs.push(notSupported(fld.child('scheme'), action.scheme ?? '', HTTP_SCHEMES));
  (action.httpHeaders ?? []).forEach((h, i) => {
    const name = h.name ?? '';
    if (!/^[-A-Za-z0-9]+$/.test(name)) {
      errs.push(
        invalid(
          fld.child('httpHeaders').index(i).child('name'),
          name,
          "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
        ),
      );
    }
  });
  return errs;
}

type Handler = V1Probe & V1LifecycleHandler;

/** validateHandler: exactly one of exec, httpGet, tcpSocket, grpc, sleep. */
function validateHandler(h: Partial<Handler>, gracePeriod: number | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  let handlers = 0;
  const add = (name: string, check: () => FieldError[]): void => {
    if (handlers > 0) {
      errs.push(forbidden(fld.child(name), 'may not specify more than 1 handler type'));
      return;
    }
    handlers++;
    errs.push(...check());
  };
  if (h.exec !== undefined) {
    const exec = h.exec;
    add('exec', () => ((exec.command ?? []).length === 0 ? [required(fld.child('exec', 'command'))] : []));
  }
  if (h.httpGet !== undefined) {
    const action = h.httpGet;
    add('httpGet', () => validateHTTPGet(action, fld.child('httpGet')));
  }
  if (h.tcpSocket !== undefined) {
    const action = h.tcpSocket;
    add('tcpSocket', () => validatePortNumOrName(action.port, fld.child('tcpSocket', 'port')));
  }
  if (h.grpc !== undefined) {
    const action = h.grpc;
    add('grpc', () => each(fld.child('grpc', 'port'), action.port, isValidPortNum(action.port ?? 0)));
  }
  if (h.sleep !== undefined) {
    const action = h.sleep;
    add('sleep', () => {
      const seconds = action.seconds ?? 0;
      if (seconds < 0) return [invalid(fld.child('sleep', 'seconds'), seconds, 'must be non-negative')];
      if (gracePeriod !== undefined && seconds > gracePeriod) {
        return [invalid(fld.child('sleep', 'seconds'), seconds, 'must be less than terminationGracePeriodSeconds')];
      }
      return [];
    });
  }
  if (handlers === 0) errs.push(required(fld, 'must specify a handler type'));
  return errs;
}

function validateProbe(probe: V1Probe | undefined, gracePeriod: number | undefined, fld: FieldPath, oneSuccess: boolean): FieldError[] {
  if (probe === undefined) return [];
  const errs = validateHandler(probe, gracePeriod, fld);
  for (const field of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold'] as const) {
    const v = probe[field];
    if (v !== undefined && v < 0) errs.push(invalid(fld.child(field), v, NEGATIVE_ERROR));
  }
  if (probe.terminationGracePeriodSeconds !== undefined && probe.terminationGracePeriodSeconds <= 0) {
    errs.push(invalid(fld.child('terminationGracePeriodSeconds'), probe.terminationGracePeriodSeconds, 'must be greater than 0'));
  }
  // Liveness and startup probes are pass/fail: one success is all there is.
  if (oneSuccess && probe.successThreshold !== undefined && probe.successThreshold !== 1) {
    errs.push(invalid(fld.child('successThreshold'), probe.successThreshold, 'must be 1'));
  }
  return errs;
}

function validateLifecycle(lifecycle: V1Lifecycle, gracePeriod: number | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (lifecycle.postStart !== undefined) errs.push(...validateHandler(lifecycle.postStart, gracePeriod, fld.child('postStart')));
  if (lifecycle.preStop !== undefined) errs.push(...validateHandler(lifecycle.preStop, gracePeriod, fld.child('preStop')));
  return errs;
}

// ------------------------------------------------------------------ volumes

function validateKeyToPaths(items: V1KeyToPath[] | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  (items ?? []).forEach((kp, i) => {
    const p = fld.index(i);
    if ((kp.key ?? '') === '') errs.push(required(p.child('key')));
    else errs.push(...each(p.child('key'), kp.key, isConfigMapKey(kp.key)));
    if ((kp.path ?? '') === '') errs.push(required(p.child('path')));
    errs.push(...validateLocalNonReservedPath(kp.path ?? '', p.child('path')));
    errs.push(...validateFileMode(kp.mode, p.child('mode')));
  });
  errs.push(...validateUniquePaths((items ?? []).map((kp, i) => ({ path: kp.path ?? '', fld: fld.index(i).child('path') }))));
  return errs;
}

function validateDownwardAPIItems(items: V1DownwardAPIVolumeFile[] | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  (items ?? []).forEach((item, i) => {
    const ip = fld.index(i);
    if ((item.path ?? '') === '') errs.push(required(ip.child('path')));
    errs.push(...validateLocalNonReservedPath(item.path ?? '', ip.child('path')));
    errs.push(...validateFileMode(item.mode, ip.child('mode')));
    if (item.fieldRef !== undefined && item.resourceFieldRef !== undefined) {
      errs.push(invalid(ip, '', 'fieldRef and resourceFieldRef can not be specified simultaneously'));
    } else if (item.fieldRef !== undefined) {
      errs.push(...validateFieldSelector(item.fieldRef, VOLUME_FIELD_PATHS, ip.child('fieldRef')));
    } else if (item.resourceFieldRef !== undefined) {
      errs.push(...validateResourceFieldSelector(item.resourceFieldRef, ip.child('resourceFieldRef'), true));
    } else {
      errs.push(required(ip, 'one of fieldRef and resourceFieldRef is required'));
    }
  });
  errs.push(...validateUniquePaths((items ?? []).map((it, i) => ({ path: it.path ?? '', fld: fld.index(i).child('path') }))));
  return errs;
}

function validateProjected(v: V1ProjectedVolumeSource, fld: FieldPath): FieldError[] {
  const errs = validateFileMode(v.defaultMode, fld.child('defaultMode'));
  const all: { path: string; fld: FieldPath }[] = [];
  (v.sources ?? []).forEach((src, i) => {
    const sp = fld.child('sources').index(i);
    const kinds = (['configMap', 'secret', 'downwardAPI', 'serviceAccountToken', 'clusterTrustBundle', 'podCertificate'] as const).filter(
      (k) => (src as Record<string, unknown>)[k] !== undefined,
    );
    if (kinds.length === 0) errs.push(required(sp, 'must specify exactly one projection source'));
    for (const extra of kinds.slice(1)) errs.push(forbidden(sp.child(extra), 'may not specify more than 1 volume type per source'));
    if (src.configMap !== undefined) {
      const p = sp.child('configMap');
      if ((src.configMap.name ?? '') === '') errs.push(required(p.child('name')));
      errs.push(...validateKeyToPaths(src.configMap.items, p.child('items')));
      (src.configMap.items ?? []).forEach((it, j) => all.push({ path: it.path ?? '', fld: p.child('items').index(j).child('path') }));
    }
    if (src.secret !== undefined) {
      const p = sp.child('secret');
      if ((src.secret.name ?? '') === '') errs.push(required(p.child('name')));
      errs.push(...validateKeyToPaths(src.secret.items, p.child('items')));
      (src.secret.items ?? []).forEach((it, j) => all.push({ path: it.path ?? '', fld: p.child('items').index(j).child('path') }));
    }
    if (src.downwardAPI !== undefined) {
      const p = sp.child('downwardAPI');
      errs.push(...validateDownwardAPIItems(src.downwardAPI.items, p.child('items')));
      (src.downwardAPI.items ?? []).forEach((it, j) => all.push({ path: it.path ?? '', fld: p.child('items').index(j).child('path') }));
    }
    if (src.serviceAccountToken !== undefined) {
      const p = sp.child('serviceAccountToken');
      if ((src.serviceAccountToken.path ?? '') === '') errs.push(required(p.child('path')));
      else errs.push(...validateLocalNonReservedPath(src.serviceAccountToken.path, p.child('path')));
      all.push({ path: src.serviceAccountToken.path ?? '', fld: p.child('path') });
    }
  });
  // Across sources (within one source the item checks above already report it).
  const perSource = new Set(errs.filter((e) => e.detail === 'conflicting duplicate paths').map((e) => e.field));
  for (const e of validateUniquePaths(all)) if (!perSource.has(e.field)) errs.push(e);
  return errs;
}

function validateVolumeSource(v: V1Volume, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const sources = volumeSources(v);
  if (sources.length === 0) return [required(fld, 'must specify a volume type')];
  for (const extra of sources.slice(1)) errs.push(forbidden(fld.child(extra), 'may not specify more than 1 volume type'));
  if (v.hostPath !== undefined) {
    const p = fld.child('hostPath');
    const hostPath = v.hostPath.path ?? '';
    if (hostPath === '') errs.push(required(p.child('path')));
    else errs.push(...validatePathNoBacksteps(hostPath, p.child('path')));
    const type = v.hostPath.type ?? '';
    if (!(HOST_PATH_TYPES as readonly string[]).includes(type)) errs.push(notSupported(p.child('type'), type, HOST_PATH_TYPES));
  }
  if (v.emptyDir?.sizeLimit !== undefined) {
    const q = parseQuantityAt(v.emptyDir.sizeLimit, fld.child('emptyDir', 'sizeLimit'), errs);
    if (q !== undefined && q.sign() < 0) {
      errs.push(forbidden(fld.child('emptyDir', 'sizeLimit'), 'SizeLimit field must be a valid resource quantity'));
    }
  }
  if (v.secret !== undefined) {
    const p = fld.child('secret');
    if ((v.secret.secretName ?? '') === '') errs.push(required(p.child('secretName')));
    errs.push(...validateFileMode(v.secret.defaultMode, p.child('defaultMode')));
    errs.push(...validateKeyToPaths(v.secret.items, p.child('items')));
  }
  if (v.configMap !== undefined) {
    const p = fld.child('configMap');
    const name = v.configMap.name ?? '';
    if (name === '') errs.push(required(p.child('name')));
    else errs.push(...each(p.child('name'), name, subdomainName(name, false)));
    errs.push(...validateFileMode(v.configMap.defaultMode, p.child('defaultMode')));
    errs.push(...validateKeyToPaths(v.configMap.items, p.child('items')));
  }
  if (v.downwardAPI !== undefined) {
    const p = fld.child('downwardAPI');
    errs.push(...validateFileMode(v.downwardAPI.defaultMode, p.child('defaultMode')));
    errs.push(...validateDownwardAPIItems(v.downwardAPI.items, p.child('items')));
  }
  if (v.projected !== undefined) errs.push(...validateProjected(v.projected, fld.child('projected')));
  if (v.persistentVolumeClaim !== undefined && (v.persistentVolumeClaim.claimName ?? '') === '') {
    errs.push(required(fld.child('persistentVolumeClaim', 'claimName')));
  }
  if (v.nfs !== undefined) {
    const p = fld.child('nfs');
    if ((v.nfs.server ?? '') === '') errs.push(required(p.child('server')));
    if ((v.nfs.path ?? '') === '') errs.push(required(p.child('path')));
    else if (!path.isAbsolute(v.nfs.path)) errs.push(invalid(p.child('path'), v.nfs.path, 'must be an absolute path'));
  }
  return errs;
}

/** Validates spec.volumes; returns the valid volumes by name for mount checks. */
function validateVolumes(volumes: V1Volume[] | undefined, fld: FieldPath, errs: FieldError[]): Map<string, V1Volume> {
  const byName = new Map<string, V1Volume>();
  (volumes ?? []).forEach((v, i) => {
    const p = fld.index(i);
    const name = v.name ?? '';
    const volErrs = validateVolumeSource(v, p);
    if (name === '') volErrs.push(required(p.child('name')));
    else volErrs.push(...each(p.child('name'), name, isDNS1123Label(name)));
    if (byName.has(name)) volErrs.push(duplicate(p.child('name'), name));
    if (volErrs.length === 0) byName.set(name, v);
    else errs.push(...volErrs);
  });
  return byName;
}

function validateVolumeMounts(
  mounts: V1VolumeMount[] | undefined,
  volumes: ReadonlyMap<string, V1Volume>,
  container: V1Container,
  fld: FieldPath,
): FieldError[] {
  const errs: FieldError[] = [];
  const mountPoints = new Set<string>();
  (mounts ?? []).forEach((m, i) => {
    const p = fld.index(i);
    const name = m.name ?? '';
    if (name === '') errs.push(required(p.child('name')));
    else if (!volumes.has(name)) errs.push(notFound(p.child('name'), name));
    const mountPath = m.mountPath ?? '';
    if (mountPath === '') {
      errs.push(required(p.child('mountPath')));
    } else {
      if (mountPoints.has(mountPath)) errs.push(invalid(p.child('mountPath'), mountPath, 'must be unique'));
      // klet: a relative mount path has no meaning on a Linux node.
      if (!path.isAbsolute(mountPath)) errs.push(invalid(p.child('mountPath'), mountPath, 'must be an absolute path'));
    }
    mountPoints.add(mountPath);
    if ((m.subPath ?? '') !== '') errs.push(...validateLocalDescendingPath(m.subPath ?? '', p.child('subPath')));
    if ((m.subPathExpr ?? '') !== '') {
      if ((m.subPath ?? '') !== '') {
        errs.push(invalid(p.child('subPathExpr'), m.subPathExpr, 'subPathExpr and subPath are mutually exclusive'));
      }
      errs.push(...validateLocalDescendingPath(m.subPathExpr ?? '', p.child('subPathExpr')));
    }
    if (m.mountPropagation !== undefined) {
      if (!MOUNT_PROPAGATIONS.includes(m.mountPropagation)) {
        errs.push(notSupported(p.child('mountPropagation'), m.mountPropagation, MOUNT_PROPAGATIONS));
      } else if (m.mountPropagation === 'Bidirectional' && container.securityContext?.privileged !== true) {
        errs.push(forbidden(p.child('mountPropagation'), 'Bidirectional mount propagation is available only to privileged containers'));
      }
    }
  });
  return errs;
}

// --------------------------------------------------------------- containers

function validateContainerPorts(c: V1Container, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  (c.ports ?? []).forEach((port, i) => {
    const p = fld.index(i);
    const name = port.name ?? '';
    if (name !== '') {
      const msgs = isValidPortName(name);
      if (msgs.length > 0) errs.push(...each(p.child('name'), name, msgs));
      else if (names.has(name)) errs.push(duplicate(p.child('name'), name));
      else names.add(name);
    }
    const containerPort = port.containerPort ?? 0;
    if (containerPort === 0) errs.push(required(p.child('containerPort')));
    else errs.push(...each(p.child('containerPort'), containerPort, isValidPortNum(containerPort)));
    if ((port.hostPort ?? 0) !== 0) errs.push(...each(p.child('hostPort'), port.hostPort, isValidPortNum(port.hostPort ?? 0)));
    const protocol = port.protocol ?? '';
    if (protocol === '') errs.push(required(p.child('protocol')));
    else if (!PORT_PROTOCOLS.includes(protocol)) errs.push(notSupported(p.child('protocol'), protocol, PORT_PROTOCOLS));
    if ((port.hostIP ?? '') !== '' && isIP(port.hostIP ?? '') === 0) {
      errs.push(invalid(p.child('hostIP'), port.hostIP, 'must be a valid IP address'));
    }
  });
  return errs;
}

/** Checks shared by init and regular containers (validateContainerCommon). */
function validateContainerCommon(c: V1Container, volumes: ReadonlyMap<string, V1Volume>, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const name = c.name ?? '';
  if (name === '') errs.push(required(fld.child('name')));
  else errs.push(...each(fld.child('name'), name, isDNS1123Label(name)));
  const image = c.image ?? '';
  if (image === '') errs.push(required(fld.child('image')));
  else if (image.trim() !== image) errs.push(invalid(fld.child('image'), image, 'must not have leading or trailing whitespace'));
  const pull = c.imagePullPolicy ?? '';
  if (pull === '') errs.push(required(fld.child('imagePullPolicy')));
  else if (!PULL_POLICIES.includes(pull)) errs.push(notSupported(fld.child('imagePullPolicy'), pull, PULL_POLICIES));
  const tmp = c.terminationMessagePolicy ?? '';
  if (tmp === '') errs.push(required(fld.child('terminationMessagePolicy')));
  else if (!TERMINATION_MESSAGE_POLICIES.includes(tmp)) {
    errs.push(notSupported(fld.child('terminationMessagePolicy'), tmp, TERMINATION_MESSAGE_POLICIES));
  }
  errs.push(...validateContainerPorts(c, fld.child('ports')));
  (c.env ?? []).forEach((ev, i) => errs.push(...validateEnvVar(ev, fld.child('env').index(i))));
  errs.push(...validateEnvFrom(c.envFrom ?? [], fld.child('envFrom')));
  errs.push(...validateVolumeMounts(c.volumeMounts, volumes, c, fld.child('volumeMounts')));
  errs.push(...validateResourceRequirements(c.resources, fld.child('resources')));
  return errs;
}

function validateContainers(spec: V1PodSpec, volumes: ReadonlyMap<string, V1Volume>, fld: FieldPath): FieldError[] {
  const containers = spec.containers ?? [];
  if (containers.length === 0) return [required(fld)];
  const errs: FieldError[] = [];
  const grace = spec.terminationGracePeriodSeconds;
  const names = new Set<string>();
  containers.forEach((c, i) => {
    const p = fld.index(i);
    errs.push(...validateContainerCommon(c, volumes, p));
    if (names.has(c.name ?? '')) errs.push(duplicate(p.child('name'), c.name));
    else names.add(c.name ?? '');
    if (c.restartPolicy !== undefined) errs.push(forbidden(p.child('restartPolicy'), 'may not be set for non-init containers'));
    if (c.lifecycle !== undefined) errs.push(...validateLifecycle(c.lifecycle, grace, p.child('lifecycle')));
    errs.push(...validateProbe(c.livenessProbe, grace, p.child('livenessProbe'), true));
    errs.push(...validateProbe(c.readinessProbe, grace, p.child('readinessProbe'), false));
    errs.push(...validateProbe(c.startupProbe, grace, p.child('startupProbe'), true));
  });
  return errs;
}

/**
 * Init containers run to completion before the app containers, unless
 * restartPolicy is Always: then they are sidecars, which may have probes
 * and lifecycle hooks like app containers.
 */
function validateInitContainers(spec: V1PodSpec, volumes: ReadonlyMap<string, V1Volume>, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const grace = spec.terminationGracePeriodSeconds;
  const names = new Set((spec.containers ?? []).map((c) => c.name ?? ''));
  (spec.initContainers ?? []).forEach((c, i) => {
    const p = fld.index(i);
    errs.push(...validateContainerCommon(c, volumes, p));
    let sidecar = false;
    if (c.restartPolicy !== undefined) {
      if (c.restartPolicy === 'Always') sidecar = true;
      else errs.push(notSupported(p.child('restartPolicy'), c.restartPolicy, ['Always']));
    }
    const name = c.name ?? '';
    if (names.has(name)) errs.push(duplicate(p.child('name'), name));
    else if (name !== '') names.add(name);
    if (sidecar) {
      if (c.lifecycle !== undefined) errs.push(...validateLifecycle(c.lifecycle, grace, p.child('lifecycle')));
      errs.push(...validateProbe(c.livenessProbe, grace, p.child('livenessProbe'), true));
      errs.push(...validateProbe(c.readinessProbe, grace, p.child('readinessProbe'), false));
      errs.push(...validateProbe(c.startupProbe, grace, p.child('startupProbe'), true));
    } else {
      for (const field of ['lifecycle', 'livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
        if (c[field] !== undefined) errs.push(forbidden(p.child(field), INIT_FORBIDDEN));
      }
    }
  });
  return errs;
}

function validateHostNetworkPorts(containers: V1Container[] | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  (containers ?? []).forEach((c, i) => {
    (c.ports ?? []).forEach((port, j) => {
      if ((port.hostPort ?? 0) !== (port.containerPort ?? 0)) {
        errs.push(
          invalid(fld.index(i).child('ports').index(j).child('containerPort'), port.containerPort, 'must match `hostPort` when `hostNetwork` is true'),
        );
      }
    });
  });
  return errs;
}

function validateUniqueHostPorts(containers: V1Container[] | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  (containers ?? []).forEach((c, i) => {
    (c.ports ?? []).forEach((port, j) => {
      if ((port.hostPort ?? 0) === 0) return;
      const key = `${port.protocol ?? ''}/${port.hostIP ?? ''}/${port.hostPort}`;
      if (seen.has(key)) errs.push(duplicate(fld.index(i).child('ports').index(j).child('hostPort'), key));
      else seen.add(key);
    });
  });
  return errs;
}

function validateTolerations(tolerations: V1Toleration[] | undefined, fld: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  (tolerations ?? []).forEach((t, i) => {
    const p = fld.index(i);
    const key = t.key ?? '';
    const operator = t.operator ?? '';
    if (key !== '') errs.push(...each(p.child('key'), key, isQualifiedName(key)));
    if (key === '' && operator !== 'Exists') {
      errs.push(
        invalid(p.child('operator'), operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'),
      );
    }
    if (t.tolerationSeconds !== undefined && t.effect !== 'NoExecute') {
      errs.push(invalid(p.child('effect'), t.effect ?? '', "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (operator === '' || operator === 'Equal') {
      errs.push(...each(p.child('value'), t.value ?? '', isValidLabelValue(t.value ?? '')));
    } else if (operator === 'Exists') {
      if ((t.value ?? '') !== '') errs.push(invalid(p.child('operator'), t.value, "value must be empty when `operator` is 'Exists'"));
    } else {
      errs.push(notSupported(p.child('operator'), operator, TOLERATION_OPERATORS));
    }
    if ((t.effect ?? '') !== '' && !TAINT_EFFECTS.includes(t.effect ?? '')) {
      errs.push(notSupported(p.child('effect'), t.effect, TAINT_EFFECTS));
    }
  });
  return errs;
}

/** IsValidIPForLegacyField's message. */
const IP_ERROR = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';

/**
 * validatePodDNSConfig: dnsPolicy None needs a dnsConfig with a nameserver;
 * at most 3 nameservers (IPs), 32 search domains of 2048 characters in all
 * (each a subdomain, '_' allowed, a trailing dot ignored, "." alone allowed:
 * RelaxedDNSSearchValidation, GA in 1.34), options with names.
 */
function validatePodDNSConfig(cfg: V1PodSpec['dnsConfig'], dnsPolicy: string, fld: FieldPath): FieldError[] {
  if (dnsPolicy === 'None') {
    if (cfg === undefined) return [required(fld, 'must provide `dnsConfig` when `dnsPolicy` is None')];
    if ((cfg.nameservers ?? []).length === 0) return [required(fld.child('nameservers'), 'must provide at least one DNS nameserver when `dnsPolicy` is None')];
  }
  if (cfg === undefined) return [];
  const errs: FieldError[] = [];
  const nameservers = cfg.nameservers ?? [];
  if (nameservers.length > MAX_DNS_NAMESERVERS) errs.push(invalid(fld.child('nameservers'), nameservers, `must not have more than ${MAX_DNS_NAMESERVERS} nameservers`));
  nameservers.forEach((ns, i) => {
    if (isIP(ns) === 0) errs.push(invalid(fld.child('nameservers').index(i), ns, IP_ERROR));
  });
  const searches = cfg.searches ?? [];
  if (searches.length > MAX_DNS_SEARCH_PATHS) errs.push(invalid(fld.child('searches'), searches, `must not have more than ${MAX_DNS_SEARCH_PATHS} search paths`));
  if (byteLength(searches.join(' ')) > MAX_DNS_SEARCH_LIST_CHARS) {
    errs.push(invalid(fld.child('searches'), searches, `must not have more than ${MAX_DNS_SEARCH_LIST_CHARS} characters (including spaces) in the search list`));
  }
  searches.forEach((search, i) => {
    if (search === '.') return;
    const s = search.endsWith('.') ? search.slice(0, -1) : search;
    errs.push(...each(fld.child('searches').index(i), s, isDNS1123SubdomainWithUnderscore(s)));
  });
  (cfg.options ?? []).forEach((o, i) => {
    if ((o.name ?? '') === '') errs.push(required(fld.child('options').index(i), 'must not be empty'));
  });
  return errs;
}

/** ValidatePodSpec: the spec of a pod being created. */
export function validatePodSpec(spec: V1PodSpec | undefined, fld: FieldPath = FieldPath.of('spec')): FieldError[] {
  if (spec === undefined) return [required(fld.child('containers'))];
  const errs: FieldError[] = [];
  const volumes = validateVolumes(spec.volumes, fld.child('volumes'), errs);
  errs.push(...validateContainers(spec, volumes, fld.child('containers')));
  errs.push(...validateInitContainers(spec, volumes, fld.child('initContainers')));
  if ((spec.ephemeralContainers ?? []).length > 0) errs.push(forbidden(fld.child('ephemeralContainers'), 'cannot be set on create'));

  const restartPolicy = spec.restartPolicy ?? '';
  if (restartPolicy === '') errs.push(required(fld.child('restartPolicy')));
  else if (!RESTART_POLICIES.includes(restartPolicy)) errs.push(notSupported(fld.child('restartPolicy'), restartPolicy, RESTART_POLICIES));

  const dnsPolicy = spec.dnsPolicy ?? '';
  if (dnsPolicy === '') errs.push(required(fld.child('dnsPolicy')));
  else if (!DNS_POLICIES.includes(dnsPolicy)) errs.push(notSupported(fld.child('dnsPolicy'), dnsPolicy, DNS_POLICIES));
  errs.push(...validatePodDNSConfig(spec.dnsConfig, dnsPolicy, fld.child('dnsConfig')));

  if (spec.hostNetwork === true) {
    errs.push(...validateHostNetworkPorts(spec.containers, fld.child('containers')));
    errs.push(...validateHostNetworkPorts(spec.initContainers, fld.child('initContainers')));
  }
  errs.push(...validateUniqueHostPorts(spec.containers, fld.child('containers')));
  errs.push(...validateLabels(spec.nodeSelector, fld.child('nodeSelector')));
  errs.push(...validateTolerations(spec.tolerations, fld.child('tolerations')));

  const sa = spec.serviceAccountName ?? '';
  if (sa !== '') errs.push(...each(fld.child('serviceAccountName'), sa, isDNS1123Subdomain(sa)));
  if ((spec.hostname ?? '') !== '') errs.push(...each(fld.child('hostname'), spec.hostname, isDNS1123Label(spec.hostname ?? '')));
  if ((spec.subdomain ?? '') !== '') errs.push(...each(fld.child('subdomain'), spec.subdomain, isDNS1123Label(spec.subdomain ?? '')));
  (spec.hostAliases ?? []).forEach((alias, i) => {
    const at = fld.child('hostAliases').index(i);
    if (isIP(alias.ip ?? '') === 0) errs.push(invalid(at.child('ip'), alias.ip ?? '', IP_ERROR));
    (alias.hostnames ?? []).forEach((h, j) => errs.push(...each(at.child('hostnames').index(j), h, isDNS1123Subdomain(h))));
  });

  if (spec.activeDeadlineSeconds !== undefined) {
    const v = spec.activeDeadlineSeconds;
    if (v < 1 || v > MAX_INT32) errs.push(invalid(fld.child('activeDeadlineSeconds'), v, inclusiveRangeError(1, MAX_INT32)));
  }
  if (spec.terminationGracePeriodSeconds !== undefined && spec.terminationGracePeriodSeconds < 0) {
    errs.push(invalid(fld.child('terminationGracePeriodSeconds'), spec.terminationGracePeriodSeconds, NEGATIVE_ERROR));
  }
  return errs;
}

/** ValidatePodCreate: metadata and spec of a (defaulted) pod. Empty when valid. */
export function validatePod(pod: V1Pod): FieldError[] {
  return [...validateObjectMeta(pod.metadata), ...validatePodSpec(pod.spec)];
}

// ------------------------------------------------- config maps and secrets

export function validateConfigMap(cm: V1ConfigMap): FieldError[] {
  const errs = validateObjectMeta(cm.metadata);
  let total = 0;
  for (const [k, v] of Object.entries(cm.data ?? {})) {
    const p = FieldPath.of('data').key(k);
    errs.push(...each(p, k, isConfigMapKey(k)));
    if (Object.hasOwn(cm.binaryData ?? {}, k)) errs.push(invalid(p, k, 'duplicate of key present in binaryData'));
    total += byteLength(v);
  }
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) {
    errs.push(...each(FieldPath.of('binaryData').key(k), k, isConfigMapKey(k)));
    total += Buffer.from(v, 'base64').length;
  }
  if (total > MAX_SECRET_SIZE) errs.push(tooLong(FieldPath.root(), MAX_SECRET_SIZE));
  return errs;
}

/** The bytes of a secret key, from data (base64) or stringData (text). */
function secretValue(secret: V1Secret, key: string): Buffer | undefined {
  const text = secret.stringData?.[key];
  if (text !== undefined) return Buffer.from(text, 'utf8');
  const b64 = secret.data?.[key];
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64');
}

function validateDockerConfig(secret: V1Secret, key: string): FieldError[] {
  const p = FieldPath.of('data').key(key);
  const value = secretValue(secret, key);
  if (value === undefined) return [required(p)];
  try {
    JSON.parse(value.toString('utf8'));
    return [];
  } catch (err) {
    return [invalid(p, '<secret contents redacted>', err instanceof Error ? err.message : String(err))];
  }
}

/**
 * ValidateSecret. Works before or after applySecretDefaults: keys of
 * stringData count as keys of data, as they will be once merged.
 */
export function validateSecret(secret: V1Secret): FieldError[] {
  const errs = validateObjectMeta(secret.metadata);
  const keys = new Set<string>();
  let total = 0;
  for (const [field, bag] of [
    ['data', secret.data],
    ['stringData', secret.stringData],
  ] as const) {
    for (const k of Object.keys(bag ?? {})) {
      errs.push(...each(FieldPath.of(field).key(k), k, isConfigMapKey(k)));
      keys.add(k);
    }
  }
  for (const k of keys) total += secretValue(secret, k)?.length ?? 0;
  if (total > MAX_SECRET_SIZE) errs.push(tooLong(FieldPath.of('data'), MAX_SECRET_SIZE));
  const has = (k: string): boolean => keys.has(k);
  const dataKey = (k: string): FieldPath => FieldPath.of('data').key(k);
  switch (secret.type) {
    case 'kubernetes.io/service-account-token':
      if ((secret.metadata?.annotations?.['kubernetes.io/service-account.name'] ?? '') === '') {
        errs.push(required(FieldPath.of('metadata', 'annotations').key('kubernetes.io/service-account.name')));
      }
      break;
    case 'kubernetes.io/dockercfg':
      errs.push(...validateDockerConfig(secret, '.dockercfg'));
      break;
    case 'kubernetes.io/dockerconfigjson':
      errs.push(...validateDockerConfig(secret, '.dockerconfigjson'));
      break;
    case 'kubernetes.io/basic-auth':
      if (!has('username') && !has('password')) errs.push(required(dataKey('username')), required(dataKey('password')));
      break;
    case 'kubernetes.io/ssh-auth':
      if (!has('ssh-privatekey')) errs.push(required(dataKey('ssh-privatekey')));
      break;
    case 'kubernetes.io/tls':
      if (!has('tls.key')) errs.push(required(dataKey('tls.key')));
      if (!has('tls.crt')) errs.push(required(dataKey('tls.crt')));
      break;
    default:
      break;
  }
  return errs;
}
