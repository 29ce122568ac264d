/**
 * CRI configs from a pod spec: generatePodSandboxConfig and
 * generateContainerConfig, as the kubelet builds them
 * (kuberuntime_sandbox.go, kuberuntime_container.go).
 */
import type { V1Container, V1Pod, V1SeccompProfile } from '@kubernetes/client-node';
import {
  MountPropagation,
  NamespaceMode,
  Protocol,
  SecurityProfile_ProfileType,
  type ContainerConfig,
  type DeepPartial,
  type Mount,
  type PodSandboxConfig,
  type PortMapping,
  type SecurityProfile,
} from '../cri/gen/api.js';
import path from 'node:path';
import { ContainerConfigError, expand, expandCommand, makeEnvironment, type EnvContext } from './env.js';
import { containerHash } from './hash.js';
import { containerAnnotations, containerLabels, podSandboxAnnotations, podSandboxLabels, type ContainerType } from './labels.js';
import { linuxContainerResources } from './resources.js';
import type { ResolvConf } from '../pod/dns.js';
import { containerLogPath } from '../logs/paths.js';

/** The kubelet's defaults for /proc and /sys paths hidden from unprivileged containers. */
export const DEFAULT_MASKED_PATHS = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
export const DEFAULT_READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

function protocol(p: string | undefined): Protocol {
  if (p === 'UDP') return Protocol.UDP;
  if (p === 'SCTP') return Protocol.SCTP;
  return Protocol.TCP;
}

function namespaceOptions(pod: V1Pod): { network: NamespaceMode; pid: NamespaceMode; ipc: NamespaceMode } {
  const s = pod.spec;
  return {
    network: s?.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
    pid: s?.hostPID ? NamespaceMode.NODE : s?.shareProcessNamespace ? NamespaceMode.POD : NamespaceMode.CONTAINER,
    ipc: s?.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
  };
}

/**
 * The CRI seccomp profile. A Localhost profile is resolved under
 * `<root-dir>/seccomp/` (the kubelet's seccomp profile root), as the kubelet
 * does: the runtime is given an absolute path, never a relative one.
 */
function seccomp(p: V1SeccompProfile | undefined, profileRoot: string, runtimeDefault = false): SecurityProfile | undefined {
  // None named: Unconfined, or RuntimeDefault with seccompDefault (the kubelet's fallbackToRuntimeDefault).
  if (!p) return { profileType: runtimeDefault ? SecurityProfile_ProfileType.RuntimeDefault : SecurityProfile_ProfileType.Unconfined, localhostRef: '' };
  if (p.type === 'RuntimeDefault') return { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' };
  if (p.type === 'Localhost') {
    return { profileType: SecurityProfile_ProfileType.Localhost, localhostRef: path.join(profileRoot, p.localhostProfile ?? '') };
  }
  return { profileType: SecurityProfile_ProfileType.Unconfined, localhostRef: '' };
}

/** The kubelet's seccomp profile root: `<root-dir>/seccomp`. */
export function seccompProfileRoot(rootDir: string): string {
  return path.join(path.resolve(rootDir), 'seccomp');
}

function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

export function generatePodSandboxConfig(
  pod: V1Pod,
  opts: {
    attempt: number;
    logDirectory: string;
    /** The pod's DNS config (dns.ts podDNSConfig). */
    dnsConfig: ResolvConf;
    /** The sandbox's hostname (dns.ts sandboxHostname): '' on the host network. */
    hostname: string;
    instance?: string;
    seccompProfileRoot: string;
    /** The pod's cgroup (cm/manager.ts), '' for the runtime's default. */
    cgroupParent?: string;
  },
): DeepPartial<PodSandboxConfig> {
  const md = pod.metadata ?? {};
  const psc = pod.spec?.securityContext;
  const portMappings: DeepPartial<PortMapping>[] = [];
  for (const c of allContainers(pod)) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      portMappings.push({ protocol: protocol(p.protocol), containerPort: p.containerPort, hostPort: p.hostPort, hostIp: p.hostIP ?? '' });
    }
  }
  return {
    metadata: { name: md.name ?? '', namespace: md.namespace ?? 'default', uid: md.uid ?? '', attempt: opts.attempt },
    hostname: opts.hostname,
    logDirectory: opts.logDirectory,
    dnsConfig: opts.dnsConfig,
    portMappings,
    labels: podSandboxLabels(pod, opts.instance),
    annotations: podSandboxAnnotations(pod),
    linux: {
      cgroupParent: opts.cgroupParent ?? '',
      sysctls: Object.fromEntries((psc?.sysctls ?? []).map((s) => [s.name, s.value])),
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        runAsUser: psc?.runAsUser !== undefined ? { value: BigInt(psc.runAsUser) } : undefined,
        runAsGroup: psc?.runAsGroup !== undefined ? { value: BigInt(psc.runAsGroup) } : undefined,
        supplementalGroups: [...(psc?.supplementalGroups ?? []), ...(psc?.fsGroup !== undefined ? [psc.fsGroup] : [])].map(BigInt),
        privileged: allContainers(pod).some((c) => c.securityContext?.privileged === true),
        // Always the runtime's default, whatever the pod names (the kubelet's generatePodSandboxLinuxConfig, since
        // kubernetes#84623): the pause process needs nothing more, and a least-privileged pod profile cannot break it.
        seccomp: { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' },
      },
    },
  };
}

