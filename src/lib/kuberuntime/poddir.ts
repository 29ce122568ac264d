/**
 * Pod directories under the root dir, laid out as the kubelet lays them out:
 *
 *   <root>/pods/<uid>/pod.json                       the pod as last synced (klet's record)
 *   <root>/pods/<uid>/sync-state.json                the last sync's per-container errors and back-off
 *   <root>/pods/<uid>/etc-hosts                      the managed /etc/hosts
 *   <root>/pods/<uid>/ephemeral-containers.json      klet debug's containers of a static pod
 *   <root>/pods/<uid>/containers/<name>/<id>          termination-message files
 *   <root>/pods/<uid>/volumes/<plugin>/<volume>       volumes (see volume/manager.ts)
 *   <root>/pods/<uid>/volume-subpaths/<volume>/<container>/<index>  subPath binds
 *
 * The small state files here (records, sync states, /etc/hosts, probe
 * results, termination-message files) are read and written synchronously,
 * behind async signatures: each is a few kB on the node's own disk, where a
 * synchronous read costs ~4 µs of CPU and `fs/promises`' open, fstat, read
 * and close through libuv's thread pool ~145 µs (Node 24, a 3 kB file). A
 * 110-pod start through the API server reads and writes them thousands of
 * times; that was ~10 % of klet's CPU over the burst (bench/README.md,
 * api-start-110). The kubelet, too, reads and writes its pod dir's files
 * with blocking calls. The root dir belongs on a local filesystem, as the
 * kubelet's does: one that stalls would stall klet's event loop.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, fsErrorReason } from '../errors.js';
import { podHostnameAndDomain } from '../pod/dns.js';
import { managedHostsContent, nodeHostsContent } from '../pod/hosts.js';
import type { V1EphemeralContainer, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { unmountAll } from '../util/mounts.js';
import { pidAlive } from '../util/process.js';

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
  /**
   * The pod's place in admission order (admissionKey): pods admitted before
   * it hold their host ports against it. Absent in records of older klets
   * (firstSeen stands in).
   */
  admitted?: string;
  /** Set when klet started terminating the pod (delete, or no source wants it): its deletionTimestamp and grace. */
  deletion?: { at: string; gracePeriodSeconds: number };
}

/** Per-container state of the last sync that CRI cannot tell: why a start failed, back-off. */
export interface ContainerSyncState {
  /** Waiting reason when the last start attempt failed (ErrImagePull, CreateContainerConfigError, ...). */
  reason?: string;
  message?: string;
  /** Crash-loop back-off: the current delay (the kubelet's per-container back-off entry). */
  backoffMs?: number;
  /** What the back-off entry is for: the container's image and resources (the kubelet's GetBackoffKey); a change starts it over. */
  backoffKey?: string;
  /** When the back-off entry was last advanced (the kubelet's entry.lastUpdate, epoch ms): the reset is measured from it. */
  backoffUpdatedAt?: number;
  /** Image pull back-off: when the last pull failed, and the current delay. */
  pullFailedAt?: number;
  pullBackoffMs?: number;
  /** In-place resize: the resources the running container was last given (the kubelet's actuated resources). */
  actuated?: V1ResourceRequirements;
}

/** A resize condition (PodResizePending, PodResizeInProgress) as the kubelet's status manager keeps it. */
export interface ResizeCondition {
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime: string;
  lastProbeTime: string;
}

export interface PodSyncState {
  containers: Record<string, ContainerSyncState>;
  /** Pod-level end reason (DeadlineExceeded, or the admission's, e.g. NodePorts), as status.reason / status.message. */
  reason?: string;
  message?: string;
  /** The last sandbox creation failed (CreatePodSandboxError), and the back-off before the next try. */
  sandboxError?: { reason: string; message: string; backoffMs: number };
  /** Rejected at admission: never run, phase Failed. */
  rejected?: boolean;
  /** Evicted by the eviction manager: the grace period its kill takes (1 s for a hard threshold). */
  evictionGracePeriodSeconds?: number;
  /**
   * Evicted for node pressure: when (ISO time), for the DisruptionTarget
   * condition (reason TerminationByKubelet) the kubelet's eviction manager
   * adds to the Failed status. An emptyDir over its sizeLimit has none.
   */
  disruptionTargetAt?: string;
  /** The pod's IPs from its last sandbox, kept while the pod terminates and its sandbox no longer reports them. */
  podIPs?: string[];
  /**
   * In-place resize (API pods): the resources allocated to each container
   * (the kubelet's allocated_pods_state checkpoint), kept in the pod's dir
   * under the root dir, so a restarted klet runs what it had admitted.
   */
  allocated?: Record<string, V1ResourceRequirements>;
  /** The resize conditions the pod's status shows. */
  resize?: { pending?: ResizeCondition; inProgress?: ResizeCondition };
}

