import { collectDefaultMetrics, register as globalRegistry, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CriClient, CriDeadlineExceededError, CriNotFoundError, toCriError } from '../../src/lib/cri/index.js';
import { errorCodeLabel, instrumentCri, KletMetrics, operationType } from '../../src/lib/metrics/index.js';
import { GrpcStatus as status } from '../../src/lib/cri/grpc-status.js';
import { GrpcCallError } from '../../src/lib/cri/transport.js';

/** The value of one series of a metric, 0 when the series does not exist. */
async function value(m: KletMetrics, name: string, labels: Record<string, string> = {}, suffix = ''): Promise<number> {
  const metric = m.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const hit = values.find(
    (v) =>
      ('metricName' in v ? v.metricName : name) === name + suffix &&
      Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want),
  );
  return hit?.value ?? 0;
}

const count = (m: KletMetrics, name: string, labels: Record<string, string> = {}) => value(m, name, labels, '_count');

describe('KletMetrics', () => {
  it('exposes the kubelet-named metrics and process metrics in its own registry', async () => {
    const m = new KletMetrics();
    const text = await m.text();
    for (const [name, type] of [
      ['kubelet_pleg_relist_duration_seconds', 'histogram'],
      ['kubelet_pleg_relist_interval_seconds', 'histogram'],
      ['klet_sync_loop_iteration_duration_seconds', 'histogram'],
      ['kubelet_running_pods', 'gauge'],
      ['kubelet_running_containers', 'gauge'],
      ['kubelet_pod_worker_duration_seconds', 'histogram'],
      ['kubelet_started_containers_total', 'counter'],
      ['kubelet_started_containers_errors_total', 'counter'],
      ['klet_container_restarts_total', 'counter'],
      ['kubelet_image_garbage_collected_total', 'counter'],
      ['kubelet_runtime_operations_total', 'counter'],
      ['kubelet_runtime_operations_duration_seconds', 'histogram'],
      ['kubelet_runtime_operations_errors_total', 'counter'],
      ['kubelet_pod_start_duration_seconds', 'histogram'],
      ['process_cpu_seconds_total', 'counter'],
      ['process_resident_memory_bytes', 'gauge'],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}\n`);
      expect(text).toMatch(new RegExp(`^# HELP ${name} \\S`, 'm'));
    }
    expect(m.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    // Gauges read 0 before the sync loop first sets them.
    expect(text).toContain('kubelet_running_pods 0\n');
    expect(text).toContain('kubelet_running_containers{container_state="running"} 0\n');
    // Nothing in the global registry.
    expect(globalRegistry.getSingleMetric('kubelet_running_pods')).toBeUndefined();
    // Two instances do not collide.
    expect(() => new KletMetrics({ defaultMetrics: false })).not.toThrow();
  });

  it("has prom-client's default process metrics but the per-collection GC histogram", async () => {
    const defaults = new Registry();
    collectDefaultMetrics({ register: defaults });
    const families = (r: Registry) => r.getMetricsAsArray().map((x) => x.name);
    const kletNames = new Set(families(new KletMetrics().registry));
    const expected = families(defaults).filter((n) => n !== 'nodejs_gc_duration_seconds');
    expect(expected.length).toBeGreaterThan(10);
    for (const n of expected) expect(kletNames, n).toContain(n);
    // Observing every collection costs ~0.2 ms each under klet's young generation (metrics.ts PROCESS_METRICS).
    expect(kletNames).not.toContain('nodejs_gc_duration_seconds');
  });

  it('can leave out the process metrics', async () => {
    const text = await new KletMetrics({ defaultMetrics: false }).text();
    expect(text).not.toContain('process_cpu_seconds_total');
    expect(text).toContain('kubelet_running_pods');
  });

  it('records through its helpers, in seconds', async () => {
    const m = new KletMetrics({ defaultMetrics: false });
    m.observeSyncLoopIteration('pleg', 250);
    m.observeSyncLoopIteration('pleg', 50);
    m.observePodWorker('kill', 1500);
    m.observePodStart(3000);
    m.setRunningPods(2);
    m.setRunningContainers({ running: 3, exited: 1 });
    m.setRunningContainers({ running: 2 }); // exited went back to 0
    m.containerStarted('container');
    m.containerStartFailed('init_container', new CriDeadlineExceededError('x', { grpcCode: 4, method: 'CreateContainer', endpoint: 'unix:///x' }));
    m.containerStartFailed('container', 'CreateContainerConfigError');
    m.containerRestarted();

    expect(await count(m, 'klet_sync_loop_iteration_duration_seconds', { trigger: 'pleg' })).toBe(2);
    expect(await value(m, 'klet_sync_loop_iteration_duration_seconds', { trigger: 'pleg' }, '_sum')).toBeCloseTo(0.3);
    expect(await value(m, 'kubelet_pod_worker_duration_seconds', { operation: 'kill' }, '_sum')).toBeCloseTo(1.5);
    expect(await count(m, 'kubelet_pod_start_duration_seconds')).toBe(1);
    expect(await value(m, 'kubelet_running_pods')).toBe(2);
    expect(await value(m, 'kubelet_running_containers', { container_state: 'running' })).toBe(2);
    expect(await value(m, 'kubelet_running_containers', { container_state: 'exited' })).toBe(0);
    expect(await value(m, 'kubelet_started_containers_total', { container_type: 'container' })).toBe(2);
    expect(await value(m, 'kubelet_started_containers_total', { container_type: 'init_container' })).toBe(1);
    expect(
      await value(m, 'kubelet_started_containers_errors_total', { container_type: 'init_container', code: 'DeadlineExceeded' }),
    ).toBe(1);
    expect(
      await value(m, 'kubelet_started_containers_errors_total', { container_type: 'container', code: 'CreateContainerConfigError' }),
    ).toBe(1);
    expect(await value(m, 'klet_container_restarts_total')).toBe(1);
  });

  it('measures the PLEG relist interval between relist starts', async () => {
    const m = new KletMetrics({ defaultMetrics: false });
    m.observePlegRelist(100, 1000);
    expect(await count(m, 'kubelet_pleg_relist_interval_seconds')).toBe(0);
    m.observePlegRelist(100, 2000);
    expect(await count(m, 'kubelet_pleg_relist_duration_seconds')).toBe(2);
    expect(await value(m, 'kubelet_pleg_relist_interval_seconds', {}, '_sum')).toBeCloseTo(1);
  });

  it('measures the interval from the last successful relist, as the kubelet: failed relists stretch it', async () => {
    const m = new KletMetrics({ defaultMetrics: false });
    m.observePlegRelist(10, 1000, true);
    m.observePlegRelist(10, 2000, false);
    m.observePlegRelist(10, 3000, true);
    expect(await count(m, 'kubelet_pleg_relist_duration_seconds')).toBe(3);
    // 1 s (to the failed one) + 2 s (from the last success, not from the failure).
    expect(await value(m, 'kubelet_pleg_relist_interval_seconds', {}, '_sum')).toBeCloseTo(3);
  });

  it('labels start errors with Go gRPC code names', () => {
    const err = (code: status) => {
      const e = new GrpcCallError(code, 'x');
      return toCriError(e, { method: 'CreateContainer', endpoint: 'unix:///x' });
    };
    expect(errorCodeLabel(err(status.DEADLINE_EXCEEDED))).toBe('DeadlineExceeded');
    expect(errorCodeLabel(err(status.CANCELLED))).toBe('Canceled');
    expect(errorCodeLabel(err(status.RESOURCE_EXHAUSTED))).toBe('ResourceExhausted');
    expect(errorCodeLabel(new Error('plain'))).toBe('Unknown');
  });
});

describe('operationType', () => {
  it('names CRI methods as the kubelet does', () => {
    expect(operationType('runPodSandbox')).toBe('run_podsandbox');
    expect(operationType('podSandboxStatus')).toBe('podsandbox_status');
    expect(operationType('listPodSandbox')).toBe('list_podsandbox');
    expect(operationType('listContainers')).toBe('list_containers');
    expect(operationType('imageFsInfo')).toBe('image_fs_info');
    expect(operationType('execSync')).toBe('exec_sync');
    expect(operationType('version')).toBe('version');
  });
});

/** A CriClient-shaped fake: private state, promise methods, a stream, a sync method. */
class FakeCri {
  readonly endpoint = 'unix:///fake.sock';
  #calls = 0;
  closed = false;
  get calls(): number {
    return this.#calls;
  }
  async listContainers(req: { filter?: string } = {}): Promise<{ containers: string[] }> {
    this.#calls++;
    await new Promise((r) => setTimeout(r, 20));
    return { containers: req.filter ? [req.filter] : ['a', 'b'] };
  }
  async removeContainer(_req: { containerId: string }): Promise<void> {
    this.#calls++;
    throw new CriNotFoundError('RemoveContainer: not found', { grpcCode: 5, method: 'RemoveContainer', endpoint: this.endpoint });
  }
  async stopContainer(_req: object, opts: { signal?: AbortSignal } = {}): Promise<void> {
    this.#calls++;
    await new Promise((r) => setTimeout(r, 5));
    if (opts.signal?.aborted) throw new Error('cancelled');
  }
  version(): string {
    this.#calls++;
    throw new Error('boom');
  }
  async *getContainerEvents(opts: { fail?: boolean } = {}): AsyncGenerator<number, void, undefined> {
    yield 1;
    yield 2;
    if (opts.fail) throw new Error('stream broke');
  }
  close(): void {
    this.closed = true;
  }
}

describe('instrumentCri', () => {
  it('times each call and counts errors per operation, keeping the client type', async () => {
    const m = new KletMetrics({ defaultMetrics: false });
    const fake = new FakeCri();
    const cri: FakeCri = instrumentCri(fake, m);

    expect(await cri.listContainers()).toEqual({ containers: ['a', 'b'] });
    expect(await cri.listContainers({ filter: 'x' })).toEqual({ containers: ['x'] });
    await expect(cri.removeContainer({ containerId: 'c' })).rejects.toBeInstanceOf(CriNotFoundError);
    expect(() => cri.version()).toThrow('boom');
    expect(fake.calls).toBe(4); // private fields work: calls run on the real object

    expect(await count(m, 'kubelet_runtime_operations_duration_seconds', { operation_type: 'list_containers' })).toBe(2);
    expect(
      await value(m, 'kubelet_runtime_operations_duration_seconds', { operation_type: 'list_containers' }, '_sum'),
    ).toBeGreaterThanOrEqual(0.03);
    expect(await value(m, 'kubelet_runtime_operations_total', { operation_type: 'list_containers' })).toBe(2);
    expect(await value(m, 'kubelet_runtime_operations_errors_total', { operation_type: 'list_containers' })).toBe(0);
    expect(await value(m, 'kubelet_runtime_operations_errors_total', { operation_type: 'remove_container' })).toBe(1);
    expect(await value(m, 'kubelet_runtime_operations_errors_total', { operation_type: 'version' })).toBe(1);
    expect(await count(m, 'kubelet_runtime_operations_duration_seconds', { operation_type: 'version' })).toBe(1);

    // Properties and close() pass through untouched.
    expect(cri.endpoint).toBe('unix:///fake.sock');
    expect(cri.calls).toBe(4);
    cri.close();
    expect(fake.closed).toBe(true);
    expect(await value(m, 'kubelet_runtime_operations_total', { operation_type: 'close' })).toBe(0);
    expect(cri.listContainers).toBe(cri.listContainers);
  });

  it('does not count a call the caller cancelled', async () => {
    const m = new KletMetrics({ defaultMetrics: false });
    const cri = instrumentCri(new FakeCri(), m);
    await expect(cri.stopContainer({}, { signal: AbortSignal.abort() })).rejects.toThrow('cancelled');
    expect(await value(m, 'kubelet_runtime_operations_total', { operation_type: 'stop_container' })).toBe(0);
    expect(await value(m, 'kubelet_runtime_operations_errors_total', { operation_type: 'stop_container' })).toBe(0);
  });

  it('records a stream when it ends or fails, not when the consumer stops', async () => {
    const m = new KletMetrics({ defaultMetrics: false });
    const cri = instrumentCri(new FakeCri(), m);
    const op = { operation_type: 'get_container_events' };

    for await (const n of cri.getContainerEvents()) if (n === 1) break;
    expect(await value(m, 'kubelet_runtime_operations_total', op)).toBe(0);

    const all: number[] = [];
    for await (const n of cri.getContainerEvents()) all.push(n);
    expect(all).toEqual([1, 2]);
    expect(await value(m, 'kubelet_runtime_operations_total', op)).toBe(1);

    await expect(async () => {
      for await (const _ of cri.getContainerEvents({ fail: true })) void _;
    }).rejects.toThrow('stream broke');
    expect(await value(m, 'kubelet_runtime_operations_total', op)).toBe(2);
    expect(await value(m, 'kubelet_runtime_operations_errors_total', op)).toBe(1);
  });

  it('wraps a real CriClient: an unreachable runtime counts as an error', async () => {
    const m = new KletMetrics({ defaultMetrics: false });
    const client = CriClient.connect('unix:///nonexistent/klet-test.sock', { timeoutMs: 5000 });
    const cri: CriClient = instrumentCri(client, m);
    try {
      await expect(cri.version()).rejects.toThrow(/cannot reach the container runtime/);
      expect(cri.endpoint).toBe('unix:///nonexistent/klet-test.sock');
    } finally {
      cri.close();
    }
    expect(await value(m, 'kubelet_runtime_operations_errors_total', { operation_type: 'version' })).toBe(1);
  });
});
