/**
 * The one base command: global flags, output format, logging, and the
 * single catch() that turns any failure into one line on stderr (or a JSON
 * error object with -o json) and an exit code. Stack traces only with
 * --log-level debug.
 */
import { Command, Flags, Interfaces } from '@oclif/core';
import os from 'node:os';
import { KletError, errorMessage, InputError } from './lib/errors.js';
import { LOG_LEVELS, type LogLevel, logLevel, setLogLevel } from './lib/log.js';
import { parseDuration } from './lib/util/duration.js';
import { jsonReplacer } from './lib/util/json.js';

export { jsonReplacer };

export const DEFAULT_ROOT_DIR = '/var/lib/klet';
export const DEFAULT_ENDPOINT = 'unix:///run/containerd/containerd.sock';

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
    'runtime-request-timeout': Flags.string({
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
    // Every command takes the flag: a bad value is a usage error even where no CRI call is made.
    this.runtimeTimeoutMs();
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

  /** Runtime request timeout in milliseconds, validated. */
  protected runtimeTimeoutMs(): number {
    const raw = this.flags['runtime-request-timeout'];
    const ms = parseDuration(raw);
    if (ms === null || ms <= 0) {
      throw new InputError(`--runtime-request-timeout "${raw}": not a positive duration (e.g. 2m, 30s)`);
    }
    return ms;
  }

  protected nodeName(): string {
    return (this.flags['node-name'] ?? os.hostname()).toLowerCase();
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
    if (err instanceof KletError) {
      code = err.exitCode;
      kind = err.code;
      message = err.message;
      suggestions = err.suggestions;
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
    .filter((l) => l !== '' && !/^See more help with/.test(l));
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

  protected override async finally(err: Error | undefined): Promise<unknown> {
    this.client?.close();
    return super.finally(err);
  }
}

/** Base for commands that sync, show or delete pods. */
export abstract class PodCommand<T extends typeof Command> extends RuntimeCommand<T> {
  protected async syncContext(
    objects: import('./lib/kuberuntime/env.js').LocalObjects = { configMaps: [], secrets: [] },
    onEvent?: (e: import('./lib/kuberuntime/sync-pod.js').SyncEvent) => void,
  ): Promise<import('./lib/kuberuntime/sync-pod.js').SyncContext> {
    return {
      cri: await this.cri(),
      rootDir: this.flags['root-dir'],
      nodeName: this.nodeName(),
      objects,
      onEvent,
    };
  }

  /** Is stderr a terminal we may draw on? */
  protected interactive(): boolean {
    return process.stderr.isTTY === true && this.output !== 'json' && this.output !== 'yaml';
  }
}
