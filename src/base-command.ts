/**
 * The one base command: global flags, output format, logging, and the
 * single catch() that turns any failure into one line on stderr (or a JSON
 * error object with -o json) and an exit code. Stack traces only with
 * --log-level debug.
 */
import { Command, Flags, Interfaces } from '@oclif/core';
import os from 'node:os';
import { KletError, errorMessage, InterruptedError } from './lib/errors.js';
import { LOG_LEVELS, type LogLevel, logLevel, setLogLevel } from './lib/log.js';
import { durationFlag } from './flags.js';
import { jsonReplacer } from './lib/util/json.js';

export { jsonReplacer };

export const DEFAULT_ROOT_DIR = '/var/lib/klet';
export { DEFAULT_RUNTIME_ENDPOINT as DEFAULT_ENDPOINT } from './lib/cri/endpoint.js';
import { DEFAULT_RUNTIME_ENDPOINT as DEFAULT_ENDPOINT } from './lib/cri/endpoint.js';

export type OutputFormat = 'table' | 'json' | 'yaml';

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>;

export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override baseFlags = {
    'root-dir': Flags.string({
      summary: 'Directory for klet state: pod dirs, the managed runtime, the local API socket.',
      env: 'KLET_ROOT_DIR',
      default: DEFAULT_ROOT_DIR,
      helpGroup: 'GLOBAL',
    }),
    'container-runtime-endpoint': Flags.string({
      summary: 'CRI endpoint of the container runtime (unix://PATH).',
      env: 'CONTAINER_RUNTIME_ENDPOINT',
      default: DEFAULT_ENDPOINT,
      helpGroup: 'GLOBAL',
    }),
    'runtime-request-timeout': durationFlag({
      summary: 'Deadline of every CRI request, as a duration (e.g. 2m, 30s).',
      default: '2m',
      helpGroup: 'GLOBAL',
    }),
    'node-name': Flags.string({
      summary: 'Name of this node. Defaults to the hostname, lower-cased.',
      helpGroup: 'GLOBAL',
    }),
    'log-level': Flags.option({
      summary: 'How much to log on stderr; debug also shows stack traces.',
      options: LOG_LEVELS,
      default: 'info' as LogLevel,
      helpGroup: 'GLOBAL',
    })(),
  };

  protected flags!: BaseFlags<T>;

  /** Output format: set by commands that declare the `output` flag. */
  protected output: OutputFormat = 'table';

  private interruptController: AbortController | undefined;
  /** The signal that interrupted this run (SIGINT, SIGTERM), once one did. */
  protected interruptedBy: NodeJS.Signals | undefined;
  private readonly onSignal = (sig: NodeJS.Signals): void => {
    // A second Ctrl-C does not wait for anything.
    if (this.interruptedBy !== undefined) process.exit(128 + (os.constants.signals[sig] ?? 2));
    this.interruptedBy = sig;
    this.interruptController?.abort(new InterruptedError(sig));
  };

  /**
   * Aborted on SIGINT or SIGTERM: every service and long operation takes it.
   * Taking it installs the handlers (a second signal exits at once); an
   * operation the signal interrupted makes klet exit 130 (SIGINT) or 143
   * (SIGTERM), leaving pods as they are. Streams (logs -f, status --watch,
   * sync) end normally on it instead.
   */
  protected get signal(): AbortSignal {
    if (this.interruptController === undefined) {
      this.interruptController = new AbortController();
      process.on('SIGINT', this.onSignal);
      process.on('SIGTERM', this.onSignal);
    }
    return this.interruptController.signal;
  }

  override async init(): Promise<void> {
    await super.init();
    // Parse leniently first so --log-level applies to parse errors too.
    const { flags } = await this.parse({
      flags: this.ctor.flags,
      baseFlags: (this.ctor as typeof BaseCommand).baseFlags,
      args: this.ctor.args,
      strict: this.ctor.strict,
      enableJsonFlag: false,
    });
    this.flags = flags as BaseFlags<T>;
    setLogLevel(this.flags['log-level']);
    const out = (flags as Record<string, unknown>).output;
    if (out === 'json' || out === 'yaml' || out === 'table') this.output = out;
    if ((flags as Record<string, unknown>).json === true) this.output = 'json';
  }

  /**
   * When parsing failed, init() set neither the output format nor the log
   * level: take them from the raw arguments, so that `-o json` still gets a
   * JSON error and `--log-level debug` a stack. Only well-formed values count.
   */
  private settingsFromArgv(): void {
    const hasOutput = 'output' in (this.ctor.flags ?? {});
    for (let i = 0; i < this.argv.length; i++) {
      const a = this.argv[i] as string;
      if (a === '--') break;
      const next = this.argv[i + 1];
      const value = (names: string[]): string | undefined => {
        for (const n of names) {
          if (a === n) return next;
          if (a.startsWith(n + '=')) return a.slice(n.length + 1);
          if (n.length === 2 && a.startsWith(n) && a.length > 2) return a.slice(2); // -ojson
        }
        return undefined;
      };
      const level = value(['--log-level']);
      if (level !== undefined && (LOG_LEVELS as readonly string[]).includes(level)) setLogLevel(level as LogLevel);
      if (!hasOutput) continue;
      const out = value(['--output', '-o']);
      if (out === 'json' || out === 'yaml' || out === 'table') this.output = out;
      if (a === '--json') this.output = 'json';
    }
  }

  /**
   * A library error about one input of the operation (`input: manifestUrl`)
   * is prefixed with the flag that gave it (`--manifest-url`), when this
   * command has that flag.
   */
  private withFlagName(err: KletError): string {
    if (err.input === undefined) return err.text;
    const flag = err.input.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const flags = { ...(this.ctor as typeof BaseCommand).baseFlags, ...this.ctor.flags };
    return flag in flags ? `--${flag} ${err.text}` : err.text;
  }

  /** Runtime request timeout in milliseconds (validated while parsing: a bad value is a usage error for every command). */
  protected runtimeTimeoutMs(): number {
    return this.flags['runtime-request-timeout'];
  }

  protected nodeName(): string {
    return (this.flags['node-name'] ?? os.hostname()).toLowerCase();
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    return super.finally(err);
  }

  /** Write a result to stdout in the chosen format. */
  protected async printObject(obj: unknown, table: () => string): Promise<void> {
    if (this.output === 'json') {
      process.stdout.write(JSON.stringify(obj, jsonReplacer, 2) + '\n');
    } else if (this.output === 'yaml') {
      const { stringify } = await import('yaml');
      process.stdout.write(stringify(JSON.parse(JSON.stringify(obj, jsonReplacer))));
    } else {
      const text = table();
      process.stdout.write(text.endsWith('\n') ? text : text + '\n');
    }
  }

  /** Progress and notices go to stderr, never stdout. */
  protected notice(line: string): void {
    process.stderr.write(line + '\n');
  }

  override async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<unknown> {
    // this.exit() and oclif's own exits pass straight through.
    if (err.oclif?.exit !== undefined && err.message.startsWith('EEXIT')) throw err;
    if (this.flags === undefined) this.settingsFromArgv();
    const debug = logLevel() === 'debug';
    let code: number;
    let kind: string;
    let message: string;
    let suggestions: string[] = [];
    if (this.interruptedBy !== undefined) {
      // Whatever the interrupted operation threw (a cancelled CRI call, the abort itself): it was interrupted.
      const e = new InterruptedError(this.interruptedBy);
      code = e.exitCode;
      kind = e.code;
      message = e.message;
    } else if (err instanceof KletError) {
      code = err.exitCode;
      kind = err.code;
      message = this.withFlagName(err);
      suggestions = err.suggestions;
      // The runtime could not be reached: the flag that points klet elsewhere (the library names no flags).
      if (err.code === 'CRI_UNAVAILABLE') suggestions = [...suggestions, 'or point klet at a running one with --container-runtime-endpoint'];
    } else if (err.oclif?.exit !== undefined) {
      // Flag and argument parse errors from oclif: usage errors.
      code = 2;
      kind = 'USAGE';
      message = usageMessage(err.message);
      suggestions = [`see: klet ${this.id?.replaceAll(':', ' ') ?? ''} --help`.trimEnd()];
    } else {
      code = 1;
      kind = 'INTERNAL';
      message = errorMessage(err);
    }
    if (this.output === 'json') {
      process.stdout.write(JSON.stringify({ error: { code: kind, message, suggestions } }, null, 2) + '\n');
    } else {
      const hint = suggestions.length > 0 ? ` (${suggestions.join('; ')})` : '';
      process.stderr.write(`error: ${firstLine(message)}${hint}\n`);
    }
    if (debug && err.stack) process.stderr.write(err.stack + '\n');
    this.exit(code);
  }
}

