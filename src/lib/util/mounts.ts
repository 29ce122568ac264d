/** Mount table helpers: what is mounted below a directory, and unmounting it. */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** Mount points at or below `dir`, deepest first. */
export async function mountsUnder(dir: string): Promise<string[]> {
  // procfs, read synchronously: no disk behind it, and the thread pool's round trips cost more than the read.
  const text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  const prefix = dir.endsWith('/') ? dir : dir + '/';
  const points = text
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map((p) => p.replace(/\\(\d{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8))))
    .filter((p) => p === dir || p.startsWith(prefix));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmount everything at or below `dir` (lazily when busy). Returns what stays mounted. */
export async function unmountAll(dir: string): Promise<string[]> {
  for (const mnt of await mountsUnder(dir)) {
    try {
      await execFileP('umount', [mnt]);
    } catch {
      await execFileP('umount', ['-l', mnt]).catch(() => undefined);
    }
  }
  return mountsUnder(dir);
}

/** Mount a tmpfs at `dir` (optionally size-limited, in bytes). */
export async function mountTmpfs(dir: string, opts: { sizeBytes?: number; mode?: number } = {}): Promise<void> {
  const o = [`mode=${(opts.mode ?? 0o755).toString(8)}`];
  if (opts.sizeBytes !== undefined && opts.sizeBytes > 0) o.push(`size=${opts.sizeBytes}`);
  await execFileP('mount', ['-t', 'tmpfs', '-o', o.join(','), 'tmpfs', dir]);
}

export async function isMountPoint(dir: string): Promise<boolean> {
  return (await mountsUnder(dir)).includes(dir);
}
