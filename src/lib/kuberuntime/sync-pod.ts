/**
 * syncPod: carry out computePodActions' plan against CRI (the kubelet's
 * kubeGenericRuntimeManager.SyncPod), and killPod. Per-container failures
 * (image, config, start) do not throw: they are recorded with the kubelet's
 * waiting reasons in the pod's sync state, which status generation reads.
 */
import type { PodCgroups } from '../cm/manager.js';
import fsp from 'node:fs/promises';
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import type { CriClient } from '../cri/client.js';
import type { DeepPartial, PodSandboxConfig, PodSandboxStatus } from '../cri/gen/api.js';
import { CriError, CriNotFoundError, goStatusText } from '../cri/errors.js';
import { KletError, errorMessage } from '../errors.js';
import { log } from '../log.js';
import { computePodActions, isNoop, isRestartableInit, type ActuatedResources, type PodActions, type ProbeVerdicts } from './actions.js';
import {
  allocationFromPod,
  containerResources,
  decideResize,
  mixResources,
  podStepConfig,
  podWithAllocation,
  resizeCompletedMessage,
  resizeSteps,
} from './resize.js';
import { linuxContainerResources } from './resources.js';
import { generateContainerConfig, generatePodSandboxConfig, seccompProfileRoot } from './config.js';
import { DEFAULT_DNS_SETTINGS, PodHostnameError, podDNSConfig, readResolvConf, ResolvConfError, sandboxHostname, type DnsSettings, type ResolvConf } from '../pod/dns.js';
import { ContainerConfigError, type LocalObjects, type ServiceSource } from './env.js';
import { containerSubPaths } from './config.js';
import { localObjectSource } from '../volume/plugins.js';
import { VolumeManager, VolumeMountError, type MountedVolumes, type PodVolumes } from '../volume/manager.js';
import { prepareSubPath, SubPathError } from '../volume/subpath.js';
import { ensureImageExists, ImageError } from './image.js';
import {
  listPodRecords,
  newTerminationMessageFile,
  type PodRecord,
  readSyncState,
  podDir,
  writeEtcHosts,
  writeSyncState,
  type ContainerSyncState,
  type PodSyncState,
  type ResizeCondition,
} from './poddir.js';
import { findContainerStatus, getRuntimePodStatus, type CreatedPodObjects, type RuntimePodStatus } from './runtime-status.js';
import { hostIPs } from '../node/addresses.js';
import { nodeCapacity } from '../node/machine.js';
import { formatDuration } from '../util/duration.js';
import { canonicalJson } from '../util/json.js';
import { runHandler } from './hooks.js';
import { POD_UID_LABEL, instanceSelector, kletInstance } from './labels.js';
import { admitHostPorts, admittedKey, podHostPorts } from './admission.js';
import { admitSysctls, type SysctlAllowlist } from '../node/sysctl.js';
import { type AdmissionNode, admitCriticalResources, isCriticalPod } from '../node/admission.js';
import { isStaticPod } from '../pod/static-pod.js';
import { terminationOrdering, type TerminationOrdering } from './termination-order.js';
import { needsImageUser, verifyRunAsNonRoot } from './run-as-non-root.js';
import { ContainerState, PodSandboxState } from '../cri/gen/api.js';
import { podLogDirOf } from '../logs/paths.js';
import type { KletEventBody } from '../events/types.js';
import { podEvents } from '../events/pod-events.js';
import { podDesc, podKey } from '../pod/key.js';

/** Crash-loop back-off: the kubelet's defaults. */
export const DEFAULT_BACKOFF = { initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 };

/**
 * Per-process caches of facts about the node, owned by whoever builds the
 * context (a command run, `klet sync`): never module-level state.
 */
export class NodeCache {
  /** The runtime's name (containerd), for containerIDs in status. */
  runtimeName?: string;
  private ips: { at: number; value: string[] } | undefined;
  /**
   * The node's InternalIP when one is configured (--node-ip): the pods' hostIP(s), and a host-network pod's
   * IP, are then that address, as the kubelet takes them from its Node's addresses.
   */
  nodeIP: string | undefined;
  private machine: { cpuMillis: number; memoryBytes: number } | undefined;

  /** The node's CPUs (as millicores) and memory, read once: the kubelet reads its machine info once at start too. */
  capacity(): { cpuMillis: number; memoryBytes: number } {
    this.machine ??= nodeCapacity();
    return this.machine;
  }

  /** The node's addresses, read again after ttlMs (a long-running sync follows a changed address). */
  hostIPs(ttlMs = 10_000): string[] {
    if (this.nodeIP !== undefined) return [this.nodeIP];
    const now = Date.now();
    if (this.ips === undefined || now - this.ips.at >= ttlMs) this.ips = { at: now, value: hostIPs() };
    return this.ips.value;
  }
}

/** The node's addresses, through the context's cache when it has one. */
export function nodeHostIPs(ctx: { cache?: NodeCache }): string[] {
  return ctx.cache?.hostIPs() ?? hostIPs();
}

export interface SyncContext {
  cri: CriClient;
  rootDir: string;
  nodeName: string;
  objects: LocalObjects;
  /**
   * The objects a container's environment references, read afresh at its
   * start (API pods: the watch-based managers' Get, which restarts an idle
   * watch). Fails with a ContainerConfigError. Unset: `objects`.
   */
  readObjects?: (c: V1Container) => Promise<LocalObjects>;
  /** Root of the pod log dirs (default /var/log/pods). */
  logRoot?: string;
  /** seccompDefault: pods and containers that name no seccomp profile get RuntimeDefault. */
  seccompDefault?: boolean;
  signal?: AbortSignal;
  backoff?: { initialMs: number; maxMs: number; resetAfterMs: number };
  onEvent?: (e: KletEventBody) => void;
  now?: () => number;
  /** The node's DNS settings (--cluster-dns, --cluster-domain, --resolv-conf); the kubelet's defaults when unset. */
  dns?: DnsSettings;
  cache?: NodeCache;
  /** The prober's liveness and startup results: a failed container is killed and restarted. */
  probes?: ProbeVerdicts;
  /** The volume manager; without one, a manager over `objects` is made for the sync. */
  volumes?: PodVolumes;
  /** The cluster's Services, for the service environment variables (cluster mode). */
  services?: ServiceSource;
  /** The sysctls pods may set (admission: SysctlForbidden); unchecked without it. */
  sysctls?: SysctlAllowlist;
  /** Pod and QoS cgroups (--cgroups-per-qos); without them pods get the runtime's default cgroup parent. */
  cgroups?: PodCgroups;
  /**
   * In-place resize of API pods (cluster mode): the node's allocatable CPU
   * (millicores) and memory (bytes) a resize is admitted against. Without
   * it, resources are never resized in place.
   */
  resize?: { allocatable: { cpuMilli: number; memoryBytes: number } };
  /** The node's allocatable (cpu millicores, memory bytes, pods): static pods are admitted against it; unchecked without it. */
  allocatable?: AdmissionNode['allocatable'];
  /**
   * After each resize check of an API pod: the reason its resize is pending
   * (Deferred, Infeasible), or undefined when none is. The sync loop retries
   * the deferred ones when room may have been freed (the kubelet's
   * RetryPendingResizes).
   */
  onResizePending?: (reason: string | undefined) => void;
}

