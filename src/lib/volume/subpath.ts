/**
 * Safe subPath mounts, as the kubelet's hostutil/subpath_linux.go does them
 * since CVE-2017-1002101 and CVE-2021-25741.
 *
 * A container can write into its volumes, so anything under a volume may be
 * a symlink it planted — also after the pod started (an init container runs
 * `ln -s / /vol/escape`; the next container mounts `subPath: escape`). A
 * path string checked first and handed to the runtime later is a race. So:
 *
 * 1. Missing subPath directories are created component by component, each
 *    created or opened relative to the file descriptor of its verified
 *    parent (`/proc/self/fd/N/<name>` is openat(N, name)), never following a
 *    symlink.
 * 2. The subPath is resolved (symlinks inside the volume are allowed, as the
 *    kubelet's EvalSymlinks allows them) and must stay within the volume.
 * 3. The resolved path is opened again component by component with
 *    O_PATH|O_NOFOLLOW: a symlink swapped in after step 2 fails the open.
 * 4. The open descriptor — the exact inode checked — is bind-mounted
 *    (`mount --no-canonicalize --bind /proc/<pid>/fd/N`) at
 *    `<pod dir>/volume-subpaths/<volume>/<container>/<index>`, and the CRI
 *    mount uses that bind target, which a container can no longer redirect.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { log } from '../log.js';
import { errorMessage } from '../errors.js';
import { isMountPoint } from '../util/mounts.js';

const execFileP = promisify(execFile);

/** Linux O_PATH (not in fs.constants). */
const O_PATH = 0o10000000;
const OPEN_FLAGS = O_PATH | fs.constants.O_NOFOLLOW;

export class SubPathError extends Error {}

function within(p: string, base: string): boolean {
  return p === base || p.startsWith(base.endsWith('/') ? base : base + '/');
}

function segments(rel: string): string[] {
  return rel.split('/').filter((s) => s !== '' && s !== '.');
}

/** openat(parent, name, O_PATH|O_NOFOLLOW), refusing symlinks. */
async function openAt(parent: FileHandle, name: string, where: string): Promise<FileHandle> {
  const h = await fsp.open(`/proc/self/fd/${parent.fd}/${name}`, OPEN_FLAGS).catch((err: unknown) => {
    throw new SubPathError(`cannot open ${where}: ${errorMessage(err)}`);
  });
  const st = await h.stat();
  if (st.isSymbolicLink()) {
    await h.close();
    throw new SubPathError(`${where} is a symlink`);
  }
  return h;
}

/**
 * Open `rel` below `base` (both already resolved) without following any
 * symlink (the kubelet's doSafeOpen). The caller closes the handle.
 */