export interface ContainerConfigContext {
  env: EnvContext;
  /** Volume name → host path, from the volume manager. */
  volumes: Map<string, string>;
  /** Volumes mounted read-only whatever the volumeMount says (configMap, secret, downwardAPI, projected). */
  readOnlyVolumes?: ReadonlySet<string>;
  /** volumeMounts index → host path prepared for its subPath (safe bind, see volume/subpath.ts). */
  subPaths?: ReadonlyMap<number, string>;
  /** The image ID (sha256:...) the container runs. */
  imageRef: string;
  restartCount: number;
  type: ContainerType;
  /** Host path of the pod's managed /etc/hosts, or null (host network). */
  etcHostsPath: string | null;
  /** Host path of this instance's termination-message file, or null. */
  terminationMessagePath: string | null;
  memoryCapacity: number;
  /** klet's owner label value (KLET_INSTANCE_LABEL). */
  instance?: string;
  /** Where Localhost seccomp profiles are found (seccompProfileRoot(rootDir)). */
  seccompProfileRoot: string;
  /** seccompDefault: RuntimeDefault when neither the container nor the pod names a profile. */
  seccompDefault?: boolean;
  /** An ephemeral container's targetContainerName, running: it joins that container's process namespace. */
  targetContainerId?: string;
}

function propagation(p: string | undefined): MountPropagation {
  if (p === 'HostToContainer') return MountPropagation.PROPAGATION_HOST_TO_CONTAINER;
  if (p === 'Bidirectional') return MountPropagation.PROPAGATION_BIDIRECTIONAL;
  return MountPropagation.PROPAGATION_PRIVATE;
}

/**
 * subPathExpr expansion (the kubelet's ExpandContainerVolumeMounts): a
 * reference to an undefined or empty variable is an error, never an empty
 * path segment (which would mount the whole volume).
 */
function expandSubPathExpr(expr: string, env: Map<string, string>): string {
  const missing = new Set<string>();
  const out = expand(expr, (n) => {
    const v = env.get(n);
    if (v === undefined || v === '') missing.add(n);
    return v ?? '';
  });
  if (missing.size > 0) throw new ContainerConfigError(`missing value for ${[...missing].sort().join(', ')}`);
  return out;
}

/** The container's subPath mounts with subPathExpr expanded: volumeMounts index → volume and relative path. */
export function containerSubPaths(c: V1Container, env: EnvContext): Map<number, { volume: string; subPath: string }> {
  const out = new Map<number, { volume: string; subPath: string }>();
  const mounts = c.volumeMounts ?? [];
  if (!mounts.some((vm) => vm.subPath || vm.subPathExpr)) return out;
  const envMap = new Map(makeEnvironment(c, env).map((e) => [e.key, e.value]));
  mounts.forEach((vm, i) => {
    const sub = vm.subPathExpr ? expandSubPathExpr(vm.subPathExpr, envMap) : vm.subPath;
    if (!sub) return;
    const norm = path.posix.normalize(sub);
    if (path.isAbsolute(sub) || norm === '..' || norm.startsWith('../')) {
      throw new ContainerConfigError(`subPath "${sub}" of volume "${vm.name}" escapes the volume`);
    }
    out.set(i, { volume: vm.name, subPath: norm });
  });
  return out;
}

