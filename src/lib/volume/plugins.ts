/**
 * Volume plugins: where each kind of volume lives under the pod dir, what
 * backs it, and (for the API-data volumes) the payload the atomic writer
 * publishes. Payload builders are pure given the objects they read; the
 * messages are the kubelet's.
 */
import os from 'node:os';
import path from 'node:path';
import type {
  V1ConfigMap,
  V1ConfigMapProjection,
  V1ConfigMapVolumeSource,
  V1DownwardAPIVolumeFile,
  V1KeyToPath,
  V1Pod,
  V1Secret,
  V1SecretProjection,
  V1SecretVolumeSource,
  V1ServiceAccountTokenProjection,
  V1Volume,
} from '@kubernetes/client-node';
import { type EnvContext, fieldRefValue, resourceFieldRefValue } from '../kuberuntime/env.js';
import { parseQuantity } from '../pod/quantity.js';
import type { FileProjection, Payload } from './atomic-writer.js';

/** Plugin directory names under `<pod dir>/volumes/`, the kubelet's escaped plugin names. */
export const PLUGIN_DIRS = {
  emptyDir: 'kubernetes.io~empty-dir',
  hostPath: 'kubernetes.io~host-path',
  configMap: 'kubernetes.io~configmap',
  secret: 'kubernetes.io~secret',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
} as const;

export type PluginKind = keyof typeof PLUGIN_DIRS;

export const DEFAULT_FILE_MODE = 0o644;

/**
 * Where ConfigMaps and Secrets come from: the source's local objects in
 * standalone mode, the API server's in cluster mode. Async so a remote
 * implementation fits.
 */
export interface ObjectSource {
  configMap(namespace: string, name: string): Promise<V1ConfigMap | undefined>;
  secret(namespace: string, name: string): Promise<V1Secret | undefined>;
  /** A token for the pod's service account (TokenRequest); only in cluster mode. */
  serviceAccountToken?(pod: V1Pod, src: V1ServiceAccountTokenProjection): Promise<string>;
}

/** An ObjectSource over in-memory ConfigMaps and Secrets (a manifest dir's, an --objects dir's). */
export function localObjectSource(objects: { configMaps: readonly V1ConfigMap[]; secrets: readonly V1Secret[] }): ObjectSource {
  const match = (ns: string, name: string) => (o: V1ConfigMap | V1Secret) => o.metadata?.name === name && (o.metadata?.namespace ?? 'default') === ns;
  return {
    configMap: async (ns, name) => objects.configMaps.find(match(ns, name)),
    secret: async (ns, name) => objects.secrets.find(match(ns, name)),
  };
}

/**
 * Why a volume's set-up failed, as far as trying again goes: `node`, the
 * node's state (a path not there yet, a full disk), which may change any
 * moment; `objects`, a ConfigMap, Secret or key its source does not have
 * (yet); `spec`, what no retry changes (a volume type klet cannot set up,
 * an invalid one, a reference to no container).
 */
export type VolumeFailureKind = 'node' | 'objects' | 'spec';