export async function safeOpen(base: string, rel: string): Promise<FileHandle> {
  let cur = await fsp.open(base, OPEN_FLAGS | fs.constants.O_DIRECTORY).catch((err: unknown) => {
    throw new SubPathError(`cannot open ${base}: ${errorMessage(err)}`);
  });
  let where = base;
  try {
    for (const seg of segments(rel)) {
      where = path.join(where, seg);
      const next = await openAt(cur, seg, where);
      await cur.close();
      cur = next;
    }
    return cur;
  } catch (err) {
    await cur.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Create the missing directories of `rel` below `base` (the kubelet's
 * SafeMakeDir): the existing prefix must resolve within `base`, and each new
 * directory is created relative to its opened parent.
 */
export async function safeMakeDir(base: string, rel: string, mode: number): Promise<void> {
  const segs = segments(rel);
  // The longest existing prefix, resolved.
  let i = 0;
  for (; i < segs.length; i++) {
    const p = path.join(base, ...segs.slice(0, i + 1));
    if ((await fsp.lstat(p).catch(() => null)) === null) break;
  }
  if (i === segs.length) return;
  const existing = await fsp.realpath(path.join(base, ...segs.slice(0, i)));
  if (!within(existing, base)) throw new SubPathError(`${path.join(base, ...segs.slice(0, i))} is outside of allowed base ${base}`);
  let cur = await safeOpen(base, path.relative(base, existing));
  let where = existing;
  try {
    for (const seg of segs.slice(i)) {
      where = path.join(where, seg);
      await fsp.mkdir(`/proc/self/fd/${cur.fd}/${seg}`, { mode }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw new SubPathError(`cannot create ${where}: ${errorMessage(err)}`);
      });
      await fsp.chmod(`/proc/self/fd/${cur.fd}/${seg}`, mode).catch(() => undefined);
      const next = await openAt(cur, seg, where);
      await cur.close();
      cur = next;
    }
  } finally {
    await cur.close().catch(() => undefined);
  }
}

export interface SubPathRequest {
  /** Host path of the volume. */
  volumePath: string;
  /** The (expanded) subPath, relative. */
  subPath: string;
  podDir: string;
  volumeName: string;
  containerName: string;
  /** Index of the mount in the container's volumeMounts. */
  index: number;
}

/** `<pod dir>/volume-subpaths/<volume>/<container>/<index>` (the kubelet's getSubpathBindTarget). */
export function subPathBindTarget(r: Pick<SubPathRequest, 'podDir' | 'volumeName' | 'containerName' | 'index'>): string {
  return path.join(r.podDir, 'volume-subpaths', r.volumeName, r.containerName, String(r.index));
}

/**
 * Prepare one subPath mount and return the host path the CRI mount must use.
 * Errors carry the kubelet's user-facing messages; details go to the log
 * only (they describe the host's file system).
 */
export async function prepareSubPath(r: SubPathRequest): Promise<string> {
  const failCreate = new SubPathError(`failed to create subPath directory for volumeMount "${r.volumeName}" of container "${r.containerName}"`);
  const failPrepare = new SubPathError(`failed to prepare subPath for volumeMount "${r.volumeName}" of container "${r.containerName}"`);
  const volumeReal = await fsp.realpath(r.volumePath).catch(() => null);
  if (volumeReal === null) throw failPrepare;
  const lexical = path.join(r.volumePath, r.subPath);
  if ((await fsp.lstat(lexical).catch(() => null)) === null) {
    const st = await fsp.stat(volumeReal);
    try {
      await safeMakeDir(volumeReal, r.subPath, st.mode & 0o7777);
    } catch (err) {
      log.warn(`subPath ${r.subPath} of volume ${r.volumeName} (container ${r.containerName}): ${errorMessage(err)}`);
      throw failCreate;
    }
  }
  let handle: FileHandle | undefined;
  try {
    const resolved = await fsp.realpath(lexical);
    if (!within(resolved, volumeReal)) throw new SubPathError(`subpath "${resolved}" not within volume path "${volumeReal}"`);
    handle = await safeOpen(volumeReal, path.relative(volumeReal, resolved));
    const st = await handle.stat();
    const target = subPathBindTarget(r);
    await fsp.mkdir(path.dirname(target), { recursive: true, mode: 0o750 });
    if (await isMountPoint(target)) await execFileP('umount', ['-l', target]);
    await fsp.rm(target, { recursive: true, force: true });
    if (st.isDirectory()) await fsp.mkdir(target, { mode: 0o750 });
    else await fsp.writeFile(target, '', { mode: 0o640 });
    await execFileP('mount', ['--no-canonicalize', '--bind', `/proc/${process.pid}/fd/${handle.fd}`, target]);
    // The bind must be exactly the inode that was checked.
    const got = await fsp.stat(target);
    if (got.dev !== st.dev || got.ino !== st.ino) {
      await execFileP('umount', ['-l', target]).catch(() => undefined);
      throw new SubPathError(`bind mount of ${resolved} at ${target} is not the opened file`);
    }
    return target;
  } catch (err) {
    log.warn(`subPath ${r.subPath} of volume ${r.volumeName} (container ${r.containerName}): ${errorMessage(err)}`);
    throw failPrepare;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
