/**
 * Round trips through the generated codec. The wire-byte assertions pin field
 * numbers and types to upstream CRI's (computed by hand from
 * k8s.io/cri-api v0.31.0), so a regenerated codec that drifted would fail here
 * even without the upstream file at hand.
 */
import { describe, expect, it } from 'vitest';
import {
  ContainerState,
  ContainerStatus,
  ExecSyncRequest,
  ExecSyncResponse,
  Image,
  MountPropagation,
  NamespaceMode,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxState,
  Protocol,
  RunPodSandboxRequest,
  containerStateToJSON,
  type MessageFns,
} from '../../src/lib/cri/index.js';

function roundTrip<T>(type: MessageFns<T>, message: T): T {
  return type.decode(type.encode(message).finish());
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** 2023-11-14T22:13:20.123456789Z in ns: far above Number.MAX_SAFE_INTEGER. */
const NS = 1_700_000_000_123_456_789n;

describe('generated CRI codec', () => {
  it('keeps int64 nanosecond timestamps exact as bigint', () => {
    expect(NS > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
    const status = ContainerStatus.fromPartial({
      id: 'c1',
      metadata: { name: 'app', attempt: 3 },
      state: ContainerState.CONTAINER_EXITED,
      createdAt: NS,
      startedAt: NS + 1n,
      finishedAt: NS + 2n,
      exitCode: -1,
      image: { image: 'docker.io/library/busybox:1.36', annotations: { a: 'b' } },
      imageRef: 'sha256:abc',
      reason: 'Error',
      message: 'oops',
      labels: { app: 'web' },
      annotations: { 'klet.io/x': 'y' },
      mounts: [
        {
          containerPath: '/data',
          hostPath: '/srv/data',
          readonly: true,
          selinuxRelabel: true,
          propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
        },
      ],
      logPath: 'app/3.log',
      resources: { linux: { cpuShares: 512n, memoryLimitInBytes: 64n * 1024n * 1024n, unified: { 'memory.high': '1' } } },
      imageId: 'sha256:def',
    });
    const back = roundTrip(ContainerStatus, status);
    expect(back).toEqual(status);
    expect(typeof back.finishedAt).toBe('bigint');
    expect(back.finishedAt).toBe(1_700_000_000_123_456_791n);
    expect(back.finishedAt - back.startedAt).toBe(1n);
  });

  it('round-trips a pod sandbox config with nested security context and negative int64s', () => {
    const req = RunPodSandboxRequest.fromPartial({
      config: {
        metadata: { name: 'p', uid: 'u-1', namespace: 'default', attempt: 1 },
        hostname: 'p',
        logDirectory: '/var/log/pods/default_p_u-1',
        dnsConfig: { servers: ['10.0.0.10'], searches: ['svc.cluster.local'], options: ['ndots:5'] },
        portMappings: [{ protocol: Protocol.UDP, containerPort: 53, hostPort: 5353, hostIp: '127.0.0.1' }],
        labels: { app: 'dns' },
        annotations: { note: 'x' },
        linux: {
          cgroupParent: '/kubepods/podu-1',
          sysctls: { 'net.ipv4.ip_forward': '1' },
          securityContext: {
            namespaceOptions: { network: NamespaceMode.NODE, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD },
            runAsUser: { value: 0n },
            runAsGroup: { value: 65534n },
            supplementalGroups: [1n, 2n, 4_294_967_296n],
            privileged: true,
            readonlyRootfs: true,
          },
          resources: { cpuQuota: -1n, oomScoreAdj: -999n },
        },
      },
      runtimeHandler: 'runc',
    });
    const back = roundTrip(RunPodSandboxRequest, req);
    expect(back).toEqual(req);
    // An unset wrapper stays unset; a zero wrapper (uid 0 = root) stays set.
    expect(back.config?.linux?.securityContext?.runAsUser).toEqual({ value: 0n });
    expect(back.config?.linux?.securityContext?.seccomp).toBeUndefined();
  });

  it('carries bytes as Buffers and uint64 beyond 2^53', () => {
    const res = ExecSyncResponse.fromPartial({
      stdout: Buffer.from('out\n'),
      stderr: Buffer.from([0xff, 0]),
      exitCode: 7,
    });
    const back = roundTrip(ExecSyncResponse, res);
    expect(Buffer.isBuffer(back.stdout)).toBe(true);
    expect(back.stdout.toString()).toBe('out\n');
    expect([...back.stderr]).toEqual([0xff, 0]);
    expect(back.exitCode).toBe(7);

    const image = Image.fromPartial({
      id: 'sha256:1',
      repoTags: ['a:1'],
      size: 2n ** 60n + 1n,
      uid: { value: 1000n },
      pinned: true,
    });
    expect(roundTrip(Image, image)).toEqual(image);
  });

  it('accepts number and string for int64 in partial input', () => {
    expect(ExecSyncRequest.fromPartial({ timeout: 5 }).timeout).toBe(5n);
    expect(ExecSyncRequest.fromPartial({ timeout: '1700000000123456789' }).timeout).toBe(NS);
  });

  it('uses upstream field numbers and wire types', () => {
    // ExecSyncRequest: container_id=1 (string), cmd=2 (repeated string), timeout=3 (int64 varint).
    const exec = ExecSyncRequest.fromPartial({ containerId: 'c', cmd: ['a', 'b'], timeout: 5n });
    expect(hex(ExecSyncRequest.encode(exec).finish())).toBe('0a0163' + '120161' + '120162' + '1805');
    // ContainerStatus: state=3 → tag 0x18; finished_at=6 → tag 0x30; exit_code=7 → tag 0x38;
    // log_path=15 → tag 0x7a; image_id=17 → tag 0x8a01.
    const status = ContainerStatus.fromPartial({
      state: ContainerState.CONTAINER_EXITED,
      finishedAt: 1n,
      exitCode: 2,
      logPath: 'l',
      imageId: 'i',
    });
    expect(hex(ContainerStatus.encode(status).finish())).toBe('1802' + '3001' + '3802' + '7a016c' + '8a010169');
    // PodSandboxFilter: state=2 is a message wrapper (state=1 inside), label_selector=3 a map entry.
    const filter = PodSandboxFilter.fromPartial({
      state: { state: PodSandboxState.SANDBOX_NOTREADY },
      labelSelector: { k: 'v' },
    });
    expect(hex(PodSandboxFilter.encode(filter).finish())).toBe('12020801' + '1a06' + '0a016b' + '120176');
  });

  it('renders enums by name for display', () => {
    expect(containerStateToJSON(ContainerState.CONTAINER_RUNNING)).toBe('CONTAINER_RUNNING');
    const json = ContainerStatus.toJSON(ContainerStatus.fromPartial({ createdAt: NS }));
    expect(json).toMatchObject({ createdAt: NS.toString() });
  });

  it('defaults PodSandboxConfig fields that were not given', () => {
    const cfg = PodSandboxConfig.fromPartial({});
    expect(cfg.labels).toEqual({});
    expect(cfg.portMappings).toEqual([]);
    expect(cfg.metadata).toBeUndefined();
  });
});
