/**
 * Pod directories under the root dir, laid out as the kubelet lays them out:
 *
 *   <root>/pods/<uid>/pod.json                       the pod as last synced (klet's record)
 *   <root>/pods/<uid>/sync-state.json                the last sync's per-container errors and back-off
 *   <root>/pods/<uid>/etc-hosts                      the managed /etc/hosts
 *   <root>/pods/<uid>/containers/<name>/<id>          termination-message files
 *   <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<volume>
 *   <root>/pods/<uid>/volumes/kubernetes.io~configmap/<volume>
 *   <root>/pods/<uid>/volumes/kubernetes.io~secret/<volume>  (tmpfs)
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { V1KeyToPath, V1Pod, V1Volume } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import { mountTmpfs, mountsUnder, unmountAll } from '../util/mounts.js';
import { parseQuantity } from '../pod/quantity.js';
import { ContainerConfigError, configMapData, secretData, type LocalObjects } from './env.js';

export function podsDir(rootDir: string): string {
  return path.join(rootDir, 'pods');
}
export function podDir(rootDir: string, uid: string): string {
  return path.join(podsDir(rootDir), uid);
}

/** What klet remembers about a pod between invocations. */
export interface PodRecord {
  pod: V1Pod;
  /** Where the pod came from (manifest file or URL), for people. */
  source: string;
  /** When klet first synced the pod (RFC 3339), the pod's startTime. */
  firstSeen: string;
}

/** Per-container state of the last sync that CRI cannot tell: why a start failed, back-off. */
export interface ContainerSyncState {
  /** Waiting reason when the last start attempt failed (ErrImagePull, CreateContainerConfigError, ...). */
  reason?: string;
  message?: string;
  /** Crash-loop back-off: the current delay (the kubelet's per-container back-off entry). */
  backoffMs?: number;
  /** Image pull back-off: when the last pull failed, and the current delay. */
  pullFailedAt?: number;
  pullBackoffMs?: number;
}

export interface PodSyncState {
  containers: Record<string, ContainerSyncState>;
  /** Pod-level end reason (DeadlineExceeded), as status.reason / status.message. */
  reason?: string;
  message?: string;
  /** The last sandbox creation failed (CreatePodSandboxError), and the back-off before the next try. */
  sandboxError?: { reason: string; message: string; backoffMs: number };
}

async function writeFileAtomic(file: string, data: string, mode = 0o644): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await fsp.writeFile(tmp, data, { mode });
  await fsp.rename(tmp, file);
}

export async function writePodRecord(rootDir: string, rec: PodRecord): Promise<void> {
  const dir = podDir(rootDir, rec.pod.metadata?.uid ?? '');
  await fsp.mkdir(dir, { recursive: true, mode: 0o750 });
  await writeFileAtomic(path.join(dir, 'pod.json'), JSON.stringify(rec, null, 2) + '\n', 0o600);
}

export async function readPodRecord(rootDir: string, uid: string): Promise<PodRecord | null> {
  try {
    return JSON.parse(await fsp.readFile(path.join(podDir(rootDir, uid), 'pod.json'), 'utf8')) as PodRecord;
  } catch {
    return null;
  }
}

/** UIDs of the pod dirs under the root dir (one readdir, no file read). */
export async function listPodRecordUids(rootDir: string): Promise<Set<string>> {
  try {
    return new Set(await fsp.readdir(podsDir(rootDir)));
  } catch {
    return new Set();
  }
}

/** Every pod klet has a record of under the root dir. */
export async function listPodRecords(rootDir: string): Promise<PodRecord[]> {
  let uids: string[];
  try {
    uids = await fsp.readdir(podsDir(rootDir));
  } catch {
    return [];
  }
  const recs = await Promise.all(uids.map((u) => readPodRecord(rootDir, u)));
  return recs.filter((r): r is PodRecord => r !== null);
}

export async function readSyncState(rootDir: string, uid: string): Promise<PodSyncState> {
  try {
    return JSON.parse(await fsp.readFile(path.join(podDir(rootDir, uid), 'sync-state.json'), 'utf8')) as PodSyncState;
  } catch {
    return { containers: {} };
  }
}

