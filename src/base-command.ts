/**
 * The one base command: global flags, output format, logging, and the
 * single catch() that turns any failure into one line on stderr (or a JSON
 * error object with -o json) and an exit code. Stack traces only with
 * --log-level debug. What a run does beyond oclif's parsing lives in
 * src/cli/ (interrupt, runtime session, output, failure), which the
 * oclif-free `runonce` entry (src/cli/runonce-entry.ts) shares.
 */
import { Command, Flags, Interfaces } from '@oclif/core';
import { LOG_LEVELS, type LogLevel, setLogLevel } from './lib/log.js';
import { durationFlag } from './flags.js';
import { jsonReplacer } from './lib/util/json.js';
import { DEFAULT_ROOT_DIR, nodeNameOf } from './cli/defaults.js';
import { Interrupt } from './cli/interrupt.js';
import { reportFailure } from './cli/failure.js';
import { type OutputFormat, printObject, interactiveStderr } from './cli/output.js';
import { RuntimeSession } from './cli/runtime-session.js';
import { givenGlobals } from './cli/argv.js';

export { jsonReplacer, DEFAULT_ROOT_DIR, type OutputFormat };
export { DEFAULT_RUNTIME_ENDPOINT as DEFAULT_ENDPOINT } from './lib/cri/endpoint.js';
import { DEFAULT_RUNTIME_ENDPOINT as DEFAULT_ENDPOINT } from './lib/cri/endpoint.js';

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

  /**
   * The command runs a command given after `--` (exec, debug): those words
   * are passed on word for word and the parser never sees them, as kubectl
   * takes them (cobra's ArgsLenAtDash). oclif's parser would read a `-c` or
   * `-i` among them as this command's own flag.
   */
  static passesCommandAfterDash = false;

  protected flags!: BaseFlags<T>;

  /** The arguments as given, before any parse (oclif's parse replaces this.argv with what it parsed). */
  private givenArgv?: string[];

  /** The words after the first `--` of a command that passes them on (passesCommandAfterDash), else undefined. */
  protected commandAfterDash(): string[] | undefined {
    const given = (this.givenArgv ??= [...this.argv]);
    const dash = given.indexOf('--');
    return (this.ctor as typeof BaseCommand).passesCommandAfterDash && dash !== -1 ? given.slice(dash + 1) : undefined;
  }

  /** What the parser reads: the arguments, without the command after `--` of a command that passes it on. */
  protected override async parse<F extends Record<string, unknown>, B extends Record<string, unknown>, A extends Record<string, unknown>>(
    options?: Interfaces.Input<F, B, A>,
    argv?: string[],
  ): Promise<Interfaces.ParserOutput<F, B, A>> {
    const after = this.commandAfterDash();
    const given = this.givenArgv!;
    return super.parse(options, argv ?? (after === undefined ? given : given.slice(0, given.length - after.length - 1)));
  }

  /** Output format: set by commands that declare the `output` flag. */
  protected output: OutputFormat = 'table';

  private readonly interrupt = new Interrupt();
  /** The signal that interrupted this run (SIGINT, SIGTERM), once one did. */
  protected get interruptedBy(): NodeJS.Signals | undefined {
    return this.interrupt.by;
  }

  /**
   * Aborted on SIGINT or SIGTERM: every service and long operation takes it.
   * Taking it installs the handlers (a second signal exits at once); an
   * operation the signal interrupted makes klet exit 130 (SIGINT) or 143
   * (SIGTERM), leaving pods as they are. Streams (logs -f, status --watch,
   * sync) end normally on it instead.
   */
  protected get signal(): AbortSignal {
    return this.interrupt.signal;
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

  /** Runtime request timeout in milliseconds (validated while parsing: a bad value is a usage error for every command). */
  protected runtimeTimeoutMs(): number {
    return this.flags['runtime-request-timeout'];
  }

  protected nodeName(): string {
    return nodeNameOf(this.flags['node-name']);
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    this.interrupt.dispose();
    return super.finally(err);
  }

  /** Write a result to stdout in the chosen format. */
  protected async printObject(obj: unknown, table: () => string): Promise<void> {
    return printObject(this.output, obj, table);
  }

  /** Progress and notices go to stderr, never stdout. */
  protected notice(line: string): void {
    process.stderr.write(line + '\n');
  }

  override async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<unknown> {
    // this.exit() and oclif's own exits pass straight through.
    if (err.oclif?.exit !== undefined && err.message.startsWith('EEXIT')) throw err;
    if (this.flags === undefined) this.settingsFromArgv();
    const flags = { ...(this.ctor as typeof BaseCommand).baseFlags, ...this.ctor.flags };
    const code = reportFailure(err, {
      output: this.output,
      interruptedBy: this.interruptedBy,
      hasFlag: (name) => name in flags,
      // Flag and argument parse errors from oclif: usage errors.
      classify: (e) =>
        (e as typeof err).oclif?.exit === undefined
          ? undefined
          : { code: 2, kind: 'USAGE', message: usageMessage(e.message), suggestions: [`see: klet ${this.id?.replaceAll(':', ' ') ?? ''} --help`.trimEnd()] },
    });
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

/**
 * Base for commands that talk to the container runtime. On the kubelet's
 * default endpoint with no socket present, the klet-managed containerd is
 * started first (announced in one line on stderr).
 */
export abstract class RuntimeCommand<T extends typeof Command> extends BaseCommand<T> {
  private session: RuntimeSession | undefined;
  /** The endpoint and timeout a configuration set (klet sync --config), instead of the flags'. */
  protected runtimeOverride: { endpoint: string; timeoutMs: number } | undefined;

  protected endpointIsDefault(): boolean {
    return (this.runtimeOverride?.endpoint ?? this.flags['container-runtime-endpoint']) === DEFAULT_ENDPOINT;
  }

  /** The runtime and service dependencies of this run, made on first use. */
  private runtimeSession(): RuntimeSession {
    this.session ??= new RuntimeSession({
      endpoint: this.runtimeOverride?.endpoint ?? this.flags['container-runtime-endpoint'],
      endpointIsDefault: this.endpointIsDefault(),
      rootDir: this.flags['root-dir'],
      runtimeTimeoutMs: this.runtimeOverride?.timeoutMs ?? this.runtimeTimeoutMs(),
      nodeName: this.nodeName(),
      signal: () => this.signal,
      notice: (line) => this.notice(line),
    });
    return this.session;
  }

  /** A connected CRI client; the runtime is started on demand on the default endpoint. */
  protected async cri(): Promise<import('./lib/cri/client.js').CriClient> {
    return this.runtimeSession().cri();
  }

  /**
   * The dependencies of every service, built once per run: the connected
   * runtime, root dir, node name, the interrupt signal and a cache for the
   * run. `onEvent` is where the services' events go (progress display).
   */
  protected async deps(onEvent?: (e: import('./lib/events/types.js').KletEventBody) => void): Promise<import('./lib/services/deps.js').ServiceDeps> {
    return this.runtimeSession().deps(onEvent);
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    this.session?.close();
    return super.finally(err);
  }
}

/** Base for commands that sync, show or delete pods. */
export abstract class PodCommand<T extends typeof Command> extends RuntimeCommand<T> {
  /** What `klet sync` (and `klet join`, which goes on as it) runs with: the runtime on the configuration's endpoint. */
  protected syncHost(): import('./cli/sync.js').SyncHost {
    return {
      nodeName: this.nodeName(),
      kletVersion: this.config.version,
      globals: givenGlobals(this.argv, process.env, this.flags),
      runtime: (endpoint, timeoutMs) => {
        this.runtimeOverride ??= { endpoint, timeoutMs };
        return { cri: () => this.cri(), deps: () => this.deps() };
      },
      interruptedBy: () => this.interruptedBy,
      notice: (line) => this.notice(line),
    };
  }

  /** Is stderr a terminal we may draw on? */
  protected interactive(): boolean {
    return interactiveStderr(this.output);
  }
}
