/**
 * Progress of pod syncs on stderr, from the engine's events (KletEventBody).
 * With a TTY (and not -o json), listr2 draws a task list per pod; otherwise
 * each step is one plain line, so logs and CI output stay readable. Results
 * never go here: they go to stdout.
 */
import type { KletEventBody, PodEvent } from '../lib/events/types.js';
import { formatDuration } from '../lib/util/duration.js';

export interface Progress {
  event(e: KletEventBody): void;
  close(): Promise<void>;
}

/**
 * A pod event's line, and the state it reports: what a repeat of it is
 * counted as (a retry's new container ID, sandbox ID or back-off delay is
 * the same state). Null for events progress does not show.
 */
function describe(e: PodEvent): { text: string; state: string } | null {
  const line = (text: string, state = text) => ({ text, state });
  switch (e.reason) {
    case 'SandboxCreated':
      return line(`sandbox ${(e.sandboxId ?? '').slice(0, 13)} created${e.ip ? ` (IP ${e.ip})` : ''}`, 'sandbox created');
    case 'SandboxStopped':
      return line(`sandbox ${(e.sandboxId ?? '').slice(0, 13)} stopped`, 'sandbox stopped');
    case 'FailedCreatePodSandBox':
      return line(`sandbox: ${e.message}`, `sandbox: ${e.reason}`);
    case 'NodePorts':
      return line(`rejected: ${e.message}`);
    case 'Pulled':
      return line(e.pulled ? `container ${e.container}: pulled image ${e.image}` : `container ${e.container}: image ${e.image} already present`);
    case 'Started': {
      const started = `${e.init ? 'init container' : 'container'} ${e.container} started`;
      return line(`${started} (${(e.containerId ?? '').slice(0, 13)})`, started);
    }
    case 'Killing':
      return line(`container ${e.container} stopping: ${e.killReason ?? e.message}`);
    case 'FailedMount':
    case 'Evicted':
      return line(`${e.reason}: ${e.message}`);
    case 'FailedPreStopHook':
      return line(`container ${e.container}: ${e.message}`);
    default:
      return e.containerReason !== undefined
        ? line(`container ${e.container}: ${e.containerReason}: ${e.message}`, `container ${e.container}: ${e.containerReason}`)
        : null;
  }
}

/** How often a pod entered one state, the first and the last time. */
interface Repeats {
  count: number;
  first: number;
  last: number;
}

/** What progress has reported of one pod. */
interface PodStates {
  /** Every state it was in, in the order first reported. */
  seen: Map<string, Repeats>;
  /** By container ('' for the pod's sandbox): the state it is in now. */
  current: Map<string, string>;
}

/**
 * One line per change: `pod default/web: container app started (...)`. The
 * same state reported again (a back-off, once per poll) is not a change. A
 * state the pod was in before and entered again (a retry: the same image
 * check, error and back-off on every attempt) is not printed again but
 * counted; when the wait for the pod ends (or at close), each state entered
 * more than once gets one line with its count and time span, as kubectl
 * events aggregates: `pod default/web: container app: RunContainerError (x5 over 40s)`.
 */
export class PlainProgress implements Progress {
  private readonly pods = new Map<string, PodStates>();
  private readonly stderr: BatchedLines | undefined;
  private readonly write: (line: string) => void;
  private readonly now: () => number;
  constructor(write?: (line: string) => void, opts: { now?: () => number } = {}) {
    if (write === undefined) this.stderr = new BatchedLines((text) => process.stderr.write(text));
    this.write = write ?? ((l) => this.stderr?.push(l));
    this.now = opts.now ?? Date.now;
  }
  event(e: KletEventBody): void {
    switch (e.kind) {
      case 'PodWaitStarted':
        this.write(`pod ${e.pod}: syncing`);
        return;
      case 'PodWaitDone':
        this.repeats(e.pod);
        this.write(`pod ${e.pod}: ${e.ok ? '' : 'FAILED: '}${e.summary}`);
        return;
      case 'SourceError':
        this.write(`error: ${e.message}`);
        return;
      case 'Event': {
        const d = describe(e);
        if (d === null) return;
        let pod = this.pods.get(e.pod);
        if (pod === undefined) this.pods.set(e.pod, (pod = { seen: new Map(), current: new Map() }));
        const container = e.container ?? '';
        if (pod.current.get(container) === d.state) return;
        pod.current.set(container, d.state);
        const seen = pod.seen.get(d.state);
        if (seen !== undefined) {
          seen.count++;
          seen.last = this.now();
          return;
        }
        const now = this.now();
        pod.seen.set(d.state, { count: 1, first: now, last: now });
        this.write(`pod ${e.pod}: ${d.text}`);
        return;
      }
      default:
        return;
    }
  }
  /** A line for each state of POD that repeated, and forget its states. */
  private repeats(pod: string): void {
    for (const [state, r] of this.pods.get(pod)?.seen ?? []) {
      if (r.count < 2) continue;
      const over = Math.round((r.last - r.first) / 1000);
      this.write(`pod ${pod}: ${state} (x${r.count}${over > 0 ? ` over ${formatDuration(over * 1000)}` : ''})`);
    }
    this.pods.delete(pod);
  }
  async close(): Promise<void> {
    for (const pod of [...this.pods.keys()]) this.repeats(pod);
    this.stderr?.close();
  }
}