/**
 * Write a file atomically: a temp file next to it, then rename. A failed
 * write (ENOSPC, EROFS) removes its temp file and names the file and the
 * errno. Temp files a killed process left in a pod dir (its pid gone) are
 * removed when the pod's record is next written (writePodRecord): every
 * file of a pod dir is written through here (the prober's results too).
 */
export async function writeFileAtomic(file: string, data: string, mode = 0o644): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    fs.writeFileSync(tmp, data, { mode });
    fs.renameSync(tmp, file);
  } catch (err) {
    try {
      fs.rmSync(tmp, { force: true });
    } catch {
      // Best effort: the write's own error is the one to report.
    }
    throw new Error(`cannot write ${file}: ${errorMessage(err)}`, { cause: err });
  }
}

/** Remove the `<name>.<pid>.<rand>.tmp` files in `dir` whose writer is gone. */
async function removeStaleTmp(dir: string): Promise<void> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  for (const n of names) {
    const m = /^.*\.(\d+)\.[0-9a-f]+\.tmp$/.exec(n);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || pidAlive(pid)) continue;
    await fsp.rm(path.join(dir, n), { force: true }).catch(() => undefined);
  }
}

/**
 * Write the pod's record. Every admission writes it, so this is where the
 * temp files of a writer killed mid-write (this record, the sync state,
 * /etc/hosts) are removed: one readdir per admission of a pod dir that
 * already existed, rather than one after every write.
 */
export async function writePodRecord(rootDir: string, rec: PodRecord): Promise<void> {
  const dir = podDir(rootDir, rec.pod.metadata?.uid ?? '');
  const created = fs.mkdirSync(dir, { recursive: true, mode: 0o750 });
  await writeFileAtomic(path.join(dir, 'pod.json'), JSON.stringify(rec, null, 2) + '\n', 0o600);
  if (created === undefined) await removeStaleTmp(dir);
}

export async function readPodRecord(rootDir: string, uid: string): Promise<PodRecord | null> {
  try {
    return JSON.parse(fs.readFileSync(path.join(podDir(rootDir, uid), 'pod.json'), 'utf8')) as PodRecord;
  } catch {
    return null;
  }
}

/** UIDs of the pod dirs under the root dir (one readdir, no file read). */
export async function listPodRecordUids(rootDir: string): Promise<Set<string>> {
  try {
    return new Set(fs.readdirSync(podsDir(rootDir)));
  } catch {
    return new Set();
  }
}

/**
 * The record is of a pod klet ran under this root dir for another node name
 * (its spec.nodeName is set and is not `nodeName`, compared without case, as
 * node names are): another klet instance's pod, whose runtime objects carry
 * that instance's owner label. This klet neither lists, deletes nor cleans
 * it up; with the other node name, klet sees it again.
 */
export function recordOfOtherNode(rec: PodRecord, nodeName: string): boolean {
  const of = rec.pod.spec?.nodeName;
  return of !== undefined && of !== '' && of.toLowerCase() !== nodeName.toLowerCase();
}

async function readAllPodRecords(rootDir: string): Promise<PodRecord[]> {
  let uids: string[];
  try {
    uids = fs.readdirSync(podsDir(rootDir));
  } catch {
    return [];
  }
  const recs = await Promise.all(uids.map((u) => readPodRecord(rootDir, u)));
  return recs.filter((r): r is PodRecord => r !== null);
}

/** Every pod klet has a record of under the root dir for node `nodeName` (see recordOfOtherNode). */
export async function listPodRecords(rootDir: string, nodeName: string): Promise<PodRecord[]> {
  return (await readAllPodRecords(rootDir)).filter((r) => !recordOfOtherNode(r, nodeName));
}

/** The records under the root dir of pods klet ran for other node names (recordOfOtherNode). */
export async function listOtherNodeRecords(rootDir: string, nodeName: string): Promise<PodRecord[]> {
  return (await readAllPodRecords(rootDir)).filter((r) => recordOfOtherNode(r, nodeName));
}

/** How many records under the root dir are of other node names, by node name (recordOfOtherNode). */
export async function otherNodeRecords(rootDir: string, nodeName: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const r of await listOtherNodeRecords(rootDir, nodeName)) out.set(r.pod.spec?.nodeName ?? '', (out.get(r.pod.spec?.nodeName ?? '') ?? 0) + 1);
  return out;
}

export async function readSyncState(rootDir: string, uid: string): Promise<PodSyncState> {
  return readSyncStateSync(rootDir, uid);
}

/** readSyncState, as a plain call (admission, which must answer within one config update). */
export function readSyncStateSync(rootDir: string, uid: string): PodSyncState {
  try {
    return JSON.parse(fs.readFileSync(syncStateFile(rootDir, uid), 'utf8')) as PodSyncState;
  } catch {
    return { containers: {} };
  }
}

