/**
 * Safe subPath binds on the real file system and mount table (root, no
 * containerd): CVE-2017-1002101 / CVE-2021-25741 shapes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { mountsUnder, unmountAll } from '../../src/lib/util/mounts.js';
import { prepareSubPath, safeMakeDir, safeOpen, subPathBindTarget } from '../../src/lib/volume/subpath.js';

describe('subPath', () => {
  let root: string;
  let vol: string;
  let podDir: string;
  let outside: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'klet-subpath-'));
    podDir = path.join(root, 'pod');
    vol = path.join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'data');
    outside = path.join(root, 'host-secret');
    fs.mkdirSync(vol, { recursive: true });
    fs.chmodSync(vol, 0o777);
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'shadow'), 'root:$6$secret');
  });
  afterEach(async () => {
    await unmountAll(root);
    await rm(root, { recursive: true, force: true });
  });

  const req = (subPath: string, index = 0) => ({ volumePath: vol, subPath, podDir, volumeName: 'data', containerName: 'app', index });

  it('creates a missing subPath inside the volume and binds exactly it', async () => {
    const target = await prepareSubPath(req('logs/app'));
    expect(target).toBe(subPathBindTarget(req('logs/app')));
    expect(await mountsUnder(target)).toEqual([target]);
    fs.writeFileSync(path.join(target, 'x.log'), 'hello');
    expect(fs.readFileSync(path.join(vol, 'logs', 'app', 'x.log'), 'utf8')).toBe('hello');
    // The new directories take the volume's mode.
    expect(fs.statSync(path.join(vol, 'logs')).mode & 0o777).toBe(0o777);
  });

  it('binds a file subPath as a file', async () => {
    fs.writeFileSync(path.join(vol, 'app.conf'), 'a=1');
    const target = await prepareSubPath(req('app.conf', 1));
    expect(fs.statSync(target).isFile()).toBe(true);
    expect(fs.readFileSync(target, 'utf8')).toBe('a=1');
  });

  it('follows a symlink that stays inside the volume', async () => {
    fs.mkdirSync(path.join(vol, 'real'));
    fs.symlinkSync('real', path.join(vol, 'alias'));
    const target = await prepareSubPath(req('alias'));
    fs.writeFileSync(path.join(target, 'f'), '1');
    expect(fs.existsSync(path.join(vol, 'real', 'f'))).toBe(true);
  });

  it('refuses a symlink leaving the volume (the exploit: ln -s / escape) and mounts nothing', async () => {
    fs.symlinkSync('/', path.join(vol, 'escape'));
    fs.symlinkSync(outside, path.join(vol, 'escape2'));
    await expect(prepareSubPath(req('escape'))).rejects.toThrow('failed to prepare subPath for volumeMount "data" of container "app"');
    await expect(prepareSubPath(req('escape2/shadow', 1))).rejects.toThrow('failed to prepare subPath for volumeMount "data" of container "app"');
    expect(await mountsUnder(root)).toEqual([]);
  });

  it('creates no directory outside the volume through a planted symlink', async () => {
    fs.symlinkSync(outside, path.join(vol, 'link'));
    await expect(prepareSubPath(req('link/newdir'))).rejects.toThrow('failed to create subPath directory for volumeMount "data" of container "app"');
    expect(fs.existsSync(path.join(outside, 'newdir'))).toBe(false);
    await expect(safeMakeDir(vol, 'link/newdir', 0o755)).rejects.toThrow('outside of allowed base');
  });

  it('safeOpen refuses any symlink component (a symlink swapped in after the check)', async () => {
    fs.mkdirSync(path.join(vol, 'a'));
    const h = await safeOpen(vol, 'a');
    await h.close();
    fs.rmdirSync(path.join(vol, 'a'));
    fs.symlinkSync(outside, path.join(vol, 'a'));
    await expect(safeOpen(vol, 'a/shadow')).rejects.toThrow(/cannot open|is a symlink/);
    await expect(safeOpen(vol, 'a')).rejects.toThrow('is a symlink');
  });
});
