/**
 * The prober manager (pkg/kubelet/prober/prober_manager.go, worker.go): one
 * worker per container per probe (startup, liveness, readiness), each
 * probing at its period once the container runs and its initial delay has
 * passed, keeping a result per container ID after successThreshold /
 * failureThreshold runs in a row. Startup gates liveness and readiness; a
 * liveness or startup failure puts the worker on hold until the container
 * is replaced (the sync loop kills and restarts it). Shared by `klet sync`
 * and the one-shot services; the owner feeds it runtime status and reads
 * the results.
 */
import type { V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import type { KletEventBody } from '../events/types.js';
import { isRestartableInit, restartPolicy } from '../kuberuntime/actions.js';
import { findContainerStatus, type RuntimePodStatus } from '../kuberuntime/runtime-status.js';
import { log } from '../log.js';
import type { ExecCri } from './exec.js';
import { probeEvent, probeOf, runHandler } from './prober.js';
import { writeProbeResults, type PodProbeResults } from './results.js';
import { SlotTimers } from './slots.js';
import { PROBE_TYPES, ProbeError, type HandlerResult, type ProbeResult, type ProbeType } from './types.js';

/** prober_probe_total's result label. */
export type ProbeMetricResult = 'successful' | 'failed' | 'unknown';

export interface ProbeMetricLabels {
  probeType: ProbeType;
  container: string;
  pod: string;
  namespace: string;
  podUid: string;
}

/** What the manager reports to metrics (prober_probe_total, prober_probe_duration_seconds). */
export interface ProberMetrics {
  observeProbe(labels: ProbeMetricLabels, result: ProbeMetricResult, seconds: number): void;
  forgetProbe(labels: ProbeMetricLabels): void;
  /** How late a run started after its tick was due (event-loop scheduling delay). */
  observeProbeLateness?(seconds: number): void;
}

/** A cached result changed. */
export interface ProbeUpdate {
  podUid: string;
  pod: V1Pod;
  container: string;
  containerId: string;
  type: ProbeType;
  result: ProbeResult;
}

/** One finished probe run, for timing (bench, tests). */
export interface ProbeRunRecord {
  podUid: string;
  container: string;
  type: ProbeType;
  /** When the run was due (ms since the epoch) and when it started and ended. */
  dueAt: number;
  startedAt: number;
  endedAt: number;
  outcome: HandlerResult['outcome'] | 'error';
}

export interface ProberManagerOptions {
  cri: ExecCri;
  /** The node's IPs: a hostNetwork pod's IP is the node's. */
  hostIPs: () => string[];
  /** Root dir: results are written to each pod's probes.json for status in any process. Omit to keep them in memory. */
  rootDir?: string;
  /** Probe events (Unhealthy, ProbeWarning) and result changes (ProbeResult). */
  onEvent?: (e: KletEventBody) => void;
  /** A cached result changed (the kubelet's results manager updates channel). */
  onUpdate?: (u: ProbeUpdate) => void;
  /** Every run, for timing measurements. */
  onRun?: (r: ProbeRunRecord) => void;
  metrics?: ProberMetrics;
  /**
   * Spread the first runs of workers started within one period of the
   * manager over that period (the kubelet does, so that a restart does not
   * probe every pod at once). `klet sync` wants it; a one-shot run does not.
   */
  jitterAtStart?: boolean;
  /** The slot grid's step (default PROBE_SLOT_MS, 100 ms); benchmarks compare others. */
  slotMs?: number;
  signal?: AbortSignal;
  random?: () => number;
}

function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
}

/** The probed containers of a pod: app containers and sidecars (restartable init containers). */
function probedContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []).filter(isRestartableInit), ...(pod.spec?.containers ?? [])];
}

class Worker {
  containerId = '';
  private lastResult: ProbeResult | undefined;
  private resultRun = 0;
  private onHold = false;
  private wake: (() => void) | null = null;
  private triggered = false;
  private readonly abort = new AbortController();
  /** The last run's output, for runonce's report. */
  lastOutput = '';
  readonly spec: string;

  constructor(
    private readonly m: ProberManager,
    readonly type: ProbeType,
    readonly pod: V1Pod,
    readonly container: V1Container,
    readonly probe: V1Probe,
  ) {
    this.spec = JSON.stringify(probe);
  }

  get uid(): string {
    return this.pod.metadata?.uid ?? '';
  }

  stop(): void {
    this.abort.abort();
    this.wake?.();
  }

