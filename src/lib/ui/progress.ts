/**
 * Progress of pod syncs on stderr. With a TTY (and not -o json), listr2
 * draws a task list per pod; otherwise each step is one plain line, so logs
 * and CI output stay readable. Results never go here: they go to stdout.
 */
import type { SyncEvent } from '../kuberuntime/sync-pod.js';

export interface Progress {
  /** A pod is about to be synced. */
  pod(key: string, steps: { containers: string[]; initContainers: string[] }): void;
  event(e: SyncEvent): void;
  /** The pod reached its end for this command. */
  done(key: string, ok: boolean, summary: string): void;
  close(): Promise<void>;
}

function describe(e: SyncEvent): string {
  switch (e.type) {
    case 'SandboxCreated':
      return `sandbox ${e.sandboxId.slice(0, 13)} created${e.ip ? ` (IP ${e.ip})` : ''}`;
    case 'SandboxStopped':
      return `sandbox ${e.sandboxId.slice(0, 13)} stopped`;
    case 'ImagePresent':
      return `container ${e.container}: image ${e.image} already present`;
    case 'ImagePulled':
      return `container ${e.container}: pulled image ${e.image}`;
    case 'ContainerStarted':
      return `${e.init ? 'init container' : 'container'} ${e.container} started (${e.containerId.slice(0, 13)})`;
    case 'ContainerKilled':
      return `container ${e.container} stopped: ${e.message}`;
    case 'ContainerFailed':
      return `container ${e.container}: ${e.reason}: ${e.message}`;
  }
}

/** One line per step: `pod default/web: container app started (...)`. */
export class PlainProgress implements Progress {
  constructor(private readonly write: (line: string) => void = (l) => process.stderr.write(l + '\n')) {}
  pod(key: string): void {
    this.write(`pod ${key}: syncing`);
  }
  event(e: SyncEvent): void {
    this.write(`pod ${e.pod}: ${describe(e)}`);
  }
  done(key: string, ok: boolean, summary: string): void {
    this.write(`pod ${key}: ${ok ? '' : 'FAILED: '}${summary}`);
  }
  async close(): Promise<void> {}
}

/** Nothing at all (-o json without a TTY, tests). */
export class SilentProgress implements Progress {
  pod(): void {}
  event(): void {}
  done(): void {}
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

  pod(key: string, s: { containers: string[]; initContainers: string[] }): void {
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

  event(e: SyncEvent): void {
    const steps = this.steps.get(e.pod);
    if (!steps) return;
    const get = (n: string) => steps.get(n);
    switch (e.type) {
      case 'SandboxCreated':
        get('sandbox')?.resolve(e.ip ? `IP ${e.ip}` : 'created');
        break;
      case 'ImagePresent':
      case 'ImagePulled':
        get('images')?.resolve(e.type === 'ImagePulled' ? 'pulled' : 'present');
        break;
      case 'ContainerStarted':
        get(e.init ? `init:${e.container}` : `container:${e.container}`)?.resolve('started');
        // An existing sandbox is not re-created: the sandbox step is done too.
        get('sandbox')?.resolve('ready');
        get('images')?.resolve('present');
        break;
      case 'ContainerFailed':
        (get(`init:${e.container}`) ?? get(`container:${e.container}`))?.reject(new Error(`${e.reason}: ${e.message}`));
        if (e.reason.includes('Image')) get('images')?.reject(new Error(e.reason));
        break;
      default:
        break;
    }
  }

  done(key: string, ok: boolean, summary: string): void {
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
