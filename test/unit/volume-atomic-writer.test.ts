import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import fs from 'node:fs';
import fsp, { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DATA_DIR_NAME, type Payload, readPublished, validatePayloadPath, writePayload } from '../../src/lib/volume/atomic-writer.js';

function payload(entries: Record<string, [string, number?]>): Payload {
  return new Map(Object.entries(entries).map(([k, [v, mode]]) => [k, { data: Buffer.from(v), mode: mode ?? 0o644 }]));
}

describe('atomic writer', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'klet-aw-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const generations = () => fs.readdirSync(dir).filter((n) => n.startsWith('..') && n !== DATA_DIR_NAME);

  it('publishes a timestamped generation through ..data with user-visible symlinks', async () => {
    expect(await writePayload(dir, payload({ 'app.conf': ['a=1\n'], 'nested/deep/key': ['v', 0o600] }))).toBe(true);
    const gen = fs.readlinkSync(path.join(dir, DATA_DIR_NAME));
    expect(gen).toMatch(/^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d{9}$/);
    expect(fs.statSync(path.join(dir, gen)).mode & 0o777).toBe(0o755);
    expect(fs.readlinkSync(path.join(dir, 'app.conf'))).toBe('..data/app.conf');
    expect(fs.readlinkSync(path.join(dir, 'nested'))).toBe('..data/nested');
    expect(fs.readFileSync(path.join(dir, 'nested/deep/key'), 'utf8')).toBe('v');
    expect(fs.statSync(path.join(dir, 'nested/deep/key')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dir, 'app.conf')).mode & 0o777).toBe(0o644);
  });

  it("a generation that cannot be written whole (ENOSPC) is removed, and the published payload stands; the error in the kubelet's words, with the file", async () => {
    await writePayload(dir, payload({ a: ['1'] }));
    const published = fs.readlinkSync(path.join(dir, DATA_DIR_NAME));
    // A real ENOSPC as Node reports a failed write: "ENOSPC: no space left on device, write", no path.
    let enospc: unknown;
    try {
      fs.writeFileSync('/dev/full', 'x');
    } catch (e) {
      enospc = e;
    }
    expect((enospc as Error).message).toBe('ENOSPC: no space left on device, write');
    const spy = vi.spyOn(fsp, 'writeFile').mockRejectedValueOnce(enospc);
    try {
      const err = await writePayload(dir, payload({ a: ['2'] })).then(() => expect.unreachable('wrote'), (e: unknown) => e as Error);
      // The kubelet's (Go's) "write PATH: no space left on device", PATH the file of the new generation.
      expect(err.message).toMatch(new RegExp(`^write ${dir}/\\.\\.\\d{4}(_\\d{2}){5}\\.\\d{9}/a: no space left on device$`));
    } finally {
      spy.mockRestore();
    }
    expect(generations()).toEqual([published]);
    expect(fs.readFileSync(path.join(dir, 'a'), 'utf8')).toBe('1');
    // A step after the files (the fsGroup ownership) that fails: the generation goes too.
    await expect(writePayload(dir, payload({ a: ['3'] }), { setPerms: () => Promise.reject(enospc) })).rejects.toThrow(/no space left on device$/);
    expect(generations()).toEqual([published]);
  });

  it('writes nothing when the payload is unchanged, swaps when it changes, and drops removed keys', async () => {
    await writePayload(dir, payload({ a: ['1'], b: ['2'] }));
    const first = fs.readlinkSync(path.join(dir, DATA_DIR_NAME));
    expect(await writePayload(dir, payload({ a: ['1'], b: ['2'] }))).toBe(false);
    expect(fs.readlinkSync(path.join(dir, DATA_DIR_NAME))).toBe(first);
    // A mode change alone is a change.
    expect(await writePayload(dir, payload({ a: ['1', 0o600], b: ['2'] }))).toBe(true);
    expect(await writePayload(dir, payload({ a: ['3'] }))).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'a'), 'utf8')).toBe('3');
    expect(fs.existsSync(path.join(dir, 'b'))).toBe(false);
    expect(fs.lstatSync(path.join(dir, 'b'), { throwIfNoEntry: false })).toBeUndefined();
    // The current generation and the one it replaced, no more.
    expect(generations()).toHaveLength(2);
    expect([...((await readPublished(dir)) ?? new Map()).keys()]).toEqual(['a']);
  });

  it('never exposes an empty or partial file to a concurrent reader', async () => {
    const big = (c: string) => c.repeat(256 * 1024);
    await writePayload(dir, payload({ key: [big('a')] }));
    let stop = false;
    let reads = 0;
    const bad: string[] = [];
    const reader = (async () => {
      while (!stop) {
        const v = await fs.promises.readFile(path.join(dir, 'key'), 'utf8');
        reads++;
        if (v.length !== 256 * 1024 || v !== v[0]?.repeat(v.length)) bad.push(`${v.length} bytes`);
      }
    })();
    for (const c of 'bcdefghijklmnopqrstuvwxyz') await writePayload(dir, payload({ key: [big(c)] }));
    stop = true;
    await reader;
    expect(bad).toEqual([]);
    expect(reads).toBeGreaterThan(0);
    expect(fs.readFileSync(path.join(dir, 'key'), 'utf8')[0]).toBe('z');
  });

  it.each([
    ['../x', "must not contain '..'"],
    ['a/../../x', "must not contain '..'"],
    ['/etc/passwd', 'must be a relative path'],
    ['a//b', 'must not contain empty path segments'],
    ['..data', "must not start with '..'"],
    ['', 'must not be empty'],
  ])('refuses the path %j', async (p, why) => {
    expect(validatePayloadPath(p)).toBe(why);
    await expect(writePayload(dir, payload({ [p]: ['x'] }))).rejects.toThrow(why);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