export async function writeSyncState(rootDir: string, uid: string, st: PodSyncState): Promise<void> {
  const dir = podDir(rootDir, uid);
  if (!fs.existsSync(dir)) return;
  await writeFileAtomic(path.join(dir, 'sync-state.json'), JSON.stringify(st) + '\n', 0o600);
}

/** The kubelet-managed /etc/hosts for a pod not on the host network. */
export async function writeEtcHosts(rootDir: string, pod: V1Pod, podIPs: string[]): Promise<string> {
  const file = path.join(podDir(rootDir, pod.metadata?.uid ?? ''), 'etc-hosts');
  const hostname = pod.spec?.hostname || pod.metadata?.name || '';
  const fqdn = pod.spec?.subdomain ? `${hostname}.${pod.spec.subdomain}.${pod.metadata?.namespace ?? 'default'}.svc.cluster.local` : '';
  const lines = [
    '# Kubernetes-managed hosts file.',
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
    ...podIPs.map((ip) => `${ip}\t${fqdn ? `${fqdn}\t` : ''}${hostname}`),
  ];
  for (const ha of pod.spec?.hostAliases ?? []) {
    lines.push(`# Entries added by HostAliases.`, `${ha.ip}\t${(ha.hostnames ?? []).join('\t')}`);
  }
  await writeFileAtomic(file, lines.join('\n') + '\n');
  return file;
}

/** A fresh termination-message file for one container instance. */
export async function newTerminationMessageFile(rootDir: string, uid: string, containerName: string): Promise<string> {
  const dir = path.join(podDir(rootDir, uid), 'containers', containerName);
  await fsp.mkdir(dir, { recursive: true });
  const file = path.join(dir, randomBytes(4).toString('hex'));
  await fsp.writeFile(file, '', { mode: 0o666 });
  await fsp.chmod(file, 0o666);
  return file;
}

export class VolumeError extends ContainerConfigError {
  override readonly code: string = 'VOLUME_SETUP_FAILED';
}

const HOST_PATH_TYPES = new Set([
  '',
  'DirectoryOrCreate',
  'Directory',
  'FileOrCreate',
  'File',
  'Socket',
  'CharDevice',
  'BlockDevice',
]);

/** hostPath type checks (pkg/volume/hostpath): create when asked, else the path must exist as the type says. */
export async function checkHostPath(p: string, type: string): Promise<void> {
  if (!HOST_PATH_TYPES.has(type)) throw new VolumeError(`hostPath type "${type}" is not supported`);
  const st: fs.Stats | null = await fsp.stat(p).catch(() => null);
  switch (type) {
    case '':
      return;
    case 'DirectoryOrCreate':
      if (st === null) {
        await fsp.mkdir(p, { recursive: true, mode: 0o755 });
        return;
      }
      if (!st.isDirectory()) throw new VolumeError(`hostPath type check failed: ${p} is not a directory`);
      return;
    case 'FileOrCreate':
      if (st === null) {
        await fsp.mkdir(path.dirname(p), { recursive: true, mode: 0o755 });
        await fsp.writeFile(p, '', { mode: 0o644, flag: 'a' });
        return;
      }
      if (!st.isFile()) throw new VolumeError(`hostPath type check failed: ${p} is not a file`);
      return;
  }
  if (st === null) throw new VolumeError(`hostPath type check failed: ${p} does not exist`);
  const ok =
    (type === 'Directory' && st.isDirectory()) ||
    (type === 'File' && st.isFile()) ||
    (type === 'Socket' && st.isSocket()) ||
    (type === 'CharDevice' && st.isCharacterDevice()) ||
    (type === 'BlockDevice' && st.isBlockDevice());
  if (!ok) throw new VolumeError(`hostPath type check failed: ${p} is not a ${type}`);
}

/** Write ConfigMap/Secret data into a volume dir, honouring items, defaultMode and per-item mode. */
async function writeProjectedFiles(
  dir: string,
  data: Record<string, string>,
  items: V1KeyToPath[] | undefined,
  defaultMode: number,
  what: string,
  optional: boolean,
): Promise<void> {
  const entries: { path: string; content: string; mode: number }[] = [];
  if (items && items.length > 0) {
    for (const it of items) {
      if (!(it.key in data)) {
        if (optional) continue;
        throw new VolumeError(`configuration of ${what}: no key "${it.key}"`);
      }
      entries.push({ path: it.path, content: data[it.key] as string, mode: it.mode ?? defaultMode });
    }
  } else {
    for (const [k, v] of Object.entries(data)) entries.push({ path: k, content: v, mode: defaultMode });
  }
  for (const e of entries) {
    const target = path.resolve(dir, e.path);
    if (!target.startsWith(dir + path.sep)) throw new VolumeError(`${what}: item path "${e.path}" escapes the volume`);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    await fsp.writeFile(target, e.content, { mode: e.mode });
    await fsp.chmod(target, e.mode);
  }
}