  get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Run now instead of at the next tick (the kubelet's manualTriggerCh). */
  trigger(): void {
    this.triggered = true;
    this.wake?.();
  }

  /** Sleep until `at` (a slot time): 'tick' then, 'trigger' when woken early by trigger(), 'stop' when stopped. */
  private sleepUntil(at: number): Promise<'tick' | 'trigger' | 'stop'> {
    if (this.stopped) return Promise.resolve('stop');
    if (this.triggered) {
      this.triggered = false;
      return Promise.resolve('trigger');
    }
    return new Promise((resolve) => {
      const finish = (why: 'tick' | 'trigger' | 'stop'): void => {
        cancel();
        this.wake = null;
        this.triggered = false;
        resolve(why);
      };
      const cancel = this.m.slots.at(at, () => finish('tick'));
      this.wake = () => finish(this.stopped ? 'stop' : 'trigger');
    });
  }

  async run(): Promise<void> {
    const period = Math.max(1, this.probe.periodSeconds ?? 10) * 1000;
    const slots = this.m.slots;
    let due = Date.now();
    if (this.m.jitter(period)) {
      due = slots.ceil(due + this.m.random() * period);
      if ((await this.sleepUntil(due)) === 'trigger') due = Date.now();
    }
    while (!this.stopped) {
      let keep = true;
      try {
        keep = await this.doProbe(due);
      } catch (err) {
        log.warn(`${this.type.toLowerCase()} probe worker of ${podKey(this.pod)}/${this.container.name}: ${errorMessage(err)}`);
      }
      if (!keep || this.stopped) break;
      // A ticker: the next run is one period on, on the slot grid, never
      // overlapping this one (a run longer than the period skips ticks).
      const now = Date.now();
      due = slots.ceil(due + period);
      if (due <= now) due += Math.ceil((now - due + 1) / period) * period;
      // Triggered early: the schedule restarts from now.
      if ((await this.sleepUntil(due)) === 'trigger') due = Date.now();
    }
    this.m.workerDone(this);
  }

  /** One tick (worker.doProbe). False ends the worker. */
  private async doProbe(dueAt: number): Promise<boolean> {
    const status = this.m.podStatus(this.uid);
    if (status === undefined) return true; // the pod has no status yet
    const c = findContainerStatus(status, this.container.name);
    if (c === undefined) return true; // not created yet
    if (c.id !== this.containerId) {
      // A new container: fresh results, probing resumes.
      if (this.containerId !== '') this.m.forget(this, this.containerId);
      this.containerId = c.id;
      this.m.set(this, c.id, this.type === 'Readiness' ? 'Failure' : this.type === 'Liveness' ? 'Success' : 'Unknown', '', { initial: true });
      this.lastResult = undefined;
      this.resultRun = 0;
      this.onHold = false;
    }
    if (this.onHold) return true;
    if (c.state !== 'running') {
      if (c.state !== 'exited') return true; // created, not started yet
      this.m.set(this, c.id, 'Failure');
      // Keep the worker while the container may be restarted.
      return restartPolicy(this.pod) !== 'Never';
    }
    if (Date.now() - c.startedAt < (this.probe.initialDelaySeconds ?? 0) * 1000) return true;
    const started = this.m.started(this.uid, this.container.name, c.id);
    if (this.type === 'Startup' ? started : !started) return true;

    const podIP = this.m.podIP(this.pod, status);
    const startedAt = Date.now();
    let result: ProbeResult;
    let outcome: ProbeRunRecord['outcome'];
    let output: string;
    try {
      const r = await runHandler(this.m.cri, this.probe, { pod: this.pod, container: this.container, containerId: c.id, podIP }, this.abort.signal);
      outcome = r.outcome;
      output = r.output;
      result = r.outcome === 'failure' ? 'Failure' : 'Success';
      const ev = probeEvent(this.type, { result: r });
      if (ev) this.m.podEvent(this.pod, this.container.name, ev);
    } catch (err) {
      if (this.stopped) return false;
      // The probe could not be run: an event, and the result is left as it was.
      const message = err instanceof ProbeError ? err.message : errorMessage(err);
      const ev = probeEvent(this.type, { error: message });
      if (ev) this.m.podEvent(this.pod, this.container.name, ev);
      this.lastOutput = message;
      this.m.observe(this, 'unknown', startedAt, dueAt, 'error');
      return true;
    }
    if (this.stopped) return false;
    this.lastOutput = output;
    this.m.observe(this, result === 'Success' ? 'successful' : 'failed', startedAt, dueAt, outcome);

    if (this.lastResult === result) this.resultRun++;
    else {
      this.lastResult = result;
      this.resultRun = 1;
    }
    const failureThreshold = this.probe.failureThreshold && this.probe.failureThreshold > 0 ? this.probe.failureThreshold : 3;
    const successThreshold = this.probe.successThreshold && this.probe.successThreshold > 0 ? this.probe.successThreshold : 1;
    if ((result === 'Failure' && this.resultRun < failureThreshold) || (result === 'Success' && this.resultRun < successThreshold)) return true;
    this.m.set(this, c.id, result, output);
    if ((this.type === 'Liveness' || this.type === 'Startup') && result === 'Failure') {
      // The container will be restarted; nothing to probe until it is.
      this.onHold = true;
      this.resultRun = 0;
    }
    return true;
  }
}

/** A cached result and the output that set it. */
interface CachedResult {
  result: ProbeResult;
  output: string;
  pod: V1Pod;
}

export class ProberManager {
  readonly cri: ExecCri;
  private readonly workers = new Map<string, Worker>();
  private readonly statuses = new Map<string, RuntimePodStatus>();
  /** Results by probe type and container ID (the kubelet's three results managers). */
  private readonly results: Record<ProbeType, Map<string, CachedResult>> = {
    Liveness: new Map(),
    Readiness: new Map(),
    Startup: new Map(),
  };
  /** Per pod: results by container name, as written to probes.json. */
  private readonly podResults = new Map<string, PodProbeResults>();
  private readonly writes = new Map<string, Promise<void>>();
  private readonly startedAt = Date.now();
  private readonly abort = new AbortController();
  /** The workers' timers: one per slot of the grid that has runs due. */
  readonly slots: SlotTimers;