/** Output flags for commands that print objects. */
export const outputFlags = {
  output: Flags.option({
    char: 'o',
    summary: 'Output format.',
    options: ['table', 'json', 'yaml'] as const,
    default: 'table' as const,
  })(),
  json: Flags.boolean({ summary: 'Same as -o json.', default: false }),
};

/**
 * oclif's parse errors span lines ("Missing 1 required arg:\nfile  DESCRIPTION\n
 * See more help with --help"): keep what names the input, on one line.
 */
function usageMessage(s: string): string {
  const lines = s
    .split('\n')
    .map((l) => l.trim().replace(/\s+/g, ' '))
    .filter((l) => l !== '' && !/^See more help with/.test(l) && !/^The following errors? occurred:$/.test(l));
  return lines.length > 0 ? lines.join(' ') : s.trim();
}

function firstLine(s: string): string {
  const line = s.split('\n').find((l) => l.trim() !== '') ?? s;
  return line.trim();
}


/**
 * Base for commands that talk to the container runtime. On the kubelet's
 * default endpoint with no socket present, the klet-managed containerd is
 * started first (announced in one line on stderr).
 */
export abstract class RuntimeCommand<T extends typeof Command> extends BaseCommand<T> {
  private client: import('./lib/cri/client.js').CriClient | undefined;