const syncStateFile = (rootDir: string, uid: string) => path.join(podDir(rootDir, uid), 'sync-state.json');

export async function writeSyncState(rootDir: string, uid: string, st: PodSyncState): Promise<void> {
  const dir = podDir(rootDir, uid);
  if (!fs.existsSync(dir)) return;
  await writeFileAtomic(syncStateFile(rootDir, uid), JSON.stringify(st) + '\n', 0o600);
}

/** The node's hosts file, which a host-network pod's starts from (the kubelet's etcHostsPath). */
export const NODE_HOSTS_FILE = '/etc/hosts';

/**
 * The pod's kubelet-managed /etc/hosts, `<pod dir>/etc-hosts` (the kubelet's
 * makeHostsMount, at each container start): the managed file for a pod on
 * the pod network, the node's hosts file for a host-network pod, each with
 * the pod's hostAliases. Written in place (mode 0644), as the kubelet does,
 * so the pod's running containers, which bind-mount that file, see it too.
 */
export async function writeEtcHosts(rootDir: string, pod: V1Pod, podIPs: string[], clusterDomain: string, nodeHostsFile = NODE_HOSTS_FILE): Promise<string> {
  const file = path.join(podDir(rootDir, pod.metadata?.uid ?? ''), 'etc-hosts');
  const { hostname, domain } = podHostnameAndDomain(pod, clusterDomain);
  let content: string;
  if (pod.spec?.hostNetwork === true) {
    let nodeHosts: string;
    try {
      nodeHosts = fs.readFileSync(nodeHostsFile, 'utf8');
    } catch (err) {
      throw new Error(`open ${nodeHostsFile}: ${fsErrorReason(err)}`, { cause: err });
    }
    content = nodeHostsContent(nodeHosts, pod.spec.hostAliases);
  } else {
    content = managedHostsContent(podIPs, hostname, domain, pod.spec?.hostAliases);
  }
  fs.writeFileSync(file, content, { mode: 0o644 });
  fs.chmodSync(file, 0o644);
  return file;
}

/** A fresh termination-message file for one container instance. */
export async function newTerminationMessageFile(rootDir: string, uid: string, containerName: string): Promise<string> {
  const dir = path.join(podDir(rootDir, uid), 'containers', containerName);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, randomBytes(4).toString('hex'));
  fs.writeFileSync(file, '', { mode: 0o666 });
  fs.chmodSync(file, 0o666);
  return file;
}

/** Remove a pod's directory: unmount what is mounted in it first, never delete through a mount. */
export async function removePodDir(rootDir: string, uid: string): Promise<void> {
  const dir = podDir(rootDir, uid);
  const left = await unmountAll(dir);
  if (left.length > 0) throw new Error(`cannot remove ${dir}: still mounted: ${left.join(', ')}`);
  await fsp.rm(dir, { recursive: true, force: true });
}

/**
 * The debug (ephemeral) containers `klet debug` added to a pod from a file
 * or URL, kept in its pod dir: its source's spec never carries them (the API
 * server refuses them for static pods; kubectl debug adds an API pod's
 * through the API), and every sync merges them in (withDebugContainers).
 */
const DEBUG_CONTAINERS_FILE = 'ephemeral-containers.json';

export async function readDebugContainers(rootDir: string, uid: string): Promise<V1EphemeralContainer[]> {
  try {
    const list = JSON.parse(fs.readFileSync(path.join(podDir(rootDir, uid), DEBUG_CONTAINERS_FILE), 'utf8')) as unknown;
    return Array.isArray(list) ? (list as V1EphemeralContainer[]) : [];
  } catch {
    return [];
  }
}

/** Add one to the pod's debug containers (0600: its command may hold anything). */
export async function addDebugContainer(rootDir: string, uid: string, c: V1EphemeralContainer): Promise<void> {
  const list = [...(await readDebugContainers(rootDir, uid)).filter((x) => x.name !== c.name), c];
  await writeFileAtomic(path.join(podDir(rootDir, uid), DEBUG_CONTAINERS_FILE), JSON.stringify(list, null, 2) + '\n', 0o600);
}

/** The pod with its debug containers after those of its spec (one of the same name in the spec wins). */
export function withDebugContainers(pod: V1Pod, debug: readonly V1EphemeralContainer[]): V1Pod {
  const own = pod.spec?.ephemeralContainers ?? [];
  const extra = debug.filter((d) => !own.some((c) => c.name === d.name));
  if (extra.length === 0 || pod.spec === undefined) return pod;
  return { ...pod, spec: { ...pod.spec, ephemeralContainers: [...own, ...extra] } };
}
