/**
 * Container environment, as the kubelet builds it (kubelet_pods.go
 * makeEnvironmentVariables): envFrom first, then env in order, each value
 * able to refer to the ones before it with $(VAR); then $(VAR) expansion of
 * command and args (third_party/forked/golang/expansion); last, the service
 * variables the container does not set itself (service-env.ts).
 */
import type { V1ConfigMap, V1Container, V1EnvVar, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import { KletError } from '../errors.js';
import { isStaticPod } from '../pod/static-pod.js';
import { parseQuantity } from '../pod/quantity.js';
import { serviceEnvVars } from './service-env.js';

/** Local ConfigMaps and Secrets a pod's source provides (klet's standalone extension). */
export interface LocalObjects {
  configMaps: V1ConfigMap[];
  secrets: V1Secret[];
}

/** A pod's env could not be built: the container gets CreateContainerConfigError. */
export class ContainerConfigError extends KletError {
  override readonly code: string = 'CREATE_CONTAINER_CONFIG_ERROR';
  /** The container's field the error is about (`envFrom[0].configMapRef`, `env[2]`), when known. */
  field?: string;

  /** This error, naming the container's field it is about (the first field named stands). */
  at(field: string): this {
    this.field ??= field;
    return this;
  }
}

export interface EnvContext {
  pod: V1Pod;
  podIPs: string[];
  hostIPs: string[];
  nodeName: string;
  objects: LocalObjects;
  /** Node allocatable, for resourceFieldRef of unset limits. */
  nodeAllocatable: { cpuMillis: number; memoryBytes: number; ephemeralStorageBytes: number };
  /**
   * The cluster's Services (cluster mode: the kubelet's service informer),
   * for the service environment variables; none without an API server.
   */
  services?: ServiceSource;
}

/** The Services known now, and whether they have been listed once (the informer's HasSynced). */
export interface ServiceSource {
  readonly synced: boolean;
  list(): readonly V1Service[];
}

/**
 * Expand $(VAR) references the way Kubernetes does: `$(NAME)` is replaced
 * when NAME is defined, kept verbatim otherwise; `$$` is an escaped `$`.
 */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  // Values are copied in runs, never a character at a time: a per-character
  // `+=` builds a rope node per byte, about 30 bytes of heap for each byte of
  // a large env value (a 2 MB pod's env alone cost over 100 MB).
  let i = input.indexOf('$');
  if (i === -1) return input;
  let out = '';
  let from = 0;
  while (i !== -1 && i + 1 < input.length) {
    const next = input[i + 1];
    if (next === '$') {
      out += input.slice(from, i + 1);
      from = i + 2;
      i = input.indexOf('$', from);
      continue;
    }
    if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        // An incomplete reference: "$(" is kept and scanning goes on after it.
        out += input.slice(from, i + 2);
        from = i + 2;
        i = input.indexOf('$', from);
        continue;
      }
      const name = input.slice(i + 2, close);
      const value = name === '' ? undefined : lookup(name);
      out += input.slice(from, i) + (value ?? `$(${name})`);
      from = close + 1;
      i = input.indexOf('$', from);
      continue;
    }
    i = input.indexOf('$', i + 1);
  }
  return out + input.slice(from);
}

function labelOrAnnotation(map: Record<string, string> | undefined, key: string): string {
  return map?.[key] ?? '';
}

/** Resolve a downward-API fieldRef path. */
export function fieldRefValue(path: string, ctx: EnvContext): string {
  const md = ctx.pod.metadata ?? {};
  const sub = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(path);
  if (sub) return labelOrAnnotation(sub[1] === 'labels' ? md.labels : md.annotations, sub[2] as string);
  switch (path) {
    case 'metadata.name':
      return md.name ?? '';
    case 'metadata.namespace':
      return md.namespace ?? 'default';
    case 'metadata.uid':
      return md.uid ?? '';
    case 'metadata.labels':
      return formatMap(md.labels);
    case 'metadata.annotations':
      return formatMap(md.annotations);
    case 'spec.nodeName':
      return ctx.nodeName;
    case 'spec.serviceAccountName':
      return ctx.pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
      return ctx.hostIPs[0] ?? '';
    case 'status.hostIPs':
      return ctx.hostIPs.join(',');
    case 'status.podIP':
      return ctx.podIPs[0] ?? '';
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    default:
      throw new ContainerConfigError(`unsupported fieldRef path "${path}"`);
  }
}