/**
 * Lines written together, once per turn of the event loop: 30 pods starting
 * at once print ~120 lines within a few seconds, and every write to stderr
 * is a system call (synchronous for files and pipes). close() writes what
 * is left; so does the process's exit, if it comes first.
 */
export class BatchedLines {
  private pending: string[] = [];
  private scheduled = false;
  constructor(private readonly out: (text: string) => void) {
    process.once('exit', this.flush);
  }
  push(line: string): void {
    this.pending.push(line);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }
  close(): void {
    this.flush();
    process.off('exit', this.flush);
  }
  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const text = this.pending.join('\n') + '\n';
    this.pending = [];
    this.out(text);
  };
}

/** Nothing but source errors (-o json without a TTY, tests). */
export class SilentProgress implements Progress {
  constructor(private readonly write: (line: string) => void = (l) => process.stderr.write(l + '\n')) {}
  event(e: KletEventBody): void {
    if (e.kind === 'SourceError') this.write(`error: ${e.message}`);
  }
  async close(): Promise<void> {}
}

interface Deferred {
  resolve: (title?: string) => void;
  reject: (err: Error) => void;
  promise: Promise<string | undefined>;
}
function deferred(): Deferred {
  let resolve!: (t?: string) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<string | undefined>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { resolve, reject, promise };
}

/**
 * listr2 task lists: per pod, sandbox / images / init containers /
 * containers, each task resolved by the sync's events.
 */
export class ListrProgress implements Progress {
  private readonly steps = new Map<string, Map<string, Deferred>>();
  private readonly runs: Promise<unknown>[] = [];

  static async create(): Promise<ListrProgress> {
    const mod = await import('listr2');
    return new ListrProgress(mod.Listr);
  }

  private constructor(private readonly Listr: typeof import('listr2').Listr) {}

  event(e: KletEventBody): void {
    switch (e.kind) {
      case 'PodWaitStarted':
        this.pod(e.pod, e);
        return;
      case 'PodWaitDone':
        this.done(e.pod, e.ok, e.summary);
        return;
      case 'SourceError':
        process.stderr.write(`error: ${e.message}\n`);
        return;
      case 'Event':
        this.podEvent(e);
        return;
      default:
        return;
    }
  }

  private pod(key: string, s: { containers: string[]; initContainers: string[] }): void {
    const steps = new Map<string, Deferred>();
    this.steps.set(key, steps);
    const names = ['sandbox', 'images', ...s.initContainers.map((c) => `init:${c}`), ...s.containers.map((c) => `container:${c}`)];
    for (const n of names) steps.set(n, deferred());
    steps.set('done', deferred());
    const title = (n: string) =>
      n === 'sandbox' ? 'Sandbox' : n === 'images' ? 'Images' : n.startsWith('init:') ? `Init container ${n.slice(5)}` : `Container ${n.slice(10)}`;
    const list = new this.Listr(
      [
        {
          title: `Pod ${key}`,
          task: (_ctx, task) =>
            task.newListr(
              names.map((n) => ({
                title: title(n),
                task: async (_c: unknown, t: { title: string }) => {
                  const done = await (steps.get(n) as Deferred).promise;
                  if (done) t.title = `${title(n)}: ${done}`;
                },
              })),
              { concurrent: true, exitOnError: false },
            ),
        },
      ],
      { renderer: 'default', rendererOptions: { collapseSubtasks: false }, exitOnError: false, registerSignalListeners: false },
    );
    this.runs.push(list.run().catch(() => undefined));
  }

  private podEvent(e: PodEvent): void {
    const steps = this.steps.get(e.pod);
    if (!steps) return;
    const get = (n: string) => steps.get(n);
    switch (e.reason) {
      case 'SandboxCreated':
        get('sandbox')?.resolve(e.ip ? `IP ${e.ip}` : 'created');
        break;
      case 'FailedCreatePodSandBox':
        get('sandbox')?.reject(new Error(e.message));
        break;
      case 'Pulled':
        get('images')?.resolve(e.pulled ? 'pulled' : 'present');
        break;
      case 'Started':
        get(e.init ? `init:${e.container}` : `container:${e.container}`)?.resolve('started');
        // An existing sandbox is not re-created: the sandbox step is done too.
        get('sandbox')?.resolve('ready');
        get('images')?.resolve('present');
        break;
      default:
        if (e.containerReason === undefined) break;
        (get(`init:${e.container}`) ?? get(`container:${e.container}`))?.reject(new Error(`${e.containerReason}: ${e.message}`));
        if (e.containerReason.includes('Image')) get('images')?.reject(new Error(e.containerReason));
        break;
    }
  }

  private done(key: string, ok: boolean, summary: string): void {
    const steps = this.steps.get(key);
    if (!steps) return;
    for (const [, d] of steps) {
      if (ok) d.resolve();
      else d.reject(new Error(summary));
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.runs);
  }
}

export async function createProgress(opts: { tty: boolean; json: boolean; quiet?: boolean }): Promise<Progress> {
  if (opts.quiet) return new SilentProgress();
  if (opts.tty && !opts.json) return ListrProgress.create();
  return new PlainProgress();
}
