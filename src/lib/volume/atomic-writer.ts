/**
 * The kubelet's AtomicWriter (pkg/volume/util/atomic_writer.go): a volume's
 * projected files are written into a fresh timestamped directory, then a
 * `..data` symlink is swapped to it with one rename(2), and the paths users
 * see are symlinks through `..data`:
 *
 *   <dir>/..2026_11_24_01_02_03.123456789/key   the payload of this generation
 *   <dir>/..data -> ..2026_11_24_01_02_03.123456789
 *   <dir>/key -> ..data/key
 *
 * A reader opening `<dir>/key` sees either the whole old generation or the
 * whole new one, never a half-written file.
 *
 * One deliberate difference: the kubelet removes the previous generation
 * right after the swap, so a reader that resolved `..data` to it just before
 * the swap can still get ENOENT opening the file. klet keeps the previous
 * generation until the next write (its files are never modified), so such a
 * reader reads the old content instead of failing.
 */
import { randomInt } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { goFsError } from '../util/go-errors.js';

export const DATA_DIR_NAME = '..data';
const DATA_DIR_TMP_NAME = '..data_tmp';

/** One file of a payload: content and mode (permission bits only). */
export interface FileProjection {
  data: Buffer;
  mode: number;
}

/** Relative path (forward slashes) → file. */
export type Payload = Map<string, FileProjection>;

export class PayloadError extends Error {}

/**
 * The kubelet's validatePath: relative, at most 4096 bytes, no `..`
 * element, no empty element, and not starting with `..` (reserved for the
 * writer's own entries).
 */
export function validatePayloadPath(p: string): string | null {
  if (p === '') return 'must not be empty';
  if (Buffer.byteLength(p) > 4096) return 'must be less than or equal to 4096 bytes';
  if (path.isAbsolute(p)) return 'must be a relative path';
  const parts = p.split('/');
  if (parts.includes('..')) return "must not contain '..'";
  if (parts.some((x) => x === '')) return 'must not contain empty path segments';
  if (p.startsWith('..')) return "must not start with '..'";
  return null;
}

function timestampDirName(now: Date): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const ts = `${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}`;
  return `..${ts}.${String(randomInt(0, 1_000_000_000)).padStart(9, '0')}`;
}

async function readlinkOrNull(p: string): Promise<string | null> {
  try {
    return await fsp.readlink(p);
  } catch {
    return null;
  }
}

/** The payload currently published through `..data`, or null when there is none. */
export async function readPublished(dir: string): Promise<Payload | null> {
  const gen = await readlinkOrNull(path.join(dir, DATA_DIR_NAME));
  if (gen === null) return null;
  const root = path.join(dir, gen);
  const out: Payload = new Map();
  const walk = async (rel: string): Promise<void> => {
    for (const e of await fsp.readdir(path.join(root, rel), { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(r);
      else if (e.isFile()) {
        const file = path.join(root, r);
        const st = await fsp.stat(file);
        out.set(r, { data: await fsp.readFile(file), mode: st.mode & 0o7777 });
      }
    }
  };
  try {
    await walk('');
  } catch {
    return null;
  }
  return out;
}

function samePayload(a: Payload, b: Payload, modeMask: number): boolean {
  if (a.size !== b.size) return false;
  for (const [p, f] of a) {
    const g = b.get(p);
    if (g === undefined || !g.data.equals(f.data) || (g.mode & modeMask) !== (f.mode & modeMask)) return false;
  }
  return true;
}

function topLevel(p: string): string {
  return p.split('/')[0] as string;
}

export interface WriteOptions {
  /** Applied to the new generation before it is published (fsGroup ownership). */
  setPerms?: (generationDir: string) => Promise<void>;
  /** Bits compared when deciding whether the payload changed (fsGroup adds group bits on disk). */
  modeMask?: number;
  now?: Date;
}

/**
 * Publish `payload` in `dir` atomically. Returns false when the published
 * payload is already identical (nothing is written), true after a swap.
 */
export async function writePayload(dir: string, payload: Payload, opts: WriteOptions = {}): Promise<boolean> {
  for (const p of payload.keys()) {
    const why = validatePayloadPath(p);
    if (why !== null) throw new PayloadError(`invalid path "${p}": ${why}`);
  }
  const dataLink = path.join(dir, DATA_DIR_NAME);
  const oldGen = await readlinkOrNull(dataLink);
  const old = oldGen === null ? null : await readPublished(dir);
  const mask = opts.modeMask ?? 0o7777;
  if (old !== null && samePayload(old, payload, mask)) {
    await createUserVisible(dir, payload);
    return false;
  }

  // 1. The new generation, complete, with its permissions.
  const gen = timestampDirName(opts.now ?? new Date());
  const genDir = path.join(dir, gen);
  await fsp.mkdir(genDir, { mode: 0o755 });
  // The file being written: a failed write to it names no path of its own.
  let current = genDir;
  try {
    await fsp.chmod(genDir, 0o755);
    for (const [p, f] of payload) {
      const file = path.join(genDir, p);
      await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
      current = file;
      await fsp.writeFile(file, f.data, { mode: f.mode });
      await fsp.chmod(file, f.mode);
    }
    current = genDir;
    await opts.setPerms?.(genDir);
  } catch (err) {
    // A generation that could not be written whole (ENOSPC) is never
    // published, and is not left to hold the space it took.
    await fsp.rm(genDir, { recursive: true, force: true }).catch(() => undefined);
    // In the kubelet's words, with the file: "write PATH: no space left on device".
    throw new Error(goFsError(err, current), { cause: err });
  }

  // 2. The swap: a new symlink renamed over `..data` (rename(2) is atomic).
  const tmpLink = path.join(dir, DATA_DIR_TMP_NAME);
  await fsp.rm(tmpLink, { force: true });
  await fsp.symlink(gen, tmpLink);
  await fsp.rename(tmpLink, dataLink);

  // 3. User-visible entries through `..data`; stale ones removed.
  await createUserVisible(dir, payload);
  const wanted = new Set([...payload.keys()].map(topLevel));
  for (const name of await fsp.readdir(dir)) {
    if (name.startsWith('..') || wanted.has(name)) continue;
    const st = await fsp.lstat(path.join(dir, name)).catch(() => null);
    if (st?.isSymbolicLink()) await fsp.rm(path.join(dir, name), { force: true });
  }

  // 4. Generations older than the one just replaced (see the header comment).
  for (const name of await fsp.readdir(dir)) {
    if (!name.startsWith('..') || name === DATA_DIR_NAME || name === gen || name === oldGen) continue;
    await fsp.rm(path.join(dir, name), { recursive: true, force: true });
  }
  return true;
}

async function createUserVisible(dir: string, payload: Payload): Promise<void> {
  for (const name of new Set([...payload.keys()].map(topLevel))) {
    const link = path.join(dir, name);
    const target = path.join(DATA_DIR_NAME, name);
    const current = await readlinkOrNull(link);
    if (current === target) continue;
    await fsp.rm(link, { recursive: true, force: true });
    await fsp.symlink(target, link);
  }
}