/** The downward API's map format: key="value" lines, sorted. */
function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify((m ?? {})[k])}`)
    .join('\n');
}

/** Resolve a resourceFieldRef (limits.cpu, requests.memory, ...), divided by its divisor, rounded up. */
export function resourceFieldRefValue(
  container: V1Container,
  ref: { resource: string; divisor?: string | number },
  ctx: EnvContext,
): string {
  const [kind, name] = ref.resource.split('.') as [string, string];
  const res = kind === 'limits' ? container.resources?.limits : container.resources?.requests;
  const raw = res?.[name];
  let value: number;
  if (raw !== undefined) {
    value = parseQuantity(String(raw)).toNumber();
  } else if (kind === 'limits' || name === 'cpu' || name === 'memory') {
    // Unset limits report node allocatable; unset requests report 0 (cpu/memory requests default to limits).
    const lim = container.resources?.limits?.[name];
    if (kind === 'requests' && lim !== undefined) value = parseQuantity(String(lim)).toNumber();
    else if (kind === 'requests') value = 0;
    else if (name === 'cpu') value = ctx.nodeAllocatable.cpuMillis / 1000;
    else if (name === 'memory') value = ctx.nodeAllocatable.memoryBytes;
    else value = ctx.nodeAllocatable.ephemeralStorageBytes;
  } else {
    value = 0;
  }
  // An unset divisor reaches the kubelet as the zero quantity (the API server serialises it "0"): it means 1,
  // as the kubelet's ExtractContainerResourceValue takes it.
  const given = ref.divisor === undefined || ref.divisor === '' ? 0 : parseQuantity(String(ref.divisor)).toNumber();
  const divisor = given === 0 ? 1 : given;
  return String(Math.ceil(value / divisor - 1e-9));
}

function findConfigMap(ctx: EnvContext, name: string): V1ConfigMap | undefined {
  const ns = ctx.pod.metadata?.namespace ?? 'default';
  return ctx.objects.configMaps.find((c) => c.metadata?.name === name && (c.metadata?.namespace ?? 'default') === ns);
}

function findSecret(ctx: EnvContext, name: string): V1Secret | undefined {
  const ns = ctx.pod.metadata?.namespace ?? 'default';
  return ctx.objects.secrets.find((s) => s.metadata?.name === name && (s.metadata?.namespace ?? 'default') === ns);
}

/** All data of a ConfigMap (data + binaryData decoded as UTF-8) or Secret (base64 data decoded). */
export function configMapData(cm: V1ConfigMap): Record<string, string> {
  const out: Record<string, string> = { ...(cm.data ?? {}) };
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}
export function secretData(s: V1Secret): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  for (const [k, v] of Object.entries(s.stringData ?? {})) out[k] = v;
  return out;
}

function envVarValue(container: V1Container, v: V1EnvVar, ctx: EnvContext, lookup: (n: string) => string | undefined): string | undefined {
  if (v.valueFrom === undefined) return expand(v.value ?? '', lookup);
  const from = v.valueFrom;
  if (from.fieldRef) return fieldRefValue(from.fieldRef.fieldPath, ctx);
  if (from.resourceFieldRef) {
    const target = from.resourceFieldRef.containerName
      ? [...(ctx.pod.spec?.containers ?? []), ...(ctx.pod.spec?.initContainers ?? [])].find(
          (c) => c.name === from.resourceFieldRef?.containerName,
        )
      : container;
    if (!target) throw new ContainerConfigError(`resourceFieldRef: no container "${from.resourceFieldRef.containerName}"`);
    return resourceFieldRefValue(target, from.resourceFieldRef as { resource: string; divisor?: string }, ctx);
  }
  if (from.configMapKeyRef) {
    const ref = from.configMapKeyRef;
    const cm = findConfigMap(ctx, ref.name ?? '');
    if (!cm) {
      if (ref.optional) return undefined;
      throw new ContainerConfigError(`configmap "${ref.name}" not found`);
    }
    // Env reads a ConfigMap's data only (binaryData is for volumes).
    const data = cm.data ?? {};
    if (!Object.hasOwn(data, ref.key)) {
      if (ref.optional) return undefined;
      throw new ContainerConfigError(`couldn't find key ${ref.key} in ConfigMap ${ctx.pod.metadata?.namespace ?? 'default'}/${ref.name}`);
    }
    return data[ref.key];
  }
  if (from.secretKeyRef) {
    const ref = from.secretKeyRef;
    const s = findSecret(ctx, ref.name ?? '');
    if (!s) {
      if (ref.optional) return undefined;
      throw new ContainerConfigError(`secret "${ref.name}" not found`);
    }
    const data = secretData(s);
    if (!Object.hasOwn(data, ref.key)) {
      if (ref.optional) return undefined;
      throw new ContainerConfigError(`couldn't find key ${ref.key} in Secret ${ctx.pod.metadata?.namespace ?? 'default'}/${ref.name}`);
    }
    return data[ref.key];
  }
  return '';
}

