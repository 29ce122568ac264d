/**
 * Clients of the runtime's streaming server over SPDY (spdy.ts), as kubectl
 * speaks to it through the kubelet: remote commands (exec, attach) with the
 * v4.channel.k8s.io protocol, and port forwarding with portforward.k8s.io.
 */
import type { Readable, Writable } from 'node:stream';
import { type SpdySession, type SpdyStream, upgradeToSpdy } from './spdy.js';

/** The remotecommand protocols this client speaks, newest first (v4 reports the exit code as a Status). */
export const REMOTE_COMMAND_PROTOCOLS = ['v4.channel.k8s.io'] as const;
export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';

export interface TerminalSize {
  width: number;
  height: number;
}

export interface RemoteCommandIo {
  stdin?: Readable;
  stdout?: Writable;
  stderr?: Writable;
  tty: boolean;
  /** The terminal's size now, and a way to hear of changes (returns the unsubscribe). */
  size?: () => TerminalSize | undefined;
  onResize?: (fn: () => void) => () => void;
}

/** A v4 error-stream Status that is not an exit code: the runtime could not run the command. */
export class RemoteCommandError extends Error {}

/** The exit code a v4 Status carries ("Success": 0; NonZeroExitCode: its ExitCode cause). */
export function exitCodeOf(statusJson: string): number {
  if (statusJson.trim() === '') return 0;
  let s: { status?: string; message?: string; reason?: string; details?: { causes?: Array<{ reason?: string; message?: string }> } };
  try {
    s = JSON.parse(statusJson) as typeof s;
  } catch {
    throw new RemoteCommandError(statusJson.trim());
  }
  if (s.status === 'Success') return 0;
  if (s.reason === 'NonZeroExitCode') {
    const cause = s.details?.causes?.find((c) => c.reason === 'ExitCode');
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return code;
  }
  throw new RemoteCommandError(s.message ?? statusJson.trim());
}

/** Collect a stream to its end; the stream's `close` (a reset) also ends it. */
function collect(stream: SpdyStream): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    stream.on('data', (b: Buffer) => (text += b.toString()));
    stream.once('end', () => resolve(text));
  });
}

function drained(stream: SpdyStream | undefined, sink: Writable | undefined): Promise<void> {
  if (!stream) return Promise.resolve();
  return new Promise((resolve) => {
    stream.on('data', (b: Buffer) => sink?.write(b));
    stream.once('end', () => resolve());
  });
}

/**
 * Run an exec or attach at `url` (from CRI Exec/Attach) with `io`; resolves
 * to the command's exit code once its output has arrived. stdin ending
 * half-closes the stdin stream, as kubectl does. Aborting `signal` ends the
 * session.
 */
export async function runRemoteCommand(url: string, io: RemoteCommandIo, signal: AbortSignal): Promise<number> {
  const { session } = await upgradeToSpdy(url, REMOTE_COMMAND_PROTOCOLS, signal);
  const onAbort = () => session.close();
  signal.addEventListener('abort', onAbort, { once: true });
  let unsubscribe: (() => void) | undefined;
  try {
    const error = await session.openStream({ streamType: 'error' });
    const errorText = collect(error);
    const stdin = io.stdin ? await session.openStream({ streamType: 'stdin' }) : undefined;
    const stdout = io.stdout ? await session.openStream({ streamType: 'stdout' }) : undefined;
    const stderr = io.stderr && !io.tty ? await session.openStream({ streamType: 'stderr' }) : undefined;
    const resize = io.tty ? await session.openStream({ streamType: 'resize' }) : undefined;
    const output = Promise.all([drained(stdout, io.stdout), drained(stderr, io.stderr)]);
    if (resize && io.size) {
      const send = () => {
        const size = io.size?.();
        if (size) resize.write(Buffer.from(JSON.stringify({ Width: size.width, Height: size.height })));
      };
      send();
      unsubscribe = io.onResize?.(send);
    }
    if (stdin && io.stdin) {
      const source = io.stdin;
      source.on('data', (b: Buffer) => stdin.write(b));
      source.once('end', () => stdin.end());
    }
    const status = await errorText;
    await Promise.race([output, new Promise((r) => setTimeout(r, 2000).unref())]);
    // No status and a broken connection: the command's end is unknown, not a success.
    if (status.trim() === '' && session.error) throw new RemoteCommandError(`the connection to the runtime's streaming server broke before the command's exit status: ${session.error.message}`);
    return exitCodeOf(status);
  } finally {
    unsubscribe?.();
    io.stdin?.removeAllListeners('data');
    io.stdin?.pause();
    signal.removeEventListener('abort', onAbort);
    session.close();
  }
}

/** One port-forward connection: the data and error streams of a local connection. */
export interface ForwardedConnection {
  data: SpdyStream;
  /** The runtime's error for this connection (empty when there was none). */
  error: Promise<string>;
}

/** A port-forward session (from CRI PortForward): each local connection opens its own pair of streams. */
export class PortForwardSession {
  private requestId = 0;

  private constructor(private readonly session: SpdySession) {}

  static async open(url: string, signal: AbortSignal): Promise<PortForwardSession> {
    const { session, protocol } = await upgradeToSpdy(url, [PORT_FORWARD_PROTOCOL], signal);
    if (protocol !== PORT_FORWARD_PROTOCOL) {
      session.close();
      throw new RemoteCommandError(`the streaming server answered protocol "${protocol}", not ${PORT_FORWARD_PROTOCOL}`);
    }
    return new PortForwardSession(session);
  }

  /** Resolves once the session is gone (the runtime went away, or close()). */
  get closed(): Promise<void> {
    return this.session.closed ? Promise.resolve() : new Promise((resolve) => this.session.once('close', () => resolve()));
  }

  async connect(port: number): Promise<ForwardedConnection> {
    const requestID = String(this.requestId++);
    const error = await this.session.openStream({ streamType: 'error', port: String(port), requestID });
    error.end();
    const data = await this.session.openStream({ streamType: 'data', port: String(port), requestID });
    return { data, error: collect(error) };
  }

  close(): void {
    this.session.close();
  }
}
