/**
 * Progress of pod syncs on stderr, from the engine's events (KletEventBody).
 * With a TTY (and not -o json), listr2 draws a task list per pod; otherwise
 * each step is one plain line, so logs and CI output stay readable. Results
 * never go here: they go to stdout.
 */
import type { KletEventBody, PodEvent } from '../lib/events/types.js';

export interface Progress {
  event(e: KletEventBody): void;
  close(): Promise<void>;
}

/** One line for a pod event, or null for events progress does not show. */
function describe(e: PodEvent): string | null {
  switch (e.reason) {
    case 'SandboxCreated':
      return `sandbox ${(e.sandboxId ?? '').slice(0, 13)} created${e.ip ? ` (IP ${e.ip})` : ''}`;
    case 'SandboxStopped':
      return `sandbox ${(e.sandboxId ?? '').slice(0, 13)} stopped`;
    case 'FailedCreatePodSandBox':
      return `sandbox: ${e.message}`;
    case 'NodePorts':
      return `rejected: ${e.message}`;
    case 'Pulled':
      return e.pulled ? `container ${e.container}: pulled image ${e.image}` : `container ${e.container}: image ${e.image} already present`;
    case 'Started':
      return `${e.init ? 'init container' : 'container'} ${e.container} started (${(e.containerId ?? '').slice(0, 13)})`;
    case 'Killing':
      return `container ${e.container} stopping: ${e.killReason ?? e.message}`;
    case 'FailedMount':
    case 'Evicted':
      return `${e.reason}: ${e.message}`;
    case 'FailedPreStopHook':
      return `container ${e.container}: ${e.message}`;
    default:
      return e.containerReason !== undefined ? `container ${e.container}: ${e.containerReason}: ${e.message}` : null;
  }
}

/**
 * One line per step: `pod default/web: container app started (...)`. A
 * step that repeats the pod's previous line (a retry waiting out its
 * back-off, once per poll) is not printed again: only changes are.
 */
export class PlainProgress implements Progress {
  private readonly last = new Map<string, string>();
  private readonly stderr: BatchedLines | undefined;
  private readonly write: (line: string) => void;
  constructor(write?: (line: string) => void) {
    if (write === undefined) this.stderr = new BatchedLines((text) => process.stderr.write(text));
    this.write = write ?? ((l) => this.stderr?.push(l));
  }
  event(e: KletEventBody): void {
    switch (e.kind) {
      case 'PodWaitStarted':
        this.write(`pod ${e.pod}: syncing`);
        return;
      case 'PodWaitDone':
        this.write(`pod ${e.pod}: ${e.ok ? '' : 'FAILED: '}${e.summary}`);
        return;
      case 'SourceError':
        this.write(`error: ${e.message}`);
        return;
      case 'Event': {
        const text = describe(e);
        if (text === null) return;
        const line = `pod ${e.pod}: ${text}`;
        const key = `${e.pod}\u0000${e.container ?? ''}`;
        if (this.last.get(key) === line) return;
        this.last.set(key, line);
        this.write(line);
        return;
      }
      default:
        return;
    }
  }
  async close(): Promise<void> {
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