/** The container's environment, in the kubelet's order, as name/value pairs. */
export function makeEnvironment(container: V1Container, ctx: EnvContext): { key: string; value: string }[] {
  const serviceEnv = podServiceEnv(ctx);
  const env = new Map<string, string>();
  for (const [i, from] of (container.envFrom ?? []).entries()) {
    const prefix = from.prefix ?? '';
    let data: Record<string, string> | undefined;
    if (from.configMapRef) {
      const cm = findConfigMap(ctx, from.configMapRef.name ?? '');
      if (!cm && !from.configMapRef.optional) throw new ContainerConfigError(`configmap "${from.configMapRef.name}" not found`).at(`envFrom[${i}].configMapRef`);
      data = cm?.data;
    } else if (from.secretRef) {
      const s = findSecret(ctx, from.secretRef.name ?? '');
      if (!s && !from.secretRef.optional) throw new ContainerConfigError(`secret "${from.secretRef.name}" not found`).at(`envFrom[${i}].secretRef`);
      data = s ? secretData(s) : undefined;
    }
    for (const [k, v] of Object.entries(data ?? {})) env.set(prefix + k, v);
  }
  const lookup = (n: string) => env.get(n) ?? serviceEnv.get(n);
  for (const [i, v] of (container.env ?? []).entries()) {
    let value: string | undefined;
    try {
      value = envVarValue(container, v, ctx, lookup);
    } catch (err) {
      if (err instanceof ContainerConfigError) err.at(`env[${i}]`);
      throw err;
    }
    if (value !== undefined) env.set(v.name, value);
  }
  // The service variables the container does not set itself come last.
  for (const [k, v] of serviceEnv) if (!env.has(k)) env.set(k, v);
  return [...env.entries()].map(([key, value]) => ({ key, value }));
}

/**
 * The pod's service variables. An API pod's wait for the Services to have
 * been listed once (a static pod's do not), so a container never starts
 * without KUBERNETES_SERVICE_HOST because klet read its pod first.
 */
function podServiceEnv(ctx: EnvContext): Map<string, string> {
  const services = ctx.services;
  if (services === undefined) return new Map();
  if (!services.synced && !isStaticPod(ctx.pod)) throw new ContainerConfigError('services have not yet been read at least once, cannot construct envvars');
  return serviceEnvVars(services.list(), ctx.pod.metadata?.namespace ?? 'default', ctx.pod.spec?.enableServiceLinks ?? true);
}

/** Expand $(VAR) in command and args with the container's environment. */
export function expandCommand(
  container: V1Container,
  env: { key: string; value: string }[],
): { command: string[]; args: string[] } {
  const map = new Map(env.map((e) => [e.key, e.value]));
  const lookup = (n: string) => map.get(n);
  return {
    command: (container.command ?? []).map((s) => expand(s, lookup)),
    args: (container.args ?? []).map((s) => expand(s, lookup)),
  };
}
