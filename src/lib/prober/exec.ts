/**
 * exec probes (pkg/probe/exec): the command runs in the container through
 * CRI ExecSync with the probe's timeout; exit 0 is success. Output (stdout
 * then stderr) is kept, capped at 10 KiB. A command still running at the
 * timeout fails the probe with `command "..." timed out`.
 */
import type { CriClient } from '../cri/client.js';
import { CriDeadlineExceededError } from '../cri/errors.js';
import { MAX_OUTPUT_BYTES, type HandlerResult } from './types.js';

/** What an exec probe needs of CRI. */
export type ExecCri = Pick<CriClient, 'execSync'>;

/** Go's %q of a string, enough for commands (quotes and backslashes escaped). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}

export async function execProbe(
  cri: ExecCri,
  containerId: string,
  command: string[],
  timeoutSeconds: number,
  signal?: AbortSignal,
): Promise<HandlerResult> {
  try {
    // The CRI call's own deadline is the client's default on top of the exec timeout.
    const res = await cri.execSync({ containerId, cmd: command, timeout: BigInt(timeoutSeconds) }, { signal });
    const out = Buffer.concat([Buffer.from(res.stdout), Buffer.from(res.stderr)]).subarray(0, MAX_OUTPUT_BYTES).toString('utf8');
    const detail = { handler: 'exec' as const, command, exitCode: res.exitCode, output: out };
    return { outcome: res.exitCode === 0 ? 'success' : 'failure', output: out, detail };
  } catch (err) {
    if (err instanceof CriDeadlineExceededError) {
      const output = `command ${goQuote(command.join(' '))} timed out`;
      return { outcome: 'failure', output, detail: { handler: 'exec', command, exitCode: null, output: '' } };
    }
    throw err;
  }
}