/** A volume could not be set up: the message is the cause, without the "MountVolume.SetUp failed" prefix. */
export class VolumeSetupError extends Error {
  constructor(
    message: string,
    readonly kind: VolumeFailureKind = 'node',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export interface PluginInfo {
  kind: PluginKind;
  /** Backed by a tmpfs. */
  memory: boolean;
  /** Mounted read-only into containers whatever the volumeMount says (the kubelet's API-data volumes). */
  readOnly: boolean;
  /** Re-projected while the pod runs. */
  updatable: boolean;
}

export function pluginOf(v: V1Volume): PluginInfo | null {
  if (v.emptyDir) return { kind: 'emptyDir', memory: v.emptyDir.medium === 'Memory', readOnly: false, updatable: false };
  if (v.hostPath) return { kind: 'hostPath', memory: false, readOnly: false, updatable: false };
  if (v.configMap) return { kind: 'configMap', memory: false, readOnly: true, updatable: true };
  if (v.secret) return { kind: 'secret', memory: true, readOnly: true, updatable: true };
  if (v.downwardAPI) return { kind: 'downwardAPI', memory: false, readOnly: true, updatable: true };
  if (v.projected) return { kind: 'projected', memory: true, readOnly: true, updatable: true };
  return null;
}

/**
 * Why a volume pluginOf() does not know cannot be set up. An image volume
 * (KEP-4639) is mounted by the container runtime itself from an OCI image,
 * not by a storage driver: klet does not ask the runtime for it (containerd
 * supports it from 2.1). Every other type needs an API server, a cloud or a
 * storage (CSI) driver.
 */
export function unsupportedVolumeMessage(v: V1Volume): string {
  if (v.image) {
    return `volume "${v.name}": an image volume needs a container runtime that mounts images as volumes (containerd 2.1 or later), which klet does not support yet`;
  }
  return `volume "${v.name}": this volume type needs a cluster or a storage driver and is not supported by klet`;
}

export function volumeDir(podDir: string, kind: PluginKind, name: string): string {
  return path.join(podDir, 'volumes', PLUGIN_DIRS[kind], name);
}

function bytesOf(q: string | number | undefined): number | undefined {
  if (q === undefined || q === '') return undefined;
  return parseQuantity(String(q)).toNumber();
}

/**
 * The pod's memory limit as the pod cgroup gets it (ResourceConfigForPod):
 * the sum of the regular containers' limits, at least the largest init
 * container's; undefined when any container has no memory limit.
 */
export function podMemoryLimit(pod: V1Pod): number | undefined {
  let sum = 0;
  for (const c of pod.spec?.containers ?? []) {
    const l = bytesOf(c.resources?.limits?.memory);
    if (l === undefined) return undefined;
    sum += l;
  }
  let initMax = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    const l = bytesOf(c.resources?.limits?.memory);
    if (l === undefined) return undefined;
    if (c.restartPolicy === 'Always') sum += l;
    else initMax = Math.max(initMax, l);
  }
  return Math.max(sum, initMax);
}

/**
 * A memory-backed emptyDir's size (the kubelet's calculateEmptyDirMemorySize):
 * node allocatable memory, lowered to the pod's memory limit, lowered to the
 * volume's sizeLimit — each only when positive and smaller.
 */
export function memoryVolumeSize(pod: V1Pod, v: V1Volume | undefined, nodeMemory = os.totalmem()): number {
  let size = nodeMemory;
  const podLimit = podMemoryLimit(pod);
  if (podLimit !== undefined && podLimit > 0 && podLimit <= size) size = podLimit;
  const limit = bytesOf(v?.emptyDir?.sizeLimit);
  if (limit !== undefined && limit > 0 && limit <= size) size = limit;
  return size;
}

function file(data: Buffer | string, mode: number): FileProjection {
  return { data: typeof data === 'string' ? Buffer.from(data, 'utf8') : data, mode };
}

/** ConfigMap data and binaryData as bytes. */
function configMapBytes(cm: V1ConfigMap): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) out.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) out.set(k, Buffer.from(v, 'base64'));
  return out;
}

/** Secret data (base64) and stringData as bytes. */
function secretBytes(s: V1Secret): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(s.data ?? {})) out.set(k, Buffer.from(v, 'base64'));
  for (const [k, v] of Object.entries(s.stringData ?? {})) out.set(k, Buffer.from(v, 'utf8'));
  return out;
}

/** The kubelet's configmap/secret MakePayload: all keys, or the listed items. */
function keyedPayload(
  data: Map<string, Buffer>,
  items: V1KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
  missingKey: (key: string) => string,
  into: Payload,
): void {
  if (items === undefined || items.length === 0) {
    for (const [k, v] of data) into.set(k, file(v, defaultMode));
    return;
  }
  for (const it of items) {
    const v = data.get(it.key);
    if (v === undefined) {
      if (optional) continue;
      throw new VolumeSetupError(missingKey(it.key), 'objects');
    }
    into.set(it.path, file(v, it.mode ?? defaultMode));
  }
}

