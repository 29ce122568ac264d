/**
 * Typed errors for everything klet does. The base command's single catch()
 * maps a KletError to a one-line message, suggestions and an exit code; any
 * other error is a bug and is shown with its stack only under --log-level debug.
 */
export interface KletErrorOptions {
  cause?: unknown;
  suggestions?: string[];
  exitCode?: number;
  /**
   * Which input of the operation the message is about, as the option's name
   * (`manifestUrl`, `exitCodeFrom`): the command layer names its flag
   * (`--manifest-url`) in front of the message. Library messages never name flags.
   */
  input?: string;
}

export class KletError extends Error {
  /** Stable machine-readable code, used in `-o json` error output. */
  readonly code: string = 'KLET_ERROR';
  readonly exitCode: number;
  readonly suggestions: string[];
  readonly input: string | undefined;
  /**
   * The message as constructed. oclif rewrites the message of an error
   * thrown while parsing a flag ("Parsing --timeout \n\t…"); this is the one
   * line to print.
   */
  readonly text: string;

  constructor(message: string, options: KletErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.exitCode = options.exitCode ?? 1;
    this.suggestions = options.suggestions ?? [];
    this.input = options.input;
    this.text = message;
  }
}

/** Bad user input: a flag, file, field or argument. The message names the input. */
export class InputError extends KletError {
  override readonly code: string = 'INVALID_INPUT';
  constructor(message: string, options: KletErrorOptions = {}) {
    super(message, { exitCode: 2, ...options });
  }
}

/** Something the user named does not exist (a pod, a container, an image, a file). */
export class NotFoundError extends KletError {
  override readonly code: string = 'NOT_FOUND';
}

/** A capability that belongs to a later milestone. Never a fake success. */
export class NotImplementedError extends KletError {
  override readonly code: string = 'NOT_IMPLEMENTED';
  constructor(what: string) {
    super(`${what}: not implemented yet`, { exitCode: 3 });
  }
}

/** A required external program or package is missing. */
export class MissingDependencyError extends KletError {
  override readonly code: string = 'MISSING_DEPENDENCY';
}

/** An operation did not finish in time. */
export class TimeoutError extends KletError {
  override readonly code: string = 'TIMEOUT';
}

/** The operation was interrupted by a signal (Ctrl-C): exit 128 + the signal's number, as shells report it. */
export class InterruptedError extends KletError {
  override readonly code: string = 'INTERRUPTED';
  constructor(readonly signalName: string) {
    super(`interrupted by ${signalName}`, { exitCode: signalName === 'SIGTERM' ? 143 : 130 });
  }
}

export function isKletError(err: unknown): err is KletError {
  return err instanceof KletError;
}

/** Message of any thrown value, for wrapping. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** A file system error as Go's syscall errors read ("no such file or directory"), else its message. */
export function fsErrorReason(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'not a directory';
    case 'EISDIR':
      return 'is a directory';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    default:
      return errorMessage(err);
  }
}
