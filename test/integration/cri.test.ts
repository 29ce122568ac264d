/**
 * CriClient against a real containerd (1.6, CRI v1), one private instance.
 *
 * The point is wire compatibility: every message of proto/runtime/v1/api.proto
 * goes through containerd at least once, with non-default values in every
 * field we can check, so a wrong field number or type fails an assertion.
 * Requests are checked in two ways: through the fields the runtime echoes in
 * statuses, and through the `verbose` info, where containerd returns the
 * config it decoded as Go JSON with the upstream snake_case field names —
 * a field we encoded under the wrong number shows up under another name there,
 * or not at all.
 *
 * Tests run in order and share the objects they create.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { detectEventedSupport } from '../../src/lib/pleg/evented.js';
import {
  ContainerState,
  CriClient,
  CriCancelledError,
  CriDeadlineExceededError,
  CriError,
  CriNotFoundError,
  CriUnavailableError,
  CriUnimplementedError,
  MountPropagation,
  NamespaceMode,
  PodSandboxState,
  Protocol,
  SecurityProfile_ProfileType,
  type ContainerConfig,
  type DeepPartial,
  type PodSandboxConfig,
} from '../../src/lib/cri/index.js';

const execFileP = promisify(execFile);

const MiB = 1024n * 1024n;
/** Every CRI timestamp is ns since the epoch: far beyond 2^53, so it must be bigint. */
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

let rt: TestRuntime;
let cri: CriClient;
/** Host directories for mounts live outside rootDir: the shared bind mount must be gone before rt.stop() checks. */
let hostTmp: string;
let dataDir: string;
let workDir: string;
let logDir: string;
let sharedMounted = false;

const tag = `t${process.pid}`;
const cgroupParent = `/klet-cri-test-${process.pid}`;
const hostPort = 20_000 + Math.floor(Math.random() * 10_000);

/** Sandbox "main" (runs the containers), and "other" (only for list filters). */
let podId = '';
let otherPodId = '';
let appId = '';
let idleId = '';
let podCreatedAt = 0n;

function sandboxConfig(): DeepPartial<PodSandboxConfig> {
  return {
    metadata: { name: 'web', uid: `uid-${tag}`, namespace: 'cri-test', attempt: 2 },
    hostname: 'web-host',
    logDirectory: logDir,
    dnsConfig: { servers: ['10.96.0.10'], searches: ['cri-test.svc.cluster.local'], options: ['ndots:5'] },
    portMappings: [{ protocol: Protocol.UDP, containerPort: 5353, hostPort, hostIp: '127.0.0.1' }],
    labels: { suite: tag, role: 'main' },
    annotations: { 'klet.io/note': 'main sandbox' },
    linux: {
      cgroupParent,
      securityContext: {
        // network stays POD (0) so that CNI gives the sandbox an IP.
        namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.NODE },
        selinuxOptions: { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' },
        runAsUser: { value: 65534n },
        runAsGroup: { value: 65534n },
        readonlyRootfs: true,
        supplementalGroups: [1000n, 2000n],
        privileged: true,
        seccomp: { profileType: SecurityProfile_ProfileType.Unconfined },
        apparmor: { profileType: SecurityProfile_ProfileType.Unconfined },
      },
      sysctls: { 'net.ipv4.ip_unprivileged_port_start': '1024' },
      overhead: { cpuShares: 10n, memoryLimitInBytes: 8n * MiB },
      resources: { cpuPeriod: 100_000n, cpuQuota: 80_000n, cpuShares: 300n, memoryLimitInBytes: 160n * MiB },
    },
  };
}

/**
 * What containerd must report having decoded from sandboxConfig(): Go JSON,
 * so snake_case names, zero values omitted, enums and int64 as numbers.
 */