  constructor(private readonly opts: ProberManagerOptions) {
    this.cri = opts.cri;
    this.slots = new SlotTimers(opts.slotMs);
    opts.signal?.addEventListener('abort', () => this.stop(), { once: true });
  }

  random(): number {
    return (this.opts.random ?? Math.random)();
  }

  /** Jitter a worker's first run? Only within one period of the manager's start, and when asked. */
  jitter(periodMs: number): boolean {
    return this.opts.jitterAtStart === true && Date.now() - this.startedAt < periodMs;
  }

  private static key(uid: string, container: string, type: ProbeType): string {
    return `${uid}/${container}/${type}`;
  }

  /**
   * Workers for every probe of the pod's containers (AddPod). Idempotent; a
   * probe whose definition changed (an edited manifest keeps its UID) gets a
   * new worker, one that was removed loses its worker.
   */
  addPod(pod: V1Pod): void {
    if (this.abort.signal.aborted) return;
    const uid = pod.metadata?.uid ?? '';
    const wanted = new Set<string>();
    for (const c of probedContainers(pod)) {
      for (const type of PROBE_TYPES) {
        const probe = probeOf(c, type);
        if (probe === undefined) continue;
        const key = ProberManager.key(uid, c.name, type);
        wanted.add(key);
        const w = this.workers.get(key);
        if (w !== undefined && w.spec === JSON.stringify(probe)) continue;
        if (w !== undefined) this.stopWorker(key, w);
        const nw = new Worker(this, type, pod, c, probe);
        this.workers.set(key, nw);
        void nw.run();
      }
    }
    for (const [key, w] of this.workers) if (w.uid === uid && !wanted.has(key)) this.stopWorker(key, w);
  }

  private stopWorker(key: string, w: Worker): void {
    w.stop();
    this.workers.delete(key);
    this.opts.metrics?.forgetProbe(this.labels(w));
    if (w.containerId !== '') this.forget(w, w.containerId);
  }

  /** The runtime's current view of the pod (the kubelet's status provider), read by the workers. */
  updatePodStatus(uid: string, status: RuntimePodStatus): void {
    this.statuses.set(uid, status);
    // A readiness worker with no result for the running container probes now (UpdatePodStatus' manual trigger).
    for (const w of this.workers.values()) {
      if (w.uid !== uid || w.type !== 'Readiness') continue;
      const c = findContainerStatus(status, w.container.name);
      if (c?.state === 'running' && c.id !== w.containerId) w.trigger();
    }
  }

  podStatus(uid: string): RuntimePodStatus | undefined {
    return this.statuses.get(uid);
  }

  /** A pod being terminated: liveness and startup stop, so no restart races the kill (StopLivenessAndStartup). */
  stopLivenessAndStartup(uid: string): void {
    for (const [key, w] of this.workers) if (w.uid === uid && w.type !== 'Readiness') this.stopWorker(key, w);
  }

  /** A pod gone: its workers stop and its results are dropped (RemovePod). */
  removePod(uid: string): void {
    for (const [key, w] of this.workers) if (w.uid === uid) this.stopWorker(key, w);
    this.statuses.delete(uid);
    this.podResults.delete(uid);
  }

  /** Pods with workers. */
  podUids(): Set<string> {
    return new Set([...this.workers.values()].map((w) => w.uid));
  }

  stop(): void {
    this.abort.abort();
    for (const [key, w] of this.workers) this.stopWorker(key, w);
  }

  /** A worker ended by itself (its container will not run again). */
  workerDone(w: Worker): void {
    const key = ProberManager.key(w.uid, w.container.name, w.type);
    if (this.workers.get(key) === w) this.workers.delete(key);
  }