function makeMounts(c: V1Container, ctx: ContainerConfigContext): DeepPartial<Mount>[] {
  const mounts: DeepPartial<Mount>[] = [];
  const subs = containerSubPaths(c, ctx.env);
  (c.volumeMounts ?? []).forEach((vm, i) => {
    const hostPath = ctx.volumes.get(vm.name);
    if (hostPath === undefined) throw new ContainerConfigError(`unable to find volume "${vm.name}" for container "${c.name}"`);
    const sub = subs.get(i);
    // Without a prepared bind (plans, unit tests) the path is only computed, never created.
    const src = sub === undefined ? hostPath : (ctx.subPaths?.get(i) ?? path.join(hostPath, sub.subPath));
    const readonly = vm.readOnly === true || ctx.readOnlyVolumes?.has(vm.name) === true;
    mounts.push({ containerPath: vm.mountPath, hostPath: src, readonly, propagation: propagation(vm.mountPropagation) });
  });
  const mounted = new Set(mounts.map((m) => m.containerPath));
  if (ctx.etcHostsPath !== null && !mounted.has('/etc/hosts')) {
    mounts.push({ containerPath: '/etc/hosts', hostPath: ctx.etcHostsPath, readonly: false, propagation: MountPropagation.PROPAGATION_PRIVATE });
  }
  const tmp = c.terminationMessagePath ?? '/dev/termination-log';
  if (ctx.terminationMessagePath !== null && tmp !== '' && !mounted.has(tmp)) {
    mounts.push({ containerPath: tmp, hostPath: ctx.terminationMessagePath, readonly: false, propagation: MountPropagation.PROPAGATION_PRIVATE });
  }
  return mounts;
}

function makeEnvPairs(ctx: ContainerConfigContext, c: V1Container): { key: string; value: string }[] {
  return makeEnvironment(c, ctx.env);
}

export function generateContainerConfig(pod: V1Pod, c: V1Container, ctx: ContainerConfigContext): DeepPartial<ContainerConfig> {
  const envs = makeEnvPairs(ctx, c);
  const { command, args } = expandCommand(c, envs);
  const sc = c.securityContext;
  const psc = pod.spec?.securityContext;
  const privileged = sc?.privileged === true;
  const runAsUser = sc?.runAsUser ?? psc?.runAsUser;
  const runAsGroup = sc?.runAsGroup ?? psc?.runAsGroup;
  const unmasked = sc?.procMount === 'Unmasked';
  return {
    metadata: { name: c.name, attempt: ctx.restartCount },
    image: { image: ctx.imageRef, userSpecifiedImage: c.image ?? '' },
    command,
    args,
    workingDir: c.workingDir ?? '',
    envs,
    mounts: makeMounts(c, ctx),
    labels: containerLabels(pod, c, ctx.instance),
    annotations: containerAnnotations(pod, c, { hash: containerHash(c), restartCount: ctx.restartCount, type: ctx.type }),
    logPath: containerLogPath(c.name, ctx.restartCount),
    stdin: c.stdin === true,
    stdinOnce: c.stdinOnce === true,
    tty: c.tty === true,
    linux: {
      resources: linuxContainerResources(pod, c, ctx.memoryCapacity),
      securityContext: {
        capabilities: { addCapabilities: sc?.capabilities?.add ?? [], dropCapabilities: sc?.capabilities?.drop ?? [] },
        privileged,
        namespaceOptions: ctx.targetContainerId ? { ...namespaceOptions(pod), pid: NamespaceMode.TARGET, targetId: ctx.targetContainerId } : namespaceOptions(pod),
        runAsUser: runAsUser !== undefined ? { value: BigInt(runAsUser) } : undefined,
        runAsGroup: runAsGroup !== undefined ? { value: BigInt(runAsGroup) } : undefined,
        readonlyRootfs: sc?.readOnlyRootFilesystem === true,
        supplementalGroups: [...(psc?.supplementalGroups ?? []), ...(psc?.fsGroup !== undefined ? [psc.fsGroup] : [])].map(BigInt),
        noNewPrivs: sc?.allowPrivilegeEscalation === false,
        maskedPaths: privileged || unmasked ? [] : DEFAULT_MASKED_PATHS,
        readonlyPaths: privileged || unmasked ? [] : DEFAULT_READONLY_PATHS,
        seccomp: seccomp(sc?.seccompProfile ?? psc?.seccompProfile, ctx.seccompProfileRoot, ctx.seccompDefault),
      },
    },
  };
}
