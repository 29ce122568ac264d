/**
 * A plain in-memory CRI runtime for unit tests of the services: sandboxes
 * and containers with labels, states and times, the way containerd answers
 * the calls klet makes. Containers do not run programs: a container whose
 * command line ends in `exit N` exits with N as soon as it starts (after
 * writing its `echo` words to its CRI log file, when the sandbox has a log
 * directory); any other keeps running until stopped (exit 137 on stop).
 * Not a mock of klet's logic: it only keeps state.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CriClient } from '../../src/lib/cri/client.js';
import { CriError, CriNotFoundError } from '../../src/lib/cri/errors.js';
import { ContainerState, PodSandboxState } from '../../src/lib/cri/gen/api.js';

interface FakeSandbox {
  id: string;
  metadata: { name: string; uid: string; namespace: string; attempt: number };
  state: PodSandboxState;
  createdAt: bigint;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  logDirectory: string;
  ip: string;
}

interface FakeContainer {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number };
  image: { image: string };
  imageRef: string;
  state: ContainerState;
  createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  command: string[];
  logPath: string;
}

type Req = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function matches(labels: Record<string, string>, selector: Record<string, string> | undefined): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

export class FakeCri {
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly containers = new Map<string, FakeContainer>();
  /** Images present on the node, by reference. */
  readonly images = new Set<string>(['localhost/klet/busybox:1.36']);
  /** Every call, by method name, in order. */
  readonly calls: string[] = [];
  /** ExecSync answers by command line (argv joined with spaces): exit code and output; anything else exits 0. */
  readonly execResults = new Map<string, { exitCode: number; stdout?: string }>();
  /** A call of a method named here waits for its promise first (to hold a step of klet's open, in order). */
  readonly gates = new Map<string, Promise<void>>();
  /** The next StopContainer fails with this message; with `exits`, the container exits (0) meanwhile, as one that ends while containerd kills it. */
  stopFailure: { message: string; exits: boolean } | undefined;
  /** RunPodSandbox of a pod whose name starts with a key fails with the value. */
  readonly sandboxFailures = new Map<string, string>();
  private seq = 0;
  private clock = 1_700_000_000_000n * 1_000_000n;

  private now(): bigint {
    this.clock += 1_000_000n; // 1 ms per event: strictly increasing times
    return this.clock;
  }
  private id(): string {
    this.seq++;
    return this.seq.toString(16).padStart(64, '0');
  }

  /** The fake as the CriClient the services take. */
  client(): CriClient {
    return new Proxy(this, {
      get: (target, name: string) => {
        const fn = (target as unknown as Record<string, unknown>)[name];
        if (typeof fn !== 'function') return fn;
        return async (req: Req = {}, opts: { signal?: AbortSignal } = {}) => {
          opts.signal?.throwIfAborted();
          target.calls.push(name);
          const gate = target.gates.get(name);
          if (gate !== undefined) await gate;
          return (fn as (r: Req) => unknown).call(target, req);
        };
      },
    }) as unknown as CriClient;
  }

  version(): object {
    return { version: '0.1.0', runtimeName: 'fake', runtimeVersion: '1.0', runtimeApiVersion: 'v1' };
  }
  status(): object {
    return { status: { conditions: [{ type: 'RuntimeReady', status: true }] } };
  }

  runPodSandbox(req: Req): object {
    const md = req.config.metadata;
    for (const [prefix, message] of this.sandboxFailures) {
      if (md.name.startsWith(prefix)) throw new CriError(`RunPodSandbox: ${message}`, { grpcCode: 2, method: 'RunPodSandbox', endpoint: 'fake', details: message });
    }
    const id = this.id();
    this.sandboxes.set(id, {
      id,
      metadata: { ...md },
      state: PodSandboxState.SANDBOX_READY,
      createdAt: this.now(),
      labels: { ...req.config.labels },
      annotations: { ...req.config.annotations },
      logDirectory: req.config.logDirectory ?? '',
      ip: `10.88.0.${this.sandboxes.size + 2}`,
    });
    return { podSandboxId: id };
  }
  podSandboxStatus(req: Req): object {
    const sb = this.sandboxes.get(req.podSandboxId);
    if (!sb) throw new CriNotFoundError('not found', { grpcCode: 5, method: 'PodSandboxStatus', endpoint: 'fake' });
    return { status: { ...sb, network: { ip: sb.state === PodSandboxState.SANDBOX_READY ? sb.ip : '', additionalIps: [] } } };
  }
  listPodSandbox(req: Req): object {
    return { items: [...this.sandboxes.values()].filter((s) => matches(s.labels, req.filter?.labelSelector)) };
  }
  stopPodSandbox(req: Req): object {
    const sb = this.sandboxes.get(req.podSandboxId);
    if (sb) {
      sb.state = PodSandboxState.SANDBOX_NOTREADY;
      for (const c of this.containers.values()) if (c.podSandboxId === sb.id && c.state === ContainerState.CONTAINER_RUNNING) this.exit(c, 137);
    }
    return {};
  }
  removePodSandbox(req: Req): object {
    this.sandboxes.delete(req.podSandboxId);
    for (const [id, c] of this.containers) if (c.podSandboxId === req.podSandboxId) this.containers.delete(id);
    return {};
  }

  createContainer(req: Req): object {
    const id = this.id();
    const cfg = req.config;
    this.containers.set(id, {
      id,
      podSandboxId: req.podSandboxId,
      metadata: { ...cfg.metadata },
      image: { image: cfg.image?.image ?? '' },
      imageRef: `sha256:${'ab'.repeat(32)}`,
      state: ContainerState.CONTAINER_CREATED,
      createdAt: this.now(),
      startedAt: 0n,
      finishedAt: 0n,
      exitCode: 0,
      reason: '',
      labels: { ...cfg.labels },
      annotations: { ...cfg.annotations },
      command: [...(cfg.command ?? []), ...(cfg.args ?? [])],
      logPath: cfg.logPath ?? '',
    });
    return { containerId: id };
  }
  startContainer(req: Req): object {
    const c = this.containers.get(req.containerId)!;
    c.state = ContainerState.CONTAINER_RUNNING;
    c.startedAt = this.now();
    const script = c.command.at(-1) ?? '';
    const words = [...script.matchAll(/echo ([^;]*)/g)].map((m) => (m[1] as string).trim());
    const sb = this.sandboxes.get(c.podSandboxId);
    if (sb?.logDirectory && c.logPath && words.length > 0) {
      const file = path.join(sb.logDirectory, c.logPath);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, words.map((w) => `2026-01-01T00:00:00.000000000Z stdout F ${w}\n`).join(''));
    }
    const exit = /exit (\d+)\s*$/.exec(script);
    if (exit) this.exit(c, Number(exit[1]));
    return {};
  }
  private exit(c: FakeContainer, code: number): void {
    c.state = ContainerState.CONTAINER_EXITED;
    c.exitCode = code;
    c.reason = code === 0 ? 'Completed' : 'Error';
    c.finishedAt = this.now();
  }
  stopContainer(req: Req): object {
    const c = this.containers.get(req.containerId);
    const fail = this.stopFailure;
    if (fail !== undefined) {
      this.stopFailure = undefined;
      if (fail.exits && c && c.state !== ContainerState.CONTAINER_EXITED) this.exit(c, 0);
      throw new CriError(`StopContainer: ${fail.message}`, { grpcCode: 2, method: 'StopContainer', endpoint: 'fake' });
    }
    if (c && c.state !== ContainerState.CONTAINER_EXITED) this.exit(c, 137);
    return {};
  }
  removeContainer(req: Req): object {
    this.containers.delete(req.containerId);
    return {};
  }
  listContainers(req: Req): object {
    const f = req.filter ?? {};
    const list = [...this.containers.values()].filter(
      (c) => matches(c.labels, f.labelSelector) && (f.state === undefined || c.state === f.state.state) && (!f.podSandboxId || c.podSandboxId === f.podSandboxId),
    );
    return { containers: list };
  }
  containerStatus(req: Req): object {
    const c = this.containers.get(req.containerId);
    if (!c) throw new CriNotFoundError('not found', { grpcCode: 5, method: 'ContainerStatus', endpoint: 'fake' });
    return { status: { ...c, message: '', mounts: [] } };
  }

  execSync(req: Req): object {
    const c = this.containers.get(req.containerId);
    if (!c) throw new CriNotFoundError(`container "${req.containerId}" not found`, { grpcCode: 5, method: 'ExecSync', endpoint: 'fake' });
    const r = this.execResults.get((req.cmd ?? []).join(' ')) ?? { exitCode: 0 };
    return { exitCode: r.exitCode, stdout: Buffer.from(r.stdout ?? ''), stderr: Buffer.alloc(0) };
  }

  imageStatus(req: Req): object {
    const ref = req.image?.image ?? '';
    return this.images.has(ref) ? { image: { id: `sha256:${'ab'.repeat(32)}`, repoTags: [ref] } } : {};
  }
  pullImage(req: Req): object {
    throw new CriError(`PullImage: ${req.image?.image}: not found`, { grpcCode: 5, method: 'PullImage', endpoint: 'fake' });
  }

  /** Sandboxes and containers of a pod UID. */
  podObjects(uid: string): { sandboxes: FakeSandbox[]; containers: FakeContainer[] } {
    const byUid = (l: Record<string, string>) => l['io.kubernetes.pod.uid'] === uid;
    return { sandboxes: [...this.sandboxes.values()].filter((s) => byUid(s.labels)), containers: [...this.containers.values()].filter((c) => byUid(c.labels)) };
  }
}