  /** The cached result of a probe for a container ID. */
  get(type: ProbeType, containerId: string): ProbeResult | undefined {
    return this.results[type].get(containerId)?.result;
  }

  /** The output of the run that set the cached result. */
  output(type: ProbeType, containerId: string): string | undefined {
    return this.results[type].get(containerId)?.output;
  }

  /** Has the container started (its startup probe succeeded, or it has none)? */
  started(uid: string, container: string, containerId: string): boolean {
    const r = this.get('Startup', containerId);
    if (r !== undefined) return r === 'Success';
    return !this.workers.has(ProberManager.key(uid, container, 'Startup'));
  }

  podIP(pod: V1Pod, status: RuntimePodStatus): string {
    if (pod.spec?.hostNetwork) return this.opts.hostIPs()[0] ?? '127.0.0.1';
    const sb = status.sandboxes[0];
    return sb?.ready ? sb.ip : '';
  }

  /** A probe's event, about its container (a sidecar's is an init container's, as the kubelet's reference says). */
  podEvent(pod: V1Pod, container: string, ev: { type: 'Normal' | 'Warning'; reason: string; message: string }): void {
    const init = pod.spec?.initContainers?.some((c) => c.name === container) === true;
    this.opts.onEvent?.({ kind: 'Event', pod: podKey(pod), uid: pod.metadata?.uid ?? '', container, ...(init ? { init } : {}), ...ev });
  }

  observe(w: Worker, result: ProbeMetricResult, startedAt: number, dueAt: number, outcome: ProbeRunRecord['outcome']): void {
    const endedAt = Date.now();
    this.opts.metrics?.observeProbe(this.labels(w), result, (endedAt - startedAt) / 1000);
    this.opts.metrics?.observeProbeLateness?.(Math.max(0, startedAt - dueAt) / 1000);
    this.opts.onRun?.({ podUid: w.uid, container: w.container.name, type: w.type, dueAt, startedAt, endedAt, outcome });
  }

  private labels(w: Worker): ProbeMetricLabels {
    const md = w.pod.metadata ?? {};
    return { probeType: w.type, container: w.container.name, pod: md.name ?? '', namespace: md.namespace ?? 'default', podUid: md.uid ?? '' };
  }

  /** Set a result; a change is persisted, reported as an event and handed to onUpdate. */
  set(w: Worker, containerId: string, result: ProbeResult, output = '', opts: { initial?: boolean } = {}): void {
    const prev = this.results[w.type].get(containerId);
    this.results[w.type].set(containerId, { result, output, pod: w.pod });
    if (prev?.result === result) return;
    const uid = w.uid;
    const byName = this.podResults.get(uid) ?? {};
    this.podResults.set(uid, byName);
    const entry = byName[w.container.name]?.containerId === containerId ? byName[w.container.name] : { containerId };
    if (entry !== undefined) {
      entry[w.type === 'Startup' ? 'startup' : w.type === 'Liveness' ? 'liveness' : 'readiness'] = result;
      // The initial result (Failure until a probe passes) is not one a probe gave: it has no time.
      if (w.type === 'Readiness' && opts.initial !== true) entry.readinessSince = new Date().toISOString();
      else if (w.type === 'Readiness') delete entry.readinessSince;
      byName[w.container.name] = entry;
    }
    this.persist(uid);
    // Started: its readiness probe runs now, not a period later (the kubelet's UpdatePodStatus
    // triggers the readiness worker of a running container that is not ready yet).
    if (w.type === 'Startup' && result === 'Success') this.workers.get(ProberManager.key(uid, w.container.name, 'Readiness'))?.trigger();
    this.opts.onEvent?.({
      kind: 'ProbeResult',
      pod: podKey(w.pod),
      uid,
      container: w.container.name,
      containerId,
      probe: w.type,
      result,
      ...(output !== '' ? { message: output.slice(0, 1024) } : {}),
    });
    this.opts.onUpdate?.({ podUid: uid, pod: w.pod, container: w.container.name, containerId, type: w.type, result });
  }

  forget(w: Worker, containerId: string): void {
    this.results[w.type].delete(containerId);
  }

  /** Write the pod's results, one write at a time per pod, the last state winning. */
  private persist(uid: string): void {
    const rootDir = this.opts.rootDir;
    if (rootDir === undefined) return;
    const prev = this.writes.get(uid) ?? Promise.resolve();
    const next = prev
      .then(() => writeProbeResults(rootDir, uid, this.podResults.get(uid) ?? {}))
      .catch((err) => log.debug(`probe results of pod ${uid}: ${errorMessage(err)}`))
      .finally(() => {
        if (this.writes.get(uid) === next) this.writes.delete(uid);
      });
    this.writes.set(uid, next);
  }

  /** Resolves once every pending results write is done. */
  async flush(): Promise<void> {
    await Promise.all([...this.writes.values()]);
  }
}
