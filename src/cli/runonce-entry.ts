/**
 * `klet runonce` without oclif. bin/run.js hands runonce's arguments here
 * first: oclif's Config, command loader and the command layer's imports cost
 * ~5 % of a 30-pod runonce (bench/README.md, "runonce without oclif"), which
 * is the whole point of a one-shot command on a node being provisioned.
 *
 * The parser (src/cli/argv.ts) takes only argument lists it reads exactly
 * as oclif does; anything else goes to oclif, whose messages are the ones
 * users see for bad input. The flags below are the oclif command's
 * (src/commands/runonce.ts and the base command's global flags):
 * test/unit/cli-runonce-entry.test.ts holds the two to the same names,
 * types, defaults, environment variables and parses.
 * After parsing, both paths run the same code (runOnceCommand,
 * RuntimeSession, reportFailure). One difference is oclif's, not klet's:
 * oclif adds a 'warning' listener that prints a Node process warning's stack
 * besides Node's own line; here only Node's line is printed.
 */
import { setLogLevel } from '../lib/log.js';
import { type ArgvFlagSpec, CGROUP_FLAGS, GLOBAL_FLAGS, type GlobalArgv, parseArgv } from './argv.js';
import type { OutputFormat } from './output.js';
import type { RunOnceFlags } from './runonce.js';

/** Every flag `klet runonce` takes, global ones included. */
export const RUNONCE_FLAGS: Readonly<Record<string, ArgvFlagSpec>> = {
  ...GLOBAL_FLAGS,
  output: { type: 'option', char: 'o', options: ['table', 'json', 'yaml'], default: 'table' },
  json: { type: 'boolean', default: false },
  'manifest-dir': { type: 'string', aliases: ['pod-manifest-path'] },
  'manifest-url': { type: 'string' },
  'manifest-url-header': { type: 'string', multiple: true },
  objects: { type: 'string' },
  wait: { type: 'option', options: ['running', 'ready'], default: 'running' },
  settle: { type: 'duration', default: '3s', allowZero: true },
  timeout: { type: 'duration', default: '5m' },
  'exit-code-from': { type: 'string' },
  cleanup: { type: 'boolean', default: false },
  ...CGROUP_FLAGS,
  'kube-reserved': { type: 'string' },
  'system-reserved': { type: 'string' },
};

export interface RunOnceArgv extends RunOnceFlags, GlobalArgv {
  output: OutputFormat;
  json: boolean;
}

/**
 * The flags of `klet runonce ARGV` (the words after `runonce`) as oclif
 * would parse them, or undefined when this parser does not take the list
 * (then oclif must: it may be an error, or --help).
 */
export function parseRunOnceArgv(argv: readonly string[], env: NodeJS.ProcessEnv): RunOnceArgv | undefined {
  return parseArgv(RUNONCE_FLAGS, argv, env) as unknown as RunOnceArgv | undefined;
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
  const { entrySession } = await import('./runtime-session.js');
  const { runOnceCommand } = await import('./runonce.js');
  const interrupt = new Interrupt();
  const session = entrySession(flags, () => interrupt.signal);
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
