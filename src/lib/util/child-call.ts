/**
 * Run one exported async function of a klet module in a short-lived child
 * Node process and hand back its result. For the rare one-off jobs whose
 * library would otherwise stay loaded for the rest of a long-running
 * process: an ES module is never unloaded, and making the kubelet server's
 * self-signed certificate with @peculiar/x509 left `klet sync` ~24 MB of
 * RSS heavier for good (its code, its heap, the allocator's arenas). A
 * worker thread does not help: the worker's memory goes back to glibc, not
 * to the system. A child process gives all of it back when it exits, for
 * ~0.1 s of start-up once in a node's life (or a certificate's).
 *
 * Arguments and the result travel as JSON over the child's stdin and stdout
 * (never its command line: they may hold a private key). A thrown error
 * comes back as its message.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Longer than any of these jobs takes on a loaded node (~0.1–0.3 s alone): a child that hangs is stopped. */
const CHILD_TIMEOUT_MS = 60_000;

/** The child: read {url, name, args} from stdin, call, write {ok} or {error} to stdout. */
const CHILD = `
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const { url, name, args } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
let out;
try {
  const m = await import(url);
  out = { ok: await m[name](...args) };
} catch (err) {
  out = { error: err instanceof Error ? err.message : String(err) };
}
process.stdout.write(JSON.stringify(out));
`;

/**
 * Call `name` of the module at `modulePath` (relative to `callerUrl`,
 * without its extension: the caller's own, .js in dist/ and .ts when the
 * sources run under a TypeScript loader) in a child process.
 */
export async function callInChild<T>(callerUrl: string, modulePath: string, name: string, args: unknown[], signal?: AbortSignal): Promise<T> {
  const ext = path.extname(fileURLToPath(callerUrl));
  const url = new URL(`${modulePath}${ext}`, callerUrl).href;
  // From the sources (tests), the child needs the same TypeScript loader.
  const loader = ext === '.ts' ? ['--import', import.meta.resolve('tsx')] : [];
  const child = spawn(process.execPath, [...loader, '--input-type=module', '-e', CHILD], { stdio: ['pipe', 'pipe', 'pipe'], signal, timeout: CHILD_TIMEOUT_MS });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => stdout.push(c));
  child.stderr.on('data', (c: Buffer) => stderr.push(c));
  // A child that dies before reading its input is reported below, by its exit.
  child.stdin.on('error', () => undefined);
  child.stdin.end(JSON.stringify({ url, name, args }));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  let answer: { ok?: T; error?: string } | undefined;
  try {
    answer = JSON.parse(Buffer.concat(stdout).toString('utf8')) as { ok?: T; error?: string };
  } catch {
    const why = Buffer.concat(stderr).toString('utf8').trim().split('\n').at(-1) ?? '';
    const end = code !== null ? `exited with code ${code}` : `was stopped by ${child.signalCode ?? 'a signal'}${child.signalCode === 'SIGTERM' && !signal?.aborted ? ` after ${CHILD_TIMEOUT_MS / 1000} s` : ''}`;
    throw new Error(`${name}: its child process ${end}${why ? `: ${why}` : ''}`);
  }
  if (answer.error !== undefined) throw new Error(answer.error);
  return answer.ok as T;
}