/**
 * Set up the pod's volumes and return volume name → host path. The volume
 * kinds static pods lean on (emptyDir, hostPath) plus ConfigMap and Secret
 * from local objects; other kinds come with the volume manager.
 */
export async function setupVolumes(rootDir: string, pod: V1Pod, objects: LocalObjects): Promise<Map<string, string>> {
  const uid = pod.metadata?.uid ?? '';
  const ns = pod.metadata?.namespace ?? 'default';
  const base = path.join(podDir(rootDir, uid), 'volumes');
  const out = new Map<string, string>();
  for (const v of pod.spec?.volumes ?? []) {
    out.set(v.name, await setupVolume(base, ns, v, objects));
  }
  return out;
}

async function setupVolume(base: string, ns: string, v: V1Volume, objects: LocalObjects): Promise<string> {
  try {
    if (v.hostPath) {
      await checkHostPath(v.hostPath.path, v.hostPath.type ?? '');
      return v.hostPath.path;
    }
    if (v.emptyDir) {
      const dir = path.join(base, 'kubernetes.io~empty-dir', v.name);
      await fsp.mkdir(dir, { recursive: true, mode: 0o777 });
      await fsp.chmod(dir, 0o777);
      if (v.emptyDir.medium === 'Memory' && !(await mountsUnder(dir)).includes(dir)) {
        const limit = v.emptyDir.sizeLimit === undefined ? undefined : parseQuantity(String(v.emptyDir.sizeLimit)).value();
        await mountTmpfs(dir, { sizeBytes: limit, mode: 0o777 });
      }
      return dir;
    }
    if (v.configMap) {
      const name = v.configMap.name ?? '';
      const dir = path.join(base, 'kubernetes.io~configmap', v.name);
      const cm = objects.configMaps.find((c) => c.metadata?.name === name && (c.metadata?.namespace ?? 'default') === ns);
      await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
      if (!cm) {
        if (v.configMap.optional) return dir;
        throw new VolumeError(`configmap "${name}" not found`);
      }
      await writeProjectedFiles(dir, configMapData(cm), v.configMap.items, v.configMap.defaultMode ?? 0o644, `configmap ${name}`, v.configMap.optional === true);
      return dir;
    }
    if (v.secret) {
      const name = v.secret.secretName ?? '';
      const dir = path.join(base, 'kubernetes.io~secret', v.name);
      const s = objects.secrets.find((c) => c.metadata?.name === name && (c.metadata?.namespace ?? 'default') === ns);
      await fsp.mkdir(dir, { recursive: true, mode: 0o750 });
      if (!s) {
        if (v.secret.optional) return dir;
        throw new VolumeError(`secret "${name}" not found`);
      }
      // Secrets live in memory only, as the kubelet keeps them.
      if (!(await mountsUnder(dir)).includes(dir)) await mountTmpfs(dir, { mode: 0o750 });
      await writeProjectedFiles(dir, secretData(s), v.secret.items, v.secret.defaultMode ?? 0o644, `secret ${name}`, v.secret.optional === true);
      return dir;
    }
  } catch (err) {
    if (err instanceof VolumeError) throw err;
    throw new VolumeError(`volume "${v.name}": ${errorMessage(err)}`);
  }
  throw new VolumeError(`volume "${v.name}": this volume type is not supported yet (emptyDir, hostPath, configMap and secret are)`);
}

/** Remove a pod's directory: unmount what is mounted in it first, never delete through a mount. */
export async function removePodDir(rootDir: string, uid: string): Promise<void> {
  const dir = podDir(rootDir, uid);
  const left = await unmountAll(dir);
  if (left.length > 0) throw new Error(`cannot remove ${dir}: still mounted: ${left.join(', ')}`);
  await fsp.rm(dir, { recursive: true, force: true });
}