function sandboxConfigAsGoJson(): unknown {
  return {
    metadata: { name: 'web', uid: `uid-${tag}`, namespace: 'cri-test', attempt: 2 },
    hostname: 'web-host',
    log_directory: logDir,
    dns_config: { servers: ['10.96.0.10'], searches: ['cri-test.svc.cluster.local'], options: ['ndots:5'] },
    port_mappings: [{ protocol: 1, container_port: 5353, host_port: hostPort, host_ip: '127.0.0.1' }],
    labels: { suite: tag, role: 'main' },
    annotations: { 'klet.io/note': 'main sandbox' },
    linux: {
      cgroup_parent: cgroupParent,
      security_context: {
        namespace_options: { pid: 1, ipc: 2 },
        selinux_options: { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' },
        run_as_user: { value: 65534 },
        run_as_group: { value: 65534 },
        readonly_rootfs: true,
        supplemental_groups: [1000, 2000],
        privileged: true,
        seccomp: { profile_type: 1 },
        apparmor: { profile_type: 1 },
      },
      sysctls: { 'net.ipv4.ip_unprivileged_port_start': '1024' },
      overhead: { cpu_shares: 10, memory_limit_in_bytes: 8 * 1024 * 1024 },
      resources: { cpu_period: 100_000, cpu_quota: 80_000, cpu_shares: 300, memory_limit_in_bytes: 160 * 1024 * 1024 },
    },
  };
}

/** Exits 3 on SIGTERM, so StopContainer yields a known exit code. */
const APP_SCRIPT = "trap 'exit 3' TERM; while :; do sleep 1; done";

function appConfig(): DeepPartial<ContainerConfig> {
  return {
    metadata: { name: 'app', attempt: 1 },
    image: { image: rt.images.busybox, annotations: { 'klet.io/image-note': 'x' } },
    command: ['sh', '-c'],
    args: [APP_SCRIPT],
    workingDir: '/work',
    envs: [
      { key: 'GREETING', value: 'hello' },
      { key: 'SECOND', value: 'two words' },
    ],
    mounts: [
      {
        containerPath: '/data',
        hostPath: dataDir,
        readonly: true,
        selinuxRelabel: true,
        propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
      },
      { containerPath: '/work', hostPath: workDir },
    ],
    devices: [{ containerPath: '/dev/klet-null', hostPath: '/dev/null', permissions: 'rwm' }],
    labels: { suite: tag, role: 'app' },
    annotations: { 'klet.io/container-note': 'app container' },
    logPath: 'app/1.log',
    stdin: true,
    stdinOnce: true,
    tty: true,
    linux: {
      resources: {
        cpuPeriod: 100_000n,
        cpuQuota: 50_000n,
        cpuShares: 256n,
        memoryLimitInBytes: 64n * MiB,
        oomScoreAdj: 500n,
        cpusetCpus: '0',
        cpusetMems: '0',
        hugepageLimits: [{ pageSize: '2MB', limit: 4n * MiB }],
        memorySwapLimitInBytes: 64n * MiB,
      },
      securityContext: {
        capabilities: { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['MKNOD'] },
        namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.NODE },
        selinuxOptions: { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' },
        runAsUser: { value: 1000n },
        runAsGroup: { value: 1000n },
        readonlyRootfs: true,
        supplementalGroups: [3000n],
        noNewPrivs: true,
        maskedPaths: ['/proc/kcore'],
        readonlyPaths: ['/proc/sys'],
        seccomp: { profileType: SecurityProfile_ProfileType.Unconfined },
        apparmor: { profileType: SecurityProfile_ProfileType.Unconfined },
      },
    },
  };
}

function appConfigAsGoJson(): unknown {
  return {
    metadata: { name: 'app', attempt: 1 },
    image: { image: rt.images.busybox, annotations: { 'klet.io/image-note': 'x' } },
    command: ['sh', '-c'],
    args: [APP_SCRIPT],
    working_dir: '/work',
    envs: [
      { key: 'GREETING', value: 'hello' },
      { key: 'SECOND', value: 'two words' },
    ],
    mounts: [
      { container_path: '/data', host_path: dataDir, readonly: true, selinux_relabel: true, propagation: 1 },
      { container_path: '/work', host_path: workDir },
    ],
    devices: [{ container_path: '/dev/klet-null', host_path: '/dev/null', permissions: 'rwm' }],
    labels: { suite: tag, role: 'app' },
    annotations: { 'klet.io/container-note': 'app container' },
    log_path: 'app/1.log',
    stdin: true,
    stdin_once: true,
    tty: true,
    linux: {
      resources: {
        cpu_period: 100_000,
        cpu_quota: 50_000,
        cpu_shares: 256,
        memory_limit_in_bytes: 64 * 1024 * 1024,
        oom_score_adj: 500,
        cpuset_cpus: '0',
        cpuset_mems: '0',
        hugepage_limits: [{ page_size: '2MB', limit: 4 * 1024 * 1024 }],
        memory_swap_limit_in_bytes: 64 * 1024 * 1024,
      },
      security_context: {
        capabilities: { add_capabilities: ['NET_ADMIN'], drop_capabilities: ['MKNOD'] },
        namespace_options: { pid: 1, ipc: 2 },
        selinux_options: { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' },
        run_as_user: { value: 1000 },
        run_as_group: { value: 1000 },
        readonly_rootfs: true,
        supplemental_groups: [3000],
        no_new_privs: true,
        masked_paths: ['/proc/kcore'],
        readonly_paths: ['/proc/sys'],
        seccomp: { profile_type: 1 },
        apparmor: { profile_type: 1 },
      },
    },
  };
}

/** The `config` containerd echoes in a verbose status's info["info"] JSON. */
function decodedConfig(info: Record<string, string>): unknown {
  expect(info.info, 'verbose status carries info["info"]').toBeDefined();
  return (JSON.parse(info.info ?? '{}') as { config?: unknown }).config;
}

async function sh(cmd: string, args: string[]): Promise<void> {
  await execFileP(cmd, args);
}

/** Best effort: remove whatever a failed run left, so rt.stop() can tear down. */
async function cleanupLeftovers(): Promise<void> {
  if (!cri) return;
  const containers = await cri.listContainers().catch(() => ({ containers: [] }));
  for (const c of containers.containers) {
    await cri.stopContainer({ containerId: c.id, timeout: 0n }).catch(() => undefined);
    await cri.removeContainer({ containerId: c.id }).catch(() => undefined);
  }
  const pods = await cri.listPodSandbox().catch(() => ({ items: [] }));
  for (const p of pods.items) {
    await cri.stopPodSandbox({ podSandboxId: p.id }).catch(() => undefined);
    await cri.removePodSandbox({ podSandboxId: p.id }).catch(() => undefined);
  }
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint);
  logDir = path.join(rt.rootDir, 'pod-logs');
  fs.mkdirSync(logDir, { recursive: true });
  hostTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-cri-host-'));
  dataDir = path.join(hostTmp, 'data');
  workDir = path.join(hostTmp, 'work');
  fs.mkdirSync(dataDir);
  fs.mkdirSync(workDir);
  fs.chmodSync(workDir, 0o777);
  fs.writeFileSync(path.join(dataDir, 'hello'), 'from-host');
  // HOST_TO_CONTAINER propagation needs a shared (or slave) source mount.
  await sh('mount', ['--bind', dataDir, dataDir]);
  sharedMounted = true;
  await sh('mount', ['--make-shared', dataDir]);
});

