/**
 * hostPath type checks, as the kubelet's pkg/volume/hostpath
 * checkTypeInternal: `*OrCreate` types create what is missing (a
 * directory with its parents; a file, in an existing directory: the
 * kubelet's makeFile does not create the parent, it fails with Go's
 * `open PATH: no such file or directory` and the volume manager tries again
 * with its back-off, until a sibling's DirectoryOrCreate or an installer
 * has made it), every other type must already be there as that type.
 * Messages are the kubelet's.
 */
import type { Stats } from 'node:fs';
import fsp from 'node:fs/promises';
import { goFsError } from '../util/go-errors.js';
import { VolumeSetupError } from './plugins.js';

/**
 * Check (and for `*OrCreate`, create) a hostPath. With `dryRun` nothing is
 * created; the result says what would be. Returns 'created', 'would create'
 * or 'exists'.
 */
export async function checkHostPathType(p: string, type: string, opts: { dryRun?: boolean } = {}): Promise<'created' | 'would create' | 'exists'> {
  const st: Stats | null = await fsp.stat(p).catch(() => null);
  const fail = (what: string) => new VolumeSetupError(`hostPath type check failed: ${p} is not ${what}`);
  if (st === null && (type === 'DirectoryOrCreate' || type === 'FileOrCreate')) {
    if (opts.dryRun) return 'would create';
    try {
      if (type === 'DirectoryOrCreate') {
        await fsp.mkdir(p, { recursive: true, mode: 0o755 });
      } else {
        const h = await fsp.open(p, 'a', 0o644);
        await h.close();
      }
    } catch (err) {
      throw new VolumeSetupError(goFsError(err, p), 'node', { cause: err });
    }
    return 'created';
  }
  switch (type) {
    case '':
      return 'exists';
    case 'DirectoryOrCreate':
    case 'Directory':
      if (!st?.isDirectory()) throw fail('a directory');
      return 'exists';
    case 'FileOrCreate':
    case 'File':
      if (!st?.isFile()) throw fail('a file');
      return 'exists';
    case 'Socket':
      if (!st?.isSocket()) throw fail('a socket file');
      return 'exists';
    case 'CharDevice':
      if (!st?.isCharacterDevice()) throw fail('a character device');
      return 'exists';
    case 'BlockDevice':
      if (!st?.isBlockDevice()) throw fail('a block device');
      return 'exists';
    default:
      throw new VolumeSetupError(`${type} is an invalid volume type`, 'spec');
  }
}
