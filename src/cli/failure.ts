/**
 * How a failed command ends, for every command (the oclif base command's
 * catch() and the oclif-free `runonce` entry): one line on stderr, or a JSON
 * error object on stdout with -o json, and an exit code. Stack traces only
 * with --log-level debug.
 */
import { KletError, errorMessage, InterruptedError } from '../lib/errors.js';
import { logLevel } from '../lib/log.js';
import { PodNotFoundError } from '../lib/pod/ref.js';
import type { OutputFormat } from './output.js';

export interface Failure {
  code: number;
  kind: string;
  message: string;
  suggestions: string[];
}

export interface FailureContext {
  output: OutputFormat;
  /** The signal that interrupted the run, if one did: whatever was thrown then, the run was interrupted. */
  interruptedBy: NodeJS.Signals | undefined;
  /** Does this command have the flag `--NAME`? (A library error about input `fooBar` is prefixed with `--foo-bar`.) */
  hasFlag(name: string): boolean;
  /** Errors that are not klet's own but are known to the caller (oclif's parse errors). */
  classify?(err: Error): Failure | undefined;
}

/**
 * A library error about one input of the operation (`input: manifestUrl`)
 * is prefixed with the flag that gave it (`--manifest-url`), when the
 * command has that flag.
 */
function withFlagName(err: KletError, hasFlag: (name: string) => boolean): string {
  if (err.input === undefined) return err.text;
  const flag = err.input.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  return hasFlag(flag) ? `--${flag} ${err.text}` : err.text;
}

export function describeFailure(err: Error, ctx: FailureContext): Failure {
  if (ctx.interruptedBy !== undefined) {
    const e = new InterruptedError(ctx.interruptedBy);
    return { code: e.exitCode, kind: e.code, message: e.message, suggestions: [] };
  }
  if (err instanceof KletError) {
    let suggestions = err.suggestions;
    // The runtime could not be reached: the flag that points klet elsewhere (the library names no flags).
    if (err.code === 'CRI_UNAVAILABLE') suggestions = [...suggestions, 'or point klet at a running one with --container-runtime-endpoint'];
    // A pod of this root dir run for another node name: the flag that reaches it.
    const notFound = err instanceof PodNotFoundError ? err : err.cause instanceof PodNotFoundError ? err.cause : undefined;
    if (notFound?.otherNode !== undefined && ctx.hasFlag('node-name')) {
      suggestions = [...suggestions, `pass --node-name ${notFound.otherNode} to act on it`];
    }
    return { code: err.exitCode, kind: err.code, message: withFlagName(err, ctx.hasFlag), suggestions };
  }
  return ctx.classify?.(err) ?? { code: 1, kind: 'INTERNAL', message: errorMessage(err), suggestions: [] };
}

/** Report a failure (stderr line, or JSON on stdout with -o json; the stack with --log-level debug) and return its exit code. */
export function reportFailure(err: Error, ctx: FailureContext): number {
  const { code, kind, message, suggestions } = describeFailure(err, ctx);
  if (ctx.output === 'json') {
    process.stdout.write(JSON.stringify({ error: { code: kind, message, suggestions } }, null, 2) + '\n');
  } else {
    const hint = suggestions.length > 0 ? ` (${suggestions.join('; ')})` : '';
    process.stderr.write(`error: ${firstLine(message)}${hint}\n`);
  }
  if (logLevel() === 'debug' && err.stack) process.stderr.write(err.stack + '\n');
  return code;
}

function firstLine(s: string): string {
  const line = s.split('\n').find((l) => l.trim() !== '') ?? s;
  return line.trim();
}