  protected endpointIsDefault(): boolean {
    return this.flags['container-runtime-endpoint'] === DEFAULT_ENDPOINT;
  }

  protected runtimeTarget(): { endpoint: string; rootDir: string } {
    return { endpoint: this.flags['container-runtime-endpoint'], rootDir: this.flags['root-dir'] };
  }

  /** A connected CRI client; the runtime is started on demand on the default endpoint. */
  protected async cri(): Promise<import('./lib/cri/client.js').CriClient> {
    if (this.client) return this.client;
    const timeoutMs = this.runtimeTimeoutMs();
    const { parseEndpoint } = await import('./lib/cri/endpoint.js');
    parseEndpoint(this.flags['container-runtime-endpoint']);
    const { ensureRuntime } = await import('./lib/runtime/containerd.js');
    await ensureRuntime(this.runtimeTarget(), {
      allowStart: this.endpointIsDefault(),
      notify: (line) => this.notice(line),
    });
    const { CriClient } = await import('./lib/cri/client.js');
    this.client = CriClient.connect(this.flags['container-runtime-endpoint'], { timeoutMs });
    return this.client;
  }

  private builtDeps: import('./lib/services/deps.js').ServiceDeps | undefined;

  /**
   * The dependencies of every service, built once per run: the connected
   * runtime, root dir, node name, the interrupt signal and a cache for the
   * run. `onEvent` is where the services' events go (progress display).
   */
  protected async deps(onEvent?: (e: import('./lib/events/types.js').KletEventBody) => void): Promise<import('./lib/services/deps.js').ServiceDeps> {
    if (this.builtDeps === undefined) {
      const signal = this.signal;
      // Connected (and the managed runtime started) on the first CRI call, so
      // that a service refusing its input first never touches the runtime.
      const cri = new Proxy({} as import('./lib/cri/client.js').CriClient, {
        get: (_target, method: string) => {
          if (method === 'then') return undefined;
          return async (...args: unknown[]) => {
            const client = (await this.cri()) as unknown as Record<string, (...a: unknown[]) => unknown>;
            return client[method]!(...args);
          };
        },
      });
      const { NodeCache } = await import('./lib/kuberuntime/sync-pod.js');
      this.builtDeps = { cri, rootDir: this.flags['root-dir'], nodeName: this.nodeName(), signal, cache: new NodeCache() };
    }
    return onEvent === undefined ? this.builtDeps : { ...this.builtDeps, onEvent };
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    this.client?.close();
    return super.finally(err);
  }
}

/** Base for commands that sync, show or delete pods. */
export abstract class PodCommand<T extends typeof Command> extends RuntimeCommand<T> {
  /** Is stderr a terminal we may draw on? */
  protected interactive(): boolean {
    return process.stderr.isTTY === true && this.output !== 'json' && this.output !== 'yaml';
  }
}