export interface SyncPodResult {
  actions: PodActions;
  status: RuntimePodStatus;
  /** Per container: the failure of this sync, if any. */
  failures: { container: string; reason: string; message: string; retryInMs?: number }[];
  /** The soonest a retry makes sense (back-off or deadline expiry), in ms from now. */
  requeueAfterMs?: number;
  /** The pod was ended by klet itself (activeDeadlineSeconds, or evicted). */
  deadlineExceeded?: boolean;
  /** The pod was rejected at admission (e.g. NodePorts) and never runs. */
  rejected?: boolean;
  /** The runtime refused the pod's sandbox in this sync (the kubelet's CreatePodSandboxError). */
  sandboxError?: { reason: string; message: string };
  /** The pod's volumes could not be set up (nothing was started): the kubelet's WaitForAttachAndMount error. */
  mountFailed?: string;
  /**
   * Everything the pod has in the runtime now, when this sync found nothing
   * of it and created its sandbox and containers without a failure: what a
   * status read right after would list (createdPodStatus reads only the
   * containers' states).
   */
  created?: CreatedPodObjects;
}

/**
 * The node's other active pods of this klet, as admission sees them: those
 * with a ready sandbox, and those admitted before this one that have no
 * sandbox yet (being started, e.g. by the same runonce). "Before" is the
 * kubelet's admission order (admittedKey: the batch, then creation time,
 * then source order), not which pod's sync happened to run first, so the
 * same pods always give the same winner. Rejected and finished pods hold
 * nothing.
 */
