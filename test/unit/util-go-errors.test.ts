/**
 * Node's file system errors in the kubelet's (Go's) words: "op PATH:
 * message" as an *os.PathError prints, both paths for rename, Go's errno
 * texts. Real errors from real calls on a temp dir (and /dev/full for a
 * write that fails with ENOSPC, as Node reports it: no path).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { goErrnoText, goFsError } from '../../src/lib/util/go-errors.js';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-goerr-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const caught = async (fn: () => Promise<unknown>): Promise<unknown> => fn().then(() => expect.unreachable('did not throw'), (e: unknown) => e);

describe('goFsError', () => {
  it("open of a file whose directory does not exist: Go's \"open PATH: no such file or directory\", not Node's \"ENOENT: …, open 'PATH'\"", async () => {
    const file = path.join(dir, 'missing-dir', 'scheduler.conf');
    const err = await caught(() => fsp.open(file, 'a', 0o644));
    expect((err as Error).message).toBe(`ENOENT: no such file or directory, open '${file}'`);
    expect(goFsError(err)).toBe(`open ${file}: no such file or directory`);
  });

  it('a write that fails with ENOSPC names no path in Node: the path given is the one Go names', async () => {
    let err: unknown;
    try {
      fs.writeFileSync('/dev/full', 'x');
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toBe('ENOSPC: no space left on device, write');
    expect(goFsError(err, '/var/lib/klet/pods/u/volumes/kubernetes.io~configmap/cfg/..2026_01_01/key')).toBe(
      'write /var/lib/klet/pods/u/volumes/kubernetes.io~configmap/cfg/..2026_01_01/key: no space left on device',
    );
    // Without one: the operation and the text.
    expect(goFsError(err)).toBe('write: no space left on device');
  });

  it("each call as Go's os function names it: mkdir, remove (rmdir, unlink), open (a directory read), rename with both paths", async () => {
    const file = path.join(dir, 'a-file');
    fs.writeFileSync(file, '');
    expect(goFsError(await caught(() => fsp.mkdir(path.join(file, 'sub'))))).toBe(`mkdir ${path.join(file, 'sub')}: not a directory`);
    const full = path.join(dir, 'full');
    fs.mkdirSync(full);
    fs.writeFileSync(path.join(full, 'x'), '');
    expect(goFsError(await caught(() => fsp.rmdir(full)))).toBe(`remove ${full}: directory not empty`);
    expect(goFsError(await caught(() => fsp.unlink(path.join(dir, 'nope'))))).toBe(`remove ${path.join(dir, 'nope')}: no such file or directory`);
    expect(goFsError(await caught(() => fsp.readdir(path.join(dir, 'nope'))))).toBe(`open ${path.join(dir, 'nope')}: no such file or directory`);
    expect(goFsError(await caught(() => fsp.rename(path.join(dir, 'nope'), path.join(dir, 'other'))))).toBe(
      `rename ${path.join(dir, 'nope')} ${path.join(dir, 'other')}: no such file or directory`,
    );
    expect(goFsError(await caught(() => fsp.mkdir(file)))).toBe(`mkdir ${file}: file exists`);
  });

  it("Go's texts where Node's differ; an errno the table lacks keeps Node's text", () => {
    expect(goErrnoText('EEXIST')).toBe('file exists'); // Node: "file already exists"
    expect(goErrnoText('EISDIR')).toBe('is a directory'); // Node: "illegal operation on a directory"
    expect(goErrnoText('EBUSY')).toBe('device or resource busy'); // Node: "resource busy or locked"
    expect(goErrnoText('ELOOP')).toBe('too many levels of symbolic links');
    expect(goErrnoText('EFOO')).toBeUndefined();
    const odd = Object.assign(new Error("EFOO: something odd, open '/x'"), { code: 'EFOO', syscall: 'open', path: '/x' });
    expect(goFsError(odd)).toBe('open /x: something odd');
  });

  it('anything else: its message as it is', () => {
    expect(goFsError(new Error('configmap "x" not found'))).toBe('configmap "x" not found');
    expect(goFsError(Object.assign(new Error('Command failed: mount'), { code: 32 }))).toBe('Command failed: mount');
    expect(goFsError('plain')).toBe('plain');
  });
});
