/**
 * `klet runonce` without oclif. bin/run.js hands runonce's arguments here
 * first: oclif's Config, command loader and the command layer's imports cost
 * ~5 % of a 30-pod runonce (bench/README.md, "runonce without oclif"), which
 * is the whole point of a one-shot command on a node being provisioned.
 *
 * The parser here accepts only argument lists it reads exactly as oclif does
 * (known flags, --name value, --name=value, -o value, -ovalue, a value not
 * starting with "-"); anything else (--help, an unknown or repeated flag, a
 * stray argument, a bad value, `--`) returns undefined and bin/run.js runs
 * oclif, whose messages are the ones users see for bad input. The flags
 * below are the oclif command's (src/commands/runonce.ts and the base
 * command's global flags): test/unit/cli-runonce-entry.test.ts holds the two
 * to the same names, types, defaults, environment variables and parses.
 * After parsing, both paths run the same code (runOnceCommand,
 * RuntimeSession, reportFailure). One difference is oclif's, not klet's:
 * oclif adds a 'warning' listener that prints a Node process warning's stack
 * besides Node's own line; here only Node's line is printed.
 */
import { DEFAULT_RUNTIME_ENDPOINT } from '../lib/cri/endpoint.js';
import { LOG_LEVELS, type LogLevel, setLogLevel } from '../lib/log.js';
import { DEFAULT_ROOT_DIR, nodeNameOf } from './defaults.js';
import { positiveDurationMs } from './duration.js';
import type { OutputFormat } from './output.js';
import type { RunOnceFlags } from './runonce.js';

export interface ArgvFlagSpec {
  type: 'string' | 'boolean' | 'option' | 'duration';
  multiple?: boolean;
  options?: readonly string[];
  /** As the user would type it (durations are parsed). */
  default?: string | boolean;
  env?: string;
  char?: string;
}

/** Every flag `klet runonce` takes, global ones included. */
export const RUNONCE_FLAGS: Readonly<Record<string, ArgvFlagSpec>> = {
  'root-dir': { type: 'string', env: 'KLET_ROOT_DIR', default: DEFAULT_ROOT_DIR },
  'container-runtime-endpoint': { type: 'string', env: 'CONTAINER_RUNTIME_ENDPOINT', default: DEFAULT_RUNTIME_ENDPOINT },
  'runtime-request-timeout': { type: 'duration', default: '2m' },
  'node-name': { type: 'string' },
  'log-level': { type: 'option', options: LOG_LEVELS, default: 'info' },
  output: { type: 'option', char: 'o', options: ['table', 'json', 'yaml'], default: 'table' },
  json: { type: 'boolean', default: false },
  'manifest-dir': { type: 'string' },
  'manifest-url': { type: 'string' },
  'manifest-url-header': { type: 'string', multiple: true },
  objects: { type: 'string' },
  wait: { type: 'option', options: ['running', 'ready'], default: 'running' },
  timeout: { type: 'duration', default: '5m' },
  'exit-code-from': { type: 'string' },
  cleanup: { type: 'boolean', default: false },
};

export interface RunOnceArgv extends RunOnceFlags {
  'root-dir': string;
  'container-runtime-endpoint': string;
  'runtime-request-timeout': number;
  'node-name'?: string;
  'log-level': LogLevel;
  output: OutputFormat;
  json: boolean;
}

type Value = string | boolean | number | string[];

/**
 * The flags of `klet runonce ARGV` (the words after `runonce`) as oclif
 * would parse them, or undefined when this parser does not take the list
 * (then oclif must: it may be an error, or --help).
 */