async function configMapPayload(
  objects: ObjectSource,
  ns: string,
  src: V1ConfigMapVolumeSource | V1ConfigMapProjection,
  defaultMode: number,
  into: Payload,
): Promise<void> {
  const name = src.name ?? '';
  const cm = await objects.configMap(ns, name);
  if (cm === undefined) {
    if (src.optional) return;
    throw new VolumeSetupError(`configmap "${name}" not found`, 'objects');
  }
  keyedPayload(configMapBytes(cm), src.items, defaultMode, src.optional === true, (k) => `configmap references non-existent config key: ${k}`, into);
}

async function secretPayload(
  objects: ObjectSource,
  ns: string,
  name: string,
  src: V1SecretVolumeSource | V1SecretProjection,
  defaultMode: number,
  into: Payload,
): Promise<void> {
  const s = await objects.secret(ns, name);
  if (s === undefined) {
    if (src.optional) return;
    throw new VolumeSetupError(`secret "${name}" not found`, 'objects');
  }
  keyedPayload(secretBytes(s), src.items, defaultMode, src.optional === true, (k) => `references non-existent secret key: ${k}`, into);
}

function downwardPayload(items: V1DownwardAPIVolumeFile[] | undefined, defaultMode: number, env: EnvContext, into: Payload): void {
  const all = [...(env.pod.spec?.containers ?? []), ...(env.pod.spec?.initContainers ?? [])];
  for (const it of items ?? []) {
    let value: string;
    if (it.fieldRef) {
      value = fieldRefValue(it.fieldRef.fieldPath, env);
    } else if (it.resourceFieldRef) {
      const ref = it.resourceFieldRef;
      const c = all.find((x) => x.name === ref.containerName);
      if (c === undefined) throw new VolumeSetupError(`downwardAPI item "${it.path}": no container "${ref.containerName ?? ''}"`, 'spec');
      value = resourceFieldRefValue(c, { resource: ref.resource, divisor: ref.divisor as string | undefined }, env);
    } else {
      continue;
    }
    into.set(it.path, file(value, it.mode ?? defaultMode));
  }
}

/** The payload of an API-data volume (configMap, secret, downwardAPI, projected). */
export async function volumePayload(v: V1Volume, env: EnvContext, objects: ObjectSource): Promise<Payload> {
  const ns = env.pod.metadata?.namespace ?? 'default';
  const out: Payload = new Map();
  if (v.configMap) {
    await configMapPayload(objects, ns, v.configMap, v.configMap.defaultMode ?? DEFAULT_FILE_MODE, out);
  } else if (v.secret) {
    await secretPayload(objects, ns, v.secret.secretName ?? '', v.secret, v.secret.defaultMode ?? DEFAULT_FILE_MODE, out);
  } else if (v.downwardAPI) {
    downwardPayload(v.downwardAPI.items, v.downwardAPI.defaultMode ?? DEFAULT_FILE_MODE, env, out);
  } else if (v.projected) {
    const mode = v.projected.defaultMode ?? DEFAULT_FILE_MODE;
    for (const s of v.projected.sources ?? []) {
      if (s.configMap) await configMapPayload(objects, ns, s.configMap, mode, out);
      else if (s.secret) await secretPayload(objects, ns, s.secret.name ?? '', s.secret, mode, out);
      else if (s.downwardAPI) downwardPayload(s.downwardAPI.items, mode, env, out);
      else if (s.serviceAccountToken) {
        if (objects.serviceAccountToken === undefined) throw new VolumeSetupError('serviceAccountToken projections need an API server (klet in cluster mode)', 'spec');
        // The kubelet's: 0600 when the volume gets a group owner (its ownership step then adds group read).
        const tokenMode = env.pod.spec?.securityContext?.fsGroup === undefined ? mode : 0o600;
        out.set(s.serviceAccountToken.path, file(await objects.serviceAccountToken(env.pod, s.serviceAccountToken), tokenMode));
      }
      else throw new VolumeSetupError('projected volume source is not supported (configMap, secret and downwardAPI are)', 'spec');
    }
  }
  return out;
}