afterAll(async () => {
  await cleanupLeftovers();
  cri?.close();
  if (sharedMounted) await sh('umount', ['-l', dataDir]).catch(() => undefined);
  if (hostTmp) fs.rmSync(hostTmp, { recursive: true, force: true });
  // cgroupfs leaves the (empty) parent directories behind.
  for (const controller of fs.existsSync('/sys/fs/cgroup') ? fs.readdirSync('/sys/fs/cgroup') : []) {
    try {
      fs.rmdirSync(path.join('/sys/fs/cgroup', controller, cgroupParent));
    } catch {
      // absent or not a hierarchy
    }
  }
  await rt?.stop();
});

describe('CRI v1 against containerd', () => {
  it('Version', async () => {
    const v = await cri.version({ version: '0.1.0' });
    expect(v).toMatchObject({ version: '0.1.0', runtimeName: 'containerd', runtimeApiVersion: 'v1' });
    // containerd's own version word: 1.6.20~ds1 (Debian), v2.4.2 (upstream 2.x, with the v).
    expect(v.runtimeVersion).toBe(rt.containerd.version.text);
    expect(v.runtimeVersion).toMatch(/^v?\d+\.\d+/);
  });

  it('Status', async () => {
    const quiet = await cri.status({});
    expect(quiet.info).toEqual({});
    const s = await cri.status({ verbose: true });
    const conditions = Object.fromEntries((s.status?.conditions ?? []).map((c) => [c.type, c.status]));
    expect(conditions).toMatchObject({ RuntimeReady: true, NetworkReady: true });
    if (rt.containerd.version.major >= 2) {
      // containerd 2.x adds a third condition, false on these cgroup v1 hosts
      // (io.containerd.deprecation/cgroup-v1); like the kubelet, klet reads only the first two.
      expect(Object.keys(conditions).sort()).toEqual(['ContainerdHasNoDeprecationWarnings', 'NetworkReady', 'RuntimeReady']);
    } else {
      expect(conditions).toEqual({ RuntimeReady: true, NetworkReady: true });
    }
    const config = JSON.parse(s.info.config ?? 'null') as Record<string, unknown>;
    if (rt.containerd.version.major >= 2) {
      // containerd 2.x reports only the runtime plugin's config; the sandbox image is the images plugin's pinned image.
      expect(config).toMatchObject({ containerdEndpoint: rt.socketPath, restrictOOMScoreAdj: true });
      expect((await cri.imageStatus({ image: { image: rt.images.pause } })).image?.pinned).toBe(true);
    } else {
      expect(config).toMatchObject({ sandboxImage: rt.images.pause, restrictOOMScoreAdj: true });
    }
  });

  it('RunPodSandbox, then PodSandboxStatus returns what was set', async () => {
    const before = BigInt(Date.now()) * 1_000_000n;
    ({ podSandboxId: podId } = await cri.runPodSandbox({ config: sandboxConfig() }));
    expect(podId).toMatch(/^[0-9a-f]{64}$/);

    const quiet = await cri.podSandboxStatus({ podSandboxId: podId });
    if (rt.containerd.version.major >= 2) {
      // containerd 2.x answers a non-verbose status with an `info` of empty fields.
      expect(Object.keys(quiet.info)).toEqual(['info']);
      expect(JSON.parse(quiet.info.info ?? '{}')).toMatchObject({ pid: 0, config: null, runtimeSpec: null });
    } else {
      expect(quiet.info).toEqual({});
    }

    const { status, info } = await cri.podSandboxStatus({ podSandboxId: podId, verbose: true });
    expect(status).toBeDefined();
    if (!status) return;
    expect(status.id).toBe(podId);
    expect(status.metadata).toEqual({ name: 'web', uid: `uid-${tag}`, namespace: 'cri-test', attempt: 2 });
    expect(status.state).toBe(PodSandboxState.SANDBOX_READY);
    expect(status.labels).toEqual({ suite: tag, role: 'main' });
    expect(status.annotations).toEqual({ 'klet.io/note': 'main sandbox' });
    expect(status.network?.ip).toMatch(/^10\.89\.\d+\.\d+$/);
    expect(status.network?.additionalIps).toEqual([]);
    expect(status.linux?.namespaces?.options).toEqual({
      network: NamespaceMode.POD,
      pid: NamespaceMode.CONTAINER,
      ipc: NamespaceMode.NODE,
      targetId: '',
    });
    expect(typeof status.createdAt).toBe('bigint');
    expect(status.createdAt > MAX_SAFE).toBe(true);
    expect(status.createdAt >= before - 5_000_000_000n).toBe(true);
    podCreatedAt = status.createdAt;
    const want = sandboxConfigAsGoJson() as { linux: { sysctls: Record<string, string> } };
    if (rt.containerd.version.major >= 2) {
      // containerd 2.x's enable_unprivileged_icmp (on by default) adds ping_group_range to the
      // sandbox's sysctls (enable_unprivileged_ports would set ip_unprivileged_port_start, set here).
      want.linux.sysctls['net.ipv4.ping_group_range'] = '0 2147483647';
    }
    expect(decodedConfig(info)).toEqual(want);
  });

  it('ListPodSandbox with id, label selector and state filters', async () => {
    ({ podSandboxId: otherPodId } = await cri.runPodSandbox({
      config: {
        metadata: { name: 'other', uid: `uid-other-${tag}`, namespace: 'cri-test', attempt: 0 },
        logDirectory: logDir,
        labels: { suite: tag, role: 'other' },
        linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
      },
    }));
    await cri.stopPodSandbox({ podSandboxId: otherPodId });

    const ids = async (filter: Parameters<CriClient['listPodSandbox']>[0]): Promise<string[]> =>
      (await cri.listPodSandbox(filter)).items.map((p) => p.id).sort();

    expect(await ids({})).toEqual([podId, otherPodId].sort());
    expect(await ids({ filter: { labelSelector: { suite: tag } } })).toEqual([podId, otherPodId].sort());
    expect(await ids({ filter: { labelSelector: { suite: tag, role: 'main' } } })).toEqual([podId]);
    expect(await ids({ filter: { labelSelector: { suite: 'nope' } } })).toEqual([]);
    expect(await ids({ filter: { state: { state: PodSandboxState.SANDBOX_READY } } })).toEqual([podId]);
    expect(await ids({ filter: { state: { state: PodSandboxState.SANDBOX_NOTREADY } } })).toEqual([otherPodId]);
    expect(await ids({ filter: { id: otherPodId } })).toEqual([otherPodId]);

    const [item] = (await cri.listPodSandbox({ filter: { id: podId } })).items;
    expect(item).toEqual({
      id: podId,
      metadata: { name: 'web', uid: `uid-${tag}`, namespace: 'cri-test', attempt: 2 },
      state: PodSandboxState.SANDBOX_READY,
      createdAt: podCreatedAt,
      labels: { suite: tag, role: 'main' },
      annotations: { 'klet.io/note': 'main sandbox' },
      runtimeHandler: '',
    });
  });

  it('CreateContainer, then ContainerStatus returns what was set', async () => {
    ({ containerId: appId } = await cri.createContainer({
      podSandboxId: podId,
      config: appConfig(),
      sandboxConfig: sandboxConfig(),
    }));
    expect(appId).toMatch(/^[0-9a-f]{64}$/);

    const { status, info } = await cri.containerStatus({ containerId: appId, verbose: true });
    expect(status).toBeDefined();
    if (!status) return;
    expect(status.id).toBe(appId);
    expect(status.state).toBe(ContainerState.CONTAINER_CREATED);
    expect(status.metadata).toEqual({ name: 'app', attempt: 1 });
    expect(status.image?.image).toBe(rt.images.busybox);
    expect(status.imageRef).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(status.labels).toEqual({ suite: tag, role: 'app' });
    expect(status.annotations).toEqual({ 'klet.io/container-note': 'app container' });
    expect(status.mounts).toEqual([
      {
        containerPath: '/data',
        hostPath: dataDir,
        readonly: true,
        selinuxRelabel: true,
        propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
      },
      {
        containerPath: '/work',
        hostPath: workDir,
        readonly: false,
        selinuxRelabel: false,
        propagation: MountPropagation.PROPAGATION_PRIVATE,
      },
    ]);
    // containerd reports the resolved path: log_directory joined with log_path.
    expect(status.logPath).toBe(path.join(logDir, 'app/1.log'));
    expect(status.resources?.linux).toMatchObject({
      cpuPeriod: 100_000n,
      cpuQuota: 50_000n,
      cpuShares: 256n,
      memoryLimitInBytes: 64n * MiB,
      oomScoreAdj: 500n,
      cpusetCpus: '0',
      cpusetMems: '0',
      memorySwapLimitInBytes: 64n * MiB,
    });
    expect(status.createdAt > MAX_SAFE).toBe(true);
    expect(status.startedAt).toBe(0n);
    expect(decodedConfig(info)).toEqual(appConfigAsGoJson());
  });

  it('StartContainer', async () => {
    await cri.startContainer({ containerId: appId });
    const { status } = await cri.containerStatus({ containerId: appId });
    expect(status?.state).toBe(ContainerState.CONTAINER_RUNNING);
    expect(status && status.startedAt > status.createdAt).toBe(true);
  });

  it('ListContainers with sandbox, state, label and id filters', async () => {
    ({ containerId: idleId } = await cri.createContainer({
      podSandboxId: podId,
      sandboxConfig: sandboxConfig(),
      config: {
        metadata: { name: 'idle', attempt: 4 },
        image: { image: rt.images.busybox },
        command: ['true'],
        labels: { suite: tag, role: 'idle' },
        logPath: 'idle/4.log',
        // Numeric, so containerd needs no /etc/passwd in the image to resolve it.
        linux: { securityContext: { runAsUsername: '1234', runAsGroup: { value: 1234n } } },
      },
    }));
    const idleInfo = (await cri.containerStatus({ containerId: idleId, verbose: true })).info;
    expect(decodedConfig(idleInfo)).toMatchObject({
      metadata: { name: 'idle', attempt: 4 },
      linux: { security_context: { run_as_username: '1234', run_as_group: { value: 1234 } } },
    });

    const ids = async (filter: Parameters<CriClient['listContainers']>[0]): Promise<string[]> =>
      (await cri.listContainers(filter)).containers.map((c) => c.id).sort();

    expect(await ids({ filter: { podSandboxId: podId } })).toEqual([appId, idleId].sort());
    expect(await ids({ filter: { podSandboxId: otherPodId } })).toEqual([]);
    expect(
      await ids({ filter: { podSandboxId: podId, state: { state: ContainerState.CONTAINER_RUNNING } } }),
    ).toEqual([appId]);
    expect(
      await ids({ filter: { podSandboxId: podId, state: { state: ContainerState.CONTAINER_CREATED } } }),
    ).toEqual([idleId]);
    expect(await ids({ filter: { labelSelector: { suite: tag, role: 'app' } } })).toEqual([appId]);
    expect(await ids({ filter: { id: idleId } })).toEqual([idleId]);

    const [app] = (await cri.listContainers({ filter: { id: appId } })).containers;
    const { status } = await cri.containerStatus({ containerId: appId });
    expect(app).toMatchObject({
      id: appId,
      podSandboxId: podId,
      metadata: { name: 'app', attempt: 1 },
      image: { image: rt.images.busybox },
      imageRef: status?.imageRef,
      state: ContainerState.CONTAINER_RUNNING,
      createdAt: status?.createdAt,
      labels: { suite: tag, role: 'app' },
      annotations: { 'klet.io/container-note': 'app container' },
    });
  });

  it('ExecSync returns stdout, stderr and a non-zero exit code', async () => {
    const res = await cri.execSync({ containerId: appId, cmd: ['sh', '-c', 'echo out; echo err >&2; exit 7'], timeout: 10n });
    expect(res.stdout.toString()).toBe('out\n');
    expect(res.stderr.toString()).toBe('err\n');
    expect(res.exitCode).toBe(7);
  });

  it('ExecSync runs with the env, working dir, user and mounts the container was created with', async () => {
    const res = await cri.execSync({
      containerId: appId,
      cmd: ['sh', '-c', 'echo "$GREETING|$SECOND|$(pwd)|$(id -u)|$(cat /data/hello)"; touch /data/x 2>/dev/null || echo ro'],
    });
    expect(res.stdout.toString()).toBe('hello|two words|/work|1000|from-host\nro\n');
    expect(res.exitCode).toBe(0);
  });

  it("ExecSync's timeout reaches the runtime", async () => {
    const started = Date.now();
    const err = await cri
      .execSync({ containerId: appId, cmd: ['sleep', '30'], timeout: 1n })
      .then(() => undefined, (e: unknown) => e);
    // containerd answers DeadlineExceeded itself; reported in its words, not as our deadline.
    expect(err).toBeInstanceOf(CriDeadlineExceededError);
    expect((err as CriError).message).toMatch(/^ExecSync: .*timeout/);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('a call past its deadline fails with CriDeadlineExceededError, an aborted one with CriCancelledError', async () => {
    const late = await cri
      .execSync({ containerId: appId, cmd: ['sleep', '5'] }, { timeoutMs: 300 })
      .then(() => undefined, (e: unknown) => e);
    expect(late).toBeInstanceOf(CriDeadlineExceededError);
    expect((late as Error).message).toBe(`the container runtime at ${rt.endpoint} did not answer ExecSync within 300ms`);

    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const aborted = await cri
      .execSync({ containerId: appId, cmd: ['sleep', '5'] }, { signal: ac.signal })
      .then(() => undefined, (e: unknown) => e);
    expect(aborted).toBeInstanceOf(CriCancelledError);
    expect((aborted as Error).message).toBe('ExecSync: cancelled');
  });

  it('ContainerStats and ListContainerStats', async () => {
    // Make some CPU time and memory show up.
    await cri.execSync({ containerId: appId, cmd: ['sh', '-c', 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'] });
    const { stats } = await cri.containerStats({ containerId: appId });
    expect(stats?.attributes).toEqual({
      id: appId,
      metadata: { name: 'app', attempt: 1 },
      labels: { suite: tag, role: 'app' },
      annotations: { 'klet.io/container-note': 'app container' },
    });
    expect(stats?.cpu?.timestamp).toBeGreaterThan(MAX_SAFE);
    expect(stats?.cpu?.usageCoreNanoSeconds?.value).toBeGreaterThan(0n);
    expect(stats?.memory?.timestamp).toBeGreaterThan(MAX_SAFE);
    expect(stats?.memory?.workingSetBytes?.value).toBeGreaterThan(0n);
    expect(stats?.memory?.usageBytes?.value).toBeGreaterThan(0n);
    // 64 MiB limit: available = limit - working set.
    expect(stats?.memory?.availableBytes?.value).toBeLessThanOrEqual(64n * MiB);
    expect(stats?.memory?.pageFaults?.value).toBeGreaterThan(0n);
    expect(stats?.writableLayer?.fsId?.mountpoint).toContain(rt.rootDir);
    expect(stats?.writableLayer?.usedBytes).toBeDefined();
    expect(stats?.writableLayer?.inodesUsed).toBeDefined();

    const byLabel = await cri.listContainerStats({ filter: { labelSelector: { suite: tag, role: 'app' } } });
    expect(byLabel.stats.map((s) => s.attributes?.id)).toEqual([appId]);
    const bySandbox = await cri.listContainerStats({ filter: { podSandboxId: podId, id: appId } });
    expect(bySandbox.stats.map((s) => s.attributes?.id)).toEqual([appId]);
    const none = await cri.listContainerStats({ filter: { podSandboxId: otherPodId } });
    expect(none.stats).toEqual([]);
  });

  it('ListImages, ImageStatus, ImageFsInfo', async () => {
    const { images } = await cri.listImages({});
    const tags = images.flatMap((i) => i.repoTags);
    expect(tags).toEqual(expect.arrayContaining([rt.images.pause, rt.images.busybox]));
    const busybox = images.find((i) => i.repoTags.includes(rt.images.busybox));
    expect(busybox?.id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(busybox?.size).toBeGreaterThan(0n);

    const quiet = await cri.imageStatus({ image: { image: rt.images.busybox } });
    expect(quiet.info).toEqual({});
    expect(quiet.image).toEqual(busybox);
    const { status } = await cri.containerStatus({ containerId: appId });
    expect(quiet.image?.id).toBe(status?.imageRef);

    const verbose = await cri.imageStatus({ image: { image: rt.images.busybox }, verbose: true });
    expect(JSON.parse(verbose.info.info ?? '{}')).toHaveProperty('imageSpec');

    const missing = await cri.imageStatus({ image: { image: 'localhost/klet/no-such-image:0' } });
    expect(missing.image).toBeUndefined();

    const fs = await cri.imageFsInfo();
    expect(fs.imageFilesystems.length).toBeGreaterThan(0);
    const [usage] = fs.imageFilesystems;
    expect(usage?.timestamp).toBeGreaterThan(MAX_SAFE);
    expect(usage?.fsId?.mountpoint).toContain(rt.rootDir);
    expect(usage?.usedBytes).toBeDefined();
    expect(usage?.inodesUsed).toBeDefined();
  });

  it('PullImage reaches the runtime with the reference and auth (the registry is unreachable here)', async () => {
    const ref = 'localhost:1/klet/unreachable:1';
    const err = await cri
      .pullImage(
        {
          image: { image: ref },
          auth: { username: 'u', password: 'p', serverAddress: 'localhost:1' },
          sandboxConfig: sandboxConfig(),
        },
        { timeoutMs: 30_000 },
      )
      .then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(CriError);
    expect((err as CriError).message).toMatch(/^PullImage: /);
    expect((err as CriError).message).toContain(ref);
  });

  it('GetContainerEvents: not implemented by containerd 1.6, streamed by 2.x', async () => {
    if (rt.containerd.version.major >= 2) {
      // Open until cancelled; klet detects it (and still relists: the only PLEG it runs).
      expect(await detectEventedSupport(cri, { waitMs: 300 })).toBe(true);
      return;
    }
    const iterate = async (): Promise<void> => {
      for await (const _event of cri.getContainerEvents()) break;
    };
    const err = await iterate().then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(CriUnimplementedError);
    expect((err as Error).message).toBe(`the container runtime at ${rt.endpoint} does not implement GetContainerEvents`);
  });

  it('StopContainer: EXITED with the exit code and ordered timestamps', async () => {
    await cri.stopContainer({ containerId: appId, timeout: 10n });
    const { status } = await cri.containerStatus({ containerId: appId });
    expect(status?.state).toBe(ContainerState.CONTAINER_EXITED);
    expect(status?.exitCode).toBe(3);
    expect(status?.reason).toBe('Error');
    if (!status) return;
    expect(typeof status.finishedAt).toBe('bigint');
    expect(status.finishedAt > status.startedAt).toBe(true);
    expect(status.startedAt > status.createdAt).toBe(true);
    expect(status.finishedAt > MAX_SAFE).toBe(true);
  });

  it('RemoveContainer, StopPodSandbox, RemovePodSandbox', async () => {
    await cri.removeContainer({ containerId: appId });
    await cri.removeContainer({ containerId: idleId });
    expect((await cri.listContainers({ filter: { podSandboxId: podId } })).containers).toEqual([]);

    await cri.stopPodSandbox({ podSandboxId: podId });
    const { status } = await cri.podSandboxStatus({ podSandboxId: podId });
    expect(status?.state).toBe(PodSandboxState.SANDBOX_NOTREADY);
    await cri.removePodSandbox({ podSandboxId: podId });
    await cri.removePodSandbox({ podSandboxId: otherPodId });
  });

  it('stop and remove of missing objects succeed (CRI idempotence)', async () => {
    const missing = 'f'.repeat(64);
    await expect(cri.stopContainer({ containerId: appId })).resolves.toEqual({});
    await expect(cri.removeContainer({ containerId: appId })).resolves.toEqual({});
    await expect(cri.stopContainer({ containerId: missing })).resolves.toEqual({});
    await expect(cri.removeContainer({ containerId: missing })).resolves.toEqual({});
    await expect(cri.stopPodSandbox({ podSandboxId: podId })).resolves.toEqual({});
    await expect(cri.removePodSandbox({ podSandboxId: podId })).resolves.toEqual({});
    await expect(cri.stopPodSandbox({ podSandboxId: missing })).resolves.toEqual({});
    await expect(cri.removePodSandbox({ podSandboxId: missing })).resolves.toEqual({});
    await expect(cri.removeImage({ image: { image: 'localhost/klet/no-such-image:0' } })).resolves.toEqual({});
  });

  it('ContainerStatus and PodSandboxStatus of a missing id throw CriNotFoundError', async () => {
    const err = await cri.containerStatus({ containerId: appId }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(CriNotFoundError);
    expect((err as Error).message).toMatch(/^ContainerStatus: .*not found/);
    const podErr = await cri.podSandboxStatus({ podSandboxId: podId }).then(() => undefined, (e: unknown) => e);
    expect(podErr).toBeInstanceOf(CriNotFoundError);
  });

  it('RemoveImage removes an image', async () => {
    await cri.removeImage({ image: { image: rt.images.busybox } });
    expect((await cri.imageStatus({ image: { image: rt.images.busybox } })).image).toBeUndefined();
    const tags = (await cri.listImages()).images.flatMap((i) => i.repoTags);
    expect(tags).not.toContain(rt.images.busybox);
    expect(tags).toContain(rt.images.pause);
  });

  it('an endpoint with no socket throws CriUnavailableError saying so', async () => {
    const endpoint = `unix://${path.join(rt.rootDir, 'nope.sock')}`;
    const dead = CriClient.connect(endpoint);
    try {
      const err = await dead.version().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(CriUnavailableError);
      expect((err as CriUnavailableError).message).toBe(
        `cannot reach the container runtime at ${endpoint}: no such socket; is containerd running?`,
      );
      expect((err as CriUnavailableError).suggestions).toContain('start one with: klet runtime start');
    } finally {
      dead.close();
    }
  });

  it('leaves nothing behind', async () => {
    expect((await cri.listPodSandbox()).items).toEqual([]);
    expect((await cri.listContainers()).containers).toEqual([]);
  });
});