async function activePods(ctx: SyncContext, self: string): Promise<Array<{ pod: V1Pod; pending: boolean; key: string }>> {
  const records = await listPodRecords(ctx.rootDir, ctx.nodeName);
  const mine = records.find((r) => r.pod.metadata?.uid === self);
  const { items } = await ctx.cri.listPodSandbox({ filter: { labelSelector: instanceSelector(ctx) } }, { signal: ctx.signal });
  const withSandbox = new Set(items.map((s) => s.labels[POD_UID_LABEL] ?? ''));
  const ready = new Set(items.filter((s) => s.state === PodSandboxState.SANDBOX_READY).map((s) => s.labels[POD_UID_LABEL] ?? ''));
  const mineKey = mine === undefined ? undefined : admittedKey(mine);
  const earlier = (r: PodRecord) => {
    if (mineKey === undefined) return true;
    const k = admittedKey(r);
    return k < mineKey || (k === mineKey && (r.pod.metadata?.uid ?? '') < self);
  };
  const out: Array<{ pod: V1Pod; pending: boolean; key: string }> = [];
  for (const r of records) {
    const uid = r.pod.metadata?.uid ?? '';
    if (uid === self) continue;
    if (!ready.has(uid) && (withSandbox.has(uid) || !earlier(r))) continue;
    if ((await readSyncState(ctx.rootDir, uid)).rejected === true) continue;
    out.push({ pod: r.pod, pending: !withSandbox.has(uid), key: admittedKey(r) });
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * The pods holding resources when this one is admitted: the running ones,
 * then each earlier pod still being started that is admitted itself, in
 * admission order, as the kubelet admits one pod after the other (an
 * earlier static pod too big for the node holds nothing, even while its
 * own sync has not yet written its rejection).
 */
function resourceHolders(active: Array<{ pod: V1Pod; pending: boolean }>, allocatable: AdmissionNode['allocatable']): Array<{ pod: V1Pod; critical: boolean }> {
  const holders = active.filter((a) => !a.pending).map((a) => ({ pod: a.pod, critical: isCriticalPod(a.pod, isStaticPod(a.pod)) }));
  for (const a of active) {
    if (!a.pending) continue;
    const critical = isCriticalPod(a.pod, isStaticPod(a.pod));
    const r = isStaticPod(a.pod) ? admitCriticalResources(a.pod, holders, allocatable) : null;
    if (r === null || r.preempt !== undefined) holders.push({ pod: a.pod, critical });
  }
  return holders;
}

/** The kubelet's kubecontainer.ErrCreatePodSandbox. */
export const CREATE_POD_SANDBOX_ERROR = 'CreatePodSandboxError';
/** The kubelet's kubecontainer.ErrConfigPodSandbox: a running pod's sandbox config could not be made again. */
const CONFIG_POD_SANDBOX_ERROR = 'ConfigPodSandboxError';
/** When a container whose config could not be made is tried again (the kubelet's pod worker backOffPeriod). */
export const CONFIG_ERROR_RETRY_MS = 10_000;

export const DEADLINE_EXCEEDED_MESSAGE = 'Pod was active on the node longer than the specified deadline';

/**
 * The sandbox's DNS config and hostname (the kubelet's GetPodDNS and
 * GeneratePodHostNameAndDomain), with the pod's and node's DNS warnings
 * emitted as the kubelet records them. The resolver file is read each time,
 * as the kubelet reads it: an unreadable one fails the sandbox.
 */
async function sandboxDNS(ctx: SyncContext, pod: V1Pod): Promise<{ dnsConfig: ResolvConf; hostname: string }> {
  const settings = ctx.dns ?? DEFAULT_DNS_SETTINGS;
  const host = await readResolvConf(settings.resolvConf);
  const nodeIP = ctx.cache?.nodeIP;
  const { config, warnings } = podDNSConfig(pod, host, settings, nodeIP ? [nodeIP] : []);
  for (const w of warnings) {
    if (w.object === 'pod') ctx.onEvent?.(podEvents.dnsWarning(pod, w.reason, w.message));
    else ctx.onEvent?.({ kind: 'NodeEvent', type: 'Warning', reason: w.reason, message: w.message });
  }
  return { dnsConfig: config, hostname: sandboxHostname(pod, settings.clusterDomain) };
}

function gracePeriod(pod: V1Pod, override?: number): number {
  if (override !== undefined) return override;
  return pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
}

/** Stop every running container of the pod (gracefully, in parallel), then its sandboxes. */
export async function killPod(
  ctx: SyncContext,
  pod: V1Pod,
  status: RuntimePodStatus,
  opts: { gracePeriodSeconds?: number } = {},
): Promise<void> {
  const grace = gracePeriod(pod, opts.gracePeriodSeconds);
  const running = status.containers.filter((c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown');
  const ordering = terminationOrdering(pod, running.map((c) => c.name));
  await Promise.all(running.map((c) => killContainer(ctx, pod, c, grace, `Stopping container ${c.name}`, c.state === 'running', ordering)));
  // Every sandbox, as the kubelet's killPodWithSyncResult does: one left not
  // ready by a runtime crash still holds its network (netns, veth, IP lease)
  // until StopPodSandbox tears it down.
  for (const sb of status.sandboxes) {
    await ctx.cri.stopPodSandbox({ podSandboxId: sb.id }, { signal: ctx.signal });
    if (sb.ready) ctx.onEvent?.(podEvents.sandboxStopped(pod, sb.id));
  }
}

/**
 * After a new sandbox: remove the pod's older sandboxes that no container
 * refers to (the kubelet's sandbox garbage collection keeps only the newest),
 * so the leftovers of interrupted attempts do not pile up.
 */
async function removeOldSandboxes(ctx: SyncContext, status: RuntimePodStatus, current: string): Promise<void> {
  for (const sb of status.sandboxes) {
    if (sb.id === current || status.containers.some((c) => c.sandboxId === sb.id)) continue;
    try {
      await ctx.cri.stopPodSandbox({ podSandboxId: sb.id }, { signal: ctx.signal });
      await ctx.cri.removePodSandbox({ podSandboxId: sb.id }, { signal: ctx.signal });
    } catch (err) {
      log.debug(`removing old sandbox ${sb.id.slice(0, 13)}: ${errorMessage(err)}`);
    }
  }
}

/** The kubelet's floor for the time a container gets after its preStop hook. */
const MIN_GRACE_AFTER_HOOK_SECONDS = 2;

/**
 * Stop one container: its preStop hook first (within the grace period),
 * then SIGTERM and, after what is left of the grace period, SIGKILL. The
 * Killing event is recorded as the kill starts, before the hook, as the
 * kubelet's killContainer does (not once a container that ignores SIGTERM
 * has been killed a grace period later).
 */
export async function killContainer(
  ctx: SyncContext,
  pod: V1Pod,
  c: { id: string; name: string },
  graceSeconds: number,
  message: string,
  runPreStop = true,
  ordering?: TerminationOrdering,
): Promise<void> {
  let grace = graceSeconds;
  // Recorded first, as the kubelet's killContainer does: a container in its grace period is being killed.
  ctx.onEvent?.(podEvents.killing(pod, c.name, c.id, message));
  const spec = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((x) => x.name === c.name);
  const preStop = spec?.lifecycle?.preStop;
  if (runPreStop && spec && preStop && grace > 0) {
    const t0 = Date.now();
    try {
      await runHandler(ctx.cri, {
        pod,
        container: spec,
        containerId: c.id,
        podIP: '',
        handler: preStop,
        timeoutMs: grace * 1000,
        signal: ctx.signal,
      });
    } catch (err) {
      log.warn(`preStop hook of ${podKey(pod)}/${c.name} failed: ${errorMessage(err)}`);
      ctx.onEvent?.(podEvents.failedPreStopHook(pod, c.name, c.id));
    }
    grace = Math.max(MIN_GRACE_AFTER_HOOK_SECONDS, grace - Math.ceil((Date.now() - t0) / 1000));
  }
  try {
    // A sidecar's SIGTERM waits for the containers that stop before it, at
    // most what is left of its grace period (then with the kubelet's floor).
    if (ordering !== undefined && grace > 0 && ordering.prerequisites(c.name).length > 0) {
      const t0 = Date.now();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([ordering.waitForTurn(c.name), new Promise<void>((r) => (timer = setTimeout(r, grace * 1000)))]);
      clearTimeout(timer);
      grace = Math.max(MIN_GRACE_AFTER_HOOK_SECONDS, grace - Math.floor((Date.now() - t0) / 1000));
    }
    await stopContainer(ctx, c.id, grace);
  } finally {
    ordering?.stopped(c.name);
  }
}

/**
 * CRI StopContainer. A container that exits by itself while containerd kills
 * it can make the kill fail (containerd 1.6: "ttrpc: closed" as its shim goes
 * away). The kubelet's pod worker would kill it again at its next sync and
 * find it stopped; a one-shot delete has no next sync, so the container's
 * state decides now: one that has exited (or is gone) is stopped, as asked.
 */
async function stopContainer(ctx: SyncContext, containerId: string, grace: number): Promise<void> {
  try {
    await ctx.cri.stopContainer({ containerId, timeout: BigInt(grace) }, { signal: ctx.signal, timeoutMs: (grace + 120) * 1000 });
  } catch (err) {
    if (ctx.signal?.aborted || !(err instanceof CriError)) throw err;
    // containerd records the exit from its task event, a moment after the shim is gone.
    for (let i = 0; i < 20; i++) {
      const state = await ctx.cri
        .containerStatus({ containerId }, { signal: ctx.signal })
        .then((r) => r.status?.state)
        .catch((e: unknown) => {
          if (e instanceof CriNotFoundError) return ContainerState.CONTAINER_EXITED;
          if (ctx.signal?.aborted) throw e;
          return undefined;
        });
      if (state === ContainerState.CONTAINER_EXITED) {
        log.debug(`StopContainer ${containerId.slice(0, 13)}: ${errorMessage(err)}; the container has exited`);
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw err;
  }
}

interface StartFailure {
  reason: string;
  message: string;
  /** When a retry makes sense (back-off expiry), in ms from now. */
  retryInMs?: number;
}

interface StartContext {
  pod: V1Pod;
  sandboxId: string;
  sandboxConfig: DeepPartial<PodSandboxConfig>;
  podIPs: string[];
  volumes: MountedVolumes;
  state: PodSyncState;
  /** The containers this sync started (and whose postStart hook, if any, succeeded). */
  started: string[];
}

/**
 * Crash-loop back-off (the kubelet's doBackOff): the first restart is
 * immediate; after that a container that exited less than the current
 * back-off ago waits, and each restart doubles the back-off up to the cap.
 * A container that exits resetAfterMs or more after its last restart
 * decision (it ran cleanly) starts over, and so does
 * one whose image or resources changed: the kubelet keys its back-off
 * entries by pod, container name, image and resources (GetBackoffKey), so
 * a new image restarts at once and then from the initial delay.
 * Exported for the unit tests of the schedule; only ctx.backoff and ctx.now are read.
 */
export function checkBackoff(
  ctx: Pick<SyncContext, 'backoff' | 'now'>,
  pod: V1Pod,
  c: V1Container,
  status: RuntimePodStatus,
  state: ContainerSyncState,
): { message: string; retryInMs: number } | null {
  const prev = findContainerStatus(status, c.name);
  if (prev === undefined || prev.state !== 'exited') return null;
  const cfg = ctx.backoff ?? DEFAULT_BACKOFF;
  const now = ctx.now?.() ?? Date.now();
  const key = backoffKey(c);
  if (state.backoffKey !== undefined && state.backoffKey !== key) delete state.backoffMs;
  // The kubelet's hasExpired: the entry is stale when the container exited
  // long after the last restart decision (it ran cleanly in between).
  // Measured from that decision, not from the container's startedAt: a
  // container that never started (StartError: startedAt 0) has no run time,
  // and taking its 0 for one would reset the back-off at every restart.
  const lastUpdate = state.backoffUpdatedAt ?? (prev.startedAt > 0 ? prev.startedAt : undefined);
  if (lastUpdate !== undefined && prev.finishedAt - lastUpdate >= cfg.resetAfterMs) delete state.backoffMs;
  if (state.backoffMs !== undefined && now - prev.finishedAt < state.backoffMs) {
    const md = pod.metadata ?? {};
    return {
      message: `back-off ${formatDuration(state.backoffMs)} restarting failed container=${c.name} pod=${md.name}_${md.namespace}(${md.uid})`,
      retryInMs: prev.finishedAt + state.backoffMs - now,
    };
  }
  state.backoffMs = state.backoffMs === undefined ? cfg.initialMs : Math.min(state.backoffMs * 2, cfg.maxMs);
  state.backoffKey = key;
  state.backoffUpdatedAt = now;
  return null;
}

/** The fields of a container whose change starts its crash-loop back-off over (the kubelet's GetBackoffKey, less the pod's). */
function backoffKey(c: V1Container): string {
  return `${c.image ?? ''}/${canonicalJson(c.resources ?? {})}`;
}

/** Image pull back-off (the image manager's): after a failed pull, wait before the next try. */
function checkPullBackoff(ctx: SyncContext, c: V1Container, state: ContainerSyncState): { message: string; retryInMs: number } | null {
  if (state.pullFailedAt === undefined || state.pullBackoffMs === undefined) return null;
  const now = ctx.now?.() ?? Date.now();
  const left = state.pullFailedAt + state.pullBackoffMs - now;
  if (left <= 0) return null;
  return { message: `Back-off pulling image "${c.image}"`, retryInMs: left };
}

/** The gRPC status code of a runtime error (kubelet_started_containers_errors_total's `code`); 2 (Unknown) for any other failure. */
function runtimeCode(err: unknown): number {
  return err instanceof CriError ? err.grpcCode : 2;
}

/**
 * The pod's /etc/hosts for a container about to be created, written afresh
 * (the kubelet's makeHostsMount in makeMounts): none for a container that
 * mounts its own at /etc/hosts, nor for a pod-network pod without an IP yet.
 * A failure is the container's CreateContainerConfigError.
 */
async function etcHostsFor(ctx: SyncContext, pod: V1Pod, c: V1Container, podIPs: string[]): Promise<string | null> {
  if ((c.volumeMounts ?? []).some((m) => m.mountPath === '/etc/hosts')) return null;
  if (pod.spec?.hostNetwork !== true && podIPs.length === 0) return null;
  try {
    return await writeEtcHosts(ctx.rootDir, pod, podIPs, (ctx.dns ?? DEFAULT_DNS_SETTINGS).clusterDomain);
  } catch (err) {
    throw new ContainerConfigError(errorMessage(err), { cause: err });
  }
}

async function startContainer(
  ctx: SyncContext,
  sc: StartContext,
  c: V1Container,
  status: RuntimePodStatus,
  init: boolean,
  /** An ephemeral container (kubectl debug), with the running container whose process namespace it joins. */
  ephemeral?: { targetContainerId?: string },
): Promise<StartFailure | null> {
  const pod = sc.pod;
  const cstate: ContainerSyncState = sc.state.containers[c.name] ?? {};
  sc.state.containers[c.name] = cstate;
  const fail = (reason: string, message: string, retryInMs?: number, grpcCode?: number): StartFailure => {
    cstate.reason = reason;
    cstate.message = message;
    const extra: { init: boolean; grpcCode?: number; retryAt?: string } = { init };
    if (grpcCode !== undefined) extra.grpcCode = grpcCode;
    // A back-off says when it ends (the dashboard's countdown).
    if (retryInMs !== undefined && reason.endsWith('BackOff')) extra.retryAt = new Date((ctx.now?.() ?? Date.now()) + retryInMs).toISOString();
    ctx.onEvent?.(podEvents.failed(pod, c.name, reason, message, extra));
    return { reason, message, retryInMs };
  };

  const backoff = checkBackoff(ctx, pod, c, status, cstate);
  if (backoff !== null) return fail('CrashLoopBackOff', backoff.message, backoff.retryInMs);
  const pullBackoff = checkPullBackoff(ctx, c, cstate);
  if (pullBackoff !== null) return fail('ImagePullBackOff', pullBackoff.message, pullBackoff.retryInMs);

  let imageRef: string;
  try {
    const img = await ensureImageExists(ctx.cri, c, { signal: ctx.signal, rootDir: ctx.rootDir });
    imageRef = img.imageRef;
    delete cstate.pullFailedAt;
    delete cstate.pullBackoffMs;
    ctx.onEvent?.(podEvents.pulled(pod, c.name, c.image ?? '', img.pulled));
  } catch (err) {
    if (err instanceof ImageError) {
      if (err.reason === 'ErrImagePull') {
        const cfg = ctx.backoff ?? DEFAULT_BACKOFF;
        cstate.pullFailedAt = ctx.now?.() ?? Date.now();
        cstate.pullBackoffMs = cstate.pullBackoffMs === undefined ? cfg.initialMs : Math.min(cstate.pullBackoffMs * 2, cfg.maxMs);
        return fail(err.reason, err.message, cstate.pullBackoffMs);
      }
      return fail(err.reason, err.message);
    }
    throw err;
  }

  const prev = findContainerStatus(status, c.name);
  const restartCount = prev === undefined ? 0 : prev.restartCount + 1;
  const uid = pod.metadata?.uid ?? '';
  let containerId: string;
  const capacity = ctx.cache?.capacity() ?? nodeCapacity();
  try {
    const env = {
      pod,
      podIPs: sc.podIPs,
      hostIPs: nodeHostIPs(ctx),
      nodeName: ctx.nodeName,
      objects: ctx.readObjects ? await ctx.readObjects(c) : ctx.objects,
      nodeAllocatable: { cpuMillis: capacity.cpuMillis, memoryBytes: capacity.memoryBytes, ephemeralStorageBytes: 0 },
      ...(ctx.services ? { services: ctx.services } : {}),
    };
    // subPaths are resolved and bound at each start: a symlink planted since the last one is refused.
    const subPaths = new Map<number, string>();
    for (const [index, sp] of containerSubPaths(c, env)) {
      const volumePath = sc.volumes.paths.get(sp.volume);
      if (volumePath === undefined) continue;
      subPaths.set(
        index,
        await prepareSubPath({ volumePath, subPath: sp.subPath, podDir: podDir(ctx.rootDir, uid), volumeName: sp.volume, containerName: c.name, index }),
      );
    }
    // runAsNonRoot against the image's user (the kubelet's getImageUser + verifyRunAsNonRoot), before anything is made.
    if (needsImageUser(pod, c)) {
      const img = (await ctx.cri.imageStatus({ image: { image: imageRef } }, { signal: ctx.signal })).image;
      verifyRunAsNonRoot(pod, c, img ? { ...(img.uid !== undefined ? { uid: Number(img.uid.value) } : {}), username: img.username } : undefined);
    } else verifyRunAsNonRoot(pod, c, undefined);
    const etcHosts = await etcHostsFor(ctx, pod, c, sc.podIPs);
    const tmFile = c.terminationMessagePath === '' ? null : await newTerminationMessageFile(ctx.rootDir, uid, c.name);
    const config = generateContainerConfig(pod, c, {
      env,
      volumes: sc.volumes.paths,
      readOnlyVolumes: sc.volumes.readOnly,
      subPaths,
      imageRef,
      restartCount,
      type: ephemeral ? 'ephemeral' : init ? 'init' : 'regular',
      ...(ephemeral?.targetContainerId ? { targetContainerId: ephemeral.targetContainerId } : {}),
      etcHostsPath: etcHosts,
      terminationMessagePath: tmFile,
      memoryCapacity: capacity.memoryBytes,
      instance: kletInstance(ctx.rootDir, ctx.nodeName),
      seccompProfileRoot: seccompProfileRoot(ctx.rootDir),
      seccompDefault: ctx.seccompDefault === true,
    });
    const created = await ctx.cri.createContainer(
      { podSandboxId: sc.sandboxId, config, sandboxConfig: sc.sandboxConfig },
      { signal: ctx.signal },
    );
    containerId = created.containerId;
    ctx.onEvent?.(podEvents.created(pod, c.name, containerId, init));
  } catch (err) {
    // Retried after the pod worker's error back-off (the kubelet's backOffPeriod, 10 s): a missing ConfigMap or Secret may appear.
    if (err instanceof ContainerConfigError || err instanceof SubPathError) return fail('CreateContainerConfigError', err.message, CONFIG_ERROR_RETRY_MS);
    // klet stopping mid-call is not the container's failure: nothing is recorded.
    if (ctx.signal?.aborted) throw err;
    // Retried after the pod worker's back-off for a failed sync (backOffPeriod), not at every poll.
    return fail('CreateContainerError', errorMessage(err), CONFIG_ERROR_RETRY_MS, runtimeCode(err));
  }
  try {
    await ctx.cri.startContainer({ containerId }, { signal: ctx.signal });
  } catch (err) {
    if (ctx.signal?.aborted) throw err;
    return fail('RunContainerError', errorMessage(err), undefined, runtimeCode(err));
  }
  // What it runs with now (SetActuatedResources after CreateContainer): an in-place resize starts from it.
  if (ctx.resize !== undefined) cstate.actuated = c.resources ? JSON.parse(JSON.stringify(c.resources)) : {};
  ctx.onEvent?.(podEvents.started(pod, c.name, containerId, init, restartCount));
  if (c.lifecycle?.postStart) {
    try {
      await runHandler(ctx.cri, {
        pod,
        container: c,
        containerId,
        podIP: sc.podIPs[0] ?? '',
        handler: c.lifecycle.postStart,
        timeoutMs: 120_000,
        signal: ctx.signal,
      });
    } catch (err) {
      // A failed postStart hook kills the container, as the kubelet does; the restart policy decides what next.
      const message = `PostStartHook failed: ${errorMessage(err)}`;
      await killContainer(ctx, pod, { id: containerId, name: c.name }, gracePeriod(pod), 'FailedPostStartHook');
      return fail('PostStartHookError', message);
    }
  }
  delete cstate.reason;
  delete cstate.message;
  sc.started.push(containerId);
  return null;
}

/** Start these of spec.ephemeralContainers in the sandbox of `sc`; the failures. */
async function startEphemeralContainers(ctx: SyncContext, sc: StartContext, status: RuntimePodStatus, indexes: readonly number[]): Promise<SyncPodResult['failures']> {
  const failures: SyncPodResult['failures'] = [];
  const ephemerals = sc.pod.spec?.ephemeralContainers ?? [];
  for (const idx of indexes) {
    const c = ephemerals[idx]!;
    // targetContainerName: the running container's process namespace (the runtime's NamespaceMode TARGET).
    const target = c.targetContainerName ? status.containers.find((x) => x.name === c.targetContainerName && x.state === 'running' && x.sandboxId === sc.sandboxId) : undefined;
    const f = await startContainer(ctx, sc, c as V1Container, status, false, target ? { targetContainerId: target.id } : {});
    if (f) failures.push({ container: c.name, ...f });
  }
  return failures;
}

/**
 * Start the pod's ephemeral containers that never ran, in its running
 * sandbox, and nothing else (`klet debug`, beside or without a running sync:
 * no other container of the pod is touched). The pod's volumes are mounted
 * only when a debug container mounts one. Errors when the pod has no ready
 * sandbox; a container that fails to start is in the failures.
 */
export async function startDebugContainers(ctx: SyncContext, pod: V1Pod): Promise<{ started: string[]; failures: SyncPodResult['failures'] }> {
  const md = pod.metadata ?? {};
  const uid = md.uid ?? '';
  const status = await getRuntimePodStatus(ctx.cri, { uid, name: md.name ?? '', namespace: md.namespace ?? 'default' }, { signal: ctx.signal, owner: instanceSelector(ctx) });
  const sandbox = status.sandboxes.find((sb) => sb.ready);
  if (sandbox === undefined) throw new KletError(`pod ${podKey(pod)} has no running sandbox`);
  const ephemerals = pod.spec?.ephemeralContainers ?? [];
  const indexes = ephemerals.flatMap((c, i) => (findContainerStatus(status, c.name) === undefined ? [i] : []));
  let volumes: MountedVolumes = { paths: new Map(), readOnly: new Set() };
  if (indexes.some((i) => (ephemerals[i]!.volumeMounts ?? []).length > 0)) {
    const manager = ctx.volumes ?? new VolumeManager({ rootDir: ctx.rootDir, nodeName: ctx.nodeName, objects: () => localObjectSource(ctx.objects) });
    volumes = await manager.mountPod(pod, ctx.signal);
  }
  // The sandbox's config as its sync made it (the /etc/hosts each container mounts is written at its start).
  const sandboxConfig = generatePodSandboxConfig(pod, {
    attempt: sandbox.attempt,
    logDirectory: podLogDirOf(pod, ctx.logRoot),
    ...(await sandboxDNS(ctx, pod)),
    instance: kletInstance(ctx.rootDir, ctx.nodeName),
    seccompProfileRoot: seccompProfileRoot(ctx.rootDir),
  });
  const podIPs = pod.spec?.hostNetwork ? nodeHostIPs(ctx) : [sandbox.ip, ...sandbox.additionalIps].filter((x) => x !== '');
  const state = await readSyncState(ctx.rootDir, uid);
  const sc: StartContext = { pod, sandboxId: sandbox.id, sandboxConfig, podIPs, volumes, state, started: [] };
  const failures = await startEphemeralContainers(ctx, sc, status, indexes);
  return { started: sc.started, failures };
}

/** The kubelet's updatedPodResizeCondition: a new reason is a transition. */
function resizeCondition(prev: ResizeCondition | undefined, reason: string, message: string, generation: number | undefined, now: number): ResizeCondition {
  const at = new Date(now).toISOString();
  return {
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    lastProbeTime: at,
    lastTransitionTime: prev === undefined || (prev.reason ?? '') !== reason ? at : prev.lastTransitionTime,
  };
}

/** The node's other active pods with the resources allocated to them (getAllocatedPods). */
async function allocatedPodsBeside(ctx: SyncContext, uid: string): Promise<V1Pod[]> {
  const out: V1Pod[] = [];
  for (const { pod: p } of await activePods(ctx, uid)) out.push(podWithAllocation(p, (await readSyncState(ctx.rootDir, p.metadata?.uid ?? '')).allocated).pod);
  return out;
}

/**
 * The allocation manager's part of a sync: a pod's resources are allocated
 * when it is first seen (AddPod); a spec asking for others is a resize,
 * allocated when it fits (PodResizeInProgress) or left pending, Deferred or
 * Infeasible (PodResizePending), re-examined at each sync. Returns the pod
 * with its allocated resources, and whether the state changed (it is then
 * written before anything acts on it).
 */
async function allocateResources(ctx: SyncContext, pod: V1Pod, state: PodSyncState, status: RuntimePodStatus): Promise<{ pod: V1Pod; changed: boolean }> {
  let changed = false;
  const now = ctx.now?.() ?? Date.now();
  if (state.allocated === undefined) {
    state.allocated = allocationFromPod(pod);
    // Containers already running (started before klet kept allocations) run with them.
    for (const [name, r] of Object.entries(state.allocated)) {
      if (findContainerStatus(status, name)?.state === 'running') (state.containers[name] ??= {}).actuated ??= r;
    }
    changed = true;
  }
  const resize = (state.resize ??= {});
  if (podWithAllocation(pod, state.allocated).changed) {
    const uid = pod.metadata?.uid ?? '';
    const decision = decideResize({ pod, allocation: state.allocated, allocatable: ctx.resize!.allocatable, others: await allocatedPodsBeside(ctx, uid) });
    const generation = pod.metadata?.generation;
    if (decision.kind === 'allocate') {
      state.allocated = allocationFromPod(pod);
      delete resize.pending;
      resize.inProgress = resizeCondition(undefined, '', '', generation, now);
      log.info(`pod ${podKey(pod)}: resize allocated`);
      changed = true;
    } else if (decision.kind === 'pending') {
      const p = resize.pending;
      if (p === undefined || p.reason !== decision.reason || p.message !== decision.message || p.observedGeneration !== generation) {
        resize.pending = resizeCondition(p, decision.reason, decision.message, generation, now);
        log.info(`pod ${podKey(pod)}: resize ${decision.reason}: ${decision.message}`);
        changed = true;
      }
    }
  } else if (resize.pending !== undefined) {
    delete resize.pending;
    changed = true;
  }
  ctx.onResizePending?.(resize.pending?.reason);
  return { pod: podWithAllocation(pod, state.allocated).pod, changed };
}

/** The pod with the resources its containers run with (actuated; allocated for those with no record): its cgroup's current settings. */
function actuatedPod(pod: V1Pod, state: PodSyncState): V1Pod {
  const actual: Record<string, V1ResourceRequirements> = {};
  for (const [name, c] of Object.entries(state.containers)) if (c.actuated !== undefined) actual[name] = c.actuated;
  return podWithAllocation(pod, actual).pod;
}

/**
 * doPodResizeAction: the pod cgroup and the running containers
 * (UpdateContainerResources) get the allocated resources, memory then CPU,
 * growing limits on the pod cgroup first and shrinking ones last. A failure
 * is PodResizeInProgress's Error, retried at the next sync.
 */
async function doPodResize(ctx: SyncContext, pod: V1Pod, actions: PodActions, state: PodSyncState): Promise<SyncPodResult['failures'][number] | null> {
  const updates = actions.containersToUpdate ?? { cpu: [], memory: [] };
  if (updates.cpu.length === 0 && updates.memory.length === 0 && actions.updatePodResources !== true) return null;
  const cg = ctx.cgroups;
  const desired = cg?.podConfig(pod) ?? {};
  const current = cg?.podConfig(actuatedPod(pod, state)) ?? {};
  const specs = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const memoryCapacity = (ctx.cache?.capacity() ?? nodeCapacity()).memoryBytes;
  try {
    for (const step of resizeSteps(current, desired, updates, actions.updatePodResources === true)) {
      if (step.kind === 'pod') {
        const rc = podStepConfig(step, desired);
        if (cg !== undefined && rc !== null) await cg.setPodConfig(pod, rc);
        continue;
      }
      for (const u of step.containers) {
        const spec = specs.find((c) => c.name === u.name);
        if (spec === undefined) continue;
        const cstate = (state.containers[u.name] ??= {});
        const resources = mixResources(cstate.actuated, spec.resources, step.resource);
        await ctx.cri.updateContainerResources(
          { containerId: u.id, linux: linuxContainerResources(pod, { ...spec, resources }, memoryCapacity) },
          { signal: ctx.signal },
        );
        cstate.actuated = resources;
      }
    }
  } catch (err) {
    if (ctx.signal?.aborted) throw err;
    const message = errorMessage(err);
    log.warn(`resize of pod ${podKey(pod)} failed: ${message}`);
    const resize = (state.resize ??= {});
    resize.inProgress = resizeCondition(resize.inProgress, 'Error', message, resize.inProgress?.observedGeneration ?? pod.metadata?.generation, ctx.now?.() ?? Date.now());
    return { container: '', reason: 'ResizePodInPlaceError', message, retryInMs: CONFIG_ERROR_RETRY_MS };
  }
  return null;
}

/**
 * CheckPodResizeInProgress: a resize is in progress while a running
 * container's actuated resources differ from its allocated ones; once none
 * does, the condition goes and ResizeCompleted is recorded. True when the
 * state changed.
 */
function checkResizeInProgress(ctx: SyncContext, pod: V1Pod, status: RuntimePodStatus, state: PodSyncState): boolean {
  const resizable = [...(pod.spec?.initContainers ?? []).filter((c) => isRestartableInit(c)), ...(pod.spec?.containers ?? [])];
  const inProgress = resizable.some((c) => {
    if (findContainerStatus(status, c.name)?.state !== 'running') return false;
    const a = containerResources(state.containers[c.name]?.actuated);
    const b = containerResources(c.resources);
    return a.cpuRequest !== b.cpuRequest || a.cpuLimit !== b.cpuLimit || a.memoryRequest !== b.memoryRequest || a.memoryLimit !== b.memoryLimit;
  });
  const resize = (state.resize ??= {});
  if (inProgress) {
    if (resize.inProgress !== undefined) return false;
    resize.inProgress = resizeCondition(undefined, '', '', pod.metadata?.generation, ctx.now?.() ?? Date.now());
    return true;
  }
  if (resize.inProgress === undefined) return false;
  delete resize.inProgress;
  ctx.onEvent?.(podEvents.resizeCompleted(pod, resizeCompletedMessage(pod)));
  return true;
}

/**
 * One sync of one pod: read the runtime's state, plan, execute. Returns the
 * plan and the runtime state it was computed from (before execution).
 */
export async function syncPod(
  ctx: SyncContext,
  pod: V1Pod,
  opts: {
    startTime?: number;
    /**
     * The pod's runtime status, when the caller has just read it (runonce
     * reads every pod's with one list of each kind, instead of two filtered
     * lists per pod); read here otherwise.
     */
    status?: RuntimePodStatus;
  } = {},
): Promise<SyncPodResult> {
  const md = pod.metadata ?? {};
  const uid = md.uid ?? '';
  const status =
    opts.status ??
    (await getRuntimePodStatus(
      ctx.cri,
      { uid, name: md.name ?? '', namespace: md.namespace ?? 'default' },
      { signal: ctx.signal, owner: instanceSelector(ctx) },
    ));
  const failures: SyncPodResult['failures'] = [];
  const state = await readSyncState(ctx.rootDir, uid);
  const idle = { killPod: false, createSandbox: false, sandboxId: null, attempt: 0, initContainersToStart: [], containersToStart: [], containersToKill: [] };
  if (state.rejected === true) return { actions: idle, status, failures, rejected: true };
  // Admission, before anything of the pod exists: the kubelet's sysctl handler, then its NodePorts predicate.
  if (status.sandboxes.length === 0 && status.containers.length === 0) {
    const sysctl = ctx.sysctls === undefined ? null : admitSysctls(pod, ctx.sysctls);
    let rejection: { reason: string; message: string } | null = sysctl === null ? null : { reason: sysctl.reason, message: `Pod was rejected: ${sysctl.message}` };
    // The predicates, against the pods admitted before it: NodePorts, then (static pods: API pods were admitted by their source) resources.
    const resources = ctx.allocatable !== undefined && isStaticPod(pod);
    if (rejection === null && (podHostPorts(pod).length > 0 || resources)) {
      const active = await activePods(ctx, uid);
      rejection = admitHostPorts(pod, active.map((a) => a.pod));
      if (rejection === null && resources && ctx.allocatable !== undefined) {
        const r = admitCriticalResources(pod, resourceHolders(active, ctx.allocatable), ctx.allocatable);
        if (r?.preempt !== undefined) log.warn(`pod ${md.namespace ?? 'default'}/${md.name ?? ''}: the node lacks ${r.preempt.map((l) => `${l.resource} ${l.quantity}`).join(', ')} for it; the kubelet would preempt other pods, klet admits it without`);
        else if (r !== null) rejection = r;
      }
    }
    if (rejection !== null) {
      Object.assign(state, { rejected: true, reason: rejection.reason, message: rejection.message });
      await writeSyncState(ctx.rootDir, uid, state);
      ctx.onEvent?.(podEvents.rejected(pod, rejection.reason, rejection.message));
      return { actions: idle, status, failures, rejected: true };
    }
  }

  // Evicted by the eviction manager (node pressure, or an emptyDir over its sizeLimit): killed and Failed.
  if (state.reason === 'Evicted') {
    await killPod(ctx, pod, status, state.evictionGracePeriodSeconds !== undefined ? { gracePeriodSeconds: state.evictionGracePeriodSeconds } : {});
    const noop = { killPod: true, createSandbox: false, sandboxId: null, attempt: 0, initContainersToStart: [], containersToStart: [], containersToKill: [] };
    return { actions: noop, status, failures, deadlineExceeded: true };
  }

  // activeDeadlineSeconds: a pod active longer than its deadline is killed and Failed.
  const deadline = pod.spec?.activeDeadlineSeconds;
  let deadlineInMs: number | undefined;
  if (deadline !== undefined && opts.startTime !== undefined) {
    const now = ctx.now?.() ?? Date.now();
    deadlineInMs = opts.startTime + deadline * 1000 - now;
    if (deadlineInMs <= 0 || state.reason === 'DeadlineExceeded') {
      await killPod(ctx, pod, status);
      state.reason = 'DeadlineExceeded';
      state.message = DEADLINE_EXCEEDED_MESSAGE;
      await writeSyncState(ctx.rootDir, uid, state);
      const noop = { killPod: true, createSandbox: false, sandboxId: null, attempt: 0, initContainersToStart: [], containersToStart: [], containersToKill: [] };
      return { actions: noop, status, failures, deadlineExceeded: true };
    }
  }
  // In-place resize (API pods): admit a changed spec's resources, then run the pod with what is allocated.
  const resizable = ctx.resize !== undefined && pod.metadata?.annotations?.['kubernetes.io/config.source'] === 'api';
  let resizeStateChanged = false;
  if (resizable) {
    const r = await allocateResources(ctx, pod, state, status);
    pod = r.pod;
    resizeStateChanged = r.changed;
  }
  const actuated: ActuatedResources | undefined = resizable ? (name) => state.containers[name]?.actuated : undefined;
  const actions = computePodActions(pod, status, ctx.probes, actuated);
  // Nothing to change (the common resync of a healthy pod): touch no file but a changed resize state.
  if (isNoop(actions)) {
    if (resizable && checkResizeInProgress(ctx, pod, status, state)) resizeStateChanged = true;
    if (resizeStateChanged) await writeSyncState(ctx.rootDir, uid, state);
    return { actions, status, failures, requeueAfterMs: deadlineInMs };
  }

  // Wait for the pod's volumes before anything starts (the kubelet's WaitForAttachAndMount):
  // on failure nothing is created and the pod stays ContainerCreating.
  let volumes: MountedVolumes = { paths: new Map(), readOnly: new Set() };
  if (actions.createSandbox || actions.initContainersToStart.length > 0 || actions.containersToStart.length > 0 || (actions.ephemeralContainersToStart?.length ?? 0) > 0) {
    const manager = ctx.volumes ?? new VolumeManager({ rootDir: ctx.rootDir, nodeName: ctx.nodeName, objects: () => localObjectSource(ctx.objects) });
    try {
      volumes = await manager.mountPod(pod, ctx.signal);
    } catch (err) {
      if (!(err instanceof VolumeMountError)) throw err;
      for (const message of err.volumeMessages()) ctx.onEvent?.(podEvents.failedMount(pod, message));
      ctx.onEvent?.(podEvents.failedMount(pod, `Unable to attach or mount volumes: ${err.message}`));
      const retryInMs = manager instanceof VolumeManager ? manager.retryInMs(uid) : undefined;
      state.reason = 'FailedMount';
      state.message = err.message;
      await writeSyncState(ctx.rootDir, uid, state).catch(() => undefined);
      return { actions, status, failures, requeueAfterMs: retryInMs ?? 1000, mountFailed: err.message };
    }
    if (state.reason === 'FailedMount') {
      delete state.reason;
      delete state.message;
    }
  }

  if (actions.killPod) {
    await killPod(ctx, pod, status);
    if (!actions.createSandbox) return { actions, status, failures };
  }
  for (const k of actions.containersToKill) {
    await killContainer(ctx, pod, k, k.gracePeriodSeconds ?? gracePeriod(pod), k.message);
  }

  let sandboxId = actions.sandboxId;
  let podIPs: string[];
  let newSandbox: PodSandboxStatus | undefined;
  const logDirectory = podLogDirOf(pod, ctx.logRoot);
  // The kubelet's CreatePodSandboxError: recorded for status, a
  // FailedCreatePodSandBox event, and retried after a back-off.
  const sandboxFailed = async (cause: string): Promise<SyncPodResult> => {
    const message = `Failed to create pod sandbox: ${cause}`;
    const cfg = ctx.backoff ?? DEFAULT_BACKOFF;
    const backoffMs = state.sandboxError ? Math.min(state.sandboxError.backoffMs * 2, cfg.maxMs) : cfg.initialMs;
    state.sandboxError = { reason: CREATE_POD_SANDBOX_ERROR, message, backoffMs };
    await writeSyncState(ctx.rootDir, uid, state).catch((e) => log.debug(`sync state of ${podKey(pod)}: ${errorMessage(e)}`));
    ctx.onEvent?.(podEvents.sandboxFailed(pod, message));
    failures.push({ container: '', reason: CREATE_POD_SANDBOX_ERROR, message, retryInMs: backoffMs });
    return { actions, status, failures, requeueAfterMs: backoffMs, sandboxError: { reason: CREATE_POD_SANDBOX_ERROR, message } };
  };
  let dns: { dnsConfig: ResolvConf; hostname: string };
  try {
    dns = await sandboxDNS(ctx, pod);
  } catch (err) {
    if (!(err instanceof ResolvConfError || err instanceof PodHostnameError)) throw err;
    if (actions.createSandbox) return sandboxFailed(err.message);
    // The running sandbox stays; no container starts this sync (the kubelet's ConfigPodSandbox failure).
    const message = `GeneratePodSandboxConfig for pod "${podDesc(pod)}" failed: ${err.message}`;
    log.warn(message);
    failures.push({ container: '', reason: CONFIG_POD_SANDBOX_ERROR, message, retryInMs: CONFIG_ERROR_RETRY_MS });
    return { actions, status, failures, requeueAfterMs: CONFIG_ERROR_RETRY_MS };
  }
  // The pod's cgroup before its sandbox (the kubelet's pcm.EnsureExists in SyncPod); its settings follow the pod,
  // as its running containers have them (a resize changes them in its own order, below).
  const cgroupParent = ctx.cgroups ? await ctx.cgroups.ensurePod(actions.createSandbox || !resizable ? pod : actuatedPod(pod, state)) : '';
  const sandboxConfig = generatePodSandboxConfig(pod, {
    cgroupParent,
    attempt: actions.attempt,
    logDirectory,
    ...dns,
    instance: kletInstance(ctx.rootDir, ctx.nodeName),
    seccompProfileRoot: seccompProfileRoot(ctx.rootDir),
  });
  if (actions.createSandbox) {
    await fsp.mkdir(logDirectory, { recursive: true, mode: 0o755 });
    try {
      const res = await ctx.cri.runPodSandbox({ config: sandboxConfig }, { signal: ctx.signal });
      sandboxId = res.podSandboxId;
    } catch (err) {
      if (ctx.signal?.aborted) throw err;
      // The runtime's error as the kubelet prints it ("rpc error: code = … desc = …").
      return sandboxFailed(goStatusText(err));
    }
    if (state.sandboxError) delete state.sandboxError;
    const st = await ctx.cri.podSandboxStatus({ podSandboxId: sandboxId }, { signal: ctx.signal });
    newSandbox = st.status;
    const ip = st.status?.network?.ip ?? '';
    podIPs = [ip, ...(st.status?.network?.additionalIps ?? []).map((p) => p.ip)].filter((x) => x !== '');
    ctx.onEvent?.(podEvents.sandboxCreated(pod, sandboxId, ip));
    await removeOldSandboxes(ctx, status, sandboxId);
  } else {
    const sb = status.sandboxes[0];
    podIPs = sb ? [sb.ip, ...sb.additionalIps].filter((x) => x !== '') : [];
  }
  if (sandboxId === null) return { actions, status, failures };
  if (pod.spec?.hostNetwork) podIPs = nodeHostIPs(ctx);

  if (!pod.spec?.hostNetwork && podIPs.length > 0) state.podIPs = podIPs;
  const sc: StartContext = { pod, sandboxId, sandboxConfig, podIPs, volumes, state, started: [] };
  // After a new sandbox, earlier container statuses belong to the old one: restart counts continue.
  const inits = pod.spec?.initContainers ?? [];
  for (const idx of actions.initContainersToStart) {
    const c = inits[idx] as V1Container;
    const f = await startContainer(ctx, sc, c, status, true);
    if (f) {
      failures.push({ container: c.name, ...f });
      // A regular init container that failed to start blocks the rest.
      if (!isRestartableInit(c)) break;
    }
  }
  // Running containers resized in place, after the init containers and before the others start (SyncPod's step 7).
  if (resizable) {
    const resizeFailure = await doPodResize(ctx, pod, actions, state);
    if (resizeFailure !== null) failures.push(resizeFailure);
  }
  const containers = pod.spec?.containers ?? [];
  for (const idx of actions.containersToStart) {
    const c = containers[idx] as V1Container;
    const f = await startContainer(ctx, sc, c, status, false);
    if (f) failures.push({ container: c.name, ...f });
  }
  failures.push(...(await startEphemeralContainers(ctx, sc, status, actions.ephemeralContainersToStart ?? [])));
  if (resizable) checkResizeInProgress(ctx, pod, status, state);
  await writeSyncState(ctx.rootDir, uid, state).catch((err) => log.debug(`sync state of ${podKey(pod)}: ${errorMessage(err)}`));
  const retries = [...failures.map((f) => f.retryInMs), deadlineInMs].filter((x): x is number => x !== undefined && x > 0);
  const fresh = status.sandboxes.length === 0 && status.containers.length === 0;
  const created = fresh && newSandbox !== undefined && failures.length === 0 ? { sandbox: newSandbox, containerIds: sc.started } : undefined;
  return { actions, status, failures, requeueAfterMs: retries.length > 0 ? Math.min(...retries) : undefined, ...(created ? { created } : {}) };
}