export function parseRunOnceArgv(argv: readonly string[], env: NodeJS.ProcessEnv): RunOnceArgv | undefined {
  const given = new Map<string, string[]>();
  const take = (name: string, value: string | undefined): boolean => {
    const spec = RUNONCE_FLAGS[name] as ArgvFlagSpec;
    if (value === undefined || value === '' || value.startsWith('-')) return false;
    if (spec.options !== undefined && !spec.options.includes(value)) return false;
    const values = given.get(name) ?? [];
    if (values.length > 0 && !spec.multiple) return false;
    given.set(name, [...values, value]);
    return true;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = a.slice(2, eq === -1 ? undefined : eq);
      const spec = RUNONCE_FLAGS[name];
      if (spec === undefined) return undefined;
      if (spec.type === 'boolean') {
        if (eq !== -1) return undefined;
        given.set(name, ['true']);
        continue;
      }
      if (!take(name, eq === -1 ? argv[++i] : a.slice(eq + 1))) return undefined;
      continue;
    }
    if (a.length >= 2 && a[0] === '-' && a[1] !== '-') {
      const name = Object.keys(RUNONCE_FLAGS).find((n) => RUNONCE_FLAGS[n]?.char === a[1]);
      if (name === undefined) return undefined;
      const rest = a.slice(a[2] === '=' ? 3 : 2);
      if (!take(name, a.length === 2 ? argv[++i] : rest)) return undefined;
      continue;
    }
    // A stray argument, `-` or a value oclif would take differently.
    return undefined;
  }
  const flags: Record<string, Value> = {};
  for (const [name, spec] of Object.entries(RUNONCE_FLAGS)) {
    const values = given.get(name);
    // oclif: a flag not given takes its environment variable when that is set and not empty, else its default.
    const fromEnv = spec.env !== undefined && env[spec.env] ? env[spec.env] : undefined;
    const raw = values?.at(-1) ?? fromEnv ?? spec.default;
    if (raw === undefined) continue;
    if (spec.type === 'boolean') {
      flags[name] = raw === 'true' || raw === true;
    } else if (spec.type === 'duration') {
      try {
        flags[name] = positiveDurationMs(name, String(raw));
      } catch {
        return undefined;
      }
    } else if (spec.multiple) {
      flags[name] = values ?? [String(raw)];
    } else {
      flags[name] = String(raw);
    }
  }
  return flags as unknown as RunOnceArgv;
}

/**
 * Run `klet runonce ARGV` if parseRunOnceArgv takes it: true once the run is
 * over (on a failure or a non-zero report the process exits with its code,
 * as oclif's exit does); false, having done nothing, when oclif must run it.
 */
export async function runOnceEntry(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<boolean> {
  const flags = parseRunOnceArgv(argv, env);
  if (flags === undefined) return false;
  setLogLevel(flags['log-level']);
  const output: OutputFormat = flags.json ? 'json' : flags.output;
  const { Interrupt } = await import('./interrupt.js');
  const { RuntimeSession } = await import('./runtime-session.js');
  const { runOnceCommand } = await import('./runonce.js');
  const interrupt = new Interrupt();
  const session = new RuntimeSession({
    endpoint: flags['container-runtime-endpoint'],
    endpointIsDefault: flags['container-runtime-endpoint'] === DEFAULT_RUNTIME_ENDPOINT,
    rootDir: flags['root-dir'],
    runtimeTimeoutMs: flags['runtime-request-timeout'],
    nodeName: nodeNameOf(flags['node-name']),
    signal: () => interrupt.signal,
    notice: (line) => process.stderr.write(line + '\n'),
  });
  let exitCode: number;
  try {
    exitCode = await runOnceCommand(flags, { output, deps: (onEvent) => session.deps(onEvent) });
  } catch (err) {
    const { reportFailure } = await import('./failure.js');
    exitCode = reportFailure(err instanceof Error ? err : new Error(String(err)), {
      output,
      interruptedBy: interrupt.by,
      hasFlag: (name) => name in RUNONCE_FLAGS,
    });
  } finally {
    session.close();
    interrupt.dispose();
  }
  if (exitCode !== 0) process.exit(exitCode);
  return true;
}
